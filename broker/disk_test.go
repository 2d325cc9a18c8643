package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
)

// lockedBuffer collects log output from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// produceEach produces each value as its own batch (ProduceSync one at a
// time) to topic/partition.
func produceEach(t testing.TB, addr, topic string, partition int32, values ...string) {
	t.Helper()
	cl := newClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, rec(topic, partition, v)).FirstErr(); err != nil {
			t.Fatalf("producing %s: %v", v, err)
		}
	}
	cl.Close()
}

func seq(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// TestTornTailsCutAtStart: a segment whose last batch was torn (the file
// ends inside it) or corrupted (its CRC fails), and a state log with a torn
// last entry, as a power loss leaves them. The broker starts, cuts each
// file back to its last valid batch or entry, logs how much it cut, keeps
// every valid record, and appends after them; the next start finds
// nothing to cut.
func TestTornTailsCutAtStart(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	createTopic(t, b.Addr(), "t", 2)
	produceEach(t, b.Addr(), "t", 0, seq("a", 10)...)
	produceEach(t, b.Addr(), "t", 1, seq("b", 10)...)
	b.Close()

	seg0 := filepath.Join(dir, "partitions", "t-0", "0.dat")
	seg1 := filepath.Join(dir, "partitions", "t-1", "0.dat")
	st0, err := os.Stat(seg0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg0, st0.Size()-7); err != nil { // torn: ends inside a0's successor a9
		t.Fatal(err)
	}
	raw, err := os.ReadFile(seg1)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-3] ^= 0xff // corrupted: b9's CRC fails
	if err := os.WriteFile(seg1, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, kfakePIDsLog), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{40, 0, 0, 0, 1, 2}) // a torn entry header
	f.Close()

	var logs lockedBuffer
	b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var cutFiles []string
	for _, c := range b.logScan.Cut {
		cutFiles = append(cutFiles, c.File)
		if c.Cut <= 0 || c.Batches != 9 && c.File != kfakePIDsLog {
			t.Errorf("cut %+v: want 9 valid batches kept and a positive cut", c)
		}
	}
	slices.Sort(cutFiles)
	if want := []string{filepath.Join("partitions", "t-0", "0.dat"), filepath.Join("partitions", "t-1", "0.dat"), kfakePIDsLog}; !slices.Equal(cutFiles, want) {
		t.Errorf("cut %v, want %v", cutFiles, want)
	}
	for _, want := range []string{"cut a torn or corrupted segment tail", "reason=\"CRC mismatch\"", "reason=\"incomplete batch\"", "cut a torn tail off a state log"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	produceEach(t, b.Addr(), "t", 0, "a-new")
	produceEach(t, b.Addr(), "t", 1, "b-new")
	want := append(append(seq("a", 9), "a-new"), append(seq("b", 9), "b-new")...)
	if got := consume(t, b.Addr(), "t", kgo.ReadUncommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
		t.Fatalf("after the cut: got %v, want %v", got, want)
	}
	b.Close()

	b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	defer b.Close()
	if len(b.logScan.Cut) != 0 {
		t.Errorf("second start cut again: %+v", b.logScan.Cut)
	}
	if got := consume(t, b.Addr(), "t", kgo.ReadUncommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
		t.Fatalf("after a second restart: got %v, want %v", got, want)
	}
}

// TestDataDirNotADirectory: a data directory that cannot be one is a clear
// error from Start, not a crash.
func TestDataDirNotADirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Config{Addr: "127.0.0.1:0", DataDir: path, Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Start on a file as data dir: %v; want an error naming it", err)
	}
}

// TestFullDisk: on a file system that fills up, produces fail with
// KAFKA_STORAGE_ERROR and an error in the log, nothing is lost or stored
// twice, and once space returns the broker accepts produces again. It
// mounts a small tmpfs, so it needs root.
func TestFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		testtool.Missing(t, "cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "data")

	var logs lockedBuffer
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer b.Close()
	createTopic(t, b.Addr(), "big", 1)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	value := make([]byte, 64<<10)
	rand.Read(value) // incompressible
	cl := newClient(t, b.Addr(), kgo.RecordRetries(2), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MetadataMinAge(50*time.Millisecond)) // franz-go refreshes metadata before retrying a storage error
	var acked []string
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		v := fmt.Sprintf("%04d", i)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "big", Key: []byte(v), Value: value}).FirstErr()
		switch {
		case err == nil:
			acked = append(acked, v)
		case errors.Is(err, kerr.KafkaStorageError):
			full = err
		default:
			t.Fatalf("record %d: %v; want success or KAFKA_STORAGE_ERROR", i, err)
		}
	}
	if full == nil {
		t.Fatalf("100 records of 64 KiB on a 2 MiB disk: no KAFKA_STORAGE_ERROR")
	}
	if !strings.Contains(logs.String(), "storage unusable") || !strings.Contains(logs.String(), "disk full") {
		t.Fatalf("log lacks the storage error:\n%s", logs.String())
	}
	t.Logf("disk full after %d records: %v", len(acked), full)

	// Space returns: a retrying producer gets through.
	if out, err := exec.Command("mount", "-o", "remount,size=32m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v %s", err, out)
	}
	retrying := newClient(t, b.Addr(), kgo.MetadataMinAge(50*time.Millisecond))
	if err := retrying.ProduceSync(ctx, &kgo.Record{Topic: "big", Key: []byte("after"), Value: value}).FirstErr(); err != nil {
		t.Fatalf("after space returned: %v", err)
	}
	acked = append(acked, "after")
	if !strings.Contains(logs.String(), "storage usable again") {
		t.Errorf("log lacks the recovery line")
	}

	rc := newClient(t, b.Addr(), kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(acked) {
		fs := rc.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)) })
	}
	if !slices.Equal(got, acked) {
		t.Fatalf("stored %v, acknowledged %v", got, acked)
	}
}

