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
