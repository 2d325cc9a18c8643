package physical

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

var (
	_ Op = (*ForeignKeyJoin)(nil)
	_ Op = (*ForeignKeySubscriptions)(nil)
)

// A foreign-key join of a left table A to a right table B on an
// expression over A's rows equal to B's primary key is built as Kafka
// Streams' KIP-213 joins are, in two sub-topologies that need not have
// the same partition count:
//
//	A's partitions: SOURCE-A → TABLE-CHANGES-A ─┐
//	                SOURCE-…-RESPONSE-B ────────┴→ JOIN-B (ForeignKeyJoin) → …
//	B's partitions: SOURCE-B → TABLE-CHANGES-B ─┐
//	                SOURCE-…-REGISTRATION-B ────┴→ KTABLE-FK-JOIN-SUBSCRIPTION-B (ForeignKeySubscriptions)
//
// JOIN-B sends each change of A to the registration topic keyed by its
// foreign key (in B's key format, so that it lands in the partition of
// B's row of that key), with A's primary key, A's partition and a
// 128-bit murmur3 hash of A's new value. The subscription node keeps
// the subscriptions in a store keyed by [foreign key][primary key] and
// answers on the response topic, in the subscribing row's partition:
// when a subscription arrives, with B's row of its foreign key; when B's
// row changes, to every subscription of its key (a prefix scan). JOIN-B
// drops a response whose hash is not that of A's current value (it
// answers an older version of the row) and emits the joined row or, for
// an INNER join without a match or a deleted row, its deletion. These
// topic and store names are pinned by testdata/topologies.

// The subscription instructions, as Kafka Streams' SubscriptionWrapper
// names them; a registration record's value starts with one. Running
// queries' registration topics hold them: keep the values.
const (
	// FKDeleteNoPropagate removes a subscription (the foreign key
	// changed away from it) and answers nothing.
	FKDeleteNoPropagate byte = 0
	// FKDeleteAndPropagate removes a subscription and answers without a
	// right row (the left row was deleted, or its foreign key became
	// NULL).
	FKDeleteAndPropagate byte = 1
	// FKPropagateNullIfNoValue subscribes and answers with the right
	// row, or without one when there is none.
	FKPropagateNullIfNoValue byte = 2
	// FKPropagateOnlyIfValue subscribes and answers only when there is
	// a right row (an INNER join's update that kept its foreign key).
	FKPropagateOnlyIfValue byte = 3
)

// ForeignKeyJoin is the left table's side of a foreign-key join. Its
// inputs are the left table's changes (TableChanges over LeftStore,
// restored from the left's topic) and the response topic's source (a
// Raw source). It writes Registration (Partitions: the right table's
// partition count). Its rows are the left's columns then the right's
// (JoinSchema), keyed by the left's primary key; an output row's
// timestamp is that of the change that caused it (the left's change, or
// the right's).
type ForeignKeyJoin struct {
	Type        JoinType // INNER or LEFT
	Left, Right string   // the tables' names, for EXPLAIN
	// ForeignKey is the join expression over the left's rows; it is
	// encoded as the right's key column (RightKeySchema) in the right's
	// key format.
	ForeignKey     expr.Expr
	RightKeySchema types.Schema
	RightKeyFormat string
	RightKeyOpts   types.FormatOptions
	LeftStore      *Store
	// LeftRows marks a left that is an earlier join's rows (its first
	// input is that join): LeftStore is then the join's own store of
	// them (JSON, keyed by the left's key in LeftKeyFormat, with its
	// own changelog), which gives each change its old row.
	LeftRows      bool
	LeftKeyFormat string
	LeftKeyOpts   types.FormatOptions
	// Right decodes the right's rows carried in responses.
	RightSource *Source
	// Registration is the subscription-registration topic and its
	// partition count.
	Registration string
	Partitions   int32
	// Partitioner picks a registration's partition from its foreign
	// key: the right table's topic's (crc32 for a table declared so).
	Partitioner types.Partitioner
	// ResultStore, when set, keeps the joined rows the join has emitted
	// (JSON, keyed by the left's key, with its own changelog), so that
	// each output change carries the key's previous joined row as its
	// old row: a filter or an aggregate after the join needs it (a row
	// that stops passing a WHERE becomes a deletion; an aggregate takes
	// the old row out). Without it (and in queries planned before it
	// existed) an update carries only its new row.
	ResultStore *Store
	// Index, when set, orders the join's subscriptions by a column of
	// the left's rows that the filter right after the join compares
	// with a column of the right's (see FKIndex): registrations carry
	// that column's value (the version 1 layout), and a change of the
	// right's row answers only the subscriptions the filter may pass
	// with its old or new row. Queries planned before it existed run
	// without (version 0 registrations, every subscription answered).
	Index *FKIndex
	Out   types.Schema
}

