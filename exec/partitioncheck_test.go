package exec

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// checkedTopology is an aggregation by the key of a declared source BIDS
// (murmur2, its default): its sub-topology keeps a store, so its
// records' partitions are checked.
func checkedTopology(t testing.TB) *physical.Topology {
	topo := windowedAggTopology(t, "app", "AUCTION", nil)
	if d := topo.SubTopologies[0].Source().Declared; d != "BIDS" {
		t.Fatalf("the aggregation's source is declared %q, want BIDS", d)
	}
	return topo
}

// checkedTask is task 0 of checkedTopology, its topic of n partitions.
func checkedTask(t testing.TB, topo *physical.Topology, cfg Config, n int32) *testTask {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	cfg.StateDir, cfg.RocksResources = t.TempDir(), res
	task := newTestTask(t, topo, 0, cfg, func(*kgo.Record) {})
	if c := task.tm.q.checks["BIDS"]; c != nil {
		c.parts.Store(n)
	}
	return task
}

// keyIn returns a BIGINT key whose murmur2 partition among n is p
// (in: true) or is not p (false).
func keyIn(p, n int32, in bool) []byte {
	for i := int64(1); ; i++ {
		k := []byte{0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}
		if (types.Murmur2Partition(k, n) == p) == in {
			return k
		}
	}
}

