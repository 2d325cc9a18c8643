package exec

import (
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*collectOp)(nil)

// collectOp ends a push or pull query's graph: it hands new rows to the
// client and stops the query at its LIMIT.
type collectOp struct {
	emit func(types.Row) error
	// tombstone, when set, receives the rows of a table's tombstones
	// (Change.NullValue); they count toward the LIMIT.
	tombstone func(types.Row) error
	limit     int64 // -1 for none
	n         int64
}

func (c *collectOp) Process(ch *Change) error {
	if ch.New == nil {
		return nil
	}
	emit := c.emit
	if ch.NullValue {
		if c.tombstone == nil {
			return nil
		}
		emit = c.tombstone
	}
	if c.limit >= 0 && c.n >= c.limit {
		return errLimit
	}
	c.n++
	if err := emit(ch.New); err != nil {
		return &clientError{err}
	}
	if c.limit >= 0 && c.n >= c.limit {
		return errLimit
	}
	return nil
}

// emitOp ends a transient query's graph (Config.Emit): each change's new
// row goes to the client; deletions and tombstones do not.
type emitOp func(types.Row)

func (e emitOp) Process(ch *Change) error {
	if ch.New != nil && !ch.NullValue {
		e(ch.New)
	}
	return nil
}
