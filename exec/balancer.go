package exec

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
)

// BalancerProtocol is the name of the task-aware balancer's group
// protocol. Every member of a query's group offers only this one.
const BalancerProtocol = "sqlstreams-tasks"

// caughtUp is the offset sum a member reports for a task it runs: its
// state is current (Kafka Streams' Task.LATEST_OFFSET).
const caughtUp = -2

// MemberInfo is what a stream thread tells the group's leader when it
// joins, in its member metadata's user data (Kafka Streams'
// SubscriptionInfo): which instance it belongs to, how to reach that
// instance, and how much state of each task the instance keeps.
type MemberInfo struct {
	// Version of this encoding (1).
	Version int `json:"v"`
	// Instance is the server's instance ID; Thread the stream thread.
	Instance string `json:"i"`
	Thread   int    `json:"t"`
	// Endpoint is the instance's internal REST address (host:port), for
	// pull queries routed to the owner of a partition; empty when the
	// instance serves none.
	Endpoint string `json:"e,omitempty"`
	// PG is the instance's Postgres wire address, for clients to find
	// the instance that owns a partition; empty when unknown.
	PG string `json:"pg,omitempty"`
	// Offsets maps a task ("<sub>_<partition>") whose state the instance
	// keeps to the sum of its stores' changelog offsets (caughtUp for a
	// task the instance runs; a standby's position as it reads). Stores
	// whose changelog is a source table's topic are not counted.
	Offsets map[string]int64 `json:"o,omitempty"`
}

// DecodeMemberInfo reads a member's user data.
func DecodeMemberInfo(b []byte) (MemberInfo, error) {
	var mi MemberInfo
	if len(b) == 0 {
		return mi, fmt.Errorf("no member info")
	}
	err := json.Unmarshal(b, &mi)
	return mi, err
}

// taskBalancer is every query group's kgo.GroupBalancer: cooperative and
// task-aware. A task is a sub-topology and a partition; all the input
// partitions of a task go to one member, tasks stay with the member
// that owned them, and a task without an owner goes to a member whose
// instance has its state, as Kafka Streams' StreamsPartitionAssignor
// does. Members (stream threads) get a balanced number of tasks each.
type taskBalancer struct {
	subs map[string]int // source topic → sub-topology
	// info returns this member's MemberInfo when it joins.
	info func() MemberInfo
	// ha places standby replicas and warm-ups (standbyassign.go); its
	// zero value places none and never holds a task back.
	ha haConfig
	// got is this member's part of the last assignment it received
	// beyond its partitions: its standby tasks (set by
	// ParseSyncAssignment, read by the stream thread).
	got atomic.Pointer[AssignmentInfo]
	// synced, when set, is told every assignment the member receives,
	// whole (ParseSyncAssignment), before the group's callbacks run.
	synced func(map[string][]int32)
}

var _ kgo.GroupBalancer = (*taskBalancer)(nil)

func newTaskBalancer(topo *physical.Topology, info func() MemberInfo) *taskBalancer {
	b := &taskBalancer{subs: map[string]int{}, info: info}
	for _, st := range topo.SubTopologies {
		for _, s := range st.Sources {
			b.subs[s.Op.(*physical.Source).Topic] = st.ID
		}
	}
	return b
}

func (*taskBalancer) ProtocolName() string { return BalancerProtocol }
func (*taskBalancer) IsCooperative() bool  { return true }

func (b *taskBalancer) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = interests
	meta.Generation = generation
	for topic, ps := range current {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = topic, ps
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	sort.Slice(meta.OwnedPartitions, func(i, j int) bool { return meta.OwnedPartitions[i].Topic < meta.OwnedPartitions[j].Topic })
	mi := b.info()
	mi.Version = 1
	meta.UserData, _ = json.Marshal(mi)
	return meta.AppendTo(nil)
}

func (b *taskBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	parts, err := kgo.ParseConsumerSyncAssignment(assignment)
	if err != nil {
		return nil, err
	}
	ai := parseAssignmentInfo(assignment)
	b.got.Store(&ai)
	if b.synced != nil {
		b.synced(parts)
	}
	return parts, nil
}

