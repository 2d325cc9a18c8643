package broker

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func kv(topic string, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: []byte(key)}
	if value != "" {
		r.Value = []byte(value)
	}
	return r
}

// createCompacted creates a one-partition cleanup.policy=compact topic.
func createCompacted(t testing.TB, addr, topic string, configs map[string]*string) {
	t.Helper()
	if configs == nil {
		configs = map[string]*string{}
	}
	compact := "compact"
	configs["cleanup.policy"] = &compact
	adm := kadm.NewClient(newClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// TestCompactionBesideOpenTransaction: a committed value of key k, then a
// transaction that writes k again and is still open when the cleaner
// starts a round, then aborts (or commits). A read_committed reader must
// see the committed value after the abort, and the new one after the
// commit: an open transaction's record supersedes nothing. kfake's own
// cleaner dropped the committed value, losing the key after an abort; the
// broker's cleaner waits for the transaction to end, then compacts.
func TestCompactionBesideOpenTransaction(t *testing.T) {
	for _, commit := range []bool{false, true} {
		t.Run(map[bool]string{false: "abort", true: "commit"}[commit], func(t *testing.T) {
			b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
			defer b.Close()
			createCompacted(t, b.Addr(), "c", nil)
			produceTxn(t, b.Addr(), "w1", true, kv("c", "k", "committed"), kv("c", "j", "j1"))

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			open := newClient(t, b.Addr(), kgo.TransactionalID("w2"))
			if err := open.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := open.ProduceSync(ctx, kv("c", "k", "new")).FirstErr(); err != nil {
				t.Fatal(err)
			}
			// Later batches, so the open one is not the partition's
			// last (which compaction always keeps).
			plain := newClient(t, b.Addr())
			for _, v := range []string{"j2", "j3"} {
				if err := plain.ProduceSync(ctx, kv("c", "j", v)).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}

			type result struct {
				ran bool
				err error
			}
			done := make(chan result, 1)
			go func() {
				ran, err := b.compactNow(ctx)
				done <- result{ran, err}
			}()
			if err := open.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.err != nil || !r.ran {
				t.Fatalf("cleaner round: ran %v, %v; want it to run once the transaction ended", r.ran, r.err)
			}
			want := []string{"committed", "j3"}
			if commit {
				want = []string{"j3", "new"}
			}
			got := consume(t, b.Addr(), "c", kgo.ReadCommitted(), len(want), 5*time.Second)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("read_committed after compaction: %v, want %v", got, want)
			}
			// Compaction did run: j1 and j2 are gone even for
			// read_uncommitted readers.
			for _, v := range consume(t, b.Addr(), "c", kgo.ReadUncommitted(), 10, 2*time.Second) {
				if v == "j1" || v == "j2" {
					t.Fatalf("superseded %s still stored after compaction", v)
				}
			}
		})
	}
}

// restoreTable reads a changelog topic from the start, read_committed, into
// a table (last value per key, a tombstone deletes), as a store restore
// does, and returns it with the records read.
func restoreTable(t testing.TB, addr, topic string) (map[string]string, int) {
	t.Helper()
	ends := endOffsets(t, addr, topic)
	// Control records are kept (and skipped below) so that a partition
	// ending in a transaction marker is read to its end.
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	table := map[string]string{}
	read := 0
	next := map[int32]int64{}
	for {
		done := true
		for p, end := range ends {
			if next[p] < end {
				done = false
			}
		}
		if done {
			return table, read
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("restoring %s: read to %v of %v: %v", topic, next, ends, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			read++
			if r.Value == nil {
				delete(table, string(r.Key))
			} else {
				table[string(r.Key)] = string(r.Value)
			}
		})
	}
}

// TestCompactionMillionUpdates: a changelog with 1,000,000 updates to
// 10,000 keys (100,000 to 1,000 under the race detector), 100 of them
// deleted at the end, compacts to about one record per key; a store
// restored from it before and after compaction, and after a restart,
// equals the table.
func TestCompactionMillionUpdates(t *testing.T) {
	updates, keys := 1_000_000, 10_000
	if raceEnabled {
		updates, keys = 100_000, 1_000
	}
	dir := t.TempDir()
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	zero := "0"
	createCompacted(t, b.Addr(), "changelog", map[string]*string{"delete.retention.ms": &zero})

	want := map[string]string{}
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("changelog"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var failed error
	var mu sync.Mutex
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			failed = err
			mu.Unlock()
		}
	}
	for i := range updates {
		k := fmt.Sprintf("k%05d", i%keys)
		v := strconv.Itoa(i)
		want[k] = v
		cl.Produce(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}, done)
	}
	for i := range 100 {
		k := fmt.Sprintf("k%05d", i*7)
		delete(want, k)
		cl.Produce(ctx, &kgo.Record{Key: []byte(k)}, done)
	}
	if err := cl.Flush(ctx); err != nil || failed != nil {
		t.Fatalf("producing: %v %v", err, failed)
	}
	// One more update in a batch of its own: compaction never cleans a
	// partition's last batch (Kafka: its active segment), and a live
	// changelog's last batch is one commit's worth, not a bulk load's.
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("last"), Value: []byte("1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want["last"] = "1"

	start := time.Now()
	got, before := restoreTable(t, b.Addr(), "changelog")
	restoreBefore := time.Since(start)
	if !maps.Equal(got, want) {
		t.Fatalf("restored before compaction: %d keys, want %d", len(got), len(want))
	}
	if ran, err := b.compactNow(ctx); !ran || err != nil {
		t.Fatalf("cleaner round: ran %v, %v", ran, err)
	}
	start = time.Now()
	got, after := restoreTable(t, b.Addr(), "changelog")
	restoreAfter := time.Since(start)
	if !maps.Equal(got, want) {
		t.Fatalf("restored after compaction: %d keys, want %d", len(got), len(want))
	}
	t.Logf("%d updates to %d keys: restore read %d records in %v before compaction, %d in %v after",
		updates+101, keys, before, restoreBefore, after, restoreAfter)
	if after != len(want) {
		t.Fatalf("%d records after compaction for %d live keys", after, len(want))
	}

	b.Close()
	b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	defer b.Close()
	got, restarted := restoreTable(t, b.Addr(), "changelog")
	if !maps.Equal(got, want) || restarted != after {
		t.Fatalf("after a restart: %d keys from %d records, want %d keys from %d", len(got), restarted, len(want), after)
	}
}

