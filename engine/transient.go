package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// needsTransient reports whether push query q needs state — an
// aggregation or a join — and so runs as a transient query of its own
// rather than as a tail of its source's topic.
func needsTransient(q *planner.Query) bool {
	stateful := false
	var walk func(n planner.Node)
	walk = func(n planner.Node) {
		switch n.(type) {
		case *planner.Aggregate, *planner.Join, *planner.TopN:
			stateful = true
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(q.Root)
	return stateful
}

// transientCleanupWait bounds the clean-up of a transient query that
// ended (its group, internal topics and local state).
const transientCleanupWait = 30 * time.Second

// transientPush runs push query q, which needs state, as ksqlDB runs a
// transient query: a topology of its own (application ID
// <service>_transient_<source>_<n>) with its own stores, changelogs and
// repartition topics, at-least-once, from the session's
// auto.offset.reset. Its rows go to w until its LIMIT or until ctx ends;
// then the query is stopped, and its consumer group, internal topics
// and local state are deleted.
func (e *Engine) transientPush(ctx context.Context, s *Session, q *planner.Query, w ResultWriter) (Result, error) {
	srcs := planner.Sources(q.Root)
	id := fmt.Sprintf("transient_%s_%d", strings.ToUpper(srcs[0].Name), rand.Uint64()>>1)
	appID := e.cfg.ServiceID + "_" + id
	topo, err := physical.BuildTransient(appID, q)
	if err != nil {
		return Result{}, err
	}
	if err := w.Columns(q.Root.Schema().Columns); err != nil {
		return Result{}, err
	}
	if topo.Limit == 0 {
		return Result{Tag: "SELECT 0"}, nil
	}
	stateDir := e.cfg.StateDir
	if stateDir == "" {
		if stateDir, err = os.MkdirTemp("", "sqlstreams-transient-"); err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(stateDir)
	}
	var internal []string
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), transientCleanupWait)
		defer cancel()
		e.cleanTransient(cctx, appID, internal, filepath.Join(stateDir, appID))
	}()
	for _, it := range topo.InternalTopics() {
		parts := srcs[0].Partitions
		if it.Partitions > 0 {
			parts = it.Partitions
		}
		internal = append(internal, it.Name)
		if _, err := e.ensureInternalTopic(ctx, it.Name, parts, it.Configs(0)); err != nil {
			return Result{}, err
		}
	}

	var (
		mu    sync.Mutex
		n     int64
		ended bool
		werr  error
		done  = make(chan struct{})
	)
	finish := func(err error) {
		ended, werr = true, err
		close(done)
	}
	emit := func(row types.Row) {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return
		}
		n++
		if err := w.Row(row); err != nil {
			finish(err)
			return
		}
		if topo.Limit >= 0 && n >= topo.Limit {
			finish(nil)
		}
	}
	reset := offsetReset(s.Props, "latest")
	eq, err := exec.Start(id, topo, exec.Config{
		Kafka:          e.cfg.Kafka,
		InstanceID:     e.cfg.InstanceID,
		AtLeastOnce:    true,
		OffsetReset:    reset,
		Logger:         e.log,
		StateDir:       stateDir,
		RocksResources: e.cfg.RocksResources,
		FetchMaxBytes:  e.cfg.FetchMaxBytes,
		Emit:           emit,
	})
	if err != nil {
		return Result{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	eq.Stop()
	mu.Lock()
	if !ended {
		ended = true
		werr = ctx.Err()
	}
	rows, err := n, werr
	mu.Unlock()
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Result{}, sql.Errorf(sql.CodeQueryCanceled, "push query canceled after %d rows", rows)
		}
		return Result{}, err
	}
	return Result{Tag: "SELECT " + strconv.FormatInt(rows, 10)}, nil
}

// cleanTransient deletes what a stopped transient query leaves: its
// consumer group, its internal topics and its local state.
func (e *Engine) cleanTransient(ctx context.Context, appID string, topics []string, dir string) {
	if _, err := e.emptyGroup(ctx, appID); err != nil {
		e.log.Warn("deleting a transient query's group", "app_id", appID, "err", err)
	}
	if len(topics) > 0 {
		if _, err := e.adm.DeleteTopics(ctx, topics...); err != nil {
			e.log.Warn("deleting a transient query's internal topics", "app_id", appID, "err", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		e.log.Warn("deleting a transient query's state", "app_id", appID, "err", err)
	}
}