func (b *taskBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, err
	}
	return cb, cb.MemberTopics(), nil
}

// Balance plans the assignment, then leaves out for this round every
// partition that moves between members (they are revoked first, and
// assigned in the next round), as cooperative rebalancing wants.
func (b *taskBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	var members []balanceMember
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		mi, _ := DecodeMemberInfo(meta.UserData)
		bm := balanceMember{id: m.MemberID, instance: mi.Instance, offsets: mi.Offsets, generation: meta.Generation}
		if bm.instance == "" {
			bm.instance = m.MemberID
		}
		for _, op := range meta.OwnedPartitions {
			for _, p := range op.Partitions {
				bm.owned = append(bm.owned, topicPartition{op.Topic, p})
			}
		}
		members = append(members, bm)
	})
	tasks, parts := b.tasks(topics)
	current := b.owners(members, tasks)
	owner := assignTasks(members, tasks, current)
	infos := b.ha.place(members, tasks, current, owner)
	plan := cb.NewPlan()
	for i := range tasks {
		m, _ := cb.MemberAt(owner[i])
		for _, tp := range parts[i] {
			plan.AddPartition(m, tp.topic, tp.partition)
		}
	}
	plan.AdjustCooperative(cb)
	if infos == nil {
		return plan
	}
	byID := map[string]AssignmentInfo{}
	for i, m := range members {
		if len(infos[i].Standby) > 0 {
			byID[m.id] = infos[i]
		}
	}
	return withStandbys{plan, byID}
}

// tasks lists the tasks of the topics being balanced, in order, with
// each task's partitions.
func (b *taskBalancer) tasks(topics map[string]int32) ([]TaskID, [][]topicPartition) {
	bySub := map[int][]string{}
	for topic := range topics {
		if sub, ok := b.subs[topic]; ok {
			bySub[sub] = append(bySub[sub], topic)
		}
	}
	subs := make([]int, 0, len(bySub))
	for sub := range bySub {
		subs = append(subs, sub)
		slices.Sort(bySub[sub])
	}
	slices.Sort(subs)
	var tasks []TaskID
	var parts [][]topicPartition
	for _, sub := range subs {
		n := int32(0)
		for _, topic := range bySub[sub] {
			n = max(n, topics[topic])
		}
		for p := range n {
			var tps []topicPartition
			for _, topic := range bySub[sub] {
				if p < topics[topic] {
					tps = append(tps, topicPartition{topic, p})
				}
			}
			tasks = append(tasks, TaskID{Sub: sub, Partition: p})
			parts = append(parts, tps)
		}
	}
	return tasks, parts
}

// owners returns each task's current owner (index into members), or -1:
// the member that claims one of its partitions at the highest generation
// (a member that missed rebalances may still claim what another has
// since been given).
func (b *taskBalancer) owners(members []balanceMember, tasks []TaskID) []int {
	index := make(map[TaskID]int, len(tasks))
	for i, t := range tasks {
		index[t] = i
	}
	owner := make([]int, len(tasks))
	gen := make([]int32, len(tasks))
	for i := range owner {
		owner[i] = -1
	}
	for mi, m := range members {
		for _, tp := range m.owned {
			sub, ok := b.subs[tp.topic]
			if !ok {
				continue
			}
			ti, ok := index[TaskID{Sub: sub, Partition: tp.partition}]
			if !ok {
				continue
			}
			if owner[ti] < 0 || m.generation > gen[ti] {
				owner[ti], gen[ti] = mi, m.generation
			}
		}
	}
	return owner
}

// balanceMember is a member as the balancer sees it.
type balanceMember struct {
	id         string
	instance   string
	offsets    map[string]int64
	generation int32
	owned      []topicPartition
}

