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
	Out         types.Schema
}

func (j *ForeignKeyJoin) Schema() types.Schema { return j.Out }
func (j *ForeignKeyJoin) Explain(name string) string {
	stores := j.LeftStore.Name
	if j.ResultStore != nil {
		stores = "stores: " + stores + ", " + j.ResultStore.Name
	} else {
		stores = "store: " + stores
	}
	return fmt.Sprintf("  --> %s  ForeignKeyJoin: %s JOIN %s ON %s = %s.%s (%s; subscribes on %s%s)\n", name, j.Type, j.Right,
		j.ForeignKey, j.Right, j.RightKeySchema.Columns[0].Name, stores, j.Registration, partitionerNote(j.Partitioner))
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
}

func (s *ForeignKeySubscriptions) Schema() types.Schema { return types.Schema{} }
func (s *ForeignKeySubscriptions) Explain(name string) string {
	return fmt.Sprintf("  --> %s  ForeignKeySubscriptions: %s (stores: %s, %s; changelog: %s; responds on %s)\n", name, s.Right,
		s.RightStore.Name, s.Store.Name, s.Store.Changelog, s.Response)
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
func foreignKeyJoin(g *Graph, j *planner.Join) (*Node, error) {
	j, err := feedTables(g, j)
	if err != nil {
		return nil, err
	}
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
		var err error
		if lchanges, err = chain(g, j.Left, false); err != nil {
			return nil, err
		}
		name := "KTABLE-FK-JOIN-LEFT-" + right
		lstore = &Store{Name: name, Kind: KeyValue, Changelog: app + "-" + name + "-changelog", KeyFormat: ls.KeyFormat,
			KeyOptions: ls.KeyOptions, ValueFormat: "JOIN-ROWS", Schema: j.Left.Schema()}
	}
	rchanges, rstore, rsource := tableSide(rscan)
	regIn := g.Add("SOURCE-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-"+right, &Source{Topic: reg, KeyFormat: types.FormatNone,
		ValueFormat: "FK-SUBSCRIPTION", Raw: true})
	g.Add("KTABLE-FK-JOIN-SUBSCRIPTION-"+right, &ForeignKeySubscriptions{Right: right, RightStore: rstore,
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
		LeftStore: lstore, LeftRows: !lok, LeftKeyFormat: ls.KeyFormat, LeftKeyOpts: ls.KeyOptions, RightSource: &rcopy, Registration: reg, Partitions: rs.Partitions, Out: j.Schema()}
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
