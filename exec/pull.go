package exec

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
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
//
// The slice is shared by every caller until the store's partitions change:
// callers read it and never write to it (appending to it copies, its
// capacity being its length), so a pull query costs no allocation here.
func (q *Query) Stores(name string) []Partition {
	q.mu.Lock()
	defer q.mu.Unlock()
	if out, ok := q.storeLists[name]; ok {
		return out
	}
	var out []Partition
	for p, s := range q.stores[name] {
		out = append(out, Partition{ID: p, Store: s})
	}
	slices.SortFunc(out, func(a, b Partition) int { return cmp.Compare(a.ID, b.ID) })
	out = slices.Clip(out)
	if q.storeLists == nil {
		q.storeLists = map[string][]Partition{}
	}
	q.storeLists[name] = out
	return out
}

// KeySelection narrows a pull query to some keys: Keys, when non-nil,
// are looked up exactly; otherwise the half-open range [Start, End) of
// serialized keys is scanned (nil bounds are open).
//
// Partitions, when positive, is the number of partitions of the topic the
// rows were written to: each key is looked up first in the partition
// Kafka's default partitioner gives it (murmur2, as franz-go and the Java
// client compute it), and only when it is not there in the others
// (records written with another partitioner), so a point lookup costs one
// store read, not one per partition.
type KeySelection struct {
	Keys       [][]byte
	Start, End []byte
	// Windowed, for a table of time windows, narrows a scan of its window
	// store to the windows starting in [WindowFrom, WindowTo].
	Windowed             bool
	WindowFrom, WindowTo int64
	Partitions           int32
	// Partitioner is the function that put the keys in Partitions
	// (the store's input topic's: murmur2 unless the source declared
	// another); an unknown one looks in every partition.
	Partitioner types.Partitioner
	// Only, when non-nil, limits the pull to these partitions of the
	// store (a pull query forwarded by another instance asks for the
	// partitions this one owns).
	Only []int32
	// Except are partitions not to read here (those asked of the
	// instances that own them).
	Except []int32
	// Standby are partitions to read from this instance's standby
	// copies (ksql.query.pull.enable.standby.reads), each at most MaxLag
	// changelog offsets behind (negative: any); a partition without such
	// a copy fails the pull with ErrStandbyLag.
	Standby []int32
	MaxLag  int64
	// Whole, when positive, is the number of partitions of the store: each
	// one the pull needs — every one for a scan, the keys' own for a key
	// lookup into a store partitioned as Partitions — must be read here
	// (active or standby) or be in Except. One that is neither, its task
	// having left this instance since the query was planned (a
	// rebalance), fails the pull with ErrPartitionMoved before any row is
	// emitted: no partial answer.
	Whole int32
}

// ErrStandbyLag fails a standby read whose copy is missing or too far
// behind.
var ErrStandbyLag = errors.New("no standby copy within the allowed lag")

// ErrPartitionMoved fails a pull query when a partition it planned to read
// here has left this instance (KeySelection.Whole, .Only).
var ErrPartitionMoved = errors.New("the partition moved to another instance while the query ran")

// parts returns the partitions of store a pull with sel reads here: the
// active ones sel keeps, and its standby ones.
func (q *Query) pullParts(store string, sel KeySelection) ([]Partition, error) {
	parts := sel.only(q.Stores(store))
	if err := sel.complete(store, parts); err != nil {
		return nil, err
	}
	if len(sel.Standby) == 0 {
		return parts, nil
	}
	sb := q.StandbyStores(store, sel.Standby, sel.MaxLag)
	if len(sb) < len(sel.Standby) {
		var missing []int32
		for _, p := range sel.Standby {
			if !slices.ContainsFunc(sb, func(x Partition) bool { return x.ID == p }) {
				missing = append(missing, p)
			}
		}
		return nil, fmt.Errorf("partitions %v of %s: %w (%d offsets)", missing, store, ErrStandbyLag, sel.MaxLag)
	}
	return append(parts, sb...), nil
}