// assignTasks gives each task a member (an index into members): it
// keeps tasks with their owners up to a fair share, gives the rest to
// members whose instance has their state (the most of it first) or else
// to the least loaded, and finally moves tasks from the most to the
// least loaded until no member has more than one task more than
// another. Deterministic for the same input.
func assignTasks(members []balanceMember, tasks []TaskID, owner []int) []int {
	out := make([]int, len(tasks))
	if len(members) == 0 {
		return out
	}
	n, m := len(tasks), len(members)
	ceil := (n + m - 1) / m
	floor := n / m
	load := newLoadHeap(m, tasks)
	// Tasks are taken partition by partition across sub-topologies, so
	// that a member keeping or getting a share gets a share of each.
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := tasks[order[a]], tasks[order[b]]
		if ta.Partition != tb.Partition {
			return ta.Partition < tb.Partition
		}
		return ta.Sub < tb.Sub
	})
	// Sticky: a task stays with its owner while the owner is under its
	// fair share.
	var free []int
	for _, i := range order {
		if o := owner[i]; o >= 0 && load.count[o] < ceil {
			out[i] = o
			load.add(o, i, true)
		} else {
			out[i] = -1
			free = append(free, i)
		}
	}
	// Where the state is: instance → its members, and the best instance
	// per task.
	byInstance := map[string][]int{}
	for i, mem := range members {
		byInstance[mem.instance] = append(byInstance[mem.instance], i)
	}
	var names []string
	for name := range byInstance {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, i := range free {
		key := tasks[i].String()
		best, bestSum := "", int64(-1)
		for _, name := range names {
			sum, ok := members[byInstance[name][0]].offsets[key]
			if !ok {
				continue
			}
			if sum == caughtUp {
				sum = 1<<63 - 1
			}
			if sum > bestSum {
				best, bestSum = name, sum
			}
		}
		to := -1
		if best != "" {
			for _, c := range byInstance[best] {
				if load.count[c] < ceil && (to < 0 || load.count[c] < load.count[to]) {
					to = c
				}
			}
		}
		if to < 0 {
			// The member with the fewest tasks of this sub-topology,
			// then the fewest tasks, under its fair share.
			sub := tasks[i].Sub
			for c := range members {
				if load.count[c] >= ceil {
					continue
				}
				if to < 0 || load.perSub(c, sub) < load.perSub(to, sub) ||
					load.perSub(c, sub) == load.perSub(to, sub) && load.count[c] < load.count[to] {
					to = c
				}
			}
			if to < 0 {
				to = load.min()
			}
		}
		out[i] = to
		load.add(to, i, false)
	}
	// Balance: no member below floor (the sticky pass may leave one so).
	for {
		lo := load.min()
		if load.count[lo] >= floor {
			break
		}
		hi := load.max()
		if load.count[hi] <= floor || load.count[hi]-load.count[lo] <= 1 {
			break
		}
		t := load.take(hi, lo, tasks)
		out[t] = lo
		load.add(lo, t, false)
	}
	return out
}

// loadHeap tracks each member's tasks, and the least loaded member.
type loadHeap struct {
	count []int
	// tasks of each member: moved ones first taken from the end, so a
	// member gives away tasks it was newly given before sticky ones.
	sticky, fresh [][]int
	// subs counts each member's tasks per sub-topology.
	subs  [][]int
	tasks []TaskID
	h     memberHeap
}

func newLoadHeap(m int, tasks []TaskID) *loadHeap {
	l := &loadHeap{count: make([]int, m), sticky: make([][]int, m), fresh: make([][]int, m), subs: make([][]int, m), tasks: tasks}
	l.h = memberHeap{count: l.count, pos: make([]int, m)}
	for i := range m {
		l.h.idx = append(l.h.idx, i)
		l.h.pos[i] = i
	}
	heap.Init(&l.h)
	return l
}

// perSub returns how many tasks of sub-topology sub member has.
func (l *loadHeap) perSub(member, sub int) int {
	if sub < len(l.subs[member]) {
		return l.subs[member][sub]
	}
	return 0
}

