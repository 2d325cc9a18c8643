package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"
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
	// UntilEnd makes the query a scan (ksqlDB's pull query on a stream):
	// it reads from the start of each partition up to its last stable
	// offset when the query starts, then returns nil. OffsetReset is
	// ignored.
	UntilEnd bool
	// Tombstones, when set, marks the source a table, as ksqlDB's push
	// queries read one: a record without key is skipped, and a
	// tombstone's row (its key, the value columns NULL, projected) goes
	// to Tombstones instead of emit.
	Tombstones func(types.Row) error
	// Table marks the source a table without Tombstones (a client that
	// takes none): a record without key is skipped as well, and a
	// tombstone, as a stream's null value, carries no row.
	Table  bool
	Logger *slog.Logger
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
	// A UNION ALL reads several topics (its MERGE is in the one
	// sub-topology): each partition's graph has a source per topic.
	topics := make([]string, len(st.Sources))
	for i, s := range st.Sources {
		topics[i] = s.Op.(*physical.Source).Topic
	}
	if cfg.UntilEnd && len(topics) > 1 {
		return errors.New("exec: a scan reads one topic")
	}
	reset := kgo.NewOffset().AtEnd()
	if cfg.OffsetReset == "earliest" || cfg.UntilEnd {
		reset = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	}
	if cfg.UntilEnd {
		// Transaction markers come through, so that a scan sees it has
		// reached an end that lies just past one.
		opts = append(opts, kgo.KeepControlRecords())
	}
	cl, err := cfg.Kafka.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var ends map[int32]int64 // a scan's partitions still to read, with their end
	if cfg.UntilEnd {
		if ends, err = scanEnds(ctx, cl, topic); err != nil {
			return err
		}
		if len(ends) == 0 {
			return nil
		}
	}
	collect := &collectOp{emit: emit, tombstone: cfg.Tombstones, limit: topo.Limit}
	tasks := map[int32]*taskGraph{}
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
			g := tasks[fp.Partition]
			if g == nil {
				// Each partition's graph keeps its own rows; the
				// collector (and so the LIMIT) is shared.
				var err error
				if g, err = buildGraph(topo, st, &taskEnv{terminal: collect}); err != nil {
					stop = err
					return
				}
				for _, src := range g.sources {
					src.tombstones = cfg.Tombstones != nil
					src.keysRequired = cfg.Table
				}
				tasks[fp.Partition] = g
			}
			t := g.sources[fp.Topic]
			for _, r := range fp.Records {
				if ends != nil {
					end, ok := ends[fp.Partition]
					if !ok || r.Offset >= end {
						continue
					}
					if r.Offset+1 >= end {
						delete(ends, fp.Partition)
					}
					if r.Attrs.IsControl() {
						continue
					}
				}
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
		if ends != nil && len(ends) == 0 {
			return nil
		}
	}
}

// scanEnds returns the partitions of topic that hold records, each with
// its last stable offset (the end a read_committed scan reaches).
func scanEnds(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("listing %s's start offsets: %w", topic, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("listing %s's end offsets: %w", topic, err)
	}
	out := map[int32]int64{}
	var ferr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ferr = fmt.Errorf("listing %s's end offsets: %w", topic, o.Err)
			return
		}
		start := int64(0)
		if so, ok := starts.Lookup(topic, o.Partition); ok && so.Err == nil {
			start = so.Offset
		}
		if o.Offset > start {
			out[o.Partition] = o.Offset
		}
	})
	return out, ferr
}