// complete fails with ErrPartitionMoved when parts, the active partitions
// the pull reads here, lack one that sel needs from here: one of Only, or
// (Whole) one that neither Except nor Standby accounts for.
func (sel KeySelection) complete(store string, parts []Partition) error {
	here := func(p int32) bool {
		return slices.ContainsFunc(parts, func(x Partition) bool { return x.ID == p }) ||
			slices.Contains(sel.Except, p) || slices.Contains(sel.Standby, p)
	}
	for _, p := range sel.Only {
		if !here(p) {
			return fmt.Errorf("partition %d of %s: %w", p, store, ErrPartitionMoved)
		}
	}
	if sel.Whole <= 0 || sel.Only != nil {
		return nil
	}
	if sel.Keys != nil && sel.Partitions == sel.Whole && sel.Partitioner.Known() {
		for _, k := range sel.Keys {
			if p := sel.Partitioner.Partition(k, sel.Partitions); !here(p) {
				return fmt.Errorf("partition %d of %s: %w", p, store, ErrPartitionMoved)
			}
		}
		return nil
	}
	for p := range sel.Whole {
		if !here(p) {
			return fmt.Errorf("partition %d of %s: %w", p, store, ErrPartitionMoved)
		}
	}
	return nil
}

// only keeps the partitions sel.Only names and drops those of
// sel.Except.
func (sel KeySelection) only(parts []Partition) []Partition {
	if sel.Only == nil && sel.Except == nil {
		return parts
	}
	var out []Partition
	for _, p := range parts {
		if (sel.Only == nil || slices.Contains(sel.Only, p.ID)) && !slices.Contains(sel.Except, p.ID) {
			out = append(out, p)
		}
	}
	return out
}

// PullStore returns the store a pull query over table reads (see
// PullWith) and the input topics of its sub-topology: partition p of the
// store is task p's, which owns partition p of those topics.
func (q *Query) PullStore(table string) (store string, topics []string) {
	store = table
	if _, _, agg, _ := resultAggregate(q.topo); agg != nil {
		store = agg.Store.Name
	} else if _, _, tn := resultTopN(q.topo); tn != nil {
		store = tn.Store.Name
	}
	for _, st := range q.topo.SubTopologies {
		for _, n := range st.Nodes {
			for _, spec := range physical.StoresOf(n) {
				if spec.Name == store {
					for _, src := range st.Sources {
						topics = append(topics, src.Op.(*physical.Source).Topic)
					}
					return store, topics
				}
			}
		}
	}
	return store, nil
}

// PullPartitioner returns the function that put each key of store in
// its partition: the partitioner of the topics its sub-topology reads
// (their sources' declared PARTITIONER, or what the query's own
// repartition wrote by), types.UnknownPartitioner when they differ or
// none is known. Raw topics (a foreign-key join's responses, sent to
// their subscriber's partition) do not count.
func (q *Query) PullPartitioner(store string) types.Partitioner {
	for _, st := range q.topo.SubTopologies {
		for _, n := range st.Nodes {
			for _, spec := range physical.StoresOf(n) {
				if spec.Name != store {
					continue
				}
				p, seen := types.Murmur2, false
				for _, src := range st.Sources {
					s := src.Op.(*physical.Source)
					if s.Raw {
						continue
					}
					if seen && s.Partitioner != p {
						return types.UnknownPartitioner
					}
					p, seen = s.Partitioner, true
				}
				return p
			}
		}
	}
	return types.Murmur2
}

// LocalPartitions returns the partitions of store this instance can
// answer from now (its running tasks'), sorted.
func (q *Query) LocalPartitions(store string) []int32 {
	var out []int32
	for _, p := range q.Stores(store) {
		out = append(out, p.ID)
	}
	return out
}