func (l *loadHeap) add(member, task int, sticky bool) {
	sub := l.tasks[task].Sub
	for len(l.subs[member]) <= sub {
		l.subs[member] = append(l.subs[member], 0)
	}
	l.subs[member][sub]++
	if sticky {
		l.sticky[member] = append(l.sticky[member], task)
	} else {
		l.fresh[member] = append(l.fresh[member], task)
	}
	l.count[member]++
	heap.Fix(&l.h, l.h.pos[member])
}

// take removes a task from member to give it to another, to: a fresh
// one if member has any, else a sticky one; of those, one of the
// sub-topology member has the most tasks of and to the fewest, so that
// each member runs a share of every sub-topology (the tasks of one
// sub-topology differ in cost).
func (l *loadHeap) take(member, to int, tasks []TaskID) int {
	list := &l.fresh[member]
	if len(*list) == 0 {
		list = &l.sticky[member]
	}
	best, bestScore := len(*list)-1, -1<<30
	for i := len(*list) - 1; i >= 0; i-- {
		sub := tasks[(*list)[i]].Sub
		if score := l.perSub(member, sub) - l.perSub(to, sub); score > bestScore {
			best, bestScore = i, score
		}
	}
	t := (*list)[best]
	*list = append((*list)[:best], (*list)[best+1:]...)
	l.subs[member][tasks[t].Sub]--
	l.count[member]--
	heap.Fix(&l.h, l.h.pos[member])
	return t
}

// min returns the least loaded member (the first, on ties).
func (l *loadHeap) min() int { return l.h.idx[0] }

// max returns the most loaded member (the last, on ties).
func (l *loadHeap) max() int {
	hi := 0
	for i, c := range l.count {
		if c >= l.count[hi] {
			hi = i
		}
	}
	return hi
}

// memberHeap is a min-heap of member indexes by task count, then index.
type memberHeap struct {
	idx   []int
	pos   []int
	count []int
}

func (h memberHeap) Len() int { return len(h.idx) }
func (h memberHeap) Less(i, j int) bool {
	a, b := h.idx[i], h.idx[j]
	if h.count[a] != h.count[b] {
		return h.count[a] < h.count[b]
	}
	return a < b
}
func (h memberHeap) Swap(i, j int) {
	h.idx[i], h.idx[j] = h.idx[j], h.idx[i]
	h.pos[h.idx[i]], h.pos[h.idx[j]] = i, j
}
func (h *memberHeap) Push(any) { panic("fixed size") }
func (h *memberHeap) Pop() any { panic("fixed size") }

// localOffsets returns the offset sums of the tasks whose state this
// instance keeps under stateDir for the query appID, from their stores'
// checkpoint files (Kafka Streams reads the same for its
// SubscriptionInfo). A store without a checkpoint counts as 0: the
// instance has it, restoring from the start.
//
// Only the checkpoints of the changelogs in own count (nil: all).
func localOffsets(stateDir, appID string, own map[string]bool) map[string]int64 {
	if stateDir == "" {
		return nil
	}
	dir := filepath.Join(stateDir, appID)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for _, e := range ents {
		if !e.IsDir() || !validTaskName(e.Name()) {
			continue
		}
		stores, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		sum, any := int64(0), false
		for _, s := range stores {
			if !s.IsDir() {
				continue
			}
			any = true
			cp, err := state.ReadCheckpoint(filepath.Join(dir, e.Name(), s.Name(), "checkpoint"))
			if err != nil {
				continue
			}
			for key, off := range cp {
				topic, _, _ := strings.Cut(key, "/")
				if own == nil || own[topic] {
					sum += off
				}
			}
		}
		if any {
			out[e.Name()] = sum
		}
	}
	return out
}

// validTaskName reports whether name is a task's directory name,
// "<sub>_<partition>".
func validTaskName(name string) bool {
	a, b, ok := strings.Cut(name, "_")
	if !ok {
		return false
	}
	_, err1 := strconv.Atoi(a)
	_, err2 := strconv.Atoi(b)
	return err1 == nil && err2 == nil
}
