//go:build cgo

package state

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// TestIngestBatchModel checks IngestBatch against a map: batches with
// repeated keys and deletes, ingested over what the memtable and earlier
// files hold and mixed with ordinary writes, read back with Get and Range,
// and after a reopen; the temporary file is gone after each ingest.
func TestIngestBatchModel(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenRocks(dir, RocksOptions{DisableWAL: true})
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return fmt.Appendf(nil, "k%05d", rng.IntN(3000)) }
	check := func(stage string) {
		t.Helper()
		for i := 0; i < 3000; i++ {
			k := fmt.Sprintf("k%05d", i)
			v, err := db.Get([]byte(k))
			if err != nil {
				t.Fatal(err)
			}
			if want, ok := model[k]; ok != (v != nil) || string(v) != want {
				t.Fatalf("%s: %s = %q, want %q (present %v)", stage, k, v, want, ok)
			}
		}
		it, err := db.Range(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.Next() {
			if model[string(it.Key())] != string(it.Value()) {
				t.Fatalf("%s: range gives %s = %q, want %q", stage, it.Key(), it.Value(), model[string(it.Key())])
			}
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if n != len(model) {
			t.Fatalf("%s: range gives %d keys, want %d", stage, n, len(model))
		}
	}
	for round := 0; round < 8; round++ {
		// Ordinary writes between ingests: the memtable holds keys the
		// next file overrides.
		var plain Batch
		for i := 0; i < 200; i++ {
			k := key()
			v := fmt.Sprintf("plain-%d-%d", round, i)
			plain.Put(k, []byte(v))
			model[string(k)] = v
		}
		if err := db.ApplyBatchUnlogged(&plain); err != nil {
			t.Fatal(err)
		}
		var b Batch
		for i := 0; i < 5000; i++ {
			k := key()
			if rng.IntN(4) == 0 {
				b.Delete(k)
				delete(model, string(k))
				continue
			}
			v := fmt.Sprintf("ingest-%d-%d", round, i)
			b.Put(k, []byte(v))
			model[string(k)] = v
		}
		if err := db.IngestBatch(&b); err != nil {
			t.Fatal(err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "ingest-*")); len(left) > 0 {
			t.Fatalf("round %d: ingested files are still there: %v", round, left)
		}
		check(fmt.Sprintf("round %d", round))
	}
	if err := db.IngestBatch(&Batch{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = OpenRocks(dir, RocksOptions{DisableWAL: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check("after a reopen")
}

// TestOverlayApplyBulkIngests checks that a restore's batch of MinIngest
// operations or more reaches a Rocks base as an ingested file (its
// operations in order, the last on a key winning) and drops the keys the
// overlay had cached.
func TestOverlayApplyBulkIngests(t *testing.T) {
	db, err := OpenRocks(t.TempDir(), RocksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := NewOverlay(db)
	defer o.Close()
	if err := o.Put([]byte("k0"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if v, err := o.Get([]byte("k0")); err != nil || string(v) != "old" { // cached now
		t.Fatal(string(v), err)
	}
	var b Batch
	for i := 0; i < MinIngest; i++ {
		b.Put(fmt.Appendf(nil, "k%d", i%(MinIngest/2)), fmt.Appendf(nil, "v%d", i))
	}
	b.Delete([]byte("k1"))
	if err := db.FlushMemtables(); err != nil { // else the ingest flushes them, a file more
		t.Fatal(err)
	}
	before := ingestedFiles(t, db)
	if err := o.ApplyBulk(&b); err != nil {
		t.Fatal(err)
	}
	if after := ingestedFiles(t, db); after != before+1 {
		t.Fatalf("live SST files went from %d to %d; want one ingested file", before, after)
	}
	for k, want := range map[string]string{"k0": fmt.Sprint("v", MinIngest/2), "k1": "", "k2": fmt.Sprint("v", MinIngest/2+2)} {
		v, err := o.Get([]byte(k))
		if err != nil || string(v) != want || (want == "") != (v == nil) {
			t.Errorf("%s = %q %v, want %q", k, v, err, want)
		}
	}
}

// ingestedFiles counts the SST files of db's live version.
func ingestedFiles(t *testing.T, db *Rocks) int {
	t.Helper()
	return len(db.db.GetLiveFilesMetaData())
}

// TestIngestBatchLevel0Bound: with compaction held off, ingested files
// pile up in level 0 only to maxIngestL0; further batches go through the
// memtable, and every value stays right.
func TestIngestBatchLevel0Bound(t *testing.T) {
	db, err := OpenRocks(t.TempDir(), RocksOptions{DisableWAL: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.db.SetOptions([]string{"disable_auto_compactions"}, []string{"true"}); err != nil {
		t.Fatal(err)
	}
	const rounds = maxIngestL0 + 12
	for round := 0; round < rounds; round++ {
		var b Batch
		for i := 0; i < 100; i++ {
			b.Put(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "v%d", round))
		}
		if err := db.IngestBatch(&b); err != nil {
			t.Fatal(err)
		}
		if n := db.level0Files(); n > maxIngestL0 {
			t.Fatalf("round %d: %d files in level 0", round, n)
		}
	}
	// The first files went to the empty levels 6 to 1 (each overlaps
	// only the levels below it), the next ones to level 0 until the bound.
	if n := db.level0Files(); n != maxIngestL0 {
		t.Fatalf("%d files in level 0, want %d (ingested until the bound)", n, maxIngestL0)
	}
	for i := 0; i < 100; i++ {
		v, err := db.Get(fmt.Appendf(nil, "k%03d", i))
		if err != nil || string(v) != fmt.Sprint("v", rounds-1) {
			t.Fatalf("k%03d = %q %v", i, v, err)
		}
	}
}
