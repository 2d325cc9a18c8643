package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// waitCaughtUp waits until every persistent query's consumer group is
// stable and has committed offsets up to the end of every partition it
// reads (offsets short of the end count when only transaction markers lie
// between), and the ends did not move meanwhile. It returns what is
// still behind when ctx ends first.
func (e *env) waitCaughtUp(ctx context.Context) (string, error) {
	why := ""
	for {
		var err error
		why, err = e.caughtUp(ctx)
		if err != nil && ctx.Err() == nil {
			why = err.Error()
		}
		if why == "" && err == nil {
			return "", nil
		}
		select {
		case <-ctx.Done():
			return why, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (e *env) caughtUp(ctx context.Context) (string, error) {
	var ids []string
	for _, q := range e.eng.Catalog().Queries() {
		ids = append(ids, q.ID)
		if st, ok := e.eng.QueryStatus(q.ID); ok && st.State != "RUNNING" {
			if st.Err != "" {
				return "", fmt.Errorf("query %s is %s: %s", q.ID, st.State, st.Err)
			}
		}
	}
	listed, err := e.adm.ListGroups(ctx)
	if err != nil {
		return "", err
	}
	prefix := serviceID + "_query_"
	var groups []string
	for _, g := range listed.Groups() {
		if strings.HasPrefix(g, prefix) {
			groups = append(groups, g)
		}
	}
	for _, id := range ids {
		found := false
		for _, g := range groups {
			found = found || g == prefix+id
		}
		if !found {
			return "query " + id + " has no consumer group yet", nil
		}
	}
	if len(groups) == 0 {
		return "", nil
	}
	sort.Strings(groups)
	described, err := e.adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return "", err
	}
	committed := map[string]kadm.OffsetResponses{}
	topicsOf := map[string][]string{}
	var all []string
	for _, g := range groups {
		d := described[g]
		if d.Err != nil {
			return "", d.Err
		}
		if d.State != "Stable" {
			return "group " + g + " is " + d.State, nil
		}
		offs, err := e.adm.FetchOffsets(ctx, g)
		if err != nil {
			return "", err
		}
		committed[g] = offs
		var topics []string
		for _, m := range d.Members {
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					topics = append(topics, t.Topic)
				}
			}
		}
		offs.Each(func(o kadm.OffsetResponse) { topics = append(topics, o.Topic) })
		topicsOf[g] = topics
		all = append(all, topics...)
	}
	if len(all) == 0 {
		return "", nil
	}
	ends, err := e.adm.ListCommittedOffsets(ctx, all...)
	if err != nil {
		return "", err
	}
	type gap struct {
		group, topic string
		part         int32
		from, until  int64
	}
	var gaps []gap
	for _, g := range groups {
		for _, t := range topicsOf[g] {
			for p, end := range ends[t] {
				var at int64
				if o, ok := committed[g].Lookup(t, p); ok && o.Err == nil {
					at = o.At
				}
				if at < end.Offset {
					gaps = append(gaps, gap{g, t, p, at, end.Offset})
				}
			}
		}
	}
	if len(gaps) > 0 {
		starts := map[string]map[int32]kgo.Offset{}
		for _, gp := range gaps {
			if starts[gp.topic] == nil {
				starts[gp.topic] = map[int32]kgo.Offset{}
			}
			if cur, ok := starts[gp.topic][gp.part]; !ok || gp.from < cur.EpochOffset().Offset {
				starts[gp.topic][gp.part] = kgo.NewOffset().At(gp.from)
			}
		}
		visible, err := e.firstVisible(ctx, starts)
		if err != nil {
			return "", err
		}
		for _, gp := range gaps {
			if off, ok := visible[gp.topic][gp.part]; ok && off >= gp.from && off < gp.until {
				return fmt.Sprintf("group %s is at %s[%d] offset %d, end %d", gp.group, gp.topic, gp.part, gp.from, gp.until), nil
			}
		}
	}
	again, err := e.adm.ListCommittedOffsets(ctx, all...)
	if err != nil {
		return "", err
	}
	for t, ps := range ends {
		for p, end := range ps {
			if o, ok := again.Lookup(t, p); ok && o.Offset != end.Offset {
				return fmt.Sprintf("%s[%d] grew meanwhile", t, p), nil
			}
		}
	}
	return "", nil
}

// firstVisible returns, per partition, the offset of the first record a
// read_committed reader sees from the given offsets, if any within a
// short wait.
func (e *env) firstVisible(ctx context.Context, starts map[string]map[int32]kgo.Offset) (map[string]map[int32]int64, error) {
	cl, err := e.kp.NewClient(kgo.ConsumePartitions(starts),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(30*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[string]map[int32]int64{}
	wctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	for wctx.Err() == nil {
		fs := cl.PollFetches(wctx)
		fs.EachRecord(func(r *kgo.Record) {
			if out[r.Topic] == nil {
				out[r.Topic] = map[int32]int64{}
			}
			if _, seen := out[r.Topic][r.Partition]; !seen {
				out[r.Topic][r.Partition] = r.Offset
			}
		})
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return nil, fmt.Errorf("reading %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
	}
	return out, nil
}
