package physical

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// Topology is a query's physical form: a DAG of nodes, the state stores
// they use, and the sub-topologies derived from the graph.
type Topology struct {
	// AppID is the query's application ID: its consumer group and the
	// prefix of its internal topics and transactional IDs. Empty for a
	// push query.
	AppID string
	// Nodes are the graph's nodes in topological order: a node's inputs
	// come before it.
	Nodes []*Node
	// Stores are the named state stores the nodes use.
	Stores []*Store
	// SubTopologies are the connected parts of the graph: the graph cut
	// where a repartition topic joins a writer to its reader. Derived by
	// NewTopology; tasks are (sub-topology, partition) pairs.
	SubTopologies []*SubTopology
	// Limit ends a push query after this many rows; -1 for none.
	Limit int64
	// Dialect is the SQL the query was written in (planner.Dialect):
	// "" for ksqlDB's, "SQL" for a query that uses SQL beyond ksqlDB's
	// (its semantics are in its nodes, e.g. Aggregate.DropEmpty; this
	// records why, in the plan).
	Dialect string
}

// Node is one vertex of a topology: an operation and the nodes whose
// output it consumes.
type Node struct {
	// ID is the node's index in Topology.Nodes.
	ID int
	// Name is the node's deterministic name, unique in its topology
	// (FILTER-0001, AGGREGATE, SINK-OUT …); EXPLAIN prints it.
	Name string
	// Op says what the node does; its concrete type is the node's kind.
	Op Op
	// Inputs are the nodes the node reads from; none for a source.
	Inputs []*Node
}

// Op is a node's kind and parameters: one of the types in nodes.go. A
// new kind is a new type implementing Op (and the optional interfaces
// below that apply), plus one case in exec's builder.
type Op interface {
	// Explain renders the node, named name, for EXPLAIN: its lines, each
	// indented by two spaces and ended by a newline.
	Explain(name string) string
	// Schema is the layout of the rows the node emits.
	Schema() types.Schema
}

// Optional parts of an Op, found where a topology needs them.
type (
	// topicWriter is an op that writes an internal topic it owns (a
	// repartition topic).
	topicWriter interface{ internalTopic() InternalTopic }
	// shaper is an op whose parameters are part of the topology's shape
	// (see Topology.ShapeFingerprint).
	shaper interface{ shape() string }
	// columnReader is an op that knows which of its input's columns it
	// reads: markRead marks them and says whether the row ends there (a
	// projection or aggregate replaces it) or passes on whole.
	columnReader interface{ markRead(read []bool) (ends bool) }
	// storeUser is an op that keeps state in stores.
	storeUser interface{ stores() []*Store }
)

// SubTopology is one connected part of a topology's graph: its sources
// read topics (co-partitioned when there are several), and every other
// node is fed from them.
type SubTopology struct {
	ID int
	// Nodes are the sub-topology's nodes in topological order.
	Nodes []*Node
	// Sources are its source nodes (Op *Source), in order.
	Sources []*Node
}

// Source returns the sub-topology's first source.
func (st *SubTopology) Source() *Source { return st.Sources[0].Op.(*Source) }

// Graph builds a topology node by node.
type Graph struct {
	t *Topology
	// wide keeps every column in repartition values (WideRepartitions).
	wide bool
	// plainFK plans foreign-key joins without an index or emit on
	// change (PlainForeignKeyJoins).
	plainFK bool
	// shared holds, while a UNION ALL's branches are added, the source
	// node of each topic they read (addSource).
	shared map[string]*Node
}

// NewGraph starts the topology of the query with application ID appID.
func NewGraph(appID string) *Graph {
	return &Graph{t: &Topology{AppID: appID, Limit: -1}}
}

// Add appends a node named name doing op over inputs, which must have
// been added before.
//
// Node and store names are unique in a topology. Some are made of a
// user's source name (SOURCE-<name>, a joined table's store <name>), so a
// source named like an internal node or store (AGGREGATE, TABLE-INPUT,
// GROUPBY-repartition, …) would take its name: the later node or store
// gets a numbered name instead. Topologies without such a clash keep the
// names they always had.
func (g *Graph) Add(name string, op Op, inputs ...*Node) *Node {
	n := &Node{ID: len(g.t.Nodes), Name: g.unique(name, g.hasNode), Op: op, Inputs: inputs}
	g.t.Nodes = append(g.t.Nodes, n)
	if su, ok := op.(storeUser); ok {
		for _, s := range su.stores() {
			switch have := g.t.Store(s.Name); {
			case have == s: // shared by several nodes (a join's table)
			case have == nil:
				g.t.Stores = append(g.t.Stores, s)
			default:
				s.Name = g.unique(s.Name, func(name string) bool { return g.t.Store(name) != nil })
				g.t.Stores = append(g.t.Stores, s)
			}
		}
	}
	return n
}

