package exec

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// balancerGroup simulates a group's members for the balancer: each has
// an instance, local task offsets and what it owns.
type simMember struct {
	id, instance string
	offsets      map[string]int64
	owned        map[string][]int32
	generation   int32
}

// runBalance balances members over topics through the GroupBalancer
// interface, as the group leader does, and returns each member's
// assignment.
func runBalance(t testing.TB, b *taskBalancer, members []*simMember, topics map[string]int32) map[string]map[string][]int32 {
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
	out := map[string]map[string][]int32{}
	for _, a := range into.IntoSyncAssignment() {
		m, err := b.ParseSyncAssignment(a.MemberAssignment)
		if err != nil {
			t.Fatal(err)
		}
		out[a.MemberID] = m
	}
	return out
}

// settle runs rebalances until the cooperative rounds end (an
// assignment equal to what members own), as members rejoin after
// revoking; it returns the rounds taken.
func settle(t testing.TB, b *taskBalancer, members []*simMember, topics map[string]int32) int {
	t.Helper()
	for round := 1; round <= 10; round++ {
		asg := runBalance(t, b, members, topics)
		same := true
		for _, m := range members {
			if fmt.Sprint(asg[m.id]) != fmt.Sprint(m.owned) && !(len(asg[m.id]) == 0 && len(m.owned) == 0) {
				same = false
			}
			m.owned = asg[m.id]
			m.generation++
		}
		if same {
			return round
		}
	}
	t.Fatal("the cooperative rebalance did not settle in 10 rounds")
	return 0
}

// taskOwners maps each task to its owner, failing when a task's
// partitions are split between members or a partition is owned twice.
func taskOwners(t testing.TB, b *taskBalancer, members []*simMember) map[TaskID]string {
	t.Helper()
	owner := map[TaskID]string{}
	seen := map[topicPartition]string{}
	for _, m := range members {
		for topic, ps := range m.owned {
			for _, p := range ps {
				tp := topicPartition{topic, p}
				if o, ok := seen[tp]; ok {
					t.Fatalf("%v owned by %s and %s", tp, o, m.id)
				}
				seen[tp] = m.id
				id := TaskID{Sub: b.subs[topic], Partition: p}
				if o, ok := owner[id]; ok && o != m.id {
					t.Fatalf("task %s split between %s and %s", id, o, m.id)
				}
				owner[id] = m.id
			}
		}
	}
	return owner
}

func counts(members []*simMember, owner map[TaskID]string) (lo, hi int) {
	per := map[string]int{}
	for _, m := range owner {
		per[m]++
	}
	lo = 1 << 30
	for _, m := range members {
		lo, hi = min(lo, per[m.id]), max(hi, per[m.id])
	}
	return lo, hi
}

// TestTaskBalancer: co-partitioned inputs of a task go to one member;
// tasks spread evenly; a joining member takes about its share and the
// others keep the rest; a leaving member's tasks spread and nothing
// else moves; no partition is ever given to two members at once; a task
// without an owner goes to the instance with its state.
func TestTaskBalancer(t *testing.T) {
	b := &taskBalancer{subs: map[string]int{"left": 0, "right": 0, "repart": 1}}
	topics := map[string]int32{"left": 6, "right": 6, "repart": 6}
	var members []*simMember
	for i := range 3 {
		members = append(members, &simMember{id: fmt.Sprintf("m%d", i), instance: fmt.Sprintf("i%d", i)})
	}
	settle(t, b, members, topics)
	owner := taskOwners(t, b, members)
	if len(owner) != 12 {
		t.Fatalf("%d tasks assigned, want 12", len(owner))
	}
	if lo, hi := counts(members, owner); lo != 4 || hi != 4 {
		t.Fatalf("tasks per member from %d to %d, want 4", lo, hi)
	}

	// A fourth member joins: the others keep what they keep, and only
	// the joiner's share moves (cooperatively: revoked first).
	members = append(members, &simMember{id: "m3", instance: "i3"})
	first := runBalance(t, b, members, topics)
	if len(first["m3"]) != 0 {
		t.Errorf("the joiner got %v in the first round, before the others revoked", first["m3"])
	}
	rounds := settle(t, b, members, topics)
	after := taskOwners(t, b, members)
	moved := 0
	for id, o := range owner {
		if after[id] != o {
			moved++
			if after[id] != "m3" {
				t.Errorf("task %s moved from %s to %s, not to the joiner", id, o, after[id])
			}
		}
	}
	if lo, hi := counts(members, after); moved != 3 || hi-lo > 1 {
		t.Errorf("join moved %d tasks (want 3), tasks per member %d..%d (rounds %d)", moved, lo, hi, rounds)
	}

	// m1 leaves: only its tasks move.
	gone := members[1]
	members = append(members[:1], members[2:]...)
	settle(t, b, members, topics)
	last := taskOwners(t, b, members)
	for id, o := range after {
		if o != gone.id && last[id] != o {
			t.Errorf("task %s moved from %s to %s though its owner stayed", id, o, last[id])
		}
	}
	if lo, hi := counts(members, last); hi-lo > 1 {
		t.Errorf("after a leave, tasks per member %d..%d", lo, hi)
	}

	// A new group (everyone restarted, nothing owned): a task goes to
	// the instance that has its state, the most of it first.
	fresh := []*simMember{
		{id: "a", instance: "ia", offsets: map[string]int64{"1_2": 100}},
		{id: "b", instance: "ib", offsets: map[string]int64{"1_2": 500, "0_5": 10}},
		{id: "c", instance: "ic"},
	}
	settle(t, b, fresh, topics)
	got := taskOwners(t, b, fresh)
	if got[TaskID{1, 2}] != "b" || got[TaskID{0, 5}] != "b" {
		t.Errorf("tasks 1_2 and 0_5 went to %s and %s, want b (which has their state)", got[TaskID{1, 2}], got[TaskID{0, 5}])
	}
}

