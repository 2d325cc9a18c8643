package sqllogic

// This file holds the directives that talk Kafka to the embedded broker:
// produce, and wait-caught-up.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// queryGroupPrefix prefixes the consumer group of every persistent query
// of a server with the default service ID.
const queryGroupPrefix = "sqlstreams_query_"

// produce writes the record's lines to its topic and returns once the
// broker has acknowledged them all (acks=all), or, with txn, once their
// transaction has committed.
func produce(ctx context.Context, brokers string, rec *record) error {
	recs, err := producedRecords(rec)
	if err != nil {
		return err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers), kgo.RecordRetries(20)}
	if rec.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if rec.txn {
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("sqllogic-produce-%d", time.Now().UnixNano())))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if rec.txn {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		if rec.txn {
			cl.EndTransaction(ctx, kgo.TryAbort)
		}
		return fmt.Errorf("producing to %s: %w", rec.topic, err)
	}
	if rec.txn {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("committing the transaction: %w", err)
		}
	}
	return nil
}

// producedRecords parses produce's body: per line an optional timestamp
// (with the timestamp option), then key, separator, value, split at the
// first separator; NULL as key or value is null.
func producedRecords(rec *record) ([]*kgo.Record, error) {
	var out []*kgo.Record
	for i, line := range rec.body {
		r := &kgo.Record{Topic: rec.topic, Partition: rec.partition}
		if rec.timestamp {
			ts, rest, _ := strings.Cut(line, " ")
			ms, err := strconv.ParseInt(ts, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: want a timestamp in milliseconds first: %v", rec.line+1+i, err)
			}
			r.Timestamp, line = time.UnixMilli(ms), rest
		}
		key, value, found := strings.Cut(line, rec.keySep)
		if !found {
			return nil, fmt.Errorf("line %d: want key%svalue (NULL for a null key)", rec.line+1+i, rec.keySep)
		}
		if key != "NULL" {
			r.Key = []byte(key)
		}
		if value != "NULL" {
			r.Value = []byte(value)
		}
		if r.Partition < 0 {
			r.Partition = 0 // the partitioner decides
		}
		out = append(out, r)
	}
	return out, nil
}

