package exec

import (
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Operator = (*collectOp)(nil)

// collectOp ends a push query's chain: it hands rows to the client and
// stops the query at its LIMIT.
type collectOp struct {
	emit  func(types.Row) error
	limit int64 // -1 for none
	n     int64
}

func (c *collectOp) Process(row types.Row) error {
	if c.limit >= 0 && c.n >= c.limit {
		return errLimit
	}
	c.n++
	if err := c.emit(row); err != nil {
		return &clientError{err}
	}
	if c.limit >= 0 && c.n >= c.limit {
		return errLimit
	}
	return nil
}
