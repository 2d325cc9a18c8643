package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Storage faults. kfake answers a produce whose segment write fails with
// UNKNOWN_SERVER_ERROR, after it has already recorded the batch's sequence
// in the producer's window, so a retry of that batch would be answered as
// a duplicate of a record that was never stored. The broker therefore
// refuses produces itself, with KAFKA_STORAGE_ERROR (retriable: clients
// keep retrying and succeed once the disk is back), before kfake touches
// the window, whenever
//
//   - the file system holding the data directory has less free space than
//     the reserve plus twice the request's size, or fewer free inodes than
//     the inode reserve (a new partition's first write creates files);
//     checked per produce request, one statfs call; or
//   - kfake has logged a failed write (a read-only or otherwise unwritable
//     data directory, an I/O error), until a probe write succeeds again.
//
// While refusing, a probe writes, fsyncs and removes a small file in the
// data directory every second; the first success ends the refusal. Both
// transitions are logged, the first as an error naming the cause.

// storageProbeInterval is how often a refusing broker probes the disk.
const storageProbeInterval = time.Second

// storageMaxReserve caps the free space a broker keeps in reserve; the
// reserve is 1% of the file system, at most this.
const storageMaxReserve = 64 << 20

// The inode reserve is 1% of the file system's inodes, within these bounds.
const (
	storageMinInodes = 8
	storageMaxInodes = 1024
)

type storage struct {
	dir string
	log *slog.Logger

	mu      sync.Mutex
	reason  string       // non-empty while refusing produces
	reserve uint64       // bytes
	inodes  uint64       // inode reserve
	lastReq kmsg.Request // the request refuse decided last, and how
	lastRes bool
	probing bool
	stop    chan struct{}
}

func newStorage(dir string, log *slog.Logger) *storage {
	s := &storage{dir: dir, log: log, stop: make(chan struct{})}
	if d, err := diskSpace(dir); err == nil {
		s.reserve = min(d.total/100, storageMaxReserve)
		s.inodes = max(storageMinInodes, min(d.files/100, storageMaxInodes))
	}
	return s
}

// install makes c refuse produces while the storage is unusable.
func (s *storage) install(c *kfake.Cluster) {
	c.Fault(kfake.Fault{
		Keys:  []kmsg.Key{kmsg.Produce},
		Err:   kerr.KafkaStorageError,
		Count: -1,
		When:  s.refuse,
	})
}

// refuse reports whether req must be refused; it runs on kfake's goroutine
// once per partition of a request, and decides once per request.
func (s *storage) refuse(req kmsg.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req == s.lastReq {
		return s.lastRes
	}
	s.lastReq = req
	s.lastRes = s.reason != ""
	if s.lastRes {
		return true
	}
	var size uint64
	if pr, ok := req.(*kmsg.ProduceRequest); ok {
		for _, t := range pr.Topics {
			for _, p := range t.Partitions {
				size += uint64(len(p.Records))
			}
		}
	}
	d, err := diskSpace(s.dir)
	switch {
	case err != nil:
	case d.free < s.reserve+2*size:
		s.failLocked(fmt.Sprintf("disk full: %d bytes free under %s, the broker keeps %d in reserve", d.free, s.dir, s.reserve))
		s.lastRes = true
	case d.files > 0 && d.ffree < s.inodes:
		s.failLocked(fmt.Sprintf("disk full: %d inodes free under %s, the broker keeps %d in reserve", d.ffree, s.dir, s.inodes))
		s.lastRes = true
	}
	return s.lastRes
}

// failed is called with kfake's log line when it could not write.
func (s *storage) failed(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason == "" {
		s.failLocked(msg)
	}
}

func (s *storage) failLocked(reason string) {
	s.reason = reason
	s.log.Error("broker: storage unusable; refusing produce requests with KAFKA_STORAGE_ERROR until it recovers", "data_dir", s.dir, "cause", reason)
	if !s.probing {
		s.probing = true
		go s.probe()
	}
}

// probe tests the disk every storageProbeInterval until it is usable again.
func (s *storage) probe() {
	t := time.NewTicker(storageProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		err := s.tryWrite()
		s.mu.Lock()
		if err == nil {
			s.log.Info("broker: storage usable again; accepting produce requests", "data_dir", s.dir, "was", s.reason)
			s.reason, s.probing, s.lastReq = "", false, nil
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// tryWrite writes, syncs and removes a probe file, and checks free space.
func (s *storage) tryWrite() error {
	path := filepath.Join(s.dir, ".storage-probe")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, 64<<10))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	os.Remove(path)
	if err != nil {
		return err
	}
	if d, err := diskSpace(s.dir); err == nil && (d.free < 2*s.reserve || d.files > 0 && d.ffree < 2*s.inodes) {
		return errors.New("free space or inodes still below twice the reserve")
	}
	return nil
}

func (s *storage) close() { close(s.stop) }

// space is what statfs says of a file system: bytes and inodes.
type space struct {
	total, free  uint64 // bytes; free is what an unprivileged user may use
	files, ffree uint64 // inodes; zero files means the file system does not say
}

// diskSpace returns the space of the file system holding dir.
func diskSpace(dir string) (space, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return space{}, err
	}
	return space{
		total: st.Blocks * uint64(st.Bsize), free: st.Bavail * uint64(st.Bsize),
		files: st.Files, ffree: st.Ffree,
	}, nil
}

// isWriteFailure reports whether a kfake log line is a failed write of
// the log or its state files (persist.go logs them at warning level).
func isWriteFailure(msg string) bool {
	return strings.HasPrefix(msg, "persist ") || strings.Contains(msg, "no space left") || strings.Contains(msg, "read-only file system")
}