// HasPartition reports whether this instance can answer from partition
// p of store now, and how many partitions of it it can.
func (q *Query) HasPartition(store string, p int32) (has bool, count int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, has = q.stores[store][p]
	return has, len(q.stores[store])
}

// RunPull answers a pull query: it runs the topology's chain over the
// committed rows of the stores that the selection picks, calling emit per
// result row until the topology's LIMIT. The stores hold a table's
// records (see physical.Materialize). The row passed to emit is valid
// only during the call.
func RunPull(ctx context.Context, topo *physical.Topology, parts []Partition, sel KeySelection, emit func(types.Row) error) error {
	r, err := NewPullRunner(topo)
	if err != nil {
		return err
	}
	return r.Run(ctx, parts, sel, emit)
}

// PullRunner is a pull query's chain (see RunPull) built once, to be run
// many times: a prepared pull query runs it per execution instead of
// compiling its topology again. Its processors keep reusable buffers, so
// it is used by one goroutine at a time.
type PullRunner struct {
	topo    *physical.Topology
	src     *sourceOp
	collect *collectOp
	rec     kgo.Record
	// record turns a stored entry into the table's record; tableRecord
	// by default.
	record func(p int32, k, v []byte) (*kgo.Record, error)
	// shared is set during Run: stored values may come from the stores'
	// shared read caches.
	shared bool
}

// NewPullRunner builds topo's chain. topo must have one sub-topology.
func NewPullRunner(topo *physical.Topology) (*PullRunner, error) {
	if len(topo.SubTopologies) != 1 {
		return nil, errors.New("exec: pull queries over more than one sub-topology are not supported")
	}
	r := &PullRunner{topo: topo, collect: &collectOp{limit: topo.Limit}}
	st := topo.SubTopologies[0]
	g, err := buildGraph(topo, st, &taskEnv{terminal: r.collect})
	if err != nil {
		return nil, err
	}
	r.src = g.sources[st.Source().Topic]
	if r.src == nil {
		return nil, errors.New("exec: pull query topology has no source")
	}
	r.record = r.tableRecord
	return r, nil
}

// tableRecord reads a materialized table's entry: the record's timestamp
// (8 bytes, big-endian milliseconds), then its value.
func (r *PullRunner) tableRecord(p int32, k, v []byte) (*kgo.Record, error) {
	if len(v) < tsLen {
		return nil, fmt.Errorf("corrupt stored value for key %x", k)
	}
	r.rec = kgo.Record{Key: k, Value: v[tsLen:], Partition: p, Offset: -1,
		Timestamp: time.UnixMilli(int64(binary.BigEndian.Uint64(v)))}
	return &r.rec, nil
}

// Run answers the pull query over the stores of a materialized table;
// see RunPull.
func (r *PullRunner) Run(ctx context.Context, parts []Partition, sel KeySelection, emit func(types.Row) error) error {
	// A table's stored rows are only decoded: key lookups may read them
	// through the stores' shared read caches.
	r.shared = true
	defer func() { r.shared = false }()
	return r.run(ctx, parts, sel, emit, r.record)
}

// run is Run over stores whose entries record turns into the table's
// records (nil for an entry that is no row).
func (r *PullRunner) run(ctx context.Context, parts []Partition, sel KeySelection, emit func(types.Row) error,
	record func(p int32, k, v []byte) (*kgo.Record, error)) error {
	if r.topo.Limit == 0 {
		return nil
	}
	r.collect.emit, r.collect.n = emit, 0
	defer func() { r.collect.emit = nil }()
	if sel.Keys != nil {
		return stopErr(r.lookup(ctx, parts, sel, record))
	}
	for _, part := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.scan(part, sel.Start, sel.End, record); err != nil {
			return stopErr(err)
		}
	}
	return nil
}