// FKIndex is a conjunct of the filter right after a foreign-key join,
// Left Op Right, where Left is a column of the left's rows and Right a
// column of the right's (positions in each side's rows, not the joined
// row's), both INTEGER or BIGINT, and Op one of =, <, <=, >, >=. A
// joined row for which it does not hold (a NULL operand included) does
// not pass the filter: a change of the right's row for which it holds
// with neither the old row nor the new need not reach a subscriber.
type FKIndex struct {
	Left  int
	Op    expr.Op
	Right int
	// Name describes the conjunct, for EXPLAIN.
	Name string
}

// fkIndex returns the index the filters right after a foreign-key join
// of a left with nLeft columns give (nil: none of their conjuncts fits):
// the first comparison of a left column with a right one by <, <=, >
// or >= (q5's count against its window's maximum), else the first by =.
func fkIndex(filters []expr.Expr, out types.Schema, nLeft int) (*FKIndex, expr.Expr) {
	var found, eq *FKIndex
	var foundE, eqE expr.Expr
	var walk func(e expr.Expr)
	walk = func(e expr.Expr) {
		b, ok := e.(*expr.Binary)
		if !ok || found != nil {
			return
		}
		if b.Op == expr.OpAnd {
			walk(b.L)
			walk(b.R)
			return
		}
		l, lok := b.L.(*expr.Column)
		r, rok := b.R.(*expr.Column)
		if !lok || !rok || l.Index < 0 || r.Index < 0 || l.Index >= out.Len() || r.Index >= out.Len() {
			return
		}
		if !fkIndexable(out.Columns[l.Index].Type) || !fkIndexable(out.Columns[r.Index].Type) {
			return
		}
		op := b.Op
		switch {
		case l.Index < nLeft && r.Index >= nLeft:
		case r.Index < nLeft && l.Index >= nLeft:
			l, r = r, l
			switch op {
			case expr.OpLT:
				op = expr.OpGT
			case expr.OpLE:
				op = expr.OpGE
			case expr.OpGT:
				op = expr.OpLT
			case expr.OpGE:
				op = expr.OpLE
			}
		default:
			return
		}
		ix := &FKIndex{Left: l.Index, Op: op, Right: r.Index - nLeft, Name: l.Name + " " + op.String() + " " + r.Name}
		switch op {
		case expr.OpLT, expr.OpLE, expr.OpGT, expr.OpGE:
			found, foundE = ix, e
		case expr.OpEQ:
			if eq == nil {
				eq, eqE = ix, e
			}
		}
	}
	for _, f := range filters {
		walk(f)
	}
	if found == nil {
		return eq, eqE
	}
	return found, foundE
}

