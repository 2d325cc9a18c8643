package exec

import (
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*collectOp)(nil)

// collectOp ends a push or pull query's graph: it hands new rows to the
// client and stops the query at its LIMIT.
type collectOp struct {
	emit  func(types.Row) error
	limit int64 // -1 for none
	n     int64
}

func (c *collectOp) Process(ch *Change) error {
	if ch.New == nil {
		return nil
	}
	if c.limit >= 0 && c.n >= c.limit {
		return errLimit
	}
	c.n++
	if err := c.emit(ch.New); err != nil {
		return &clientError{err}
	}
	if c.limit >= 0 && c.n >= c.limit {
		return errLimit
	}
	return nil
}
