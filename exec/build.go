package exec

import (
	"fmt"
	"strings"

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
	// q, for a task of a persistent query, checks its declared sources'
	// records' partitions (partitioncheck.go); nil checks nothing.
	q *Query
	// topo is the topology being built (buildGraph sets it).
	topo *physical.Topology
}

// taskGraph is a sub-topology built for one task: a processor per node,
// the sources by topic, and the optional hooks found among them.
type taskGraph struct {
	procs    map[string]Processor // by node name
	sources  map[string]*sourceOp
	initers  []initializer
	flushers []flusher
	aborters []aborter
	closers  []closer
}

// readElsewhere reports whether a node of topo other than n uses store
// (a stream–table join looks rows up in the table its Materialize
// writes).
func readElsewhere(topo *physical.Topology, n *physical.Node, store *physical.Store) bool {
	if topo == nil {
		return true
	}
	for _, o := range topo.Nodes {
		if o == n {
			continue
		}
		for _, s := range physical.StoresOf(o) {
			if s.Name == store.Name {
				return true
			}
		}
	}
	return false
}

// buildGraph builds st's processors for one task, each forwarding to the
// processors of the nodes that read it. Nodes are wired by name, never
// by their place in st.Nodes or in a node's Inputs: a node's processor
// is built after those of its readers (whatever st's order), and a node
// that tells its inputs apart (a join's sides) finds each by what the
// input is (inputSides), then takes its changes by the input's name. A
// reader outside st, a cycle, or a side no input fills is an error
// naming the node. This is the one place that maps node kinds to
// processors.
func buildGraph(topo *physical.Topology, st *physical.SubTopology, env *taskEnv) (*taskGraph, error) {
	env.topo = topo
	g := &taskGraph{procs: map[string]Processor{}, sources: map[string]*sourceOp{}}
	nodes := make(map[string]*physical.Node, len(st.Nodes))
	for _, n := range st.Nodes {
		if nodes[n.Name] != nil {
			return nil, fmt.Errorf("sub-topology %d has two nodes named %s", st.ID, n.Name)
		}
		nodes[n.Name] = n
	}
	outs := outputsByName(topo)
	// sides holds, for each node that tells its inputs apart, its
	// inputs' names in the order of its processor's inputs.
	sides := map[string][]string{}
	building := map[string]bool{}
	var build func(n *physical.Node) error
	build = func(n *physical.Node) error {
		if g.procs[n.Name] != nil {
			return nil
		}
		if building[n.Name] {
			return fmt.Errorf("%s reads its own output", n.Name)
		}
		building[n.Name] = true
		var next Processor
		var f fanout
		for _, o := range outs[n.Name] {
			if nodes[o.Name] != o {
				return fmt.Errorf("%s is read by %s, which is not in sub-topology %d", n.Name, o.Name, st.ID)
			}
			if err := build(o); err != nil {
				return err
			}
			p, err := inputOf(g.procs[o.Name], o, sides[o.Name], n)
			if err != nil {
				return err
			}
			f = append(f, p)
		}
		switch len(f) {
		case 0:
			next = env.terminal
			if next == nil {
				next = nop{}
			}
		case 1:
			next = f[0]
		default:
			next = f
		}
		in, err := inputSides(topo, n)
		if err != nil {
			return err
		}
		p, err := buildNode(n, in, next, env)
		if err != nil {
			return err
		}
		if in != nil {
			names := make([]string, len(in))
			for i, x := range in {
				names[i] = x.Name
			}
			sides[n.Name] = names
		}
		g.procs[n.Name] = p
		if s, ok := p.(*sourceOp); ok {
			src := n.Op.(*physical.Source)
			g.sources[src.Topic] = s
			s.nullValues = !src.Table && !src.Repartitioned && passesNullValues(n, outs)
		}
		return nil
	}
	for i := len(st.Nodes) - 1; i >= 0; i-- {
		if err := build(st.Nodes[i]); err != nil {
			return nil, err
		}
	}
	// The hooks, from the last nodes to the sources as st lists them.
	for i := len(st.Nodes) - 1; i >= 0; i-- {
		p := g.procs[st.Nodes[i].Name]
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

// outputsByName returns, by node name, the nodes of topo that read each
// node, in topo's order.
func outputsByName(topo *physical.Topology) map[string][]*physical.Node {
	outs := map[string][]*physical.Node{}
	for _, n := range topo.Nodes {
		for _, in := range n.Inputs {
			outs[in.Name] = append(outs[in.Name], n)
		}
	}
	return outs
}

// inputOf returns the processor that node in's changes go to in p, the
// processor of node n: p itself, or for a processor that tells its
// inputs apart (a join), the one for the side named in.Name (sides: n's
// inputs' names, side by side, from inputSides).
func inputOf(p Processor, n *physical.Node, sides []string, in *physical.Node) (Processor, error) {
	mi, ok := p.(multiInput)
	if !ok {
		return p, nil
	}
	for i, name := range sides {
		if name == in.Name {
			return mi.input(i), nil
		}
	}
	return nil, fmt.Errorf("%s reads %s, which is none of its sides (%s)", n.Name, in.Name, strings.Join(sides, ", "))
}

// inputSides returns the inputs of a node that tells them apart, in the
// order its processor takes them (a join: left, right; a foreign-key
// join: the left's changes, the responses; its subscriptions: the
// registrations, the right's changes), found by what each input is —
// the store it keeps, the source it reads — never by its place among
// n.Inputs, so that inputs listed in another order cannot swap a join's
// sides. Nil for other nodes. An input that fills no side, or a side no
// input fills, is an error naming n.
func inputSides(topo *physical.Topology, n *physical.Node) ([]*physical.Node, error) {
	var anchor *physical.Node // the side found by what it is
	at := 0                   // its place among the sides
	var what string           // what it is, for errors
	switch op := n.Op.(type) {
	case *physical.TableTableJoin:
		anchor, at, what = inputWithStore(n, op.RightStore), 1, "the changes of the right table (store "+op.RightStore.Name+")"
		if !op.LeftRows {
			return bothSides(n, inputWithStore(n, op.LeftStore), anchor, "the changes of the left table (store "+op.LeftStore.Name+")", what)
		}
	case *physical.StreamStreamJoin:
		anchor, at, what = inputFrom(topo, n, op.Right), 1, "the right stream "+op.Right
		if op.LeftRows == nil {
			if left := inputFrom(topo, n, op.Left); left != nil {
				return bothSides(n, left, anchor, "the left stream "+op.Left, what)
			}
		}
	case *physical.ForeignKeyJoin:
		for _, in := range n.Inputs {
			if src, ok := in.Op.(*physical.Source); ok && src.Raw {
				anchor = in
			}
		}
		at, what = 1, "the subscription responses"
		if !op.LeftRows {
			return bothSides(n, inputWithStore(n, op.LeftStore), anchor, "the changes of the left table (store "+op.LeftStore.Name+")", what)
		}
	case *physical.ForeignKeySubscriptions:
		anchor, at, what = inputWithStore(n, op.RightStore), 1, "the changes of the right table (store "+op.RightStore.Name+")"
	default:
		return nil, nil
	}
	if len(n.Inputs) != 2 {
		return nil, fmt.Errorf("%s must read two inputs, not %d", n.Name, len(n.Inputs))
	}
	if anchor == nil {
		return nil, fmt.Errorf("%s: none of its inputs (%s) is %s", n.Name, inputNames(n), what)
	}
	other := n.Inputs[0]
	if other == anchor {
		other = n.Inputs[1]
	}
	if other == anchor {
		return nil, fmt.Errorf("%s reads %s twice", n.Name, anchor.Name)
	}
	sides := make([]*physical.Node, 2)
	sides[at], sides[1-at] = anchor, other
	return sides, nil
}

// bothSides checks that left and right, each found by what it is, are
// n's two inputs.
func bothSides(n *physical.Node, left, right *physical.Node, leftWhat, rightWhat string) ([]*physical.Node, error) {
	switch {
	case len(n.Inputs) != 2:
		return nil, fmt.Errorf("%s must read two inputs, not %d", n.Name, len(n.Inputs))
	case left == nil:
		return nil, fmt.Errorf("%s: none of its inputs (%s) is %s", n.Name, inputNames(n), leftWhat)
	case right == nil:
		return nil, fmt.Errorf("%s: none of its inputs (%s) is %s", n.Name, inputNames(n), rightWhat)
	case left == right:
		return nil, fmt.Errorf("%s: its input %s is both %s and %s", n.Name, left.Name, leftWhat, rightWhat)
	}
	return []*physical.Node{left, right}, nil
}

func inputNames(n *physical.Node) string {
	names := make([]string, len(n.Inputs))
	for i, in := range n.Inputs {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}

// inputFrom returns the first input of n whose rows come from the
// declared source named source (origin), or nil.
func inputFrom(topo *physical.Topology, n *physical.Node, source string) *physical.Node {
	for _, in := range n.Inputs {
		if origin(topo, in) == source {
			return in
		}
	}
	return nil
}

// origin returns the declared source whose rows node n carries: the
// source n reads through nodes of one input each, and through the
// internal topics (repartitions) topo writes and reads back; empty when
// n's rows come from several sources (a join) or none.
func origin(topo *physical.Topology, n *physical.Node) string {
	for range len(topo.Nodes) + 1 {
		src, ok := n.Op.(*physical.Source)
		if !ok {
			if len(n.Inputs) != 1 {
				return ""
			}
			n = n.Inputs[0]
			continue
		}
		if src.Declared != "" {
			return src.Declared
		}
		if n = writerOf(topo, src.Topic); n == nil {
			return ""
		}
	}
	return "" // a cycle through topics
}

// writerOf returns the node of topo that writes the internal topic, or
// nil.
func writerOf(topo *physical.Topology, topic string) *physical.Node {
	for _, n := range topo.Nodes {
		switch op := n.Op.(type) {
		case *physical.Repartition:
			if op.Topic == topic {
				return n
			}
		case *physical.TableRepartition:
			if op.Topic == topic {
				return n
			}
		}
	}
	return nil
}

// passesNullValues reports whether the nodes after n pass a stream's
// null-valued records on as ksqlDB does (Change.NullValue): every path
// ends in a sink through projections and PARTITION BY, or at a filter,
// which drops them. Other nodes (aggregations, joins, table functions,
// a push query's client) never see them.
func passesNullValues(n *physical.Node, outs map[string][]*physical.Node) bool {
	if len(outs[n.Name]) == 0 {
		return false
	}
	for _, o := range outs[n.Name] {
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

// buildNode builds n's processor, forwarding to next; sides are n's
// inputs side by side (inputSides), for a node that tells them apart.
func buildNode(n *physical.Node, sides []*physical.Node, next Processor, env *taskEnv) (Processor, error) {
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
		src := sourceBelow(n)
		if src == nil {
			return nil, fmt.Errorf("%s must read a source", n.Name)
		}
		dec, err := newRecordDecoder(n.Name, src)
		if err != nil {
			return nil, err
		}
		return &tableChangesOp{store: store, dec: dec, next: next}, nil
	case *physical.Aggregate:
		var store, distinct *taskStore
		if env.stores != nil { // nil: a pull query's view of stored groups
			var err error
			if store, err = env.store(n, op.Store); err != nil {
				return nil, err
			}
			if op.DistinctStore != nil {
				if distinct, err = env.store(n, op.DistinctStore); err != nil {
					return nil, err
				}
				// Its entries are read once a transaction (the
				// operator keeps them until Flush), and mostly not
				// again for a long while: a cache of committed values
				// churns (every value new to its group is a miss) and
				// costs more than RocksDB's own memtable and block
				// cache (the distinct bench scenario: 2.7–3.3 → 2.2–2.4
				// CPU s per million records).
				distinct.cacheNothing()
				// Most lookups are of values new to their group: a
				// filter of the stored keys answers them without
				// RocksDB.
				if err := distinct.filterKeys(); err != nil {
					return nil, err
				}
			}
		}
		a, err := newAggregate(n.Name, op, store, distinct, env.out, next)
		if err == nil && a.win != nil {
			a.win.late, a.win.idleAdvance = env.late, op.IdleAdvance
		}
		return a, err
	case *physical.TopN:
		var store *taskStore
		if env.stores != nil { // nil: a pull query's view of stored rows
			var err error
			if store, err = env.store(n, op.Store); err != nil {
				return nil, err
			}
		}
		return newTopN(n.Name, op, store, env.out, next)
	case *physical.Materialize:
		store, err := env.store(n, op.Store)
		if err != nil {
			return nil, err
		}
		if !readElsewhere(env.topo, n, op.Store) {
			store.cacheNothing()
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
			if len(sides) == 2 {
				sources[i], _ = sides[i].Op.(*physical.Source)
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