// readsRight reports whether the nodes after a foreign-key join (after,
// nearest first) may read a column of the right's (at nLeft on) other
// than through conjunct (the index's, skipped): its filters, then the
// projection after them; any other node (or none: the join's rows go
// on as they are) reads them all.
func readsRight(after []planner.Node, conjunct expr.Expr, nLeft int) bool {
	reads := false
	var walk func(e expr.Expr)
	walk = func(e expr.Expr) {
		if e == nil || e == conjunct || reads {
			return
		}
		if c, ok := e.(*expr.Column); ok && c.Index >= nLeft {
			reads = true
			return
		}
		for _, ch := range e.Children() {
			walk(ch)
		}
	}
	for _, n := range after {
		switch n := n.(type) {
		case *planner.Filter:
			walk(n.Predicate)
			continue
		case *planner.Project:
			for _, e := range n.Exprs {
				walk(e)
			}
			return reads
		}
		return true
	}
	return true
}

// fkIndexable reports whether a column of type t can order
// subscriptions: an integer (its datum's I).
func fkIndexable(t types.Type) bool {
	return t.Kind == types.Int || t.Kind == types.Bigint
}

func (j *ForeignKeyJoin) Schema() types.Schema { return j.Out }
func (j *ForeignKeyJoin) Explain(name string) string {
	stores := j.LeftStore.Name
	if j.ResultStore != nil {
		stores = "stores: " + stores + ", " + j.ResultStore.Name
	} else {
		stores = "store: " + stores
	}
	index := ""
	if j.Index != nil {
		index = "; subscriptions by " + j.Index.Name
	}
	return fmt.Sprintf("  --> %s  ForeignKeyJoin: %s JOIN %s ON %s = %s.%s (%s; subscribes on %s%s%s)\n", name, j.Type, j.Right,
		j.ForeignKey, j.Right, j.RightKeySchema.Columns[0].Name, stores, j.Registration, partitionerNote(j.Partitioner), index)
}
func (j *ForeignKeyJoin) stores() []*Store {
	if j.ResultStore != nil {
		return []*Store{j.LeftStore, j.ResultStore}
	}
	return []*Store{j.LeftStore}
}
func (j *ForeignKeyJoin) shape() string {
	return fmt.Sprintf("fk join %s %s %s", j.Type, j.Left, j.Right)
}
func (j *ForeignKeyJoin) internalTopic() InternalTopic {
	return InternalTopic{Name: j.Registration, Partitions: j.Partitions}
}

// ForeignKeySubscriptions is the right table's side of a foreign-key
// join. Its inputs are the registration topic's source (a Raw source)
// and the right table's changes (TableChanges over RightStore). It keeps
// the subscriptions in Store (its own changelog) and writes Response
// (Partitions: the left table's partition count), each record to the
// partition its subscription names. It emits nothing downstream.
type ForeignKeySubscriptions struct {
	Right      string
	RightStore *Store
	Store      *Store
	Response   string
	Partitions int32
	// Index is the join's (ForeignKeyJoin.Index): the subscriptions
	// are stored and answered by it. Nil in queries planned before it.
	Index *FKIndex
	// FlipsOnly, with Index, answers a change of the right's row (from
	// one row to another) only to the subscribers for which the index's
	// conjunct holds with one of the rows and not the other: nothing
	// after the join reads the right's columns but that conjunct (the
	// filters' others and the projection after them read only the
	// left's), so a subscriber for which it holds with both has the
	// same result. Unset in queries planned before it.
	FlipsOnly bool
	// EmitOnChange drops a change of the right's row that leaves its
	// value as it was (the same bytes, at the same time or later), as
	// Kafka Streams' table sources do (KIP-557): the subscribers' joined
	// rows would not change. Queries planned before it answer every
	// change.
	EmitOnChange bool
}