// TestPartitionCheck feeds a declared murmur2 source records in and out
// of their key's murmur2 partition: the misplaced ones are counted
// (Query.Partitioning), reported once in the server log and the
// processing log with the topic, the share and the fix, and the records
// are processed all the same.
func TestPartitionCheck(t *testing.T) {
	var logBuf bytes.Buffer
	var bad []BadRecord
	cfg := Config{Logger: slog.New(slog.NewTextHandler(&logBuf, nil)), BadRecord: func(b BadRecord) { bad = append(bad, b) }}
	task := checkedTask(t, checkedTopology(t), cfg, 4)
	q := task.tm.q
	value := []byte(`{"bidder":7,"price":10}`)
	good, wrong := keyIn(0, 4, true), keyIn(0, 4, false)
	for i := range 100 {
		k := good
		if i%4 == 0 {
			k = wrong
		}
		if err := task.feed(&kgo.Record{Topic: "bids", Key: k, Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	// A null key is not checked (the aggregation skips its record).
	_ = task.feed(&kgo.Record{Topic: "bids", Value: value})
	task.out.flush()
	if err := task.flush(); err != nil {
		t.Fatal(err)
	}
	st := q.Partitioning()
	if len(st) != 1 || st[0] != (PartitionStats{Source: "BIDS", Topic: "bids", Partitioner: "murmur2", Checked: 100, Misplaced: 25}) {
		t.Errorf("Partitioning() = %+v, want BIDS: 25 of 100 misplaced", st)
	}
	if s := q.Status(); len(s.Partitioning) != 1 || s.Partitioning[0].Misplaced != 25 {
		t.Errorf("Status().Partitioning = %+v", s.Partitioning)
	}
	if len(bad) != 1 {
		t.Fatalf("processing log got %d entries, want 1 (at most one a minute)", len(bad))
	}
	msg := bad[0].Err.Error()
	for _, want := range []string{"topic bids", "1 of 1 keyed records", "PARTITIONER='crc32'", "partitioner=murmur2_random", "source BIDS"} {
		if !strings.Contains(msg, want) {
			t.Errorf("processing log entry %q lacks %q", msg, want)
		}
	}
	if bad[0].Topic != "bids" || !bytes.Equal(bad[0].Key, wrong) {
		t.Errorf("processing log entry for %s key %x, want bids key %x", bad[0].Topic, bad[0].Key, wrong)
	}
	if n := strings.Count(logBuf.String(), "level=WARN"); n != 1 || !strings.Contains(logBuf.String(), "PARTITIONER='crc32'") {
		t.Errorf("server log has %d warnings, want 1 naming the fix:\n%s", n, logBuf.String())
	}
}

// TestPartitionCheckCRC32 checks a source declared crc32 against crc32:
// a record in its key's murmur2 partition instead is counted, and the fix
// named is PARTITIONER='murmur2'.
func TestPartitionCheckCRC32(t *testing.T) {
	var bad []BadRecord
	cfg := Config{Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), BadRecord: func(b BadRecord) { bad = append(bad, b) }}
	topo := checkedTopology(t)
	topo.SubTopologies[0].Source().Partitioner = types.CRC32
	task := checkedTask(t, topo, cfg, 4)
	value := []byte(`{"bidder":7,"price":10}`)
	var in, out []byte
	for i := int64(1); in == nil || out == nil; i++ {
		k := []byte{0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}
		switch {
		case types.CRC32Partition(k, 4) == 0 && in == nil:
			in = k
		case types.CRC32Partition(k, 4) != 0 && types.Murmur2Partition(k, 4) == 0 && out == nil:
			out = k
		}
	}
	for _, k := range [][]byte{in, in, in, out} {
		if err := task.feed(&kgo.Record{Topic: "bids", Key: k, Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	if err := task.flush(); err != nil {
		t.Fatal(err)
	}
	st := task.tm.q.Partitioning()
	if len(st) != 1 || st[0] != (PartitionStats{Source: "BIDS", Topic: "bids", Partitioner: "crc32", Checked: 4, Misplaced: 1}) {
		t.Errorf("Partitioning() = %+v, want BIDS (crc32): 1 of 4 misplaced", st)
	}
	if len(bad) != 1 || !strings.Contains(bad[0].Err.Error(), "PARTITIONER='murmur2'") || !strings.Contains(bad[0].Err.Error(), "key's crc32 partition") {
		t.Errorf("processing log entries %v, want one naming PARTITIONER='murmur2'", bad)
	}
}

// TestPartitionCheckWhich checks that sources declared unknown, internal
// topics, keyless sources and sources only a stateless sub-topology reads
// are not checked.
func TestPartitionCheckWhich(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*physical.Source)
	}{
		{"unknown", func(s *physical.Source) { s.Partitioner = types.UnknownPartitioner }},
		{"internal", func(s *physical.Source) { s.Declared = "" }},
		{"keyless", func(s *physical.Source) { s.KeyFormat = types.FormatNone }},
	} {
		topo := checkedTopology(t)
		c.set(topo.SubTopologies[0].Source())
		q := &Query{topo: topo}
		q.newPartitionChecks()
		if len(q.checks) != 0 {
			t.Errorf("%s: %d sources checked, want none", c.name, len(q.checks))
		}
	}
	stateless := bidTopology(t)
	stateless.SubTopologies[0].Source().Declared = "BIDS"
	q := &Query{topo: stateless}
	q.newPartitionChecks()
	if len(q.checks) != 0 {
		t.Errorf("a filter's source is checked; want only sources whose partitioning matters")
	}
}

// TestPartitionCheckAllocations holds the check to zero allocations per
// record, a misplaced record's included (after its first report).
func TestPartitionCheckAllocations(t *testing.T) {
	cfg := Config{Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	task := checkedTask(t, checkedTopology(t), cfg, 4)
	value := []byte(`{"bidder":7,"price":10}`)
	for _, in := range []bool{true, false} {
		rec := &kgo.Record{Topic: "bids", Key: keyIn(0, 4, in), Value: value}
		n := 0
		step := func() {
			if err := task.feed(rec); err != nil {
				t.Fatal(err)
			}
			task.out.flush()
			if n++; n%512 == 0 {
				task.out.reset()
			}
		}
		for range 1024 {
			step()
		}
		if a := testing.AllocsPerRun(1000, step); a != 0 {
			t.Errorf("in its partition %v: %.2f allocations per record", in, a)
		}
	}
}

// BenchmarkPartitionCheck is an aggregation by key of one group over a
// declared murmur2 source, unchecked and checked: the check's cost per
// record.
func BenchmarkPartitionCheck(b *testing.B) {
	for _, checked := range []bool{false, true} {
		b.Run(fmt.Sprintf("checked=%v", checked), func(b *testing.B) {
			topo := checkedTopology(b)
			if !checked {
				topo.SubTopologies[0].Source().Declared = ""
			}
			task := checkedTask(b, topo, Config{}, 4)
			rec := &kgo.Record{Key: keyIn(0, 4, true), Value: []byte(`{"auction":1001,"bidder":2001,"price":987654,"channel":"channel-5901","url":"https://www.nexmark.com/auction/bid?id=1001","dateTime":"2026-11-30 05:00:00.000","extra":""}`)}
			const poll = 64
			batch := make([]*kgo.Record, poll)
			for i := range batch {
				batch[i] = rec
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i += poll {
				if err := task.feed(batch[:min(poll, b.N-i)]...); err != nil {
					b.Fatal(err)
				}
				task.out.flush()
				task.out.reset()
			}
		})
	}
}