// TestInodesExhausted: a file system out of inodes (free bytes left, but
// no new file can be created, as a new partition's first write needs)
// refuses produces with KAFKA_STORAGE_ERROR, never an unexplained error,
// and recovers when inodes return. Needs root, as TestFullDisk.
func TestInodesExhausted(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m,nr_inodes=64", "tmpfs", mnt).CombinedOutput(); err != nil {
		testtool.Missing(t, "cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	var logs lockedBuffer
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: filepath.Join(mnt, "data"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer b.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClient(t, b.Addr(), kgo.RecordRetries(2), kgo.MetadataMinAge(50*time.Millisecond))
	var acked []string
	var full error
	for i := 0; i < 64 && full == nil; i++ {
		topic := fmt.Sprintf("t%02d", i)
		createTopic(t, b.Addr(), topic, 1)
		err := cl.ProduceSync(ctx, rec(topic, 0, topic)).FirstErr()
		switch {
		case err == nil:
			acked = append(acked, topic)
		case errors.Is(err, kerr.KafkaStorageError):
			full = err
		default:
			t.Fatalf("topic %s: %v; want success or KAFKA_STORAGE_ERROR", topic, err)
		}
	}
	if full == nil || !strings.Contains(logs.String(), "inodes free") {
		t.Fatalf("64 new partitions on a file system with 64 inodes: error %v; log:\n%s", full, logs.String())
	}
	t.Logf("out of inodes after %d partitions: %v", len(acked), full)

	if out, err := exec.Command("mount", "-o", "remount,nr_inodes=4096", mnt).CombinedOutput(); err != nil {
		t.Fatalf("adding inodes: %v %s", err, out)
	}
	retrying := newClient(t, b.Addr(), kgo.MetadataMinAge(50*time.Millisecond))
	createTopic(t, b.Addr(), "after", 1)
	if err := retrying.ProduceSync(ctx, rec("after", 0, "after")).FirstErr(); err != nil {
		t.Fatalf("after inodes returned: %v", err)
	}
	for _, topic := range append(acked, "after") {
		if got := consume(t, b.Addr(), topic, kgo.ReadUncommitted(), 1, 10*time.Second); len(got) != 1 {
			t.Fatalf("%s holds %v, want its one acknowledged record", topic, got)
		}
	}
}

// TestDataDirReadOnly: a data directory on a read-only file system is a
// clear error from Start, naming the directory, not a crash and not a
// broker that takes records it cannot keep. Needs root, as TestFullDisk.
func TestDataDirReadOnly(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		testtool.Missing(t, "cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "data")
	_, err := Start(context.Background(), Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("Start on a read-only file system: %v; want an error naming %s and saying read-only", err, dir)
	}
}

// TestIndexEntryLostInCrash: kfake writes a batch to its segment, then the
// batch's entry to the index; a crash between the two writes leaves a
// transaction's last batch without an entry. The scan writes the entry
// again, so that kfake counts the batch in the open transaction and the
// repair's abort hides it: without that, kfake loaded the batch as not
// transactional, listed no aborted transaction for it, and read_committed
// readers saw the aborted records.
func TestIndexEntryLostInCrash(t *testing.T) {
	dir, addr, bp := startBrokerProcess(t, "x")
	ctx := context.Background()
	txn := func(addr string) *kgo.Client {
		cl := newClient(t, addr, kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("x"))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := txn(addr)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The crash: the process dies with the transaction open, and its
	// last index entry unwritten.
	bp.kill()
	cl.Close()
	idx := filepath.Join(dir, "partitions", "x-0", "0.idx")
	st, err := os.Stat(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(idx, st.Size()-kfakeIndexEntry); err != nil {
		t.Fatal(err)
	}

	var logs lockedBuffer
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer b.Close()
	if b.logScan.IndexEntries != 1 || !strings.Contains(logs.String(), "wrote index entries a crash left unwritten") {
		t.Errorf("index entries written: %d, want 1; log:\n%s", b.logScan.IndexEntries, logs.String())
	}
	if len(b.repair.Aborted) != 1 {
		t.Errorf("repair aborted %+v, want the open transaction", b.repair.Aborted)
	}
	cl = txn(b.Addr())
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	want := []string{"committed", "after"}
	if got := consume(t, b.Addr(), "x", kgo.ReadCommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
		t.Fatalf("read_committed after the crash: got %v, want %v", got, want)
	}
}