func (s *ForeignKeySubscriptions) Schema() types.Schema { return types.Schema{} }
func (s *ForeignKeySubscriptions) Explain(name string) string {
	onChange := ""
	if s.EmitOnChange {
		onChange = "; unchanged rows dropped"
	}
	if s.FlipsOnly {
		onChange += "; answers the filter's changed outcomes only"
	}
	return fmt.Sprintf("  --> %s  ForeignKeySubscriptions: %s (stores: %s, %s; changelog: %s; responds on %s%s)\n", name, s.Right,
		s.RightStore.Name, s.Store.Name, s.Store.Changelog, s.Response, onChange)
}
func (s *ForeignKeySubscriptions) stores() []*Store { return []*Store{s.RightStore, s.Store} }
func (s *ForeignKeySubscriptions) shape() string    { return "fk subscriptions " + s.Right }
func (s *ForeignKeySubscriptions) internalTopic() InternalTopic {
	return InternalTopic{Name: s.Response, Partitions: s.Partitions}
}

// foreignKeyJoin adds a foreign-key join's two sub-topologies (see
// ForeignKeyJoin) and returns JOIN-<right>. Its internal names:
// <appid>-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<right>-topic,
// <appid>-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-<right>-topic and the
// store KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-<right> with changelog
// <appid>-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-<right>-changelog.
//
// after are the plan's nodes after the join, nearest first: a conjunct
// of the filters right after it may order the subscriptions (FKIndex),
// and what reads the join's rows says whether a change of the right's
// row need answer only the subscribers whose outcome it flips
// (ForeignKeySubscriptions.FlipsOnly).
func foreignKeyJoin(g *Graph, j *planner.Join, after []planner.Node) (*Node, error) {
	lscan, lok := j.Left.(*planner.Scan)
	rscan, rok := j.Right.(*planner.Scan)
	if !rok {
		return nil, fmt.Errorf("a foreign-key join's right side must be a table")
	}
	ls, rs := planner.Sources(j.Left)[0], rscan.Source
	if ls.Partitions <= 0 || rs.Partitions <= 0 {
		return nil, fmt.Errorf("a foreign-key join needs the partition counts of %s and %s", ls.Name, rs.Name)
	}
	app := g.t.AppID
	right := rs.Name
	reg := app + "-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-" + right + "-topic"
	resp := app + "-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-" + right + "-topic"
	subStore := "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-" + right
	tableSide := func(scan *planner.Scan) (*Node, *Store, *Source) {
		src := scan.Source
		source := scanSource(scan)
		source.Table = true
		var in *Node
		if scan == rscan && j.RepartitionTable {
			// The right table's records, keyed again as the foreign
			// keys are written (the schema made from the key column),
			// read back from a topic of the join's own.
			name := "KTABLE-FK-JOIN-" + right + "-TABLE"
			layout := keyLayout{columns: []types.Column{scan.Schema().Columns[j.RightKey]}, format: src.KeyFormat, options: src.KeyOptions,
				partitions: src.Partitions}
			readRepartition(source, tableRepartition(g, scan, layout, []int{j.RightKey}, name))
			in = g.Add("SOURCE-"+name+"-repartition", source)
		} else {
			in = g.Add("SOURCE-"+src.Name, source)
		}
		store := &Store{Name: src.Name, Kind: KeyValue, Changelog: source.Topic, SourceTopicChangelog: true,
			KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat, KeyOptions: src.KeyOptions, ValueOptions: src.ValueOptions,
			Schema: scan.Schema()}
		return g.Add("TABLE-CHANGES-"+src.Name, &TableChanges{Out: source.Out, Store: store}, in), store, source
	}
	var lchanges *Node
	var lstore *Store
	if lok {
		lchanges, lstore, _ = tableSide(lscan)
	} else {
		// A table's rows filtered before the join (rule
		// FilterBelowForeignKeyJoin) come as its changes, so that a row
		// that stops passing is taken out of the join.
		var err error
		if lchanges, err = chain(g, j.Left, scanBelow(j.Left)); err != nil {
			return nil, err
		}
		name := "KTABLE-FK-JOIN-LEFT-" + right
		lstore = &Store{Name: name, Kind: KeyValue, Changelog: app + "-" + name + "-changelog", KeyFormat: ls.KeyFormat,
			KeyOptions: ls.KeyOptions, ValueFormat: "JOIN-ROWS", Schema: j.Left.Schema()}
	}
	rchanges, rstore, rsource := tableSide(rscan)
	regIn := g.Add("SOURCE-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-"+right, &Source{Topic: reg, KeyFormat: types.FormatNone,
		ValueFormat: "FK-SUBSCRIPTION", Raw: true})
	var index *FKIndex
	flipsOnly := false
	if !g.plainFK {
		var filters []expr.Expr
		for _, n := range after {
			f, ok := n.(*planner.Filter)
			if !ok {
				break
			}
			filters = append(filters, f.Predicate)
		}
		var conjunct expr.Expr
		index, conjunct = fkIndex(filters, j.Schema(), j.Left.Schema().Len())
		flipsOnly = index != nil && !readsRight(after, conjunct, j.Left.Schema().Len())
	}
	g.Add("KTABLE-FK-JOIN-SUBSCRIPTION-"+right, &ForeignKeySubscriptions{Right: right, RightStore: rstore, Index: index, EmitOnChange: !g.plainFK,
		FlipsOnly: flipsOnly,
		Store: &Store{Name: subStore, Kind: KeyValue, Changelog: app + "-" + subStore + "-changelog", KeyFormat: "FK-SUBSCRIPTION",
			ValueFormat: "FK-SUBSCRIPTION"},
		Response: resp, Partitions: ls.Partitions}, regIn, rchanges)
	respIn := g.Add("SOURCE-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-"+right, &Source{Topic: resp, KeyFormat: types.FormatNone,
		ValueFormat: "FK-RESPONSE", Raw: true})
	rcopy := *rsource
	if j.RepartitionTable {
		// The foreign keys are written as the right table's repartition
		// keys its rows, not with its subject's latest schema
		// (exec's latestKeyEncoder follows RightSource's subject).
		rcopy.KeyOptions.Subject = ""
	}
	rkeyOpts := rs.KeyOptions
	if types.InfersColumns(rs.KeyFormat) {
		// The foreign key's schema is registered under the registration
		// topic's subject (its records' keys), not the right table's.
		rkeyOpts.Subject = reg + "-key"
	}
	rkey := rscan.Schema().Columns[j.RightKey]
	op := &ForeignKeyJoin{Type: j.Type, Left: ls.Name, Right: right, ForeignKey: j.LeftKey,
		RightKeySchema: types.Schema{Columns: []types.Column{rkey}}, RightKeyFormat: rs.KeyFormat, RightKeyOpts: rkeyOpts,
		LeftStore: lstore, LeftRows: !lok, LeftKeyFormat: ls.KeyFormat, LeftKeyOpts: ls.KeyOptions, RightSource: &rcopy, Registration: reg, Partitions: rs.Partitions, Index: index, Out: j.Schema()}
	if rs.Partitioner == types.CRC32 && !j.RepartitionTable {
		// Each subscription to the partition of the right's row of its
		// foreign key, which its producers put there by crc32.
		op.Partitioner = types.CRC32
	}
	if j.OldValues {
		name := "KTABLE-FK-JOIN-OUTPUT-STATE-STORE-" + right
		op.ResultStore = &Store{Name: name, Kind: KeyValue, Changelog: app + "-" + name + "-changelog", KeyFormat: ls.KeyFormat,
			KeyOptions: ls.KeyOptions, ValueFormat: "JOIN-ROWS", Schema: j.Schema()}
	}
	return g.Add("JOIN-"+right, op, lchanges, respIn), nil
}

// scanBelow reports whether n's chain of single-input nodes ends in a
// scan of a source.
func scanBelow(n planner.Node) bool {
	for {
		if _, ok := n.(*planner.Scan); ok {
			return true
		}
		ch := n.Children()
		if len(ch) != 1 {
			return false
		}
		n = ch[0]
	}
}
