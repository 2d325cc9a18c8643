package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// errLimit ends a push query that has emitted its LIMIT.
var errLimit = errors.New("limit reached")

// clientError wraps an error from the push query's consumer of rows: the
// client went away, so the query ends.
type clientError struct{ err error }

func (e *clientError) Error() string { return e.err.Error() }
func (e *clientError) Unwrap() error { return e.err }

// PushConfig configures a push query.
type PushConfig struct {
	// Kafka is how the push query reaches Kafka.
	Kafka kafka.Profile
	// OffsetReset is where to start reading: "latest" (default, as in
	// ksqlDB) or "earliest".
	OffsetReset string
	Logger      *slog.Logger
}

// RunPush runs a push query's topology: it tails the source topic with
// read_committed and calls emit for each result row, until the topology's
// LIMIT is reached (nil), ctx ends (ctx's error) or emit fails (its error).
// The row passed to emit is valid only during the call.
func RunPush(ctx context.Context, topo *physical.Topology, cfg PushConfig, emit func(types.Row) error) error {
	if len(topo.SubTopologies) != 1 {
		return errors.New("exec: push queries over more than one sub-topology are not supported yet")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if topo.Limit == 0 {
		return nil
	}
	st := topo.SubTopologies[0]
	topic := st.Source().Topic
	reset := kgo.NewOffset().AtEnd()
	if cfg.OffsetReset == "earliest" {
		reset = kgo.NewOffset().AtStart()
	}
	cl, err := cfg.Kafka.NewClient(
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	collect := &collectOp{emit: emit, limit: topo.Limit}
	tasks := map[int32]*sourceOp{}
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var stop error
		fetches.EachError(func(t string, p int32, err error) {
			cfg.Logger.Warn("push query fetch error", "topic", t, "partition", p, "err", err)
		})
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if stop != nil {
				return
			}
			t := tasks[fp.Partition]
			if t == nil {
				// Each partition's graph keeps its own rows; the
				// collector (and so the LIMIT) is shared.
				g, err := buildGraph(topo, st, &taskEnv{terminal: collect})
				if err != nil {
					stop = err
					return
				}
				t = g.sources[topic]
				tasks[fp.Partition] = t
			}
			for _, r := range fp.Records {
				err := t.process(r)
				var ce *clientError
				switch {
				case err == nil:
				case errors.Is(err, errLimit):
					stop = errLimit
					return
				case errors.As(err, &ce):
					stop = ce.err
					return
				default:
					cfg.Logger.Warn("push query skipping bad record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
				}
			}
		})
		if errors.Is(stop, errLimit) {
			return nil
		}
		if stop != nil {
			return fmt.Errorf("push query: %w", stop)
		}
	}
}
