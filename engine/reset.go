package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
)

// topicGoneWait bounds how long a reset waits for a deleted internal
// topic to disappear before creating it anew (Kafka deletes topics
// asynchronously).
const topicGoneWait = 30 * time.Second

// resetQuery carries out RESET QUERY: what Kafka's application reset tool
// does for a Kafka Streams application, for one query. The query's stream
// threads stop (committing what they processed); its consumer group — and
// with it the committed offsets — its internal topics (repartition topics
// and changelogs, not the source tables' topics nor the sink) and its
// local state are deleted; then it starts again, reading its input from
// auto.offset.reset. Its output topic keeps what it had: the query writes
// its results again after it.
//
// While the query's group has members on other instances the reset is
// refused (their stream threads would keep the offsets and the state
// alive) and the query goes on running here as before.
func (e *Engine) resetQuery(ctx context.Context, st *sql.ResetQuery) (Result, error) {
	if e.cfg.Headless != nil {
		return Result{}, sql.Errorf(sql.CodeFeatureNotSupport, "this server runs headless (--queries-file): its queries cannot be reset")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	cq, ok := e.cat.Query(st.QueryID)
	if !ok {
		return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "query %s does not exist", st.QueryID)
	}
	q := e.running[cq.ID]
	if q == nil {
		return Result{}, sql.NameError(st, sql.CodeNotInState, "query %s is not running on this instance", cq.ID)
	}
	topo := q.Topology()
	reset := "earliest"
	if cq.Sink != "" {
		reset = offsetReset(cq.Props, "earliest")
	}
	fl := e.flags[cq.ID]
	restart := func() error { return e.start(cq.ID, topo, reset, cq.Props, fl) }

	// The internal topics get the partition counts they have now (the
	// input's, as when the query was created, where one is missing).
	internal := topo.InternalTopics()
	names := make([]string, len(internal))
	for i, it := range internal {
		names[i] = it.Name
	}
	parts := map[string]int32{}
	if len(names) > 0 {
		details, err := e.topics.Describe(ctx, append(names, topo.SourceTopics()[0])...)
		if err != nil {
			return Result{}, fmt.Errorf("looking up the internal topics of %s: %w", cq.ID, err)
		}
		for name, d := range details {
			if d.Err == nil {
				parts[name] = d.Partitions
			}
		}
	}

	q.Stop()
	delete(e.running, cq.ID)
	if others, err := e.emptyGroup(ctx, topo.AppID); err != nil || len(others) > 0 {
		if rerr := restart(); rerr != nil {
			e.log.Error("restarting a query after a refused reset", "query", cq.ID, "err", rerr)
		}
		if err != nil {
			return Result{}, fmt.Errorf("resetting %s: %w", cq.ID, err)
		}
		return Result{}, sql.NameError(st, sql.CodeObjectInUse,
			"cannot reset %s while it runs on other instances (%s): stop those instances first, then reset it", cq.ID, strings.Join(others, ", "))
	}
	if err := e.deleteInternalTopics(ctx, names); err != nil {
		return Result{}, fmt.Errorf("resetting %s: %w (the query is stopped; RESET QUERY again to finish)", cq.ID, err)
	}
	if err := os.RemoveAll(filepath.Join(e.cfg.StateDir, topo.AppID)); err != nil {
		return Result{}, fmt.Errorf("resetting %s: deleting its local state: %w (the query is stopped; RESET QUERY again to finish)", cq.ID, err)
	}
	if err := e.createInternalTopics(ctx, internal, parts, parts[topo.SourceTopics()[0]], cq.Props); err != nil {
		return Result{}, fmt.Errorf("resetting %s: %w (the query is stopped; RESET QUERY again to finish)", cq.ID, err)
	}
	if err := restart(); err != nil {
		return Result{}, fmt.Errorf("restarting %s after its reset: %w", cq.ID, err)
	}
	e.log.Info("query reset", "query", cq.ID, "app_id", topo.AppID, "internal_topics", len(names), "offset_reset", reset)
	return Result{Tag: "RESET"}, nil
}

// emptyGroup deletes the consumer group group (its committed offsets).
// Static members of this instance (group.instance.id
// <instance>-<thread>) that stayed in the group are removed first; when members of other instances remain, it deletes nothing and
// returns them.
func (e *Engine) emptyGroup(ctx context.Context, group string) ([]string, error) {
	if e.adm == nil {
		return nil, errOffline
	}
	described, err := e.adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describing group %s: %w", group, err)
	}
	g, ok := described[group]
	if ok && g.Err != nil && !errors.Is(g.Err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("describing group %s: %w", group, g.Err)
	}
	var others []string
	var ours []string
	for _, m := range g.Members {
		if m.InstanceID != nil && strings.HasPrefix(*m.InstanceID, e.cfg.InstanceID+"-") {
			ours = append(ours, *m.InstanceID)
			continue
		}
		others = append(others, m.ClientID+"@"+m.ClientHost)
	}
	if len(others) > 0 {
		return others, nil
	}
	if len(ours) > 0 {
		resp, err := e.adm.LeaveGroup(ctx, kadm.LeaveGroup(group).InstanceIDs(ours...))
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("removing this instance's static members from group %s: %w", group, err)
		}
	}
	resp, err := e.adm.DeleteGroup(ctx, group)
	if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.GroupIDNotFound) {
		err = resp.Err
	}
	if errors.Is(err, kerr.NonEmptyGroup) {
		return []string{"a member that joined meanwhile"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("deleting group %s: %w", group, err)
	}
	return nil, nil
}

// deleteInternalTopics deletes topics and waits until they are gone.
func (e *Engine) deleteInternalTopics(ctx context.Context, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	resps, err := e.topics.Delete(ctx, topics...)
	if err != nil {
		return fmt.Errorf("deleting internal topics: %w", err)
	}
	for topic, err := range resps {
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("deleting internal topic %s: %w", topic, err)
		}
	}
	deadline := time.Now().Add(topicGoneWait)
	for {
		details, err := e.topics.Describe(ctx, topics...)
		if err != nil {
			return fmt.Errorf("looking up deleted internal topics: %w", err)
		}
		left := 0
		for _, d := range details {
			if d.Err == nil {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d internal topics still exist %v after their deletion", left, topicGoneWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// createInternalTopics creates a reset query's internal topics again, each
// with the partition count it had (def where it was missing).
func (e *Engine) createInternalTopics(ctx context.Context, topics []physical.InternalTopic, parts map[string]int32, def int32, props map[string]string) error {
	additional, err := windowChangelogExtra(props)
	if err != nil {
		return err
	}
	for _, it := range topics {
		n := parts[it.Name]
		if n == 0 {
			n = def
		}
		if n == 0 {
			return fmt.Errorf("internal topic %s: no partition count to create it with", it.Name)
		}
		if _, err := e.ensureInternalTopic(ctx, it.Name, n, it.Configs(additional)); err != nil {
			return err
		}
	}
	return nil
}
