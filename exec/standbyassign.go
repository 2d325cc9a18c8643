package exec

import (
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Standby replicas and warm-ups, as Kafka Streams'
// HighAvailabilityTaskAssignor places them. After the task-aware
// balancer has chosen each task's member (assignTasks), the leader looks
// at how far behind each instance's copy of a stateful task is (the
// changelogs' end offsets less the offset sums members report):
//
//   - A stateful task goes to a member whose instance is caught up (lag
//     within acceptable.recovery.lag) whenever one is; the member the
//     balance wanted, when it is not, gets the task as a warm-up replica
//     (at most max.warmup.replicas in one assignment) and the task moves
//     there at a later rebalance, once the warm-up has caught up. Members
//     holding warm-ups force a probing rebalance every
//     probing.rebalance.interval.ms until none are left.
//   - Each stateful task gets num.standby.replicas standbys, on instances
//     other than its active's and each other's, the instances closest to
//     caught up first, then those with the fewest standbys.
//
// A member's standbys and warm-ups travel in its assignment's user data
// (AssignmentInfo); a standby keeps a copy of the task's stores from
// their changelogs (standby.go) and reports its position when it joins.

// AssignmentInfo is what an assignment carries beyond its partitions: the
// member's standby tasks ("<sub>_<partition>"), those of them that are
// warm-ups, and when to force a probing rebalance.
type AssignmentInfo struct {
	Version int      `json:"v"`
	Standby []string `json:"s,omitempty"`
	// Warmup are the standbys kept to take a task over.
	Warmup []string `json:"w,omitempty"`
	// ProbeMs is the probing rebalance interval, set when Warmup is not
	// empty.
	ProbeMs int64 `json:"p,omitempty"`
}

// parseAssignmentInfo reads an assignment's user data; a malformed or
// missing one (an older leader) carries no standbys.
func parseAssignmentInfo(assignment []byte) AssignmentInfo {
	var a kmsg.ConsumerMemberAssignment
	var ai AssignmentInfo
	if err := a.ReadFrom(assignment); err != nil || len(a.UserData) == 0 {
		return ai
	}
	_ = json.Unmarshal(a.UserData, &ai)
	return ai
}

// haConfig is how the leader places standbys and warm-ups.
type haConfig struct {
	// changelogs maps each stateful sub-topology to its stores' own
	// changelogs (not source tables' topics).
	changelogs map[int][]string
	// standbys is num.standby.replicas.
	standbys int
	// acceptableLag is acceptable.recovery.lag.
	acceptableLag int64
	// maxWarmups is max.warmup.replicas.
	maxWarmups int
	// probe is probing.rebalance.interval.ms.
	probe time.Duration
	// ends returns the end offsets (last stable) of the changelogs'
	// partitions; nil or an error: unknown, and then only the members
	// that run a task count as caught up on it.
	ends func(topics []string) (map[topicPartition]int64, error)
}

// Defaults of the standby settings, as Kafka Streams'.
const (
	DefaultAcceptableRecoveryLag = 10_000
	DefaultMaxWarmupReplicas     = 2
	DefaultProbingInterval       = 10 * time.Minute
)

// withStandbys is a balance plan whose members' assignments carry their
// AssignmentInfo.
type withStandbys struct {
	plan  kgo.IntoSyncAssignment
	infos map[string]AssignmentInfo
}

func (w withStandbys) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	out := w.plan.IntoSyncAssignment()
	for i := range out {
		ai, ok := w.infos[out[i].MemberID]
		if !ok {
			continue
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(out[i].MemberAssignment); err != nil {
			continue
		}
		ai.Version = 1
		a.UserData, _ = json.Marshal(ai)
		out[i].MemberAssignment = a.AppendTo(nil)
	}
	// A member with nothing but standbys has no partitions: the plan
	// has no entry for it.
	have := map[string]bool{}
	for _, a := range out {
		have[a.MemberID] = true
	}
	ids := make([]string, 0, len(w.infos))
	for id := range w.infos {
		if !have[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		ai := w.infos[id]
		ai.Version = 1
		a := kmsg.NewConsumerMemberAssignment()
		a.UserData, _ = json.Marshal(ai)
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a.AppendTo(nil)})
	}
	return out
}

// unknownLag is the lag of an instance that keeps no state of a task.
const unknownLag = -1

