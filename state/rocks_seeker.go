//go:build cgo

package state

/*
#cgo LDFLAGS: -lrocksdb
#include <stdlib.h>
#include "rocksdb/c.h"

// sqs_pos is where a seeker's iterator stands, filled by sqs_step.
typedef struct {
	const char* key;
	size_t klen;
	const char* val;
	size_t vlen;
	char* err;
} sqs_pos;

// sqs_step seeks it to key (seek set; key NULL: the first key) or moves it
// on (seek clear), and fills pos. It returns 1 when it stands on a key;
// otherwise pos->err holds the iterator's error, if any. One cgo call
// per key instead of four.
static int sqs_step(rocksdb_iterator_t* it, int seek, const char* key, size_t klen, sqs_pos* pos) {
	if (seek) {
		if (key) {
			rocksdb_iter_seek(it, key, klen);
		} else {
			rocksdb_iter_seek_to_first(it);
		}
	} else {
		rocksdb_iter_next(it);
	}
	if (!rocksdb_iter_valid(it)) {
		rocksdb_iter_get_error(it, &pos->err);
		return 0;
	}
	pos->key = rocksdb_iter_key(it, &pos->klen);
	pos->val = rocksdb_iter_value(it, &pos->vlen);
	return 1;
}
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// NewSeeker implements Seekable. The seeker keeps one RocksDB iterator
// (without bounds: it checks the end itself) for as long as the store is
// not written, and opens a new one at the first Seek after a write; so in
// steady state a Seek is one cgo call and each key one more, with no
// allocation. Close it; Close of the store frees it too.
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
	if s.done || s.it == nil {
		s.key, s.val = nil, nil
		return false
	}
	var ok C.int
	if !s.sought {
		s.sought = true
		var k *C.char
		if len(s.lower) > 0 {
			k = (*C.char)(unsafe.Pointer(&s.lower[0]))
		}
		ok = C.sqs_step(s.it, 1, k, C.size_t(len(s.lower)), s.pos)
	} else {
		ok = C.sqs_step(s.it, 0, nil, 0, s.pos)
	}
	if ok == 0 {
		if s.pos.err != nil {
			s.err = fmt.Errorf("state: rocks iterate: %s", C.GoString(s.pos.err))
			C.rocksdb_free(unsafe.Pointer(s.pos.err))
			s.pos.err = nil
		}
		s.done, s.key, s.val = true, nil, nil
		return false
	}
	key := cBytes(s.pos.key, s.pos.klen)
	if s.upper != nil && bytes.Compare(key, s.upper) >= 0 {
		s.done, s.key, s.val = true, nil, nil
		return false
	}
	s.key, s.val = key, cBytes(s.pos.val, s.pos.vlen)
	return true
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
