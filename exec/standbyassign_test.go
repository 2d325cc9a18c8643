package exec

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// standbysOf runs one balance and returns each member's AssignmentInfo.
func standbysOf(t testing.TB, b *taskBalancer, members []*simMember, topics map[string]int32) map[string]AssignmentInfo {
	t.Helper()
	var interests []string
	for topic := range topics {
		interests = append(interests, topic)
	}
	var jm []kmsg.JoinGroupResponseMember
	for _, m := range members {
		mb := &taskBalancer{subs: b.subs, info: func() MemberInfo { return MemberInfo{Instance: m.instance, Offsets: m.offsets} }}
		jm = append(jm, kmsg.JoinGroupResponseMember{MemberID: m.id, ProtocolMetadata: mb.JoinGroupMetadata(interests, m.owned, m.generation)})
	}
	gb, _, err := b.MemberBalancer(jm)
	if err != nil {
		t.Fatal(err)
	}
	into, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(topics)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]AssignmentInfo{}
	for _, a := range into.IntoSyncAssignment() {
		out[a.MemberID] = parseAssignmentInfo(a.MemberAssignment)
	}
	return out
}

// haBalancer is a balancer of one stateful sub-topology reading "in",
// whose store's changelog "cl" ends at end in every partition.
func haBalancer(standbys int, end int64) *taskBalancer {
	return &taskBalancer{subs: map[string]int{"in": 0}, ha: haConfig{
		changelogs: map[int][]string{0: {"cl"}}, standbys: standbys, acceptableLag: DefaultAcceptableRecoveryLag,
		maxWarmups: DefaultMaxWarmupReplicas, probe: time.Minute,
		ends: func(topics []string) (map[topicPartition]int64, error) {
			out := map[topicPartition]int64{}
			for p := range int32(10_000) {
				out[topicPartition{"cl", p}] = end
			}
			return out, nil
		},
	}}
}

// TestStandbyPlacement: with num.standby.replicas=1 over three
// instances, every stateful task has one standby, never on its active's
// instance, and standbys spread evenly.
func TestStandbyPlacement(t *testing.T) {
	b := haBalancer(1, 0)
	topics := map[string]int32{"in": 6}
	var members []*simMember
	for i := range 3 {
		members = append(members, &simMember{id: fmt.Sprintf("m%d", i), instance: fmt.Sprintf("i%d", i)})
	}
	settle(t, b, members, topics)
	owner := taskOwners(t, b, members)
	infos := standbysOf(t, b, members, topics)
	per := map[TaskID][]string{}
	for _, m := range members {
		ids := parseTaskIDs(infos[m.id].Standby)
		if len(ids) != 2 {
			t.Errorf("member %s keeps %d standbys %v, want 2", m.id, len(ids), infos[m.id].Standby)
		}
		for _, id := range ids {
			per[id] = append(per[id], m.id)
			if owner[id] == m.id {
				t.Errorf("task %s has its standby on its active %s", id, m.id)
			}
		}
		if len(infos[m.id].Warmup) != 0 {
			t.Errorf("member %s got warm-ups %v in a settled group", m.id, infos[m.id].Warmup)
		}
	}
	if len(per) != 6 {
		t.Errorf("%d tasks have standbys, want 6: %v", len(per), per)
	}
	for id, ms := range per {
		if len(ms) != 1 {
			t.Errorf("task %s has standbys %v, want one", id, ms)
		}
	}
}

// TestWarmup: a member without state joins a member that runs every
// stateful task, whose changelogs are far ahead: no task moves to it at
// once; it gets warm-ups (at most max.warmup.replicas) and a probing
// interval, and once a warm-up reports a position within
// acceptable.recovery.lag, the next (probing) rebalance moves that task.
func TestWarmup(t *testing.T) {
	b := haBalancer(0, 50_000)
	topics := map[string]int32{"in": 6}
	members := []*simMember{{id: "a", instance: "ia"}}
	settle(t, b, members, topics)
	members = append(members, &simMember{id: "b", instance: "ib"})
	settle(t, b, members, topics)
	owner := taskOwners(t, b, members)
	for id, o := range owner {
		if o != "a" {
			t.Fatalf("task %s moved to %s, which has none of its state", id, o)
		}
	}
	infos := standbysOf(t, b, members, topics)
	warm := parseTaskIDs(infos["b"].Warmup)
	if len(warm) != DefaultMaxWarmupReplicas || infos["b"].ProbeMs != time.Minute.Milliseconds() {
		t.Fatalf("joiner's assignment info %+v, want %d warm-ups and a probing interval", infos["b"], DefaultMaxWarmupReplicas)
	}
	if !slices.Equal(infos["b"].Standby, infos["b"].Warmup) {
		t.Errorf("warm-ups %v are not run as standbys %v", infos["b"].Warmup, infos["b"].Standby)
	}

	// One warm-up is caught up (lag 1,000), the other not (lag 20,000).
	b.ha.acceptableLag = 10_000
	members[1].offsets = map[string]int64{warm[0].String(): 49_000, warm[1].String(): 30_000}
	settle(t, b, members, topics)
	owner = taskOwners(t, b, members)
	if owner[warm[0]] != "b" {
		t.Errorf("caught-up warm-up %s did not move to b: %s", warm[0], owner[warm[0]])
	}
	if owner[warm[1]] != "a" {
		t.Errorf("lagging warm-up %s moved to %s", warm[1], owner[warm[1]])
	}
	for id, o := range owner {
		if id != warm[0] && o != "a" {
			t.Errorf("task %s without a warm-up moved to %s", id, o)
		}
	}
	// The active's instance that died: a task without an owner goes to
	// its caught-up standby, not to whoever the balance would pick.
	c := &simMember{id: "c", instance: "ic", offsets: map[string]int64{"0_3": 49_990}}
	members = []*simMember{members[1], c}
	for _, m := range members {
		m.owned = nil
	}
	settle(t, b, members, topics)
	if got := taskOwners(t, b, members)[TaskID{0, 3}]; got != "c" {
		t.Errorf("task 0_3, whose active left, went to %s, not to c with a caught-up copy", got)
	}
}

