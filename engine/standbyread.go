package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/sql"
)

// Standby reads (ksqlDB's ksql.query.pull.enable.standby.reads): a pull
// query whose partition has no active owner that answers — the owner is
// down and not yet out of the group, or the group is rebalancing — is
// answered by a standby copy of that partition (num.standby.replicas),
// here or on another instance, when the copy is at most
// ksql.query.pull.max.allowed.offset.lag changelog offsets behind its
// changelog. Off by default: a standby may be behind the active, so its
// answer may be older than one the active would give. Without a standby
// in reach the query fails with 57P03, as without standby reads.

// Session properties of standby reads, as ksqlDB names them.
const (
	StandbyReadsProp = "ksql.query.pull.enable.standby.reads"
	MaxOffsetLagProp = "ksql.query.pull.max.allowed.offset.lag"
)

// standbyRead is whether a pull query may read standby copies, and how
// far behind (maxLag negative: any, ksqlDB's default Long.MAX_VALUE).
type standbyRead struct {
	enabled bool
	maxLag  int64
}

// pullStandbyRead reads the standby-read properties of a session.
func pullStandbyRead(props map[string]string) (standbyRead, error) {
	sr := standbyRead{maxLag: -1}
	v, ok, err := queryProp(props, StandbyReadsProp)
	if err != nil {
		return sr, err
	}
	sr.enabled = ok && v == "true"
	n, ok, err := queryInt(props, MaxOffsetLagProp)
	if err != nil {
		return sr, err
	}
	if ok {
		sr.maxLag = n
	}
	return sr, nil
}

// selectHere narrows sel to the partitions only of a forwarded pull
// query, each of which must be here: active, or (sb set) a standby copy
// within its lag.
func (e *Engine) selectHere(mat *exec.Query, src *catalog.Source, only []int32, sb *standbyRead, sel *exec.KeySelection) error {
	if sb == nil {
		if err := e.checkHere(mat, src, only); err != nil {
			return err
		}
		sel.Only = only
		return nil
	}
	store, _ := mat.PullStore(src.Name)
	for _, p := range only {
		lag, caughtUp, ok := mat.StandbyPartition(store, p)
		switch {
		case !ok:
			return sql.Errorf(codeUnavailable, "partition %d of %s has no standby copy on this instance (%s) now", p, src.Name, e.cfg.InstanceID)
		case !caughtUp:
			return sql.Errorf(codeUnavailable, "the standby copy of partition %d of %s on this instance (%s) is still reading its changelog (%d offsets behind)", p, src.Name, e.cfg.InstanceID, lag)
		case sb.maxLag >= 0 && lag > sb.maxLag:
			return sql.Errorf(codeUnavailable, "the standby copy of partition %d of %s on this instance (%s) is %d offsets behind, more than %s (%d)", p, src.Name, e.cfg.InstanceID, lag, MaxOffsetLagProp, sb.maxLag)
		}
	}
	sel.Only, sel.Standby, sel.MaxLag = []int32{}, only, sb.maxLag
	return nil
}

// standbyFor returns where a standby copy of partition p of ps.store is:
// "" for this instance (when within the lag), else the endpoint of an
// instance whose member keeps one (which checks its lag when asked), not
// one of exclude.
func (e *Engine) standbyFor(mat *exec.Query, ps pullStore, members ownersEntry, p int32, sr standbyRead, exclude []string) (string, bool) {
	if lag, caughtUp, ok := mat.StandbyPartition(ps.store, p); ok && caughtUp && (sr.maxLag < 0 || lag <= sr.maxLag) && !slices.Contains(exclude, "") {
		return "", true
	}
	sub, ok := mat.StoreSub(ps.store)
	if !ok {
		return "", false
	}
	task := exec.TaskID{Sub: sub, Partition: p}.String()
	cands := slices.Clone(members.standbys[task])
	slices.SortFunc(cands, func(a, b exec.MemberInfo) int { return strings.Compare(a.Instance, b.Instance) })
	for _, mi := range cands {
		if mi.Instance == e.cfg.InstanceID || mi.Endpoint == "" || mi.Endpoint == e.cfg.Endpoint || slices.Contains(exclude, mi.Endpoint) {
			continue
		}
		return mi.Endpoint, true
	}
	return "", false
}

// standbysOf finds a standby for each of parts, none at exclude ("" is
// this instance), and returns them by endpoint, with the partitions that
// have none.
func (e *Engine) standbysOf(ctx context.Context, mat *exec.Query, plan pullPlan, parts []int32, exclude []string, fresh bool) (map[string][]int32, []int32) {
	members, err := e.groupMembers(ctx, mat.Topology().AppID, plan.ps.topics, fresh)
	if err != nil {
		return nil, parts
	}
	out := map[string][]int32{}
	var missing []int32
	for _, p := range parts {
		ep, ok := e.standbyFor(mat, plan.ps, members, p, plan.sr, exclude)
		if !ok {
			missing = append(missing, p)
			continue
		}
		out[ep] = append(out[ep], p)
	}
	return out, missing
}
