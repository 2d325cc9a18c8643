package planner

import (
	"fmt"
	"slices"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// Co-partitioning: which inputs of a join are read through repartition
// topics (rule CoPartitionJoins).
//
// The binder keys a side by its ON expression when the join is not on
// that side's key (a Rekey under the join: the join's rows are keyed by
// the expression, which SELECT sees), and says nothing of partitions.
// Two rows meet only when their keys are the same bytes in the same
// partition, so the rule decides, bottom up, from what each input's
// source declares (key format, partition count, PARTITIONER, a key
// schema in a schema registry) and what the joins below it did:
//
//   - a stream–table join reads its stream through a repartition topic
//     keyed like the table (Join.Repartition) unless the stream is keyed
//     by the join key in the table's format, co-partitioned with it, and
//     its keys are not registry-encoded; the table, when its keys may be
//     written under other schema IDs or its partitioner is unknown, is
//     read through a repartition of its own (RepartitionTable);
//   - a stream–stream join repartitions each side that is not keyed by
//     its key column, the right when the key formats differ, the side
//     partitioned otherwise, both when keys are registry-encoded
//     (Repartition, RepartitionRight);
//   - a table–table join on primary keys reads each table that is not
//     partitioned by murmur2 through a repartition by murmur2 when the
//     two are partitioned otherwise (RepartitionLeftTable,
//     RepartitionTable);
//   - a foreign-key join repartitions its right table as a stream–table
//     join does (RepartitionTable).
//
// A side repartitioned though it is keyed by the join key gets a Rekey by
// that key (its rows' layout unchanged). A join the inputs cannot meet in
// is refused with a JoinError.

// RuleCoPartitionJoins names the co-partitioning rule.
const RuleCoPartitionJoins = "CoPartitionJoins"

// JoinText is where a join's parts are in the statement's text, for the
// errors of the rules that plan it: byte offsets, -1 when not known.
type JoinText struct {
	Text               string
	On, Keyword, Right int // its ON, its JOIN, its right source's name
}

// A JoinError is a join the planner cannot run as written (ksqlDB's
// messages): At is "ON", "JOIN" or "RIGHT", the part of the join's text
// (Join.Text) it points at.
type JoinError struct {
	Join *Join
	At   string
	Msg  string
}

func (e *JoinError) Error() string { return e.Msg }

// Pos returns the error's offset in the statement's text, or -1.
func (e *JoinError) Pos() (string, int) {
	t := e.Join.Text
	if t == nil {
		return "", -1
	}
	switch e.At {
	case "ON":
		return t.Text, t.On
	case "JOIN":
		return t.Text, t.Keyword
	}
	return t.Text, t.Right
}

func joinRefusal(j *Join, at, format string, args ...any) error {
	return &JoinError{Join: j, At: at, Msg: fmt.Sprintf(format, args...)}
}

// CoPartitioned reports whether two sources' producers put a key in the
// same partition: both declared the same known PARTITIONER. A source
// declared 'unknown' is co-partitioned with nothing (it is repartitioned
// by murmur2 first); a crc32 topic and a murmur2 one are not.
func CoPartitioned(a, b *catalog.Source) bool {
	return a.Partitioner == b.Partitioner && a.Partitioner.Known()
}

// RegistryKeys reports whether a join side's key format needs the schema
// registry (AVRO, PROTOBUF, JSON_SR). Two topics may write one key value
// with different schemas (different schema IDs, different bytes), so
// such keys meet only after a repartition writes them with one schema,
// as ksqlDB repartitions every join side with such a key.
func RegistryKeys(sides ...*catalog.Source) bool {
	for _, s := range sides {
		if types.InfersColumns(s.KeyFormat) {
			return true
		}
	}
	return false
}

// coPartitionJoins is the CoPartitionJoins rule.
func coPartitionJoins(n Node, _ Dialect) (Node, bool, error) {
	fired := false
	var walk func(Node) (Node, error)
	walk = func(n Node) (Node, error) {
		ch := n.Children()
		nch := make([]Node, len(ch))
		changed := false
		for i, c := range ch {
			var err error
			if nch[i], err = walk(c); err != nil {
				return nil, err
			}
			changed = changed || nch[i] != c
		}
		if changed {
			n = withChildren(n, nch)
		}
		j, ok := n.(*Join)
		if !ok {
			return n, nil
		}
		out, did, err := coPartition(j)
		if err != nil {
			return nil, err
		}
		if did {
			fired = true
			return out, nil
		}
		return n, nil
	}
	out, err := walk(n)
	if err != nil {
		return nil, false, err
	}
	return out, fired, nil
}

// coPartition plans one join (its inputs planned already); did reports
// whether it set anything.
func coPartition(j *Join) (*Join, bool, error) {
	c := *j
	var err error
	switch {
	case j.Window != nil:
		err = c.coPartitionStreams()
	case j.Tables:
		err = c.coPartitionTables()
	case j.ForeignKey:
		r := rightSource(j)
		c.RepartitionTable = RegistryKeys(r) && !j.LegacyRegistryTables || !r.Partitioner.Known()
	default:
		err = c.coPartitionStreamTable()
	}
	if err != nil {
		return nil, false, err
	}
	did := c.Left != j.Left || c.Right != j.Right || c.Repartition || c.RepartitionRight || c.RepartitionTable || c.RepartitionLeftTable
	return &c, did, nil
}

// coPartitionStreamTable plans a stream–table join.
func (j *Join) coPartitionStreamTable() error {
	rekeyed, _ := rekeyOf(j.Left)
	l, r := rowsSource(j.Left), rightSource(j)
	rep := rekeyed || l.KeyFormat != r.KeyFormat || RegistryKeys(l, r) || !CoPartitioned(l, r)
	if lp, rp := l.Partitions, r.Partitions; !rep && lp > 0 && rp > 0 && lp != rp {
		return partitionCounts(j, l, r)
	}
	if _, ok := j.Left.(*Rekey); rep && !ok {
		keys := j.LeftKeys
		if keys == nil {
			keys = []expr.Expr{j.LeftKey}
		}
		if err := j.rekeyLeft(keys); err != nil {
			return err
		}
	}
	j.Repartition = rep
	// The table's producers may have written a key value under another
	// schema ID than the stream's repartition writes (other bytes,
	// another partition): the table is repartitioned too, both with the
	// schema made from the key columns, as ksqlDB repartitions both.
	j.RepartitionTable = rep && (RegistryKeys(r) && !j.LegacyRegistryTables || !r.Partitioner.Known())
	return nil
}

// coPartitionStreams plans a stream–stream join.
func (j *Join) coPartitionStreams() error {
	lrekeyed, lsame := rekeyOf(j.Left)
	rrekeyed, rsame := rekeyOf(j.Right)
	l, r := rowsSource(j.Left), rowsSource(j.Right)
	lrep, rrep := lrekeyed || lsame, rrekeyed || rsame
	if in, ok := j.Left.(*Join); ok && !lrep {
		// The rows of an earlier join on the left are repartitioned
		// unless they are a stream–table join's rows on their key,
		// co-partitioned with the right (singleRows): another join's
		// record may give several joined rows, which the window store
		// tells apart by their offsets in the repartition topic.
		lrep = !singleRows(in) || l.KeyFormat != r.KeyFormat || l.Partitions != r.Partitions
	}
	if !lrep && !rrep && l.KeyFormat != r.KeyFormat {
		rrep = true
	}
	if !CoPartitioned(l, r) {
		// The topics' producers partitioned keys otherwise (their
		// PARTITIONER): a side declared 'unknown' is repartitioned by
		// murmur2, else the right toward the left's partitioning.
		lrep = lrep || !l.Partitioner.Known()
		rrep = rrep || !r.Partitioner.Known() || !lrep
	}
	if l.Windowed() && RegistryKeys(l, r) {
		// ksqlDB repartitions both sides of a join on schema-registry
		// keys, windowed ones too: each side's key and window are
		// written as the left's windowed keys (so a time window meets
		// one of another size with the same start). The join must be
		// on both key columns: a windowed row is never rekeyed.
		if lrekeyed || rrekeyed {
			return implicitWindowed(j)
		}
	} else if l.Windowed() && (lrep || rrep || l.WindowType != r.WindowType || l.WindowSizeMs != r.WindowSizeMs) {
		// Windowed rows join when their keys, windows included, are the
		// same bytes: a join on anything else would repartition them.
		return implicitWindowed(j)
	}
	if RegistryKeys(l, r) {
		// Both sides are written with one key schema.
		lrep, rrep = true, true
	}
	if lp, rp := l.Partitions, r.Partitions; !lrep && !rrep && lp > 0 && rp > 0 && lp != rp {
		return partitionCounts(j, l, r)
	}
	for _, s := range []*catalog.Source{l, r} {
		switch f := s.KeyFormat; f {
		case types.FormatKafka, types.FormatJSON, types.FormatDelimited, types.FormatNone, types.FormatAvro, types.FormatProtobuf, types.FormatJSONSR:
		default:
			return joinRefusal(j, "JOIN", "stream-stream joins on %s keys are not supported yet", f)
		}
	}
	if lrep && !lrekeyed && !lsame {
		if err := j.rekeyLeft([]expr.Expr{j.LeftKey}); err != nil {
			return err
		}
	}
	if rrep && !rrekeyed && !rsame {
		rs := j.Right.Schema()
		k := &expr.Column{Index: j.RightKey, Name: rs.Columns[j.RightKey].Name, T: rs.Columns[j.RightKey].Type}
		rk, err := sameRowsRekey(j.Right, []expr.Expr{k})
		if err != nil {
			return err
		}
		j.Right = rk
	}
	j.Repartition, j.RepartitionRight = lrep, rrep
	return nil
}

// coPartitionTables plans a table–table join on primary keys: tables
// partitioned otherwise (PARTITIONER) are each read, unless partitioned
// by murmur2, through a repartition of its own by murmur2. (The rows of
// an earlier join on the left are partitioned by murmur2 when they are
// not co-partitioned with the right, or the join is refused.)
func (j *Join) coPartitionTables() error {
	l, r := rowsSource(j.Left), rightSource(j)
	if CoPartitioned(l, r) {
		return nil
	}
	if _, rows := j.Left.(*Join); rows && l.Partitioner != types.Murmur2 {
		return joinRefusal(j, "RIGHT", "Can't join %s with %s: the joined rows are partitioned by %s and %s by %s (PARTITIONER); a RIGHT or FULL join of them is not supported yet",
			l.Name, r.Name, l.Partitioner, r.Name, r.Partitioner)
	}
	j.RepartitionLeftTable = l.Partitioner != types.Murmur2
	j.RepartitionTable = r.Partitioner != types.Murmur2
	return nil
}

// rekeyOf reports whether n is a Rekey the binder built (keyed is set:
// a side keyed by the join's expression) or one this rule did (same).
func rekeyOf(n Node) (keyed, same bool) {
	rk, ok := n.(*Rekey)
	return ok && !rk.SameRows, ok && rk.SameRows
}

// rekeyLeft puts a Rekey by keys, the left's key columns, under the
// join: the left's rows go through a repartition topic as they are.
func (j *Join) rekeyLeft(keys []expr.Expr) error {
	rk, err := sameRowsRekey(j.Left, keys)
	if err != nil {
		return err
	}
	j.Left = rk
	return nil
}

// sameRowsRekey is a Rekey of in by its own key columns: rows laid out
// as in's, so the nodes above read them as they did.
func sameRowsRekey(in Node, keys []expr.Expr) (*Rekey, error) {
	rk, err := NewRekey(in, append([]expr.Expr(nil), keys...), nil)
	if err != nil {
		return nil, err
	}
	if rs, is := rk.Schema(), in.Schema(); !slices.EqualFunc(rs.Columns, is.Columns, sameColumn) {
		return nil, fmt.Errorf("%s: a repartition by the key changes the rows (%s, was %s)", RuleCoPartitionJoins, rs, is)
	}
	rk.SameRows = true
	return rk, nil
}

func sameColumn(a, b types.Column) bool {
	return a.Name == b.Name && a.Key == b.Key && a.Pseudo == b.Pseudo && a.Window == b.Window &&
		a.Header == b.Header && a.HeaderKey == b.HeaderKey && a.Type.Equal(b.Type)
}

func partitionCounts(j *Join, l, r *catalog.Source) error {
	return joinRefusal(j, "RIGHT", "Can't join `%s` with `%s` since the number of partitions don't match. `%s` partitions = %d; `%s` partitions = %d. Please repartition either one so that the number of partitions match.",
		l.Name, r.Name, l.Name, l.Partitions, r.Name, r.Partitions)
}

func implicitWindowed(j *Join) error {
	return joinRefusal(j, "ON", "Implicit repartitioning of windowed sources is not supported. See https://github.com/confluentinc/ksql/issues/4385.")
}

// rightSource is the source of a join's right side (a table's scan, or a
// stream's, rekeyed or not).
func rightSource(j *Join) *catalog.Source { return rowsSource(j.Right) }

// rowsSource describes how n's rows are keyed and partitioned, as a
// source: a scan's source; for a Rekey, its input's (the rule decides
// from that whether it is repartitioned); for the rows of an earlier
// join, a stand-in named after its left source, keyed and partitioned
// as its repartitions left them. A computed table (a derived table's,
// a subquery's) has its partition count chosen once planned: 0 here,
// as no constraint.
func rowsSource(n Node) *catalog.Source {
	switch x := n.(type) {
	case *Scan:
		if x.Computed != nil {
			s := *x.Source
			s.Partitions = 0
			return &s
		}
		return x.Source
	case *Join:
		return joinRows(x)
	}
	if ch := n.Children(); len(ch) == 1 {
		return rowsSource(ch[0])
	}
	return &catalog.Source{Name: n.String()}
}

// joinRows is the stand-in source of a join's rows (rowsSource).
func joinRows(j *Join) *catalog.Source {
	first := rowsSource(j.Left)
	s := &catalog.Source{Name: first.Name, Kind: catalog.Stream, KeyFormat: first.KeyFormat, KeyOptions: first.KeyOptions,
		Partitions: first.Partitions, Partitioner: first.Partitioner, Schema: j.Schema()}
	if j.OfTables() {
		s.Kind = catalog.Table
	}
	switch {
	case j.Window != nil && j.Repartition && j.RepartitionRight:
		// Both streams were repartitioned, keyed like the left (KAFKA
		// for a keyless one).
		if s.KeyFormat == types.FormatNone {
			s.KeyFormat, s.KeyOptions = types.FormatKafka, types.FormatOptions{}
		}
		s.Partitioner = types.Murmur2
	case j.Repartition:
		// Keyed like the right side it was repartitioned to meet.
		t := rightSource(j)
		s.KeyFormat, s.KeyOptions, s.Partitions = t.KeyFormat, t.KeyOptions, t.Partitions
		s.Partitioner = types.Murmur2
		if t.Partitioner == types.CRC32 && !j.RepartitionTable {
			s.Partitioner = types.CRC32
		}
	case j.RepartitionLeftTable:
		s.Partitioner = types.Murmur2
	}
	return s
}

// singleRows reports whether j emits at most one row per input record,
// each with that record's key and offset: stream–table joins over a
// stream (rekeyed or not), not over a stream–stream join.
func singleRows(n Node) bool {
	for {
		switch x := n.(type) {
		case *Scan:
			return true
		case *Rekey:
			n = x.Input
		case *Join:
			if x.Window != nil || x.OfTables() {
				return false
			}
			n = x.Left
		default:
			return false
		}
	}
}

// compactJoinRows is the CompactJoinRows rule: a stream–stream join
// keeps in its window stores only the columns of each side's rows that
// the query reads (CompactRows), and their header columns when a side
// has any (StoreHeaders), unless it keeps the stores of a command
// recorded before (LegacyWholeRows, LegacyNoStoreHeaders).
func compactJoinRows(n Node) (Node, bool) {
	j, ok := n.(*Join)
	if !ok || j.Window == nil || j.LegacyWholeRows || j.CompactRows {
		return n, false
	}
	c := *j
	c.CompactRows = true
	// Header columns are not in the record's value: the stores keep them
	// with the value columns, or stored rows would lose them.
	c.StoreHeaders = !j.LegacyNoStoreHeaders && (len(j.Left.Schema().HeaderIndexes()) > 0 || len(j.Right.Schema().HeaderIndexes()) > 0)
	return &c, true
}