// TestNoWarmupForShortChangelogs: a member without state joins a member
// that runs every stateful task, whose changelogs are within
// acceptable.recovery.lag: tasks move to it at once (a restore from
// the start is cheap), with no warm-up to wait a probing rebalance for.
func TestNoWarmupForShortChangelogs(t *testing.T) {
	b := haBalancer(0, 14)
	topics := map[string]int32{"in": 4}
	members := []*simMember{{id: "a", instance: "ia"}}
	settle(t, b, members, topics)
	members = append(members, &simMember{id: "b", instance: "ib"})
	settle(t, b, members, topics)
	per := map[string]int{}
	for _, o := range taskOwners(t, b, members) {
		per[o]++
	}
	if per["a"] != 2 || per["b"] != 2 {
		t.Errorf("tasks per member %v, want 2 each", per)
	}
	if infos := standbysOf(t, b, members, topics); len(infos["b"].Warmup) != 0 {
		t.Errorf("joiner got warm-ups %v for changelogs of 14 records", infos["b"].Warmup)
	}
}

// TestStandbyScale is TestTaskBalancerScale with a standby per task: 100
// members (25 instances of 4 threads) and 10,000 stateful tasks; then a
// member leaves and its tasks go to their caught-up standbys.
func TestStandbyScale(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const nTasks, nMembers = 10_000, 100
	// Changelogs beyond acceptable.recovery.lag: only a copy counts as
	// caught up (with short ones every instance would).
	const end = 50_000
	b := haBalancer(1, end)
	topics := map[string]int32{"in": nTasks}
	var members []*simMember
	for i := range nMembers {
		members = append(members, &simMember{id: fmt.Sprintf("m%03d", i), instance: fmt.Sprintf("i%03d", i/4)})
	}
	settle(t, b, members, topics)
	owner := taskOwners(t, b, members)
	began := time.Now()
	infos := standbysOf(t, b, members, topics)
	oneRound := time.Since(began)
	byInstance := map[string][]*simMember{}
	for _, m := range members {
		byInstance[m.instance] = append(byInstance[m.instance], m)
	}
	inst := map[string]string{}
	for _, m := range members {
		inst[m.id] = m.instance
	}
	lo, hi, total := 1<<30, 0, 0
	standbyOf := map[TaskID]string{}
	for _, m := range members {
		ids := parseTaskIDs(infos[m.id].Standby)
		lo, hi, total = min(lo, len(ids)), max(hi, len(ids)), total+len(ids)
		for _, id := range ids {
			if inst[owner[id]] == m.instance {
				t.Fatalf("task %s: standby on its active's instance %s", id, m.instance)
			}
			standbyOf[id] = m.id
		}
	}
	t.Logf("standbys: one balance with placement %v; %d standbys, per member %d..%d", oneRound.Round(time.Millisecond), total, lo, hi)
	if total != nTasks || hi-lo > 2 {
		t.Errorf("%d standbys (want %d), per member %d..%d", total, nTasks, lo, hi)
	}
	// Every instance reports its standbys caught up.
	for _, m := range members {
		for _, id := range parseTaskIDs(infos[m.id].Standby) {
			for _, peer := range byInstance[m.instance] {
				if peer.offsets == nil {
					peer.offsets = map[string]int64{}
				}
				peer.offsets[id.String()] = end
			}
		}
	}
	gone := members[0]
	members = members[1:]
	began = time.Now()
	rounds := settle(t, b, members, topics)
	elapsed := time.Since(began)
	after := taskOwners(t, b, members)
	moved, toStandby := 0, 0
	for id, o := range owner {
		if after[id] != o {
			moved++
			if inst[after[id]] == inst[standbyOf[id]] {
				toStandby++
			} else if moved < 5 {
				t.Logf("task %s: %s -> %s, standby %s", id, o, after[id], standbyOf[id])
			}
		}
	}
	lo, hi = counts(members, after)
	t.Logf("leave with standbys: %d rounds in %v; %d tasks moved (%.2f%%), %d of them to their standby's instance; per member %d..%d",
		rounds, elapsed.Round(time.Millisecond), moved, 100*float64(moved)/nTasks, toStandby, lo, hi)
	// The leaver's 100 tasks go to their standbys; a few more move between
	// caught-up members as the load evens out (each to a copy in step).
	if moved > nTasks/nMembers*3/2 || toStandby != moved || hi-lo > 5 {
		t.Errorf("leave of %s moved %d tasks, %d to their standbys", gone.id, moved, toStandby)
	}
}
