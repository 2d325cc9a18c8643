package exec

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/types"
)

// Change is what flows between processors: one record's effect on a
// stream or table. A stream record is a change with only a new row; a
// table update carries the key's old row too (where a later node needs
// it: a table's aggregation or filter); a deletion has an old row and
// no new one (a sink writes a tombstone for the old row's key). Rows and
// the record are valid only during Process.
type Change struct {
	// Old is the row taken out, or nil.
	Old types.Row
	// New is the row added, or nil.
	New types.Row
	// Timestamp is the change's event time in milliseconds (ROWTIME).
	Timestamp int64
	// Record is the input record being processed: its key and value
	// bytes, headers, topic, partition and offset.
	Record *kgo.Record
	// Windowed marks a change of a windowed table: its key is the key
	// columns and the window [WindowStart, WindowEnd) (a session's end is
	// inclusive), which a sink writes after the key columns' bytes.
	Windowed               bool
	WindowStart, WindowEnd int64
	// NullValue marks a stream record whose value was null, as ksqlDB
	// passes it on: New holds its key columns (the value columns are
	// NULL); filters drop it, projections and PARTITION BY pass it on,
	// and a sink writes it with a null value. Sources send such changes
	// only into graphs of those nodes (see passesNullValues).
	NullValue bool
	// NewKey marks a row whose key columns PARTITION BY computed: a sink
	// writes their key even when all are NULL (several columns), where a
	// key passed through unchanged stays the record's (null) key.
	NewKey bool
}

// Processor is a node of a task's graph: it receives changes one at a
// time and forwards what it makes of them to the processors after it.
//
// Optional hooks, found once when the task is built (never asserted per
// record): initializer, flusher, aborter, closer.
type Processor interface {
	Process(c *Change) error
}

type (
	// initializer is set up with its task's context before the first
	// record: it may schedule punctuations there.
	initializer interface{ Init(tc *TaskContext) error }
	// flusher writes what it buffered in the open transaction (its
	// changelog records, its store writes) before the transaction
	// commits.
	flusher interface{ Flush() error }
	// aborter forgets what it buffered when the transaction aborts.
	aborter interface{ Abort() }
	// closer releases what it holds when its task closes.
	closer interface{ Close() error }
	// oldIgnorer says whether its Process leaves the old row of a change
	// that has a new row unread (a sink writes the new row alone), so
	// that the nodes before it need not make that old row. A processor
	// without the hook reads it.
	oldIgnorer interface{ ignoresOldWithNew() bool }
)

// readsOldWithNew reports whether p may read c.Old of a change whose
// c.New is set.
func readsOldWithNew(p Processor) bool {
	o, ok := p.(oldIgnorer)
	return !ok || !o.ignoresOldWithNew()
}

// fanout forwards a change to every processor reading a node.
type fanout []Processor

func (f fanout) Process(c *Change) error {
	for _, p := range f {
		if err := p.Process(c); err != nil {
			return err
		}
	}
	return nil
}

func (f fanout) ignoresOldWithNew() bool {
	for _, p := range f {
		if readsOldWithNew(p) {
			return false
		}
	}
	return true
}

// nop ends a graph whose last node has nowhere to send its changes.
type nop struct{}

func (nop) Process(*Change) error { return nil }

// evalError marks an expression that failed on a record: the record is
// bad, the query goes on.
type evalError struct {
	node string
	err  error
}

func (e *evalError) Error() string { return fmt.Sprintf("%s: %v", e.node, e.err) }
func (e *evalError) Unwrap() error { return e.err }

// fatalError marks an error that is not the record's fault (a store that
// cannot be read or written): the task fails rather than skip the record.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

func fatal(err error) error {
	if err == nil {
		return nil
	}
	return &fatalError{err}
}
