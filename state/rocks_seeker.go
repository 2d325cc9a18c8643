//go:build cgo

package state

/*
#cgo LDFLAGS: -lrocksdb
#include <stdlib.h>
#include <string.h>
#include "rocksdb/c.h"

// sqs_pos is an entry sqs_fill did not copy, or the iterator's error.
typedef struct {
	const char* key;
	size_t klen;
	const char* val;
	size_t vlen;
	char* err;
	size_t used; // the bytes sqs_fill copied
} sqs_pos;

// sqs_below reports whether key sorts before upper (bytewise, as
// bytes.Compare); ulen 0 is no bound.
static int sqs_below(const char* key, size_t klen, const char* upper, size_t ulen) {
	if (ulen == 0) {
		return 1;
	}
	size_t n = klen < ulen ? klen : ulen;
	int c = memcmp(key, upper, n);
	return c < 0 || (c == 0 && klen < ulen);
}

// sqs_fill seeks it to key (seek set; key NULL: the first key) or leaves
// it where it stands (seek clear: on an entry a call before did not
// copy), then copies entries below upper into buf, each as its key's
// and value's lengths (4 bytes each, native order), key and value,
// stepping on while they fit in cap bytes. It returns 1 when it stopped
// on an entry that did not fit (pos->klen and pos->vlen give its size),
// 0 when the range has ended (pos->err holds the iterator's error, if
// any). pos->used is the bytes written. One cgo call for a short range.
static int sqs_fill(rocksdb_iterator_t* it, int seek, const char* key, size_t klen, const char* upper, size_t ulen,
		char* buf, size_t cap, sqs_pos* pos) {
	size_t* used = &pos->used;
	*used = 0;
	if (seek) {
		if (key) {
			rocksdb_iter_seek(it, key, klen);
		} else {
			rocksdb_iter_seek_to_first(it);
		}
	}
	for (;;) {
		if (!rocksdb_iter_valid(it)) {
			rocksdb_iter_get_error(it, &pos->err);
			return 0;
		}
		size_t kl, vl;
		const char* k = rocksdb_iter_key(it, &kl);
		if (!sqs_below(k, kl, upper, ulen)) {
			return 0;
		}
		const char* v = rocksdb_iter_value(it, &vl);
		if (kl > 0xffffffffu || vl > 0xffffffffu || *used + 8 + kl + vl > cap) {
			pos->klen = kl;
			pos->vlen = vl;
			return 1;
		}
		unsigned int l32[2] = {(unsigned int)kl, (unsigned int)vl};
		memcpy(buf + *used, l32, 8);
		memcpy(buf + *used + 8, k, kl);
		memcpy(buf + *used + 8 + kl, v, vl);
		*used += 8 + kl + vl;
		rocksdb_iter_next(it);
	}
}
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// NewSeeker implements Seekable. The seeker keeps one RocksDB iterator
// (without bounds: it checks the end itself) for as long as the store is
// not written, and opens a new one at the first Seek after a write. Its
// first Next seeks and copies the range's entries into the seeker's
// buffer while they fit (sqs_fill), so in steady state a short range is
// one cgo call, with no allocation. Close it; Close of the store frees it too.
func (r *Rocks) NewSeeker() (Seeker, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, ErrClosed
	}
	s := &rocksSeeker{r: r, pos: (*C.sqs_pos)(C.calloc(1, C.sizeof_sqs_pos)), done: true}
	r.itersMu.Lock()
	r.seekers[s] = struct{}{}
	r.itersMu.Unlock()
	return s, nil
}

type rocksSeeker struct {
	r *Rocks
	// mu guards what follows against release, which an overlay's Commit
	// calls from the writer's goroutine.
	mu  sync.Mutex
	git *grocksdb.Iterator // nil until a Seek, and after release
	it  *C.rocksdb_iterator_t
	gen uint64 // r.reads' generation when git was opened
	pos *C.sqs_pos

	lower, upper []byte // the bounds' copies; upper nil: unbounded
	lowerBuf     []byte
	upperBuf     []byte
	sought       bool // the range's first Next has run
	done         bool
	closed       bool
	key, val     []byte
	err          error
	// buf holds entries copied by fill, [off, end) those not yet
	// returned; more: the iterator stands on the next one (fill stopped
	// when buf was full), else the range ends after them (done).
	buf      []byte
	off, end int
	more     bool
}

func (s *rocksSeeker) Seek(start, end []byte) error {
	s.r.mu.RLock()
	defer s.r.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.r.closed {
		return ErrClosed
	}
	s.key, s.val, s.err = nil, nil, nil
	s.off, s.end, s.more = 0, 0, false
	s.lower, s.upper = setBound(&s.lowerBuf, start), setBound(&s.upperBuf, end)
	s.sought, s.done = false, emptyRange(start, end)
	if s.done {
		return nil
	}
	// The generation is read before the iterator opens, so every write
	// done by then is in its snapshot.
	if g := s.r.reads.gen.Load(); s.git == nil || g != s.gen {
		s.freeIter()
		s.git = s.r.db.NewIterator(s.r.ro)
		// grocksdb.Iterator is struct{ c *C.rocksdb_iterator_t }
		// (v1.7.15, pinned in go.mod); TestRocksSeeker checks that
		// the pointer read here iterates the database.
		s.it = *(**C.rocksdb_iterator_t)(unsafe.Pointer(s.git))
		s.gen = g
	}
	return nil
}

func (s *rocksSeeker) Next() bool {
	s.r.mu.RLock()
	defer s.r.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.r.closed {
		if s.err == nil {
			s.err = ErrClosed
		}
		s.key, s.val = nil, nil
		return false
	}
	for {
		if s.off < s.end {
			b := s.buf[s.off:s.end]
			kl, vl := int(binary.NativeEndian.Uint32(b)), int(binary.NativeEndian.Uint32(b[4:]))
			s.key, s.val = b[8:8+kl:8+kl], b[8+kl:8+kl+vl:8+kl+vl]
			if kl == 0 {
				s.key = emptyBytes
			}
			if vl == 0 {
				s.val = emptyBytes
			}
			s.off += 8 + kl + vl
			return true
		}
		if s.done || s.it == nil || s.sought && !s.more {
			s.done, s.key, s.val = true, nil, nil
			return false
		}
		if err := s.fill(); err != nil {
			s.err, s.done, s.key, s.val = err, true, nil, nil
			return false
		}
	}
}

// seekerBuf is the size of a seeker's first buffer of copied entries.
const seekerBuf = 4096

// fill copies the range's next entries into s.buf (seeking first at the
// range's first call), as many as fit: one cgo call for a short range
// instead of one per entry and one more to find the end. It sets
// s.more when entries are left, else s.done (after those copied).
func (s *rocksSeeker) fill() error {
	if s.buf == nil {
		s.buf = make([]byte, seekerBuf)
	}
	seek := C.int(0)
	var k *C.char
	var kn C.size_t
	if !s.sought {
		s.sought, seek = true, 1
		if len(s.lower) > 0 {
			k, kn = (*C.char)(unsafe.Pointer(&s.lower[0])), C.size_t(len(s.lower))
		}
	}
	var up *C.char
	if len(s.upper) > 0 {
		up = (*C.char)(unsafe.Pointer(&s.upper[0]))
	}
	for {
		more := C.sqs_fill(s.it, seek, k, kn, up, C.size_t(len(s.upper)), (*C.char)(unsafe.Pointer(&s.buf[0])), C.size_t(len(s.buf)), s.pos)
		used := s.pos.used
		s.off, s.end, s.more = 0, int(used), more != 0
		if more == 0 {
			s.done = true
			if s.pos.err != nil {
				err := fmt.Errorf("state: rocks iterate: %s", C.GoString(s.pos.err))
				C.rocksdb_free(unsafe.Pointer(s.pos.err))
				s.pos.err = nil
				return err
			}
			return nil
		}
		if used > 0 {
			return nil
		}
		// An entry larger than the buffer: a buffer that holds it.
		need := 8 + int(s.pos.klen) + int(s.pos.vlen)
		if int64(s.pos.klen) > math.MaxUint32 || int64(s.pos.vlen) > math.MaxUint32 {
			return fmt.Errorf("state: rocks iterate: an entry of %d bytes", need)
		}
		s.buf, seek = make([]byte, max(need, 2*len(s.buf))), 0
	}
}

// cBytes returns the n bytes at p without copying them, never nil.
func cBytes(p *C.char, n C.size_t) []byte {
	if n == 0 {
		return emptyBytes
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
}

func (s *rocksSeeker) Key() []byte   { return s.key }
func (s *rocksSeeker) Value() []byte { return s.val }
func (s *rocksSeeker) Err() error    { return s.err }

// release implements releaser: between ranges (the last one read to its
// end), the snapshot goes and the next Seek opens a new iterator; a
// range still being read keeps it.
func (s *rocksSeeker) release() {
	s.r.mu.RLock()
	defer s.r.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && !s.r.closed && s.done {
		s.freeIter()
	}
}

// Close implements Iterator.
func (s *rocksSeeker) Close() error {
	s.r.mu.RLock()
	defer s.r.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.err
	}
	s.r.itersMu.Lock()
	delete(s.r.seekers, s)
	s.r.itersMu.Unlock()
	s.free()
	if errors.Is(s.err, ErrClosed) {
		return nil
	}
	return s.err
}

// freeIter destroys the native iterator, if any.
func (s *rocksSeeker) freeIter() {
	if s.git != nil {
		s.git.Close()
		s.git, s.it = nil, nil
	}
}

// free releases everything; the caller holds r.mu (Close of the store:
// exclusively) and s.mu.
func (s *rocksSeeker) free() {
	s.freeIter()
	if s.pos != nil {
		C.free(unsafe.Pointer(s.pos))
		s.pos = nil
	}
	s.closed, s.done = true, true
	s.key, s.val = nil, nil
}