// TestTombstonesRemovedAfterDeleteRetention: with delete.retention.ms=0 a
// compacted key's tombstone is removed with the key's records; with the
// default (a day) the tombstone stays, so a reader that was behind still
// learns of the delete.
func TestTombstonesRemovedAfterDeleteRetention(t *testing.T) {
	for _, retention := range []string{"0", ""} {
		t.Run("delete.retention.ms="+retention, func(t *testing.T) {
			b := startBroker(t, Config{Addr: "127.0.0.1:0"})
			defer b.Close()
			var cfg map[string]*string
			if retention != "" {
				cfg = map[string]*string{"delete.retention.ms": &retention}
			}
			createCompacted(t, b.Addr(), "c", cfg)
			cl := newClient(t, b.Addr())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for _, r := range []*kgo.Record{kv("c", "a", "1"), kv("c", "a", ""), kv("c", "b", "1"), kv("c", "b", "2"), kv("c", "z", "1")} {
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			if ran, err := b.compactNow(ctx); !ran || err != nil {
				t.Fatalf("cleaner round: ran %v, %v", ran, err)
			}
			table, read := restoreTable(t, b.Addr(), "c")
			// The last batch (z) is never compacted, so b=2 is
			// cleanable.
			wantRead := 2 // b=2, z=1
			if retention == "" {
				wantRead = 3 // a's tombstone too
			}
			if read != wantRead || !maps.Equal(table, map[string]string{"b": "2", "z": "1"}) {
				t.Fatalf("after compaction: %d records, table %v; want %d records, table {b: 2, z: 1}", read, table, wantRead)
			}
		})
	}
}

// TestRetentionBytes: a delete-policy topic with retention.bytes keeps
// its newest batches within the limit after a cleaner round, the oldest
// are gone for readers, also after a restart.
func TestRetentionBytes(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	limit := "2000"
	adm := kadm.NewClient(newClient(t, b.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.bytes": &limit}, "r"); err != nil || resp.Err != nil {
		t.Fatalf("creating r: %v %v", err, resp.Err)
	}
	var values []string
	for i := range 40 {
		random := make([]byte, 100)
		rand.Read(random) // incompressible: retention counts stored bytes
		values = append(values, fmt.Sprintf("%02d%x", i, random))
	}
	produceEach(t, b.Addr(), "r", 0, values...) // 40 batches of about 270 bytes
	if ran, err := b.compactNow(ctx); !ran || err != nil {
		t.Fatalf("cleaner round: ran %v, %v", ran, err)
	}
	got := consume(t, b.Addr(), "r", kgo.ReadUncommitted(), 40, 2*time.Second)
	if len(got) == 0 || len(got) > 8 || got[len(got)-1] != values[39] {
		t.Fatalf("after retention: %d records (last %.2s); want the newest few, at most 2000 bytes", len(got), got[len(got)-1])
	}
	if !slices.Equal(got, values[40-len(got):]) {
		t.Fatalf("retention kept records out of order or with gaps")
	}

	// The retained log is what a restart finds.
	b.Close()
	b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	defer b.Close()
	if after := consume(t, b.Addr(), "r", kgo.ReadUncommitted(), 40, 2*time.Second); !slices.Equal(after, got) {
		t.Fatalf("after a restart: %d records, want the %d retention kept", len(after), len(got))
	}
}

// TestCompactionUnderTransactionalLoad: two transactional producers commit
// small transactions back to back to a compacted topic, as stream threads
// do to their changelogs, while the cleaner runs rounds. Every round gets
// its moment without an open transaction and cleans, the producers only
// ever see retriable waits, and the compacted topic restores to exactly
// the last committed value per key.
func TestCompactionUnderTransactionalLoad(t *testing.T) {
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	defer b.Close()
	createCompacted(t, b.Addr(), "cl", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const txns, perTxn = 150, 10
	want := make([]map[string]string, 2)
	errs := make(chan error, 2)
	stop := make(chan struct{})
	for w := range 2 {
		want[w] = map[string]string{}
		p := newClient(t, b.Addr(), kgo.TransactionalID(fmt.Sprintf("thread-%d", w)), kgo.DefaultProduceTopic("cl"))
		go func() {
			for i := range txns {
				if err := p.BeginTransaction(); err != nil {
					errs <- err
					return
				}
				for j := range perTxn {
					k := fmt.Sprintf("w%d-k%d", w, (i*perTxn+j)%37)
					v := fmt.Sprintf("%d", i*perTxn+j)
					want[w][k] = v
					p.Produce(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}, nil)
				}
				if err := p.Flush(ctx); err != nil {
					errs <- err
					return
				}
				if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
					errs <- fmt.Errorf("transaction %d of thread %d: %w", i, w, err)
					return
				}
			}
			errs <- nil
		}()
	}
	rounds := 0
	go func() {
		defer close(stop)
		for range 3 {
			ran, err := b.compactNow(ctx)
			if err != nil || !ran {
				t.Errorf("cleaner round under load: ran %v, %v", ran, err)
				return
			}
			rounds++
		}
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	<-stop
	if ran, err := b.compactNow(ctx); !ran || err != nil {
		t.Fatalf("final cleaner round: ran %v, %v", ran, err)
	}
	all := map[string]string{}
	maps.Copy(all, want[0])
	maps.Copy(all, want[1])
	got, read := restoreTable(t, b.Addr(), "cl")
	if !maps.Equal(got, all) {
		t.Fatalf("restored %d keys, want %d: the compacted changelog lost or reverted a committed value", len(got), len(all))
	}
	t.Logf("%d cleaner rounds during %d transactions; %d records left of %d written", rounds+1, 2*txns, read, 2*txns*perTxn)
	if read > 2*txns*perTxn/2 {
		t.Fatalf("%d records left of %d: compaction did not run", read, 2*txns*perTxn)
	}
}

// TestCompactionInterruptedByCrash: kfake rewrites a partition when it
// compacts it, deleting the old files first. A crash in the middle of that
// leaves the start to find the old files saved (precompact/) beside a
// partial rewrite: the broker puts the old log back, nothing lost. A crash
// after the rewrite finished keeps the new files.
func TestCompactionInterruptedByCrash(t *testing.T) {
	for _, finished := range []bool{false, true} {
		t.Run(fmt.Sprintf("rewrite finished=%v", finished), func(t *testing.T) {
			dir := t.TempDir()
			b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
			createCompacted(t, b.Addr(), "c", nil)
			var want []string
			for i := range 20 {
				want = append(want, fmt.Sprintf("v%02d", i))
			}
			produceEach(t, b.Addr(), "c", 0, want...) // distinct values, one key each
			b.Close()

			// What a crash in the middle of kfake's rebuildSegments
			// leaves: the round's saved links, the old files
			// deleted, a new segment with only the first batches.
			pdir := partitionDir(dir, "c", 0)
			if err := savePartition(pdir); err != nil {
				t.Fatal(err)
			}
			if !finished {
				raw, err := os.ReadFile(filepath.Join(pdir, "0.dat"))
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{"0.dat", "0.idx"} {
					if err := os.Remove(filepath.Join(pdir, f)); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(pdir, "0.dat"), raw[:len(raw)/2], 0o644); err != nil {
					t.Fatal(err)
				}
			}

			var logs lockedBuffer
			b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			defer b.Close()
			if got := consume(t, b.Addr(), "c", kgo.ReadUncommitted(), len(want), 5*time.Second); !slices.Equal(got, want) {
				t.Fatalf("after the crash: %v, want %v", got, want)
			}
			if restored := strings.Contains(logs.String(), "restored a partition's log"); restored == finished {
				t.Errorf("restored the saved log: %v; want %v", restored, !finished)
			}
			if _, err := os.Stat(filepath.Join(pdir, precompactDir)); !os.IsNotExist(err) {
				t.Errorf("saved files left behind: %v", err)
			}
		})
	}
}

// TestCleanerCompactsOnlyDirtyLogs: kfake rewrites a compacted partition
// whole whenever it compacts, so the background cleaner compacts only when
// a partition has grown by half its size (and 1 MiB) since it last did, as
// Kafka's min.cleanable.dirty.ratio: a changelog that barely changed is not
// rewritten every round.
func TestCleanerCompactsOnlyDirtyLogs(t *testing.T) {
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	defer b.Close()
	createCompacted(t, b.Addr(), "c", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("c"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	produce := func(n int) {
		for i := range n {
			cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % 100)), Value: make([]byte, 1000)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	round := func(want bool, what string) {
		t.Helper()
		ran, err := b.cleaner.round(ctx, false)
		if err != nil || ran != want {
			t.Fatalf("%s: cleaner round ran %v (%v), want %v", what, ran, err, want)
		}
	}
	produce(200) // 200 kB: not worth a rewrite
	round(false, "small log")
	produce(3000) // 3 MB more, mostly superseded
	// A last batch of its own: compaction never cleans a partition's
	// last batch.
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("last")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	round(true, "grown by 3 MB")
	if _, n := restoreTable(t, b.Addr(), "c"); n > 101 {
		t.Fatalf("%d records after compaction of 101 keys", n)
	}
	round(false, "unchanged since")
	produce(100)
	round(false, "grown by 100 kB")
}

// TestOldTimestampsOutliveCleaner: records whose timestamps are years old
// (a replay of history, the Nexmark generator's 2024 event times) stay in
// a topic without retention.ms and in a compacted topic through a cleaner
// round; only a topic that sets retention.ms loses them. kfake applies a
// default retention.ms of 7 days to every topic, compacted ones included,
// whenever the cleaner runs, and so emptied the input, output and
// changelog topics of such a replay at the first round.
func TestOldTimestampsOutliveCleaner(t *testing.T) {
	b := startBroker(t, Config{Addr: "127.0.0.1:0"})
	defer b.Close()
	adm := kadm.NewClient(newClient(t, b.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	day := "86400000"
	for topic, cfg := range map[string]map[string]*string{"plain": nil, "limited": {"retention.ms": &day}} {
		if resp, err := adm.CreateTopic(ctx, 1, 1, cfg, topic); err != nil || resp.Err != nil {
			t.Fatalf("creating %s: %v %v", topic, err, resp.Err)
		}
	}
	createCompacted(t, b.Addr(), "compacted", nil)
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	cl := newClient(t, b.Addr())
	for _, topic := range []string{"plain", "compacted", "limited"} {
		for i, k := range []string{"a", "b", "a", "c"} { // c: compaction keeps the last batch

			r := kv(topic, k, strconv.Itoa(i))
			r.Timestamp = old.Add(time.Duration(i) * time.Second)
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ran, err := b.compactNow(ctx); !ran || err != nil {
		t.Fatalf("cleaner round: ran %v, %v", ran, err)
	}
	for topic, want := range map[string][]string{"plain": {"0", "1", "2", "3"}, "compacted": {"1", "2", "3"}} {
		if got := consume(t, b.Addr(), topic, kgo.ReadCommitted(), len(want), 3*time.Second); !slices.Equal(got, want) {
			t.Errorf("%s after a cleaner round: %q, want %q", topic, got, want)
		}
	}
	if got := consume(t, b.Addr(), "limited", kgo.ReadCommitted(), 1, 2*time.Second); len(got) != 0 {
		t.Errorf("limited (retention.ms a day) after a cleaner round: %q, want its records of 2024 gone", got)
	}
}