// unique returns name, or name-2, name-3, … when taken says it is used.
func (g *Graph) unique(name string, taken func(string) bool) string {
	if !taken(name) {
		return name
	}
	for i := 2; ; i++ {
		if alt := fmt.Sprintf("%s-%d", name, i); !taken(alt) {
			return alt
		}
	}
}

func (g *Graph) hasNode(name string) bool {
	for _, n := range g.t.Nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}

// Topology derives the sub-topologies, decides which columns each source
// decodes, and returns the topology.
func (g *Graph) Topology() *Topology {
	g.t.SubTopologies = derive(g.t.Nodes)
	g.t.readColumns(!g.wide)
	g.t.keepTopNColumns() // after the repartitions narrowed
	g.t.storePartitions()
	return g.t
}

// storePartitions gives the changelogs of the stores of a sub-topology
// that reads a repartition topic of its own partition count (a join's)
// that count, so that each of its tasks has its changelog partition.
func (t *Topology) storePartitions() {
	parts := map[string]int32{}
	for _, n := range t.Nodes {
		if w, ok := n.Op.(topicWriter); ok {
			if it := w.internalTopic(); it.Name != "" && it.Partitions > 0 {
				parts[it.Name] = it.Partitions
			}
		}
	}
	for _, st := range t.SubTopologies {
		var p int32
		for _, s := range st.Sources {
			p = max(p, parts[s.Op.(*Source).Topic])
		}
		if p == 0 {
			continue
		}
		for _, n := range st.Nodes {
			for _, s := range StoresOf(n) {
				if !s.SourceTopicChangelog {
					s.Partitions = p
				}
			}
		}
	}
}

// StoresOf returns the stores the node's op keeps state in.
func StoresOf(n *Node) []*Store {
	if su, ok := n.Op.(storeUser); ok {
		return su.stores()
	}
	return nil
}

