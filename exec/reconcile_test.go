package exec

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// A revocation franz-go's transactional session did not report (it
// reports one per transaction) still closes its task: a task left open
// on a partition the member no longer has holds its state directory (a
// standby of it never starts) and answers pull queries from stale
// stores (issue 35, the start-up stall).
func TestReconcileMissedRevocations(t *testing.T) {
	tp := func(p int32) topicPartition { return topicPartition{"rep", p} }
	newTM := func(ps ...int32) *taskManager {
		tm := &taskManager{inputs: map[topicPartition]*Task{}, tasks: map[TaskID]*Task{}}
		for _, p := range ps {
			task := &Task{id: TaskID{Sub: 1, Partition: p}}
			tm.inputs[tp(p)], tm.tasks[task.id] = task, task
		}
		return tm
	}
	synced := func(ps ...int32) map[topicPartition]bool {
		m := map[topicPartition]bool{}
		for _, p := range ps {
			m[tp(p)] = true
		}
		return m
	}

	// The member ran 1_0..1_5; the group's latest assignment has 1_0..1_2
	// and the callback reported no revocation (swallowed).
	tm := newTM(0, 1, 2, 3, 4, 5)
	gone, gained, missed := tm.reconcile(nil, nil, synced(0, 1, 2))
	if want := []topicPartition{tp(3), tp(4), tp(5)}; !slices.Equal(gone, want) || !slices.Equal(missed, want) || len(gained) != 0 {
		t.Fatalf("gone %v, missed %v, gained %v; want %v revoked", gone, missed, gained, want)
	}

	// Reported revocations are kept, not doubled.
	gone, _, missed = newTM(0, 1, 2, 3).reconcile([]topicPartition{tp(3)}, nil, synced(0, 1, 2))
	if !slices.Equal(gone, []topicPartition{tp(3)}) || len(missed) != 0 {
		t.Fatalf("gone %v, missed %v", gone, missed)
	}

	// Assigned anew while its task still runs (lost or revoked unseen in
	// between): the task closes and starts again.
	gone, gained, _ = newTM(0, 1).reconcile(nil, []topicPartition{tp(1), tp(2)}, synced(0, 1, 2))
	if !slices.Equal(gone, []topicPartition{tp(1)}) || !slices.Equal(gained, []topicPartition{tp(1), tp(2)}) {
		t.Fatalf("gone %v, gained %v", gone, gained)
	}

	// Noted as assigned, but the latest assignment no longer has it.
	_, gained, _ = newTM().reconcile(nil, []topicPartition{tp(1), tp(2)}, synced(2))
	if !slices.Equal(gained, []topicPartition{tp(2)}) {
		t.Fatalf("gained %v", gained)
	}

	// Before the first assignment nothing is known: nothing changes.
	gone, gained, missed = newTM(0).reconcile(nil, nil, nil)
	if len(gone)+len(gained)+len(missed) != 0 {
		t.Fatalf("gone %v, gained %v, missed %v", gone, gained, missed)
	}
}

// TestRevokedTaskClosesWithoutTransaction: an instance that ran every
// task, with no input yet (so no transaction ends between rebalances),
// gives up its tasks to a second instance over two rebalances (the
// stateless tasks at once, the stateful ones once the second's warm-ups
// have caught up). franz-go's transactional session reports only the
// first revocation; the stateful tasks must close all the same, or the
// first instance keeps serving their (stale) stores and its standbys of
// them wait for their state directories forever.
func TestRevokedTaskClosesWithoutTransaction(t *testing.T) {
	topo := aggTopology(t, "revoked-closes", "BIDDER")
	_, brokers := startAggCluster(t, topo)
	store := ""
	for _, s := range topo.Stores {
		if !s.SourceTopicChangelog {
			store = s.Name
		}
	}
	start := func(id string) *Query {
		cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: id, CommitInterval: 20 * time.Millisecond, StateDir: t.TempDir(),
			StandbyReplicas: 1, ProbingRebalanceInterval: 500 * time.Millisecond}
		q, err := Start("CTAS_OUT_1", topo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(q.Stop)
		return q
	}
	a := start("a")
	waitUntil := func(d time.Duration, ok func() bool) bool {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if ok() {
				return true
			}
		}
		return ok()
	}
	if !waitUntil(20*time.Second, func() bool { _, n := a.HasPartition(store, -1); return n == 3 }) {
		t.Fatal("the first instance never ran every task")
	}
	b := start("b")
	// Each partition active on exactly one instance, a standby on the
	// other.
	settled := func() (bool, string) {
		state := ""
		ok := true
		for p := range int32(3) {
			ha, _ := a.HasPartition(store, p)
			hb, _ := b.HasPartition(store, p)
			_, _, sa := a.StandbyPartition(store, p)
			_, _, sb := b.StandbyPartition(store, p)
			state += fmt.Sprintf(" p%d: active a=%v b=%v, standby a=%v b=%v;", p, ha, hb, sa, sb)
			ok = ok && ha != hb && sa == hb && sb == ha
		}
		_, nb := b.HasPartition(store, -1)
		return ok && nb > 0, state
	}
	if !waitUntil(30*time.Second, func() bool { ok, _ := settled(); return ok }) {
		_, state := settled()
		t.Fatalf("the tasks never settled with one active and one standby each:%s", state)
	}
}
