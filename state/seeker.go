package state

import "fmt"

// Seeker is an Iterator that is pointed at one range after another,
// for an operator that scans a store once per record (a stream–stream
// join's window lookups): after the first few Seeks, a Seek and the Next
// calls of its range allocate nothing.
//
// Seek(start, end) positions it before the first key of [start, end)
// (bounds copied, nil unbounded, as Range's); Next, Key, Value and Err
// then behave as a fresh Range's iterator. A Seek ends the range before
// it; Close releases the Seeker for good. What a range sees is what a
// Range called at its Seek would see (a Rocks seeker reads a snapshot
// taken at the Seek, or at an earlier Seek when the store has not been
// written since). A Seeker is not safe for concurrent use; while it stands
// in a range it pins that range's snapshot, like an open iterator.
type Seeker interface {
	Iterator
	// Seek starts a new range [start, end).
	Seek(start, end []byte) error
}

// Seekable is implemented by stores that give Seekers: Rocks and
// Overlay (over any base; over a base that is not Seekable, each Seek
// opens a Range of the base).
type Seekable interface {
	NewSeeker() (Seeker, error)
}

var (
	_ Seekable = (*Rocks)(nil)
	_ Seekable = (*Overlay)(nil)
)

// releaser is a Seeker that can let go of its snapshot between ranges.
type releaser interface{ release() }

// setBound copies b into *buf, keeping nil as nil (unbounded) and an
// empty bound non-nil, and returns the copy.
func setBound(buf *[]byte, b []byte) []byte {
	if b == nil {
		return nil
	}
	if *buf == nil {
		*buf = make([]byte, 0, max(len(b), 32))
	}
	*buf = append((*buf)[:0], b...)
	return *buf
}

// NewSeeker implements Seekable: a Seeker over the pending writes merged
// with the base, as Range's iterators. Commit lets go of the base's
// snapshot when the seeker is between ranges (its last range read to the
// end); the next Seek takes a fresh one.
func (o *Overlay) NewSeeker() (Seeker, error) {
	if err := o.Applied(); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, ErrClosed
	}
	s := &overlaySeeker{o: o}
	if sb, ok := o.base.(Seekable); ok {
		b, err := sb.NewSeeker()
		if err != nil {
			return nil, err
		}
		s.base = b
	}
	o.seekers = append(o.seekers, s)
	return s, nil
}

// releaseSeekers lets every seeker's base drop its snapshot; the caller
// holds o.mu for writing.
func (o *Overlay) releaseSeekers() {
	for _, s := range o.seekers {
		if r, ok := s.base.(releaser); ok {
			r.release()
		}
	}
}

// overlaySeeker is the Overlay's Seeker: a mergeIter reset in place.
type overlaySeeker struct {
	o          *Overlay
	base       Seeker   // nil: the base is not Seekable
	baseIt     Iterator // the open Range of a base that is not Seekable
	m          mergeIter
	start, end []byte // the bounds' copies
	empty      bool   // the range selects nothing
	closed     bool
	err        error
}

func (s *overlaySeeker) Seek(start, end []byte) error {
	if s.closed {
		return ErrClosed
	}
	// The base holds every committed write first (SetAsyncCommit).
	list, err := s.o.appliedList()
	if err != nil {
		s.err = err
		return err
	}
	s.err = nil
	st, en := setBound(&s.start, start), setBound(&s.end, end)
	s.empty = emptyRange(start, end)
	if s.empty {
		return nil
	}
	var base Iterator
	if s.base != nil {
		if err := s.base.Seek(st, en); err != nil {
			return err
		}
		base = s.base
	} else {
		if s.baseIt != nil {
			s.baseIt.Close()
			s.baseIt = nil
		}
		it, err := s.o.base.Range(st, en)
		if err != nil {
			return err
		}
		s.baseIt, base = it, it
	}
	s.m = mergeIter{o: s.o, base: base}
	s.m.c.l, s.m.c.start, s.m.c.end = list, st, en
	return nil
}

func (s *overlaySeeker) Next() bool {
	if s.closed || s.empty || s.err != nil {
		return false
	}
	return s.m.Next()
}

func (s *overlaySeeker) Key() []byte   { return s.m.key }
func (s *overlaySeeker) Value() []byte { return s.m.val }

func (s *overlaySeeker) Err() error {
	if s.err != nil {
		return s.err
	}
	return s.m.err
}

// Close implements Iterator: it releases the seeker and its base's.
func (s *overlaySeeker) Close() error {
	if s.closed {
		return s.Err()
	}
	s.closed = true
	s.m.c = cursor{}
	s.m.key, s.m.val = nil, nil
	var err error
	if s.base != nil {
		err = s.base.Close()
	}
	if s.baseIt != nil {
		s.baseIt.Close()
		s.baseIt = nil
	}
	s.o.mu.Lock()
	for i, x := range s.o.seekers {
		if x == s {
			s.o.seekers = append(s.o.seekers[:i], s.o.seekers[i+1:]...)
			break
		}
	}
	s.o.mu.Unlock()
	if err == ErrClosed {
		err = nil
	}
	if e := s.Err(); e != nil {
		return e
	}
	if err != nil {
		return fmt.Errorf("state: overlay seeker: %w", err)
	}
	return nil
}