// scan runs the chain over the entries of part in [start, end).
func (r *PullRunner) scan(part Partition, start, end []byte, record func(p int32, k, v []byte) (*kgo.Record, error)) error {
	it, err := part.Store.Range(start, end)
	if err != nil {
		return err
	}
	for it.Next() {
		if err := r.row(record, part.ID, it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// lookup runs the chain over the entries of sel.Keys, key by key.
func (r *PullRunner) lookup(ctx context.Context, parts []Partition, sel KeySelection, record func(p int32, k, v []byte) (*kgo.Record, error)) error {
	for _, k := range sel.Keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		first := -1
		if sel.Partitions > 0 && sel.Partitioner.Known() {
			want := sel.Partitioner.Partition(k, sel.Partitions)
			for i, part := range parts {
				if part.ID == want {
					first = i
					break
				}
			}
		}
		if first >= 0 {
			v, err := r.get(parts[first].Store, k)
			if err != nil {
				return err
			}
			if v != nil {
				if err := r.row(record, parts[first].ID, k, v); err != nil {
					return err
				}
				continue
			}
		}
		for i, part := range parts {
			if i == first {
				continue
			}
			v, err := r.get(part.Store, k)
			if err != nil {
				return err
			}
			if v != nil {
				if err := r.row(record, part.ID, k, v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// get reads key from a committed store: through its shared read cache
// when it has one and r.shared says the chain only decodes the value.
func (r *PullRunner) get(s state.Store, key []byte) ([]byte, error) {
	if sg, ok := s.(state.SharedGetter); ok && r.shared {
		return sg.GetShared(key)
	}
	return s.Get(key)
}

// DefaultPartition is the partition Kafka's default partitioner picks for
// a record with key among n partitions: murmur2 of the key, made
// positive, modulo n (types.Murmur2Partition).
func DefaultPartition(key []byte, n int32) int32 { return types.Murmur2Partition(key, n) }

// row runs one stored entry through the chain.
func (r *PullRunner) row(record func(p int32, k, v []byte) (*kgo.Record, error), p int32, k, v []byte) error {
	rec, err := record(p, k, v)
	if err != nil || rec == nil {
		return err
	}
	return r.feed(rec)
}

// feed runs one of the table's records through the chain.
func (r *PullRunner) feed(rec *kgo.Record) error {
	err := r.src.process(rec)
	if err == nil {
		return nil
	}
	var ce *clientError
	switch {
	case errors.Is(err, types.ErrBadRecord):
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

// Pull answers a pull query over table, which this query materializes:
// from the store of its materialization (a source table, or a result
// table that is not an aggregation), or from its aggregate's store, whose
// group states it turns into the table's rows the way the query does (the
// aggregates' results, HAVING, the projection after the aggregation). See
// RunPull for the rest.
func (q *Query) Pull(ctx context.Context, topo *physical.Topology, table string, sel KeySelection, emit func(types.Row) error) error {
	r, err := NewPullRunner(topo)
	if err != nil {
		return err
	}
	return q.PullWith(ctx, r, table, sel, emit)
}

// PointLookups reports whether a selection of Keys given to Pull or
// PullWith for table is honoured: the table's rows are stored under its
// serialized keys (not a windowed aggregate's, whose pull queries scan).
func (q *Query) PointLookups(table string) bool {
	if _, _, agg, sink := resultAggregate(q.topo); agg != nil {
		return sameKeys(agg, sink) && agg.Window == nil
	}
	return len(q.Stores(table)) > 0 || q.topo.Store(table) != nil
}

// PullWith is Pull with the query's chain built beforehand (a prepared
// pull query's); r is used by one goroutine at a time.
func (q *Query) PullWith(ctx context.Context, r *PullRunner, table string, sel KeySelection, emit func(types.Row) error) error {
	// A query that aggregates answers from its aggregate's store; any
	// other materializes the table in a store of the table's name. The
	// order matters: the table may be named like the aggregate's store.
	st, aggNode, agg, sink := resultAggregate(q.topo)
	if agg == nil {
		if st, n, tn := resultTopN(q.topo); tn != nil {
			return q.pullTopN(ctx, r, st, n, tn, sel, emit)
		}
		if len(q.Stores(table)) == 0 && q.topo.Store(table) == nil {
			return fmt.Errorf("exec: query %s keeps no store of %s", q.id, table)
		}
		sel.Partitioner = q.PullPartitioner(table)
		parts, err := q.pullParts(table, sel)
		if err != nil {
			return err
		}
		return r.Run(ctx, parts, sel, emit)
	}
	// The aggregate's sub-topology, built as a view: its aggregate reads
	// stored groups, and its sink hands each record here.
	var rec kgo.Record
	rows := &outbox{send: func(r *kgo.Record) { rec = *r }}
	g, err := buildGraph(q.topo, downstream(q.topo, st, aggNode), &taskEnv{out: rows})
	if err != nil {
		return err
	}
	view := g.procs[aggNode.Name].(*aggregateOp)
	sel.Partitions = 0 // the aggregate's partitions are its input's
	parts, err := q.pullParts(agg.Store.Name, sel)
	if err != nil {
		return err
	}
	switch {
	case agg.Window != nil && agg.Window.Type != types.Session && sel.Windowed:
		// A window store is ordered by window start: scan the starts
		// asked for, and let the WHERE pick the keys.
		if sel.WindowFrom > sel.WindowTo {
			return nil
		}
		var to []byte // open
		if sel.WindowTo < math.MaxInt64 {
			to = appendWindowKey(nil, sel.WindowTo+1, nil)
		}
		sel = KeySelection{Start: appendWindowKey(nil, sel.WindowFrom, nil), End: to}
	case !sameKeys(agg, sink) || agg.Window != nil:
		// Stored keys are not the table's key bytes (a window store's
		// start with the key): scan, and let the WHERE pick the rows.
		sel = KeySelection{}
	}
	return r.run(ctx, parts, sel, emit, func(p int32, k, v []byte) (*kgo.Record, error) {
		rows.reset()
		rec = kgo.Record{}
		err := view.emitStored(k, v)
		rows.flush()
		var ee *evalError
		switch {
		case errors.As(err, &ee):
			return nil, nil // as the query skips it
		case err != nil:
			return nil, err
		case rec.Value == nil:
			return nil, nil // no row: HAVING does not hold
		}
		rec.Partition, rec.Offset = p, -1
		return &rec, nil
	})
}

// resultAggregate returns the sub-topology whose sink writes the result
// of an aggregation, with the aggregate and the sink; nils when the
// query aggregates nothing.
func resultAggregate(t *physical.Topology) (*physical.SubTopology, *physical.Node, *physical.Aggregate, *physical.Sink) {
	for _, st := range t.SubTopologies {
		var aggNode *physical.Node
		var sink *physical.Sink
		for _, n := range st.Nodes {
			switch op := n.Op.(type) {
			case *physical.Aggregate:
				aggNode = n
			case *physical.Sink:
				if !op.Internal {
					sink = op
				}
			}
		}
		if aggNode != nil && sink != nil {
			return st, aggNode, aggNode.Op.(*physical.Aggregate), sink
		}
	}
	return nil, nil, nil, nil
}

// MaterializesResult reports whether pull queries over t's result table
// can be answered from t's own aggregate or Top-N store (see Query.Pull),
// with no separate materialization.
func MaterializesResult(t *physical.Topology) bool {
	_, _, agg, _ := resultAggregate(t)
	_, _, tn := resultTopN(t)
	return agg != nil || tn != nil
}

// resultTopN returns the sub-topology whose sink writes the rows of a
// Top-N that stores them whole with their times (physical.TopN.Timed),
// with the Top-N's node: its store holds the result table, when only
// projections and filters lie between the Top-N and the sink. Nils when
// t has no such Top-N.
func resultTopN(t *physical.Topology) (*physical.SubTopology, *physical.Node, *physical.TopN) {
	var outs [][]*physical.Node
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			tn, ok := n.Op.(*physical.TopN)
			if !ok || !tn.Timed() {
				continue
			}
			if outs == nil {
				outs = t.Outputs()
			}
			if toResult(outs, n) {
				return st, n, tn
			}
		}
	}
	return nil, nil, nil
}

// toResult reports whether n's rows go through projections and filters
// alone to the query's sink.
func toResult(outs [][]*physical.Node, n *physical.Node) bool {
	if len(outs[n.ID]) != 1 {
		return false
	}
	next := outs[n.ID][0]
	switch op := next.Op.(type) {
	case *physical.Sink:
		return !op.Internal
	case *physical.Project, *physical.Filter:
		return toResult(outs, next)
	}
	return false
}

// pullTopN answers a pull query from the store of the Top-N at node n
// of st: each stored partition's first rows (Top-N's emitStored) go
// through the nodes after it to the sink, whose records the pull's
// chain reads as the table's. The store is keyed by the Top-N's
// partitions, not the table's keys: a pull by keys reads their
// partitions' entries (topNPrefixes), any other scans, and the pull's
// WHERE picks the rows.
func (q *Query) pullTopN(ctx context.Context, r *PullRunner, st *physical.SubTopology, n *physical.Node, tn *physical.TopN,
	sel KeySelection, emit func(types.Row) error) error {
	var part int32 = -1
	var fed error
	rows := &outbox{send: func(rec *kgo.Record) {
		if fed == nil {
			rec.Partition, rec.Offset = part, -1
			fed = r.feed(rec)
		}
	}}
	g, err := buildGraph(q.topo, downstream(q.topo, st, n), &taskEnv{out: rows})
	if err != nil {
		return err
	}
	view := g.procs[n.Name].(*topNOp)
	sel.Partitions = 0 // the Top-N's partitions are its input's
	parts, err := q.pullParts(tn.Store.Name, sel)
	if err != nil {
		return err
	}
	record := func(p int32, k, v []byte) (*kgo.Record, error) {
		if p != part {
			view.viewReset()
			part = p
		}
		rows.reset()
		fed = nil
		if err := view.emitStored(k, v); err != nil {
			return nil, err
		}
		rows.flush()
		return nil, fed
	}
	if sel.Keys != nil {
		if prefixes, ok := topNPrefixes(q.topo, n, view, sel.Keys); ok {
			return q.pullTopNPartitions(ctx, r, parts, prefixes, tn.FromTable, emit, record)
		}
	}
	return r.run(ctx, parts, KeySelection{}, emit, record)
}

// pullTopNPartitions is pullTopN for the Top-N partitions of prefixes
// (their stored keys: see topNPrefixes) only, looked up in every store
// partition: a stream's entry by key, a table's entries under the
// prefix.
func (q *Query) pullTopNPartitions(ctx context.Context, r *PullRunner, parts []Partition, prefixes [][]byte, fromTable bool,
	emit func(types.Row) error, record func(p int32, k, v []byte) (*kgo.Record, error)) error {
	if len(prefixes) == 0 {
		return nil // no key has a partition: no row
	}
	if !fromTable {
		return r.run(ctx, parts, KeySelection{Keys: prefixes}, emit, record)
	}
	if r.topo.Limit == 0 {
		return nil
	}
	r.collect.emit, r.collect.n = emit, 0
	defer func() { r.collect.emit = nil }()
	for _, part := range parts {
		for _, key := range prefixes {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := r.scan(part, key, prefixEnd(bytes.Clone(key)), record); err != nil {
				return stopErr(err)
			}
		}
	}
	return nil
}

// topNPrefixes turns the result table's keys into the stored keys of
// the Top-N partitions that hold their rows (over a table, the prefix
// of the partition's entries), when the table's key columns carry every
// PARTITION BY column unchanged through the projections after the Top-N
// at node n (view is its processor). ok is false when they do not, or a
// key does not decode: the pull then scans.
func topNPrefixes(t *physical.Topology, n *physical.Node, view *topNOp, keys [][]byte) (prefixes [][]byte, ok bool) {
	outs := t.Outputs()
	// from[i]: the Top-N's column that column i of the current node's
	// rows is (-1: computed).
	tn := n.Op.(*physical.TopN)
	from := make([]int, tn.Out.Len())
	for i := range from {
		from[i] = i
	}
	var sink *physical.Sink
	for x := n; sink == nil; {
		x = outs[x.ID][0] // toResult: one output each, up to the sink
		switch op := x.Op.(type) {
		case *physical.Project:
			next := make([]int, len(op.Exprs))
			for i, e := range op.Exprs {
				next[i] = -1
				if c, isCol := e.(*expr.Column); isCol && c.Index >= 0 && c.Index < len(from) {
					next[i] = from[c.Index]
				}
			}
			from = next
		case *physical.Sink:
			sink = op
		}
	}
	keyCols := sink.Out.KeyIndexes()
	carried := make([]bool, tn.Out.Len())
	for _, k := range keyCols {
		if k < len(from) && from[k] >= 0 {
			carried[from[k]] = true
		}
	}
	for _, p := range tn.Partition {
		if !carried[p] {
			return nil, false
		}
	}
	dec, err := types.NewDecoderOpts(sink.KeyFormat, sink.Out, keyCols, sink.KeyOptions)
	if err != nil {
		return nil, false
	}
	out := make(types.Row, sink.Out.Len())
	row := make(types.Row, tn.Out.Len())
	for _, k := range keys {
		if err := dec.Decode(k, out); err != nil {
			return nil, false
		}
		for i := range row {
			row[i] = types.NullDatum
		}
		for _, c := range keyCols {
			if c < len(from) && from[c] >= 0 {
				row[from[c]] = out[c]
			}
		}
		if view.nullPartition(row) {
			continue // no partition holds it
		}
		if err := view.partitionKey(row); err != nil {
			return nil, false
		}
		key := bytes.Clone(view.key)
		if tn.FromTable {
			key = appendPart(nil, view.key) // the prefix of the partition's entries (updateRows)
		}
		if !slices.ContainsFunc(prefixes, func(p []byte) bool { return bytes.Equal(p, key) }) {
			prefixes = append(prefixes, key)
		}
	}
	return prefixes, true
}

// sameKeys reports whether the aggregate stores its groups under the
// table's key bytes: one key column of the same type, encoded alike.
func sameKeys(a *physical.Aggregate, sink *physical.Sink) bool {
	ak, sk := a.Out.KeyIndexes(), sink.Out.KeyIndexes()
	if len(ak) != 1 || len(sk) != 1 || a.Store.KeyFormat != sink.KeyFormat {
		return false
	}
	if !a.Out.Columns[ak[0]].Type.Equal(sink.Out.Columns[sk[0]].Type) {
		return false
	}
	ao, so := a.Store.KeyOptions, sink.KeyOptions
	return ao.Delimiter == so.Delimiter && (ao.WrapSingleValue == nil) == (so.WrapSingleValue == nil) &&
		(ao.WrapSingleValue == nil || *ao.WrapSingleValue == *so.WrapSingleValue)
}

// stopErr turns the end of a LIMIT into success.
func stopErr(err error) error {
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}

// downstream returns the part of st from node n on: n and the nodes fed
// by it, in st's order. What feeds n (sources, a join and its stores) a
// view of n's stored state does not need.
func downstream(t *physical.Topology, st *physical.SubTopology, n *physical.Node) *physical.SubTopology {
	outs := t.Outputs()
	keep := map[int]bool{n.ID: true}
	var nodes []*physical.Node
	for _, x := range st.Nodes {
		if !keep[x.ID] {
			continue
		}
		nodes = append(nodes, x)
		for _, o := range outs[x.ID] {
			keep[o.ID] = true
		}
	}
	return &physical.SubTopology{ID: st.ID, Nodes: nodes}
}
