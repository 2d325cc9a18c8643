package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// Partition is one partition's committed store, for pull queries.
type Partition struct {
	ID    int32
	Store state.Store
}

// Stores returns the committed stores of the named store, one per
// partition this instance holds, ordered by partition. Each is safe to
// read while the query runs; a store whose task closes meanwhile answers
// state.ErrClosed.
func (q *Query) Stores(name string) []Partition {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []Partition
	for p, s := range q.stores[name] {
		out = append(out, Partition{ID: p, Store: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// KeySelection narrows a pull query to some keys: Keys, when non-nil,
// are looked up exactly; otherwise the half-open range [Start, End) of
// serialized keys is scanned (nil bounds are open).
type KeySelection struct {
	Keys       [][]byte
	Start, End []byte
}

// RunPull answers a pull query: it runs the topology's chain over the
// committed rows of the stores that the selection picks, calling emit per
// result row until the topology's LIMIT. The row passed to emit is valid
// only during the call.
func RunPull(ctx context.Context, topo *physical.Topology, parts []Partition, sel KeySelection, emit func(types.Row) error) error {
	if len(topo.SubTopologies) != 1 {
		return errors.New("exec: pull queries over more than one sub-topology are not supported")
	}
	if topo.Limit == 0 {
		return nil
	}
	st := topo.SubTopologies[0]
	collect := &collectOp{emit: emit, limit: topo.Limit}
	head, err := buildChain(st.Processors, collect)
	if err != nil {
		return err
	}
	src, err := newSource(st.Source, nil, head)
	if err != nil {
		return err
	}
	var rec kgo.Record
	row := func(p int32, k, v []byte) error {
		if len(v) < tsLen {
			return fmt.Errorf("corrupt stored value for key %x", k)
		}
		rec = kgo.Record{Key: k, Value: v[tsLen:], Partition: p, Offset: -1,
			Timestamp: time.UnixMilli(int64(binary.BigEndian.Uint64(v)))}
		err := src.process(&rec)
		var ce *clientError
		switch {
		case err == nil, errors.Is(err, types.ErrBadRecord):
			return nil
		case errors.As(err, &ce):
			return ce.err
		}
		var ee *evalError
		if errors.As(err, &ee) {
			return nil // a row the WHERE cannot evaluate is not a result
		}
		return err
	}
	for _, part := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sel.Keys != nil {
			for _, k := range sel.Keys {
				v, err := part.Store.Get(k)
				if err != nil {
					return err
				}
				if v != nil {
					if err := row(part.ID, k, v); err != nil {
						return stopErr(err)
					}
				}
			}
			continue
		}
		it, err := part.Store.Range(sel.Start, sel.End)
		if err != nil {
			return err
		}
		for it.Next() {
			if err := row(part.ID, it.Key(), it.Value()); err != nil {
				it.Close()
				return stopErr(err)
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}

// stopErr turns the end of a LIMIT into success.
func stopErr(err error) error {
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}