// caughtUp checks once whether every persistent query has consumed all of
// its input. It returns "" when so, or what is still behind. queries are
// the IDs and statuses from SHOW QUERIES.
//
// A query's group must exist, be stable, and for every partition of the
// topics it is assigned or has committed, its committed offset must reach
// the partition's last stable offset (ListOffsets read_committed). Offsets
// short of it are accepted when nothing visible to read_committed lies
// between: consumers commit past the last record they read, and a
// transaction's commit marker takes an offset after it. A partition
// without a committed offset counts from 0. The end offsets are read
// again at the end: input that grew meanwhile (one query feeding another)
// means another look.
func caughtUp(ctx context.Context, brokers string, queries map[string]string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return "", fmt.Errorf("listing groups: %w", err)
	}
	var groups []string
	for _, g := range listed.Groups() {
		id, ok := strings.CutPrefix(g, queryGroupPrefix)
		if _, running := queries[id]; ok && running {
			groups = append(groups, g)
		}
	}
	for id, status := range queries {
		if status != "" && status != "RUNNING" {
			return fmt.Sprintf("query %s is %s", id, status), nil
		}
		if !slices.Contains(groups, queryGroupPrefix+id) {
			return fmt.Sprintf("query %s has no consumer group yet", id), nil
		}
	}
	if len(groups) == 0 {
		return "", nil
	}
	slices.Sort(groups)

	described, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return "", fmt.Errorf("describing groups: %w", err)
	}
	committed := map[string]kadm.OffsetResponses{}
	topicsOf := map[string][]string{}
	var allTopics []string
	for _, g := range groups {
		d := described[g]
		if d.Err != nil {
			return "", fmt.Errorf("describing group %s: %w", g, d.Err)
		}
		if d.State != "Stable" {
			return fmt.Sprintf("group %s is %s", g, d.State), nil
		}
		offs, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			return "", fmt.Errorf("fetching offsets of %s: %w", g, err)
		}
		committed[g] = offs
		topics := d.JoinTopics()
		for _, m := range d.Members {
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					topics = append(topics, t.Topic)
				}
			}
		}
		offs.Each(func(o kadm.OffsetResponse) { topics = append(topics, o.Topic) })
		slices.Sort(topics)
		topicsOf[g] = slices.Compact(topics)
		allTopics = append(allTopics, topicsOf[g]...)
	}
	slices.Sort(allTopics)
	allTopics = slices.Compact(allTopics)
	if len(allTopics) == 0 {
		return "", nil
	}
	ends, err := adm.ListCommittedOffsets(ctx, allTopics...)
	if err != nil {
		return "", fmt.Errorf("listing end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return "", fmt.Errorf("listing end offsets: %w", err)
	}

	// Partitions behind their end offset, from where the group is to the end.
	type gap struct {
		group       string
		topic       string
		partition   int32
		from, until int64
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
		// Look for records a read_committed reader would see in the gaps.
		starts := map[string]map[int32]kgo.Offset{}
		until := map[string]map[int32]int64{}
		for _, gp := range gaps {
			if starts[gp.topic] == nil {
				starts[gp.topic] = map[int32]kgo.Offset{}
				until[gp.topic] = map[int32]int64{}
			}
			if cur, ok := starts[gp.topic][gp.partition]; !ok || gp.from < cur.EpochOffset().Offset {
				starts[gp.topic][gp.partition] = kgo.NewOffset().At(gp.from)
			}
			until[gp.topic][gp.partition] = gp.until
		}
		visible, err := firstVisible(ctx, brokers, starts, until)
		if err != nil {
			return "", err
		}
		for _, gp := range gaps {
			if off, ok := visible[gp.topic][gp.partition]; ok && off >= gp.from && off < gp.until {
				return fmt.Sprintf("group %s is at %s[%d] offset %d, end %d", gp.group, gp.topic, gp.partition, gp.from, gp.until), nil
			}
		}
	}

	again, err := adm.ListCommittedOffsets(ctx, allTopics...)
	if err != nil {
		return "", fmt.Errorf("listing end offsets: %w", err)
	}
	for t, ps := range ends {
		for p, end := range ps {
			if o, ok := again.Lookup(t, p); ok && o.Offset != end.Offset {
				return fmt.Sprintf("%s[%d] grew from %d to %d meanwhile", t, p, end.Offset, o.Offset), nil
			}
		}
	}
	return "", nil
}

// visibleQuiet is how long firstVisible waits for any record before it
// takes the partitions still short of their ends for having none to show.
const visibleQuiet = 5 * time.Second

// firstVisible reads the partitions from the given offsets up to the
// given ends with read_committed, control records kept, and returns the
// offset of the first record each one shows before its end; a partition
// without one is absent. It reads until every partition reached its end
// or showed a record, not until a poll goes quiet: on a loaded machine the
// first fetch alone can take longer than a short wait. Only when no record
// at all comes for visibleQuiet (compaction removed a gap's last offsets,
// and an open transaction holds back what follows) does it stop there.
func firstVisible(ctx context.Context, brokers string, starts map[string]map[int32]kgo.Offset, ends map[string]map[int32]int64) (map[string]map[int32]int64, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers),
		kgo.ConsumePartitions(starts),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[string]map[int32]int64{}
	done := map[string]map[int32]bool{}
	pending := 0
	for t, ps := range starts {
		done[t] = map[int32]bool{}
		pending += len(ps)
	}
	for pending > 0 {
		pctx, cancel := context.WithTimeout(ctx, visibleQuiet)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading the partitions behind their ends: %w", err)
		}
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			return out, nil
		}
		for _, fe := range fs.Errors() {
			if fe.Err != context.DeadlineExceeded && fe.Err != context.Canceled {
				return nil, fmt.Errorf("reading %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			end := ends[r.Topic][r.Partition]
			if done[r.Topic][r.Partition] {
				return
			}
			switch {
			case r.Offset >= end:
			case !r.Attrs.IsControl():
				if out[r.Topic] == nil {
					out[r.Topic] = map[int32]int64{}
				}
				out[r.Topic][r.Partition] = r.Offset
			case r.Offset+1 < end:
				return // a marker short of the end: read on
			}
			done[r.Topic][r.Partition] = true
			pending--
		})
	}
	return out, nil
}
