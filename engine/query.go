package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// query runs a SELECT: a push query streams until its LIMIT or until ctx
// ends; pull queries come with materialized tables.
func (e *Engine) query(ctx context.Context, s *Session, st *sql.Select, w ResultWriter) (Result, error) {
	q, err := sql.BindSelect(st, e.cat)
	if err != nil {
		return Result{}, err
	}
	return e.queryBound(ctx, s, st, q, w)
}

// queryBound runs st, bound as q.
func (e *Engine) queryBound(ctx context.Context, s *Session, st *sql.Select, q *planner.Query, w ResultWriter) (Result, error) {
	if q.Emit == "" {
		if err := checkPull(s.Props, q); err != nil {
			return Result{}, err
		}
		src := planner.Sources(q.Root)[0]
		if src.Kind == catalog.Stream {
			if propFalse(s.Props, streamPullProp) {
				return Result{}, sql.Errorf(sql.CodeFeatureNotSupport, "Pull queries on streams are disabled. To create a push query on the stream, add EMIT CHANGES to the end. To enable pull queries on streams, set the %s config to 'true'.", streamPullProp)
			}
			return e.scanStream(ctx, q, w)
		}
		return e.pull(ctx, s, st, q, src, w)
	}
	if needsTransient(q) {
		return e.transientPush(ctx, s, q, w)
	}
	if q.Emit == "FINAL" {
		return Result{}, sql.Errorf(sql.CodeFeatureNotSupport, "EMIT FINAL needs a windowed aggregation")
	}
	topo, err := physical.BuildPush(q)
	if err != nil {
		return Result{}, err
	}
	if sp, ok := w.(ScalablePushWriter); ok && scalablePush(s, q) {
		sp.ScalablePush()
	}
	if err := w.Columns(q.Root.Schema().Columns); err != nil {
		return Result{}, err
	}
	n := 0
	pc := exec.PushConfig{
		Kafka:       e.cfg.Kafka,
		OffsetReset: offsetReset(s.Props, ""),
		Logger:      e.log,
	}
	if srcs := planner.Sources(q.Root); len(srcs) == 1 && srcs[0].Kind == catalog.Table {
		pc.Table = true
		if tw, ok := w.(TombstoneWriter); ok {
			pc.Tombstones = func(row types.Row) error {
				n++
				return tw.Tombstone(row)
			}
		}
	}
	err = exec.RunPush(ctx, topo, pc, func(row types.Row) error {
		n++
		return w.Row(row)
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Result{}, sql.Errorf(sql.CodeQueryCanceled, "push query canceled after %d rows", n)
		}
		return Result{}, err
	}
	return Result{Tag: "SELECT " + strconv.Itoa(n)}, nil
}

// TombstoneWriter is a ResultWriter that takes the tombstones of a push
// query over a table: each a row of the deleted key, the value columns
// NULL (ksqlDB's rows with "tombstone": true). Other writers never see
// them.
type TombstoneWriter interface {
	ResultWriter
	Tombstone(row types.Row) error
}

// ScalablePushWriter is a ResultWriter told, before Columns, that its push
// query is what ksqlDB runs as a scalable push query (ksqlDB names those
// SCALABLE_PUSH_QUERY_…).
type ScalablePushWriter interface {
	ResultWriter
	ScalablePush()
}

