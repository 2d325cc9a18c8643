package exec

import (
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// taskEnv is what a task's processors are built with.
type taskEnv struct {
	// out queues the records the task produces (sinks, repartitions,
	// changelogs); nil for push and pull queries.
	out *outbox
	// ksqlDelimited is Config.KsqlDelimited, for the sinks.
	ksqlDelimited bool
	// stores are the task's open stores by name.
	stores map[string]*taskStore
	// terminal receives the changes of a last node that writes nowhere
	// (a push or pull query's result); nil drops them.
	terminal Processor
	// extra builds node kinds exec does not know (tests).
	extra func(n *physical.Node, next Processor) (Processor, error)
	// late counts the rows windowed aggregations drop as late; nil
	// counts nothing.
	late *lateCounter
	// idleAdvance is Config.WindowIdleAdvance.
	idleAdvance time.Duration
	// q, for a task of a persistent query, checks its declared sources'
	// records' partitions (partitioncheck.go); nil checks nothing.
	q *Query
}

// taskGraph is a sub-topology built for one task: a processor per node,
// the sources by topic, and the optional hooks found among them.
type taskGraph struct {
	procs    map[int]Processor // by node ID
	sources  map[string]*sourceOp
	initers  []initializer
	flushers []flusher
	aborters []aborter
	closers  []closer
}

// buildGraph builds st's processors for one task, from its last nodes to
// its sources, each forwarding to the processors of the nodes that read
// it. This is the one place that maps node kinds to processors.
func buildGraph(topo *physical.Topology, st *physical.SubTopology, env *taskEnv) (*taskGraph, error) {
	g := &taskGraph{procs: map[int]Processor{}, sources: map[string]*sourceOp{}}
	outs := topo.Outputs()
	for i := len(st.Nodes) - 1; i >= 0; i-- {
		n := st.Nodes[i]
		var next Processor
		switch o := outs[n.ID]; len(o) {
		case 0:
			next = env.terminal
			if next == nil {
				next = nop{}
			}
		case 1:
			next = inputOf(g.procs[o[0].ID], o[0], n)
		default:
			f := make(fanout, len(o))
			for j, on := range o {
				f[j] = inputOf(g.procs[on.ID], on, n)
			}
			next = f
		}
		p, err := buildNode(n, next, env)
		if err != nil {
			return nil, err
		}
		g.procs[n.ID] = p
		if s, ok := p.(*sourceOp); ok {
			src := n.Op.(*physical.Source)
			g.sources[src.Topic] = s
			s.nullValues = !src.Table && !src.Repartitioned && passesNullValues(n, outs)
		}
		if h, ok := p.(initializer); ok {
			g.initers = append(g.initers, h)
		}
		if h, ok := p.(flusher); ok {
			g.flushers = append(g.flushers, h)
		}
		if h, ok := p.(aborter); ok {
			g.aborters = append(g.aborters, h)
		}
		if h, ok := p.(closer); ok {
			g.closers = append(g.closers, h)
		}
	}
	return g, nil
}

// inputOf returns the processor that node in's changes go to in p, the
// processor of node n: p itself, or for a processor that tells its
// inputs apart (a table join), the one for in's place among n's inputs.
func inputOf(p Processor, n, in *physical.Node) Processor {
	mi, ok := p.(multiInput)
	if !ok {
		return p
	}
	for i, x := range n.Inputs {
		if x == in {
			return mi.input(i)
		}
	}
	return p
}

// passesNullValues reports whether the nodes after n pass a stream's
// null-valued records on as ksqlDB does (Change.NullValue): every path
// ends in a sink through projections and PARTITION BY, or at a filter,
// which drops them. Other nodes (aggregations, joins, table functions,
// a push query's client) never see them.
func passesNullValues(n *physical.Node, outs [][]*physical.Node) bool {
	if len(outs[n.ID]) == 0 {
		return false
	}
	for _, o := range outs[n.ID] {
		switch o.Op.(type) {
		case *physical.Filter, *physical.Sink:
		case *physical.Project, *physical.Rekey, *physical.Merge:
			if !passesNullValues(o, outs) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// store returns the task's open store named by s.
func (env *taskEnv) store(n *physical.Node, s *physical.Store) (*taskStore, error) {
	ts, ok := env.stores[s.Name]
	if !ok {
		return nil, fmt.Errorf("%s needs store %s, which its task did not open", n.Name, s.Name)
	}
	return ts, nil
}

func buildNode(n *physical.Node, next Processor, env *taskEnv) (Processor, error) {
	switch op := n.Op.(type) {
	case *physical.Source:
		s, err := newSource(n.Name, op, next)
		if c := env.q.check(op); err == nil && c != nil {
			s.check = &sourceCheck{c: c, q: env.q}
		}
		return s, err
	case *physical.Merge:
		return &mergeOp{next: next}, nil
	case *physical.Filter:
		ev, err := expr.Compile(op.Predicate)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name, err)
		}
		return &filterOp{name: n.Name, pred: ev, next: next}, nil
	case *physical.Project:
		p := &projectOp{name: n.Name, out: make(types.Row, len(op.Exprs)), outOld: make(types.Row, len(op.Exprs)), next: next}
		for _, e := range op.Exprs {
			ev, err := expr.Compile(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.Name, err)
			}
			p.exprs = append(p.exprs, ev)
			p.copies = append(p.copies, copyFor(e.Type()))
			col := -1
			if c, ok := e.(*expr.Column); ok {
				col = c.Index
			}
			p.cols = append(p.cols, col)
		}
		return p, nil
	case *physical.FlatMap:
		f := &flatMapOp{name: n.Name, in: len(op.Out.Columns) - len(op.Fns), out: make(types.Row, len(op.Out.Columns)), next: next}
		for i, fn := range op.Fns {
			var evs []expr.Evaluator
			for _, a := range op.Args[i] {
				ev, err := expr.Compile(a)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", n.Name, err)
				}
				evs = append(evs, ev)
			}
			f.fns = append(f.fns, fn.Expand)
			f.args = append(f.args, evs)
			f.vals = append(f.vals, make([]types.Datum, len(evs)))
		}
		f.results = make([][]types.Datum, len(op.Fns))
		return f, nil
	case *physical.Rekey:
		in := len(op.Out.Columns)
		r := &rekeyOp{name: n.Name, out: make(types.Row, in), next: next}
		for i, e := range op.Exprs {
			if c, ok := e.(*expr.Column); ok && c.Index == op.Keys[i] {
				continue // the key is an existing column
			}
			ev, err := expr.Compile(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.Name, err)
			}
			r.exprs = append(r.exprs, ev)
			r.slots = append(r.slots, op.Keys[i])
			in--
		}
		r.in = in
		return r, nil
	case *physical.TableChanges:
		store, err := env.store(n, op.Store)
		if err != nil {
			return nil, err
		}
		src, ok := n.Inputs[0].Op.(*physical.Source)
		if !ok {
			return nil, fmt.Errorf("%s must read a source", n.Name)
		}
		dec, err := newRecordDecoder(n.Name, src)
		if err != nil {
			return nil, err
		}
		return &tableChangesOp{store: store, dec: dec, next: next}, nil
	case *physical.Aggregate:
		var store *taskStore
		if env.stores != nil { // nil: a pull query's view of stored groups
			var err error
			if store, err = env.store(n, op.Store); err != nil {
				return nil, err
			}
		}
		a, err := newAggregate(n.Name, op, store, env.out, next)
		if err == nil && a.win != nil {
			a.win.late, a.win.idleAdvance = env.late, env.idleAdvance.Milliseconds()
		}
		return a, err
	case *physical.TopN:
		store, err := env.store(n, op.Store)
		if err != nil {
			return nil, err
		}
		return newTopN(n.Name, op, store, env.out, next)
	case *physical.Materialize:
		store, err := env.store(n, op.Store)
		if err != nil {
			return nil, err
		}
		return &materializeOp{store: store}, nil
	case *physical.StreamTableJoin:
		store, err := env.store(n, op.Store)
		if err != nil {
			return nil, err
		}
		// The input that materializes the join's table store: its
		// source decodes the stored rows.
		table := sourceBelow(inputWithStore(n, op.Store))
		if table == nil {
			return nil, fmt.Errorf("%s must read a stream and a materialized table source", n.Name)
		}
		return newStreamTableJoin(n.Name, op, table, store, next)
	case *physical.TableTableJoin:
		var stores [2]*taskStore
		var sources [2]*physical.Source
		for i, spec := range []*physical.Store{op.LeftStore, op.RightStore} {
			st, err := env.store(n, spec)
			if err != nil {
				return nil, err
			}
			stores[i] = st
			if i == 0 && op.LeftRows {
				continue // an earlier join's rows
			}
			// Each side is the input that keeps the side's store: a
			// TableChanges over its table's source.
			sources[i] = sourceBelow(inputWithStore(n, spec))
			if sources[i] == nil {
				return nil, fmt.Errorf("%s must read the changes of two table sources", n.Name)
			}
		}
		return newTableJoin(n.Name, op, sources, stores, env.out, next)
	case *physical.StreamStreamJoin:
		var stores [3]*taskStore
		for i, spec := range []*physical.Store{op.LeftStore, op.RightStore, op.OuterStore} {
			if spec == nil {
				continue
			}
			st, err := env.store(n, spec)
			if err != nil {
				return nil, err
			}
			stores[i] = st
		}
		var sources [2]*physical.Source
		for i := range sources {
			if len(n.Inputs) == 2 {
				sources[i], _ = n.Inputs[i].Op.(*physical.Source)
			}
			if i == 0 && op.LeftRows != nil {
				sources[i] = op.LeftRows // an earlier join's rows
			}
			if sources[i] == nil {
				return nil, fmt.Errorf("%s must read two stream sources", n.Name)
			}
		}
		return newStreamJoin(n.Name, op, sources, stores, env.out, next)
	case *physical.ForeignKeyJoin:
		store, err := env.store(n, op.LeftStore)
		if err != nil {
			return nil, err
		}
		// The left table's changes, over its source: the input that
		// keeps the left store.
		left := sourceBelow(inputWithStore(n, op.LeftStore))
		if left == nil && !op.LeftRows {
			return nil, fmt.Errorf("%s must read a table's changes and the subscription responses", n.Name)
		}
		var result *taskStore
		if op.ResultStore != nil {
			if result, err = env.store(n, op.ResultStore); err != nil {
				return nil, err
			}
		}
		return newFKJoin(n.Name, op, left, store, result, env.out, next)
	case *physical.ForeignKeySubscriptions:
		subs, err := env.store(n, op.Store)
		if err != nil {
			return nil, err
		}
		right, err := env.store(n, op.RightStore)
		if err != nil {
			return nil, err
		}
		return newFKSubscriptions(n.Name, op, subs, right, env.out), nil
	case *physical.Repartition:
		return newRepartition(n.Name, op, env.out)
	case *physical.TableRepartition:
		return newTableRepartition(n.Name, op, env.out)
	case *physical.Sink:
		return newSink(n.Name, op, env.out, env.ksqlDelimited)
	}
	if env.extra != nil {
		return env.extra(n, next)
	}
	return nil, fmt.Errorf("%s: node kind %T is not supported", n.Name, n.Op)
}

// inputWithStore returns the input of n that keeps store (a table's
// Materialize or TableChanges): a join finds its sides by what they
// hold, not by their order. Nil when none does.
func inputWithStore(n *physical.Node, store *physical.Store) *physical.Node {
	if store == nil {
		return nil
	}
	for _, in := range n.Inputs {
		for _, s := range physical.StoresOf(in) {
			if s.Name == store.Name {
				return in
			}
		}
	}
	return nil
}

// sourceBelow returns the source n reads directly, or nil.
func sourceBelow(n *physical.Node) *physical.Source {
	if n == nil || len(n.Inputs) != 1 {
		return nil
	}
	src, _ := n.Inputs[0].Op.(*physical.Source)
	return src
}
