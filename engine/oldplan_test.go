package engine_test

import (
	"context"
	"testing"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/sql"
)

// recordOldPlan appends to the command topic of brokers the command of
// stmt, a CREATE … AS SELECT, with the plan a build before some change
// recorded: stmt bound over the sources ddls create (one partition each)
// with old setting on its SELECT the binding of those builds. It returns
// the recorded topology.
func recordOldPlan(t *testing.T, ctx context.Context, brokers []string, ddls []string, stmt string, old func(*sql.Select)) *physical.Topology {
	t.Helper()
	cat := catalog.New()
	var sources []string
	for _, d := range ddls {
		st, err := sql.Parse(d)
		if err != nil {
			t.Fatal(err)
		}
		src, err := sql.BindCreateSource(st.(*sql.CreateSource))
		if err != nil {
			t.Fatal(err)
		}
		cat.AddSource(src, false)
		sources = append(sources, src.Name)
	}
	st, err := sql.Parse(stmt)
	if err != nil {
		t.Fatal(err)
	}
	ca := st.(*sql.CreateAs)
	old(ca.Select)
	sink, err := sql.BindCreateAs(ca, cat)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := physical.Build(physical.AppID("sqlstreams", plan.QueryIDPlaceholder), sink)
	if err != nil {
		t.Fatal(err)
	}
	b, err := plan.Encode(&plan.Plan{Sink: sink.Target, Query: topo, Target: sink.Target.Name, Sources: sources, InputPartitions: 1,
		PropagateHeaders: true, KsqlDelimited: true})
	if err != nil {
		t.Fatal(err)
	}
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if _, err := log.Append(ctx, catalog.Command{Statement: stmt, Plan: b, Props: map[string]string{"auto.offset.reset": "earliest"}}); err != nil {
		t.Fatal(err)
	}
	return topo
}

// upgradeService is the service of an upgrade test: one broker and one
// state directory, engines opened on them in turn, and one session
// whose statements run on whichever engine is open.
type upgradeService struct {
	t        *testing.T
	ctx      context.Context
	brokers  []string
	stateDir string
	sess     *engine.Session
}

func newUpgradeService(t *testing.T, ctx context.Context) *upgradeService {
	return &upgradeService{t: t, ctx: ctx, brokers: kfakeBrokers(t), stateDir: t.TempDir(), sess: engine.NewSession()}
}

// open opens an engine of the service.
func (u *upgradeService) open() *engine.Engine {
	u.t.Helper()
	eng, err := engine.Open(u.ctx, engine.Config{Kafka: kafka.Plain(u.brokers...), InstanceID: "i", StateDir: u.stateDir})
	if err != nil {
		u.t.Fatal(err)
	}
	return eng
}

// run runs stmt in the service's session on eng.
func (u *upgradeService) run(eng *engine.Engine, stmt string) {
	u.t.Helper()
	if _, err := eng.Execute(u.ctx, u.sess, stmt, discard{}); err != nil {
		u.t.Fatalf("%s: %v", stmt, err)
	}
}