// place moves stateful tasks whose chosen member is not caught up to one
// that is (owner is updated), and returns each member's standbys and
// warm-ups; nil when the query keeps no state or wants neither.
func (h haConfig) place(members []balanceMember, tasks []TaskID, current, owner []int) []AssignmentInfo {
	if len(h.changelogs) == 0 || len(members) == 0 {
		return nil
	}
	var ends map[topicPartition]int64
	if h.ends != nil {
		var topics []string
		for _, cls := range h.changelogs {
			topics = append(topics, cls...)
		}
		slices.Sort(topics)
		ends, _ = h.ends(topics)
	}
	endSum := func(t TaskID) (int64, bool) {
		if ends == nil {
			return 0, false
		}
		sum := int64(0)
		for _, topic := range h.changelogs[t.Sub] {
			e, ok := ends[topicPartition{topic, t.Partition}]
			if !ok {
				return 0, false
			}
			sum += e
		}
		return sum, true
	}
	// lag is how far member m's instance is behind on task i. An
	// instance that keeps none of the task's state is as far behind as
	// the changelogs are long, as in Kafka Streams: a task whose
	// changelogs hold no more than acceptable.recovery.lag moves to it at
	// once, with no warm-up (and no wait for a probing rebalance).
	lag := func(m, i int, key string, end int64, endOK bool) int64 {
		if current[i] == m {
			return 0
		}
		off, ok := members[m].offsets[key]
		switch {
		case ok && off == caughtUp:
			return 0
		case ok && off >= 0 && endOK:
			return max(end-off, 0)
		case !ok && endOK:
			return end
		}
		return unknownLag
	}
	caught := func(l int64) bool { return l >= 0 && l <= h.acceptableLag }

	byInstance := map[string][]int{}
	var names []string
	for i, m := range members {
		if byInstance[m.instance] == nil {
			names = append(names, m.instance)
		}
		byInstance[m.instance] = append(byInstance[m.instance], i)
	}
	slices.Sort(names)
	load := make([]int, len(members))
	for _, o := range owner {
		load[o]++
	}
	infos := make([]AssignmentInfo, len(members))
	standbyLoad := make([]int, len(members))
	instStandbys := map[string]int{}
	// pairs counts the standbys on an instance of tasks active on
	// another: each instance's tasks spread their standbys over all
	// others, so that when one fails its tasks spread too.
	pairs := map[[2]string]int{}
	warmups, placed := 0, false
	lags := make([]int64, len(members))
	type cand struct {
		name string
		lag  int64
	}
	var cands []cand
	for i, t := range tasks {
		if _, ok := h.changelogs[t.Sub]; !ok {
			continue
		}
		end, endOK := endSum(t)
		key := t.String()
		for m := range members {
			lags[m] = lag(m, i, key, end, endOK)
		}
		// The active: a caught-up member, when the chosen one is not —
		// the task's owner if it has one (it is), else the least loaded
		// caught-up member (all within the acceptable lag are as good as
		// each other, as in Kafka Streams).
		if o := owner[i]; !caught(lags[o]) {
			c := current[i]
			if c < 0 {
				for m := range members {
					if caught(lags[m]) && (c < 0 || load[m] < load[c]) {
						c = m
					}
				}
			}
			if c >= 0 {
				owner[i] = c
				load[o]--
				load[c]++
				if warmups < h.maxWarmups && members[o].instance != members[c].instance {
					warmups++
					infos[o].Standby = append(infos[o].Standby, t.String())
					infos[o].Warmup = append(infos[o].Warmup, t.String())
					infos[o].ProbeMs = h.probe.Milliseconds()
					standbyLoad[o]++
					placed = true
				}
			}
		}
		if h.standbys <= 0 {
			continue
		}
		// Standbys: on other instances, the least behind first.
		active := members[owner[i]].instance
		cands = cands[:0]
		for _, name := range names {
			if name == active {
				continue
			}
			best := int64(unknownLag)
			for _, m := range byInstance[name] {
				if l := lags[m]; l >= 0 && (best < 0 || l < best) {
					best = l
				}
			}
			cands = append(cands, cand{name, best})
		}
		sort.SliceStable(cands, func(a, b int) bool {
			la, lb := cands[a].lag, cands[b].lag
			if (la >= 0) != (lb >= 0) {
				return la >= 0
			}
			// Copies within the acceptable lag are as good as each
			// other: spread them.
			if la >= 0 && !(caught(la) && caught(lb)) && la != lb {
				return la < lb
			}
			pa, pb := pairs[[2]string{active, cands[a].name}], pairs[[2]string{active, cands[b].name}]
			if pa != pb {
				return pa < pb
			}
			return instStandbys[cands[a].name] < instStandbys[cands[b].name]
		})
		for _, c := range cands[:min(h.standbys, len(cands))] {
			to := -1
			for _, m := range byInstance[c.name] {
				if to < 0 || standbyLoad[m] < standbyLoad[to] {
					to = m
				}
			}
			if slices.Contains(infos[to].Standby, key) {
				continue // already its warm-up
			}
			infos[to].Standby = append(infos[to].Standby, key)
			standbyLoad[to]++
			instStandbys[c.name]++
			pairs[[2]string{active, c.name}]++
			placed = true
		}
	}
	if !placed {
		return nil
	}
	return infos
}

// DecodeAssignmentInfo reads the user data of a member's assignment (as
// a group description shows it): its standby tasks. Empty when there is
// none or it is not ours.
func DecodeAssignmentInfo(userData []byte) AssignmentInfo {
	var ai AssignmentInfo
	if len(userData) > 0 {
		_ = json.Unmarshal(userData, &ai)
	}
	return ai
}
