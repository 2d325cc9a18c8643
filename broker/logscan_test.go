package broker

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// windowView is a sequence window in a comparable form: epoch, next
// sequence and the batches oldest first.
type windowView struct {
	Epoch   int16
	NextSeq int32
	Batches [seqWindowSize]kfakeWindowSeq
	Count   uint8
}

func readWindows(t *testing.T, dir string) map[producerPartition]windowView {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, kfakeSeqWindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	var f kfakeSeqWindows
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != kfakeVersion {
		t.Fatalf("%s version %d, want %d", kfakeSeqWindowsFile, f.Version, kfakeVersion)
	}
	out := map[producerPartition]windowView{}
	for _, w := range f.Windows {
		v := windowView{Epoch: w.Epoch, NextSeq: w.NextSeq, Count: w.Count}
		start := 0
		if w.Count == seqWindowSize {
			start = int(w.At) // the oldest entry of a full ring
		}
		for i := range int(w.Count) {
			v.Batches[i] = w.Entries[(start+i)%seqWindowSize]
		}
		out[producerPartition{w.PID, w.Topic, w.Part}] = v
	}
	return out
}

// TestProducerStateFromLogMatchesKfakes pins kfake's formats this package
// reads and writes (segments, seq_windows.json): the producer state the
// start-up scan rebuilds from the log equals the state kfake itself saves
// on a clean shutdown, for idempotent producers with full and partial
// windows and a transactional producer. If a kfake upgrade changes a
// format, this fails instead of producer state silently not loading.
func TestProducerStateFromLogMatchesKfakes(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	createTopic(t, b.Addr(), "w", 2)
	produceEach(t, b.Addr(), "w", 0, seq("a", 12)...) // a full window, wrapped
	produceEach(t, b.Addr(), "w", 1, seq("b", 3)...)  // a partial one
	produceEach(t, b.Addr(), "w", 1, seq("c", 2)...)  // another producer
	produceTxn(t, b.Addr(), "tx", true, rec("w", 0, "t1"), rec("w", 1, "t2"))
	b.Close()

	kfakes := readWindows(t, dir)
	if len(kfakes) != 5 {
		t.Fatalf("kfake saved %d windows, want 5 (3 idempotent producers, one transactional on 2 partitions): %+v", len(kfakes), kfakes)
	}
	if err := os.Remove(filepath.Join(dir, cleanMarkerFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after Close: %v", err)
	}
	rep, err := scanDataDir(dir, true, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ours := readWindows(t, dir)
	if rep.Producers != 5 || !maps.Equal(ours, kfakes) {
		t.Fatalf("rebuilt from the log (%d windows):\n%+v\nkfake saved:\n%+v", rep.Producers, ours, kfakes)
	}

	// kfake loads what the scan wrote: a retry of the last batch of a
	// producer is a duplicate, not stored again.
	b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	defer b.Close()
	want := append(append(seq("a", 12), "t1"), append(append(seq("b", 3), seq("c", 2)...), "t2")...)
	if got := consume(t, b.Addr(), "w", kgo.ReadCommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
		t.Fatalf("after restart: %v, want %v", got, want)
	}
}

// TestScanWindowAfterCompactionGap: compaction can drop a producer's last
// records from its latest batch, so that batch no longer tells the last
// sequence; the scan then restores no window for that producer (kfake
// accepts its next batch as it comes) rather than one that would refuse
// the producer's next batch as out of order. A batch not followed by a gap
// keeps its window, with the last sequence from its last offset delta.
func TestScanWindowAfterCompactionGap(t *testing.T) {
	sc := &logScanner{windows: map[producerPartition]*seqWindow{}, open: map[int64]pidEpochFirst{}}
	batch := func(pid int64, first int64, lastDelta, n int32, seq int32) *kmsg.RecordBatch {
		return &kmsg.RecordBatch{FirstOffset: first, LastOffsetDelta: lastDelta, NumRecords: n,
			ProducerID: pid, FirstSequence: seq}
	}
	sc.observe("t", 0, batch(1, 0, 4, 5, 0))  // pid 1: offsets 0-4, seq 0-4
	sc.observe("t", 0, batch(2, 5, 2, 2, 0))  // pid 2: offsets 5-7 with 6 compacted away: seq 0-2
	sc.observe("t", 0, batch(1, 10, 0, 1, 8)) // gap 8-9 after pid 2's batch; pid 1 seq 8
	w1, w2 := sc.windows[producerPartition{1, "t", 0}], sc.windows[producerPartition{2, "t", 0}]
	if w1.unsure || w1.entries[len(w1.entries)-1].next != 9 {
		t.Errorf("pid 1: unsure %v, next %d; want sure, next 9", w1.unsure, w1.entries[len(w1.entries)-1].next)
	}
	if !w2.unsure || w2.entries[0].next != 3 {
		t.Errorf("pid 2: unsure %v, next %d; want unsure (gap after its batch), next 3 from the offset delta", w2.unsure, w2.entries[0].next)
	}
}