// scalablePush reports whether ksqlDB would run q as a scalable push
// query (ScalablePushUtil): it reads from the latest offset one source
// a persistent query writes, and only filters and projects it.
func scalablePush(s *Session, q *planner.Query) bool {
	if offsetReset(s.Props, "") == "earliest" {
		return false
	}
	simple := true
	var walk func(n planner.Node)
	walk = func(n planner.Node) {
		switch n.(type) {
		case *planner.Scan, *planner.Filter, *planner.Project:
		default:
			simple = false
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(q.Root)
	srcs := planner.Sources(q.Root)
	return simple && len(srcs) == 1 && srcs[0].WriterQuery != ""
}

// scanStream runs a pull query on a stream as ksqlDB does: a scan of
// its topic from the start to the end each partition had when the query
// started. Its columns mark no key, as a push query's.
func (e *Engine) scanStream(ctx context.Context, q *planner.Query, w ResultWriter) (Result, error) {
	topo, err := physical.BuildPush(q)
	if err != nil {
		return Result{}, err
	}
	cols := append([]types.Column(nil), q.Root.Schema().Columns...)
	for i := range cols {
		cols[i].Key = false
	}
	if err := w.Columns(cols); err != nil {
		return Result{}, err
	}
	n := 0
	err = exec.RunPush(ctx, topo, exec.PushConfig{Kafka: e.cfg.Kafka, UntilEnd: true, Logger: e.log}, func(row types.Row) error {
		n++
		return w.Row(row)
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Tag: "SELECT " + strconv.Itoa(n)}, nil
}

// insertValues encodes the rows with the target's formats and produces
// them, waiting until Kafka has them.
func (e *Engine) insertValues(ctx context.Context, st *sql.InsertValues) (Result, error) {
	target, ok := e.cat.Source(st.Target)
	if !ok {
		// A name that exists in another case: ksqlDB's hint.
		if up := strings.ToUpper(st.Target); up != st.Target {
			if _, ok := e.cat.Source(up); ok {
				return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "Cannot insert values into an unknown stream/table: `%s`\nDid you mean %s? Hint: try removing double quotes from the source name.", st.Target, up)
			}
		}
		if low := strings.ToLower(st.Target); low != st.Target {
			if _, ok := e.cat.Source(low); ok {
				return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "Cannot insert values into an unknown stream/table: `%s`\nDid you mean \"%s\"? Hint: wrap the source name in double quotes to make it case-sensitive.", st.Target, low)
			}
		}
		return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "stream or table %s does not exist", st.Target)
	}
	if target.IsSource {
		return Result{}, sql.NameError(st, sql.CodeFeatureNotSupport, "Cannot insert values into read-only %s: %s", strings.ToLower(target.Kind.String()), target.Name)
	}
	rows, err := sql.BindInsert(st, target)
	if err != nil {
		return Result{}, err
	}
	keys := target.Schema.KeyIndexes()
	kenc, err := types.NewEncoderOpts(target.KeyFormat, target.Schema, keys, target.KeyOptions)
	if err != nil {
		return Result{}, err
	}
	// Inserted values are quoted as ksqlDB quotes DELIMITED fields: no
	// running query's output depends on it.
	vo := target.ValueOptions
	vo.KsqlQuoting = true
	venc, err := types.NewEncoderOpts(target.ValueFormat, target.Schema, target.Schema.ValueIndexes(), vo)
	if err != nil {
		return Result{}, err
	}
	recs := make([]*kgo.Record, 0, len(rows))
	for _, ir := range rows {
		row := ir.Row
		r := &kgo.Record{Topic: target.Topic}
		if ir.Timestamped {
			// ROWTIME given: the record's timestamp, as in ksqlDB.
			r.Timestamp = time.UnixMilli(ir.Timestamp)
		}
		if len(keys) > 0 && !allNull(row, keys) {
			if r.Key, err = kenc.Encode(nil, row); err != nil {
				return Result{}, err
			}
		}
		if r.Value, err = venc.Encode(nil, row); err != nil {
			return Result{}, err
		}
		recs = append(recs, r)
	}
	if e.cl == nil {
		return Result{}, errOffline
	}
	if err := e.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return Result{}, fmt.Errorf("producing to %s: %w", target.Topic, err)
	}
	return Result{Tag: "INSERT 0 " + strconv.Itoa(len(recs))}, nil
}

func allNull(row types.Row, idx []int) bool {
	for _, i := range idx {
		if !row[i].Null {
			return false
		}
	}
	return true
}

func hasAggregate(n planner.Node) bool {
	if _, ok := n.(*planner.Aggregate); ok {
		return true
	}
	for _, c := range n.Children() {
		if hasAggregate(c) {
			return true
		}
	}
	return false
}
