package exec

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// fkJoinTopology is CREATE TABLE OUT AS SELECT l.id, n, m FROM lt l JOIN
// rt r ON l.fk = r.id AND <residual>, the residual over L_N and R_M (q5's
// shape: each left row's count against its window's maximum).
func fkJoinTopology(t testing.TB, residual func(n, m expr.Expr) expr.Expr, outCols ...string) *physical.Topology {
	lt := &catalog.Source{Name: "LT", Kind: catalog.Table, Topic: "lt", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 1, Schema: types.Schema{Columns: []types.Column{
			{Name: "ID", Type: types.StringType, Key: true},
			{Name: "FK", Type: types.StringType},
			{Name: "N", Type: types.BigintType},
		}}}
	rt := &catalog.Source{Name: "RT", Kind: catalog.Table, Topic: "rt", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 1, Schema: types.Schema{Columns: []types.Column{
			{Name: "ID", Type: types.StringType, Key: true},
			{Name: "M", Type: types.BigintType},
		}}}
	left := planner.NewScan(lt)
	ls := left.Schema()
	fk := &expr.Column{Index: ls.Index("FK"), Name: "FK", T: types.StringType}
	join, err := planner.NewForeignKeyJoin(planner.InnerJoin, left, planner.NewScan(rt), "L", "R", fk, 0)
	if err != nil {
		t.Fatal(err)
	}
	join.OldValues = true
	in := join.Schema()
	col := func(name string) expr.Expr {
		i := in.Index(name)
		return &expr.Column{Index: i, Name: name, T: in.Columns[i].Type}
	}
	filter, err := planner.NewFilter(join, residual(col("L_N"), col("R_M")))
	if err != nil {
		t.Fatal(err)
	}
	if outCols == nil {
		outCols = []string{"L_ID", "L_N", "R_M"}
	}
	var exprs []expr.Expr
	var names []string
	for _, c := range outCols {
		exprs = append(exprs, col(c))
		names = append(names, c[2:])
	}
	proj, err := planner.NewProject(filter, exprs, names)
	if err != nil {
		t.Fatal(err)
	}
	target := &catalog.Source{Name: "OUT", Kind: catalog.Table, Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: proj.Schema()}
	topo, err := physical.Build("app", &planner.Sink{Input: proj, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestFKJoinFlipsOnly checks a foreign-key join whose result reads no
// column of the right's but through the filter's n >= m (q5's: the
// auction, its window and its count): a change of the right's row
// answers only the subscribers whose outcome it flips (n between the
// old and the new maximum), and the output is the rows that pass, as
// they come and go.
func TestFKJoinFlipsOnly(t *testing.T) {
	topo := fkJoinTopology(t, func(n, m expr.Expr) expr.Expr {
		return &expr.Binary{Op: expr.OpGE, L: n, R: m, T: types.BooleanType}
	}, "L_ID", "L_N")
	s, _ := physical.Find[*physical.ForeignKeySubscriptions](topo)
	if !s.Op.(*physical.ForeignKeySubscriptions).FlipsOnly {
		t.Fatal("the subscriptions answer every change")
	}
	ft := newFKTasks(t, topo)
	ft.feed(t, "rt", 1, "k1", `{"M":5}`)
	ft.feed(t, "lt", 2, "a1", `{"FK":"k1","N":5}`)
	ft.feed(t, "lt", 3, "a2", `{"FK":"k1","N":1}`)
	ft.feed(t, "lt", 4, "a3", `{"FK":"k1","N":2}`)
	ft.expect(t, 3, `a1 {"N":5}`)
	ft.feed(t, "rt", 5, "k1", `{"M":6}`) // a1 no longer passes
	ft.expect(t, 1, `a1 `)
	ft.feed(t, "lt", 6, "a2", `{"FK":"k1","N":7}`)
	ft.expect(t, 1, `a2 {"N":7}`)
	ft.feed(t, "rt", 7, "k1", `{"M":7}`) // a2 passes before and after
	ft.expect(t, 0)
	ft.feed(t, "rt", 8, "k1", `{"M":8}`)
	ft.expect(t, 1, `a2 `)
	ft.feed(t, "rt", 9, "k1", `{"M":2}`)
	ft.expect(t, 3, `a1 {"N":5}`, `a2 {"N":7}`, `a3 {"N":2}`)
	ft.feed(t, "rt", 10, "k1", `{"M":1}`) // all pass before and after
	ft.expect(t, 0)
	ft.feed(t, "rt", 11, "k1", `{"M":3}`)
	ft.expect(t, 1, `a3 `)
	// The right's row goes, then comes back: no row before, or after.
	ft.feed(t, "rt", 12, "k1", "")
	ft.expect(t, 2, `a1 `, `a2 `)
	ft.feed(t, "rt", 13, "k1", `{"M":6}`)
	ft.expect(t, 1, `a2 {"N":7}`)
}

// fkTasks runs both sides of a foreign-key join, each its own task, and
// carries the records between them: registrations to the right's
// task, responses to the left's.
type fkTasks struct {
	left, right *testTask
	pending     []*kgo.Record
	sent        []string // "key value" of each output record
	responses   int      // responses the right's task wrote
	results     int      // joined rows the left's task kept (its result store's changelog)
	regVersions []byte   // each registration's version byte
}

func newFKTasks(t *testing.T, topo *physical.Topology) *fkTasks {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	ft := &fkTasks{}
	send := func(r *kgo.Record) {
		c := &kgo.Record{Topic: r.Topic, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value), Partition: r.Partition, Timestamp: r.Timestamp}
		switch {
		case r.Topic == "out":
			ft.sent = append(ft.sent, fmt.Sprintf("%s %s", r.Key, r.Value))
		case strings.HasSuffix(r.Topic, "-REGISTRATION-RT-topic"):
			ft.regVersions = append(ft.regVersions, r.Value[0])
			ft.pending = append(ft.pending, c)
		case strings.HasSuffix(r.Topic, "-KTABLE-FK-JOIN-OUTPUT-STATE-STORE-RT-changelog"):
			ft.results++
		case strings.HasSuffix(r.Topic, "-RESPONSE-RT-topic"):
			ft.responses++
			ft.pending = append(ft.pending, c)
		}
	}
	sub := func(op physical.Op) int {
		for i, st := range topo.SubTopologies {
			for _, n := range st.Nodes {
				if fmt.Sprintf("%T", n.Op) == fmt.Sprintf("%T", op) {
					return i
				}
			}
		}
		t.Fatalf("no %T in the topology", op)
		return 0
	}
	cfg := func() Config { return Config{StateDir: t.TempDir(), RocksResources: res} }
	ft.left = newTestTask(t, topo, sub(&physical.ForeignKeyJoin{}), cfg(), send)
	ft.right = newTestTask(t, topo, sub(&physical.ForeignKeySubscriptions{}), cfg(), send)
	return ft
}

// run processes one record of topic, then everything it causes.
func (ft *fkTasks) feed(t *testing.T, topic string, ts int64, key, value string) {
	t.Helper()
	r := &kgo.Record{Topic: topic, Key: []byte(key), Timestamp: time.UnixMilli(ts)}
	if value != "" {
		r.Value = []byte(value)
	}
	ft.pending = append(ft.pending, r)
	for len(ft.pending) > 0 {
		r := ft.pending[0]
		ft.pending = ft.pending[1:]
		for _, tt := range []*testTask{ft.left, ft.right} {
			for _, q := range tt.queues {
				if q.tp.topic != r.Topic {
					continue
				}
				q.recs = append(q.recs, r)
				tt.lastBad = nil
				if _, err := tt.process(tt.onBad); err != nil {
					t.Fatal(err)
				}
				if tt.lastBad != nil {
					t.Fatalf("%s %s: bad record: %v", topic, key, tt.lastBad)
				}
				tt.out.flush()
			}
		}
	}
}

func (ft *fkTasks) expect(t *testing.T, responses int, want ...string) {
	t.Helper()
	slices.Sort(ft.sent) // the responses to a right change come in the subscriptions' order
	slices.Sort(want)
	if fmt.Sprint(ft.sent) != fmt.Sprint(want) {
		t.Fatalf("output:\n got %q\nwant %q", ft.sent, want)
	}
	if responses >= 0 && ft.responses != responses {
		t.Fatalf("%d responses, want %d", ft.responses, responses)
	}
	ft.sent, ft.responses = ft.sent[:0], 0
}

// TestFKJoinIndexedResidual checks a foreign-key join whose filter
// compares a left column with a right one (n >= m, q5's count against
// its window's maximum): the output as either side changes, and that a
// change of the right's row answers only the subscribers the filter may
// pass with its old or new row (the responses counted). The same plan
// without the index (a query planned before it: version 0
// registrations, every change of the right's row answered) emits the
// same rows and answers every subscriber.
func TestFKJoinIndexedResidual(t *testing.T) {
	for _, indexed := range []bool{true, false} {
		t.Run(fmt.Sprintf("indexed=%v", indexed), func(t *testing.T) {
			topo := fkJoinTopology(t, func(n, m expr.Expr) expr.Expr {
				return &expr.Binary{Op: expr.OpGE, L: n, R: m, T: types.BooleanType}
			})
			j, _ := physical.Find[*physical.ForeignKeyJoin](topo)
			s, _ := physical.Find[*physical.ForeignKeySubscriptions](topo)
			jop, sop := j.Op.(*physical.ForeignKeyJoin), s.Op.(*physical.ForeignKeySubscriptions)
			if jop.Index == nil || sop.Index == nil || jop.Index.Left != 2 || jop.Index.Right != 1 || jop.Index.Op != expr.OpGE {
				t.Fatalf("index %+v, %+v; want L_N >= R_M", jop.Index, sop.Index)
			}
			if !sop.EmitOnChange {
				t.Fatal("a new plan's subscriptions answer unchanged right rows")
			}
			if !indexed {
				jop.Index, sop.Index, sop.EmitOnChange = nil, nil, false
			}
			ft := newFKTasks(t, topo)
			// picks answers (right changes) as the index does, or all.
			picks := func(some, all int) int {
				if indexed {
					return some
				}
				return all
			}
			ft.feed(t, "rt", 1, "k1", `{"M":5}`)
			ft.expect(t, 0)
			ft.feed(t, "lt", 2, "a1", `{"FK":"k1","N":5}`)
			ft.feed(t, "lt", 3, "a2", `{"FK":"k1","N":1}`)
			ft.feed(t, "lt", 4, "a3", `{"FK":"k1","N":2}`)
			ft.expect(t, 3, `a1 {"N":5,"M":5}`)
			// Only a1's joined row passes n >= m: the others are not
			// kept (their filter outcome is that of no row).
			if want := picks(1, 3); ft.results != want {
				t.Fatalf("%d joined rows kept, want %d", ft.results, want)
			}
			want := byte(0)
			if indexed {
				want = 1
			}
			for _, v := range ft.regVersions {
				if v != want {
					t.Fatalf("registration version %d, want %d", v, want)
				}
			}
			// The maximum moves past a1: only a1 (5 >= 5 before) hears.
			ft.feed(t, "rt", 5, "k1", `{"M":6}`)
			ft.expect(t, picks(1, 3), `a1 `)
			// a2's count passes it (its subscription moves in the order).
			ft.feed(t, "lt", 6, "a2", `{"FK":"k1","N":7}`)
			ft.expect(t, 1, `a2 {"N":7,"M":6}`)
			ft.feed(t, "rt", 7, "k1", `{"M":7}`)
			ft.expect(t, picks(1, 3), `a2 {"N":7,"M":7}`)
			ft.feed(t, "rt", 8, "k1", `{"M":8}`)
			ft.expect(t, picks(1, 3), `a2 `)
			// Down to 2: every subscriber passes.
			ft.feed(t, "rt", 9, "k1", `{"M":2}`)
			ft.expect(t, 3, `a1 {"N":5,"M":2}`, `a2 {"N":7,"M":2}`, `a3 {"N":2,"M":2}`)
			// The same row again, later: nothing changes (a plan made
			// before EmitOnChange answers and emits the rows again).
			ft.feed(t, "rt", 9, "k1", `{"M":2}`)
			if indexed {
				ft.expect(t, 0)
			} else {
				ft.expect(t, 3, `a1 {"N":5,"M":2}`, `a2 {"N":7,"M":2}`, `a3 {"N":2,"M":2}`)
			}
			// a3 moves to another key and back; a1 goes.
			ft.feed(t, "lt", 10, "a3", `{"FK":"k2","N":2}`)
			ft.expect(t, 1, `a3 `)
			ft.feed(t, "lt", 11, "a3", `{"FK":"k1","N":4}`)
			ft.expect(t, 1, `a3 {"N":4,"M":2}`)
			ft.feed(t, "lt", 12, "a1", "")
			ft.expect(t, 0, `a1 `)
			ft.feed(t, "rt", 13, "k1", `{"M":5}`)
			ft.expect(t, 2, `a2 {"N":7,"M":5}`, `a3 `)
			// The right's row goes: those that passed go.
			ft.feed(t, "rt", 14, "k1", "")
			ft.expect(t, picks(1, 2), `a2 `)
			// A NULL count passes nothing and is answered by no change.
			ft.feed(t, "lt", 15, "a4", `{"FK":"k1","N":null}`)
			ft.feed(t, "rt", 16, "k1", `{"M":1}`)
			ft.expect(t, picks(2, 3), `a2 {"N":7,"M":1}`, `a3 {"N":4,"M":1}`)
		})
	}
}