// derive splits the graph into its connected parts, numbered in the
// order of their first node. Repartition topics are not edges of the
// graph (the writer and the reader are different nodes with no edge
// between them), so the parts are exactly the sub-topologies.
func derive(nodes []*Node) []*SubTopology {
	parent := make([]int, len(nodes))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, n := range nodes {
		for _, in := range n.Inputs {
			a, b := find(n.ID), find(in.ID)
			if a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	var subs []*SubTopology
	byRoot := map[int]*SubTopology{}
	for _, n := range nodes {
		r := find(n.ID)
		st := byRoot[r]
		if st == nil {
			st = &SubTopology{ID: len(subs)}
			byRoot[r] = st
			subs = append(subs, st)
		}
		st.Nodes = append(st.Nodes, n)
		if _, ok := n.Op.(*Source); ok {
			st.Sources = append(st.Sources, n)
		}
	}
	return subs
}

// Outputs returns, per node ID, the nodes that read it.
func (t *Topology) Outputs() [][]*Node {
	out := make([][]*Node, len(t.Nodes))
	for _, n := range t.Nodes {
		for _, in := range n.Inputs {
			out[in.ID] = append(out[in.ID], n)
		}
	}
	return out
}

// Find returns the first node whose op has type T, and the op.
func Find[T Op](t *Topology) (*Node, T) {
	for _, n := range t.Nodes {
		if op, ok := n.Op.(T); ok {
			return n, op
		}
	}
	var zero T
	return nil, zero
}

// Store returns the named store, or nil.
func (t *Topology) Store(name string) *Store {
	for _, s := range t.Stores {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// InternalTopic is a topic a topology creates for itself.
type InternalTopic struct {
	Name string
	// Compact marks changelogs (cleanup.policy=compact).
	Compact bool
	// Partitions is its partition count; 0 for as many as the query's
	// input has.
	Partitions int32
	// RetentionMs, when set, is the retention of the window, session or
	// join window store the changelog restores: the changelog also
	// deletes records older than it plus the additional retention
	// (cleanup.policy=compact,delete; see Configs), as Kafka Streams
	// does for stores whose keys never repeat.
	RetentionMs int64
}

// DefaultAdditionalRetentionMs is Kafka Streams' default
// windowstore.changelog.additional.retention.ms: a window changelog
// keeps records a day longer than its store.
const DefaultAdditionalRetentionMs = 24 * 3600 * 1000

// Configs returns the topic configs to create it (or alter it) with:
// compacted changelogs cleanup.policy=compact; those of window, session
// and join window stores compact,delete with retention.ms the store's
// retention plus additionalMs (windowstore.changelog.additional.retention.ms);
// nil for a repartition topic.
func (it InternalTopic) Configs(additionalMs int64) map[string]*string {
	if it.RetentionMs > 0 {
		policy, retention := "compact,delete", strconv.FormatInt(it.RetentionMs+additionalMs, 10)
		return map[string]*string{"cleanup.policy": &policy, "retention.ms": &retention}
	}
	if it.Compact {
		compact := "compact"
		return map[string]*string{"cleanup.policy": &compact}
	}
	return nil
}

// InternalTopics returns the topics the topology needs created: its
// repartition topics and its stores' changelogs (stores of a source
// table use the table's topic).
func (t *Topology) InternalTopics() []InternalTopic {
	var out []InternalTopic
	for _, n := range t.Nodes {
		if w, ok := n.Op.(topicWriter); ok {
			if it := w.internalTopic(); it.Name != "" {
				out = append(out, it)
			}
		}
	}
	for _, s := range t.Stores {
		if !s.SourceTopicChangelog {
			it := InternalTopic{Name: s.Changelog, Compact: true, Partitions: s.Partitions}
			switch s.Kind {
			case WindowStore, SessionStore, JoinWindowStore:
				it.RetentionMs = s.RetentionMs
			}
			out = append(out, it)
		}
	}
	return out
}

// SourceTopics returns the topics the topology consumes, by sub-topology.
func (t *Topology) SourceTopics() []string {
	var out []string
	for _, st := range t.SubTopologies {
		for _, s := range st.Sources {
			out = append(out, s.Op.(*Source).Topic)
		}
	}
	return out
}

// readColumns sets, for each source, which of its columns the nodes
// after it read (see Source.Read): nil when the row may reach a node
// that keeps or writes it whole.
//
// With narrow, a repartition writes only the columns the sub-topology
// reading its topic reads (Repartition.Columns), so that what is before
// it reads less in turn: repeated until nothing narrows further.
func (t *Topology) readColumns(narrow bool) {
	outs := t.Outputs()
	for range len(t.Nodes) + 1 {
		t.readColumnsOnce(outs)
		if !narrow || !t.narrowRepartitions() {
			return
		}
	}
}

// narrowRepartitions sets each repartition's Columns from what the
// source reading its topic reads; it reports whether one changed.
func (t *Topology) narrowRepartitions() bool {
	readers := map[string][]*Source{}
	for _, n := range t.Nodes {
		if src, ok := n.Op.(*Source); ok {
			readers[src.Topic] = append(readers[src.Topic], src)
		}
	}
	changed := false
	for _, n := range t.Nodes {
		r, ok := n.Op.(*Repartition)
		if !ok {
			continue
		}
		cols := r.narrowed(readers[r.Topic])
		if !slices.Equal(cols, r.Columns) {
			r.Columns, changed = cols, true
		}
	}
	return changed
}

// narrowed returns the columns r's values need to carry for srcs, the
// sources reading its topic: nil (all) unless there is one, laid out
// like r's rows, that reads fewer than r writes.
func (r *Repartition) narrowed(srcs []*Source) []int {
	if len(srcs) != 1 || srcs[0].Read == nil {
		return nil
	}
	src := srcs[0]
	// The source's columns are r's (key columns as values), then
	// pseudo columns of its own where r's rows have none.
	in, out := r.In.Columns, src.Schema().Columns
	if len(in) > len(out) {
		return nil
	}
	for _, c := range out[len(in):] {
		if !c.Pseudo {
			return nil
		}
	}
	var cols []int
	all := 0
	for i, c := range in {
		if !strings.EqualFold(c.Name, out[i].Name) {
			return nil
		}
		if c.Pseudo {
			continue
		}
		all++
		window := r.WindowType != types.NoWindow && (c.Name == types.WindowStart || c.Name == types.WindowEnd)
		if src.Read[i] || c.Key || out[i].Key || window {
			cols = append(cols, i)
		}
	}
	if len(cols) == all || len(cols) == 0 {
		return nil
	}
	return cols
}

func (t *Topology) readColumnsOnce(outs [][]*Node) {
	for _, n := range t.Nodes {
		src, ok := n.Op.(*Source)
		if !ok {
			continue
		}
		read := make([]bool, src.Schema().Len())
		if ts := src.Schema().Index(src.TimestampColumn); ts >= 0 {
			read[ts] = true
		}
		if markReads(outs, n, read) {
			src.Read = read
		} else {
			src.Read = nil
		}
	}
	for _, n := range t.Nodes {
		if j, ok := n.Op.(*StreamStreamJoin); ok {
			j.readSides(outs, n)
		}
	}
}

// readSides narrows what the sources of a stream–stream join's sides
// decode to the columns the nodes after the join read of its rows (a
// side's columns are in the join's rows at its offset), when the join is
// all that reads them, and the join key. Key and pseudo columns come
// from the record, not the value, whatever is read.
func (j *StreamStreamJoin) readSides(outs [][]*Node, n *Node) {
	read := make([]bool, j.Out.Len())
	if !markReads(outs, n, read) || len(n.Inputs) != 2 {
		return
	}
	offsets := [2]int{0, j.LeftStore.Schema.Len()}
	sizes := [2]int{j.LeftStore.Schema.Len(), j.RightStore.Schema.Len()}
	for i, in := range n.Inputs {
		src, ok := in.Op.(*Source)
		if !ok || src.Read != nil || len(outs[in.ID]) != 1 || src.Schema().Len() != sizes[i] {
			continue
		}
		sread := make([]bool, sizes[i])
		copy(sread, read[offsets[i]:offsets[i]+sizes[i]])
		if ts := src.Schema().Index(src.TimestampColumn); ts >= 0 {
			sread[ts] = true
		}
		// The join reads the side's key column (a value column of a
		// repartitioned side).
		sread[[2]int{j.LeftKey, j.RightKey}[i]] = true
		if w := src.Schema().Index(types.WindowStart); w >= 0 && j.WindowType != types.NoWindow {
			// So are the window bounds of repartitioned windowed rows.
			sread[w], sread[w+1] = true, true
		}
		src.Read = sread
	}
}

// markReads marks what the nodes after n read of its row; false when
// some path may need all of it.
func markReads(outs [][]*Node, n *Node, read []bool) bool {
	next := outs[n.ID]
	if len(next) == 0 {
		return false // a push query's client gets the row as it is
	}
	for _, o := range next {
		cr, ok := o.Op.(columnReader)
		if !ok {
			return false
		}
		if !cr.markRead(read) && !markReads(outs, o, read) {
			return false
		}
	}
	return true
}

// String renders the topology for EXPLAIN, in a stable form.
func (t *Topology) String() string {
	var b strings.Builder
	for _, st := range t.SubTopologies {
		fmt.Fprintf(&b, "Sub-topology %d\n", st.ID)
		for _, n := range st.Nodes {
			b.WriteString(n.Op.Explain(n.Name))
		}
	}
	return b.String()
}

// Fingerprint identifies the topology's printed form.
func (t *Topology) Fingerprint() string {
	sum := sha256.Sum256([]byte(t.String()))
	return hex.EncodeToString(sum[:8])
}

// ShapeFingerprint identifies what a running query's committed state
// depends on: its input topics, sub-topologies, internal topics and stores,
// and where it writes. Two versions of a query with the same shape can
// take over each other's offsets and state, so CREATE OR REPLACE may swap
// one for the other in place; filters and projections may differ.
func (t *Topology) ShapeFingerprint() string {
	var b strings.Builder
	for _, st := range t.SubTopologies {
		fmt.Fprintf(&b, "sub %d\n", st.ID)
		for _, n := range st.Nodes {
			if s, ok := n.Op.(shaper); ok {
				b.WriteString(s.shape())
				b.WriteString("\n")
			}
		}
	}
	for _, s := range t.Stores {
		fmt.Fprintf(&b, "store %s %s changelog %s key %s value %s schema %s\n", s.Name, s.Kind, s.Changelog, s.KeyFormat, s.ValueFormat, s.Schema)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

func tsNote(col string) string {
	if col == "" {
		return ""
	}
	return ", timestamp: " + col
}
