package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/state"
)

// TestRestoreKilled checks that restoring a table's store (written
// without RocksDB's WAL until the end) that is killed with SIGKILL midway
// still ends, after a restart, with every row right: first a restore from
// nothing (the state directory removed), then a restore from an old
// checkpoint over a store that already holds the rows (the checkpoint
// rewritten to offset 0), each killed while it runs; then a restore from
// nothing killed as soon as it has ended. The server runs under a small
// memory limit, so each partition's restore is written as two ingested
// files (4 MiB chunks) and a kill can land between them.
func TestRestoreKilled(t *testing.T) {
	s := startServer(t, "--memory-limit", "256MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn := connect(t, ctx, s)
	if _, err := conn.Exec(ctx, "CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR) WITH (KAFKA_TOPIC='big', VALUE_FORMAT='JSON', PARTITIONS=2)"); err != nil {
		t.Fatal(err)
	}
	const keys = 400_000
	want := make(map[int32]string, keys)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.DefaultProduceTopic("big"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }
	var recs []*kgo.Record
	flush := func() {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		recs = recs[:0]
	}
	for i := 0; i < keys; i++ {
		recs = append(recs, &kgo.Record{Key: key(i), Value: fmt.Appendf(nil, `{"V":"v%d"}`, i)})
		want[int32(i)] = fmt.Sprintf("v%d", i)
		if len(recs) == 20_000 {
			flush()
		}
	}
	// Updates and deletes after the first writes of their keys.
	for i := 0; i < keys; i += 97 {
		if i%2 == 0 {
			recs = append(recs, &kgo.Record{Key: key(i), Value: fmt.Appendf(nil, `{"V":"w%d"}`, i)})
			want[int32(i)] = fmt.Sprintf("w%d", i)
		} else {
			recs = append(recs, &kgo.Record{Key: key(i)})
			delete(want, int32(i))
		}
	}
	flush()
	cl.Close()

	check := func(stage string) {
		t.Helper()
		var got map[int32]string
		for deadline := time.Now().Add(3 * time.Minute); ; {
			got = map[int32]string{}
			rows, err := conn.Query(ctx, "SELECT id, v FROM big")
			if err == nil {
				for rows.Next() {
					var id int32
					var v string
					if err := rows.Scan(&id, &v); err != nil {
						t.Fatal(err)
					}
					got[id] = v
				}
				err = rows.Err()
			}
			if err == nil && len(got) == len(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d rows (%v), want %d", stage, len(got), err, len(want))
			}
			time.Sleep(200 * time.Millisecond)
		}
		for id, v := range want {
			if got[id] != v {
				t.Fatalf("%s: row %d is %q, want %q", stage, id, got[id], v)
			}
		}
	}
	check("before any restore")

	stateDir := filepath.Join(s.DataDir, "state")
	restored := func() int { return strings.Count(s.Log(), "store restored") }
	// killMidRestore restarts the server after prepare and kills it while
	// the store restores, trying shorter delays if a restore finished
	// first; it reports whether a kill landed before the restore ended.
	killMidRestore := func(stage string, prepare func()) {
		t.Helper()
		for _, delay := range []time.Duration{300 * time.Millisecond, 100 * time.Millisecond, 0} {
			if err := s.Stop(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			prepare()
			before := restored()
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(delay)
			mid := restored() == before
			s.Kill()
			if mid && restored() == before {
				t.Logf("%s: killed %v after the restart, before the store's restore ended", stage, delay)
				if err := s.Restart(); err != nil {
					t.Fatal(err)
				}
				conn = connect(t, ctx, s)
				return
			}
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
		}
		t.Errorf("%s: every restore ended before the kill", stage)
		conn = connect(t, ctx, s)
	}

	killMidRestore("restore from nothing", func() {
		if err := os.RemoveAll(stateDir); err != nil {
			t.Fatal(err)
		}
	})
	check("after a restore from nothing was killed")

	killMidRestore("restore from an old checkpoint", func() {
		n := 0
		err := filepath.WalkDir(stateDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.Name() != "checkpoint" || !strings.Contains(path, "BIG") {
				return err
			}
			cp, err := state.ReadCheckpoint(path)
			if err != nil {
				return err
			}
			for k := range cp {
				cp[k] = 0
			}
			n++
			return state.WriteCheckpoint(path, cp)
		})
		if err != nil || n == 0 {
			t.Fatalf("rewriting the checkpoints: %v (%d found)", err, n)
		}
	})
	check("after a restore from an old checkpoint was killed")

	// Killed right after a restore ended: what it wrote without the WAL
	// must be on disk before its checkpoint says so.
	if err := s.Stop(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(stateDir); err != nil {
		t.Fatal(err)
	}
	before := restored()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	for restored() == before {
		if ctx.Err() != nil {
			t.Fatal("the store never finished restoring")
		}
		time.Sleep(time.Millisecond)
	}
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = connect(t, ctx, s)
	check("after a kill right after a restore ended")
}
