package types

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// WindowType is how a windowed source's or aggregation's windows are
// laid out: "" for none, or TUMBLING, HOPPING or SESSION (as ksqlDB's
// WINDOW_TYPE property spells them).
type WindowType string

// Window types.
const (
	NoWindow WindowType = ""
	Tumbling WindowType = "TUMBLING"
	Hopping  WindowType = "HOPPING"
	Session  WindowType = "SESSION"
)

// ParseWindowType reads a WINDOW_TYPE value, case-insensitively.
func ParseWindowType(s string) (WindowType, error) {
	switch t := WindowType(strings.ToUpper(strings.TrimSpace(s))); t {
	case Tumbling, Hopping, Session:
		return t, nil
	}
	return NoWindow, fmt.Errorf("WINDOW_TYPE must be TUMBLING, HOPPING or SESSION, not %q", s)
}

// WindowKeyLen is how many bytes a windowed record key carries after the
// key columns' bytes, as Kafka Streams serializes windowed keys: 8 (the
// window start) for time windows, 16 (the session end, then its start)
// for sessions. All are big-endian milliseconds.
func (t WindowType) WindowKeyLen() int {
	switch t {
	case Tumbling, Hopping:
		return 8
	case Session:
		return 16
	}
	return 0
}

// AppendWindowKey appends the window bytes of a windowed key: the start
// for time windows, the end then the start for sessions.
func (t WindowType) AppendWindowKey(dst []byte, start, end int64) []byte {
	if t == Session {
		dst = binary.BigEndian.AppendUint64(dst, uint64(end))
	}
	return binary.BigEndian.AppendUint64(dst, uint64(start))
}

// SplitWindowKey cuts a windowed key into the key columns' bytes and the
// window bounds. A time window's end is its start plus sizeMs (the
// source's WINDOW_SIZE).
func (t WindowType) SplitWindowKey(key []byte, sizeMs int64) (k []byte, start, end int64, err error) {
	n := t.WindowKeyLen()
	if len(key) < n {
		return nil, 0, 0, fmt.Errorf("%w: a %s windowed key needs %d window bytes, got a key of %d bytes", ErrBadRecord, t, n, len(key))
	}
	k, w := key[:len(key)-n], key[len(key)-n:]
	if t == Session {
		end = int64(binary.BigEndian.Uint64(w))
		start = int64(binary.BigEndian.Uint64(w[8:]))
		return k, start, end, nil
	}
	start = int64(binary.BigEndian.Uint64(w))
	return k, start, start + sizeMs, nil
}