// TestTaskBalancerScale balances 10,000 tasks (20,000 co-partitioned
// partitions) over 100 members, then lets one member join and one leave,
// and reports the time the leader takes, the tasks moved and the spread.
func TestTaskBalancerScale(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const nTasks, nMembers = 10_000, 100
	b := &taskBalancer{subs: map[string]int{"left": 0, "right": 0}}
	topics := map[string]int32{"left": nTasks, "right": nTasks}
	var members []*simMember
	for i := range nMembers {
		members = append(members, &simMember{id: fmt.Sprintf("m%03d", i), instance: fmt.Sprintf("i%03d", i/4)})
	}
	began := time.Now()
	settle(t, b, members, topics)
	initial := time.Since(began)
	owner := taskOwners(t, b, members)
	lo, hi := counts(members, owner)
	t.Logf("initial: %d tasks over %d members in %v (rounds until settled); tasks per member %d..%d", len(owner), nMembers, initial.Round(time.Millisecond), lo, hi)
	if len(owner) != nTasks || hi-lo > 1 {
		t.Fatalf("initial assignment: %d tasks, per member %d..%d", len(owner), lo, hi)
	}

	moved := func(before, after map[TaskID]string) int {
		n := 0
		for id, o := range before {
			if after[id] != o {
				n++
			}
		}
		return n
	}
	members = append(members, &simMember{id: "m999", instance: "inew"})
	began = time.Now()
	runBalance(t, b, members, topics)
	oneRound := time.Since(began)
	settle(t, b, members, topics)
	joined := taskOwners(t, b, members)
	lo, hi = counts(members, joined)
	n := moved(owner, joined)
	t.Logf("join: one balance %v; %d tasks moved (%.2f%%, 1/N = %.2f%%); per member %d..%d", oneRound.Round(time.Millisecond), n, 100*float64(n)/nTasks, 100.0/float64(len(members)), lo, hi)
	if n > nTasks/len(members)+1 || hi-lo > 1 {
		t.Errorf("join moved %d tasks, per member %d..%d", n, lo, hi)
	}

	members = members[1:] // m000 leaves
	settle(t, b, members, topics)
	left := taskOwners(t, b, members)
	lo, hi = counts(members, left)
	n = moved(joined, left)
	t.Logf("leave: %d tasks moved (%.2f%%); per member %d..%d", n, 100*float64(n)/nTasks, lo, hi)
	if n > nTasks/len(members)+2 || hi-lo > 1 {
		t.Errorf("leave moved %d tasks, per member %d..%d", n, lo, hi)
	}
}

// BenchmarkTaskBalancer100x10000 is one leader balance of 10,000 tasks
// over 100 members that own them all.
func BenchmarkTaskBalancer100x10000(b *testing.B) {
	tb := &taskBalancer{subs: map[string]int{"left": 0, "right": 0}}
	topics := map[string]int32{"left": 10_000, "right": 10_000}
	var members []*simMember
	for i := range 100 {
		members = append(members, &simMember{id: fmt.Sprintf("m%03d", i), instance: fmt.Sprintf("i%03d", i/4)})
	}
	settle(b, tb, members, topics)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		runBalance(b, tb, members, topics)
	}
}

// TestTaskBalancerSpreadsSubTopologies: when a member joins a group whose
// one member has every task, it takes a share of each sub-topology, not
// all of one (their tasks differ in cost: a repartition's reader and an
// aggregate).
func TestTaskBalancerSpreadsSubTopologies(t *testing.T) {
	b := &taskBalancer{subs: map[string]int{"in": 0, "repart": 1}}
	topics := map[string]int32{"in": 6, "repart": 6}
	members := []*simMember{{id: "a", instance: "ia"}}
	settle(t, b, members, topics)
	members = append(members, &simMember{id: "b", instance: "ib"})
	settle(t, b, members, topics)
	per := perSub(taskOwners(t, b, members))
	for _, m := range []string{"a", "b"} {
		if per[m][0] != 3 || per[m][1] != 3 {
			t.Errorf("member %s has %d tasks of sub-topology 0 and %d of 1, want 3 and 3", m, per[m][0], per[m][1])
		}
	}
}

// TestTaskBalancerSpreadsNewGroup: members joining a new group at once
// get a share of each sub-topology too.
func TestTaskBalancerSpreadsNewGroup(t *testing.T) {
	b := &taskBalancer{subs: map[string]int{"in": 0, "repart": 1}}
	topics := map[string]int32{"in": 4, "repart": 4}
	members := []*simMember{{id: "a", instance: "ia"}, {id: "b", instance: "ib"}}
	settle(t, b, members, topics)
	per := perSub(taskOwners(t, b, members))
	for _, m := range []string{"a", "b"} {
		if per[m][0] != 2 || per[m][1] != 2 {
			t.Errorf("member %s has %d tasks of sub-topology 0 and %d of 1, want 2 and 2", m, per[m][0], per[m][1])
		}
	}
}

// perSub counts each member's tasks per sub-topology.
func perSub(owner map[TaskID]string) map[string]map[int]int {
	per := map[string]map[int]int{}
	for id, m := range owner {
		if per[m] == nil {
			per[m] = map[int]int{}
		}
		per[m][id.Sub]++
	}
	return per
}
