package exec

var _ Processor = (*mergeOp)(nil)

// mergeOp is UNION ALL (physical.Merge): each of its inputs' changes
// goes on as it is.
type mergeOp struct {
	next Processor
}

func (m *mergeOp) Process(c *Change) error { return m.next.Process(c) }
