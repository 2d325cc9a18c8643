package main

// The memory scenario: several aggregate queries, each over as many groups
// as input records, in one engine run under a memory limit shared out as
// `sqlstreams server --memory-limit` shares it (engine.NewMemoryBudget,
// debug.SetMemoryLimit); the figure is the process's peak RSS beside the
// limit. The broker runs in a child process, as for the other scenarios.

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/state"
)

var (
	memLimit   = flag.String("memory-limit", "1GiB", "memory scenario: the server's memory limit")
	memQueries = flag.Int("memory-queries", 10, "memory scenario: aggregate queries, each over every input key")
)

// runMemory runs the memory scenario over n distinct keys and prints its
// figures.
func runMemory(n int) error {
	ctx := context.Background()
	limit, err := engine.ParseBytes(*memLimit)
	if err != nil {
		return fmt.Errorf("-memory-limit: %w", err)
	}
	budget, err := engine.NewMemoryBudget(limit)
	if err != nil {
		return err
	}
	dir, brokers, stop, err := startTempBroker(ctx, "memory")
	if err != nil {
		return err
	}
	defer stop()
	const input = "groups_in"
	began := time.Now()
	if err := preloadKeys(ctx, brokers, input, n); err != nil {
		return fmt.Errorf("preloading: %w", err)
	}
	logf("memory: preloaded %d keys in %v", n, time.Since(began))
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return err
	}
	defer adm.Close()
	admin := kadm.NewClient(adm)
	ends, err := admin.ListEndOffsets(ctx, input)
	if err != nil {
		return err
	}

	runtime.GC()
	debug.SetMemoryLimit(budget.GoSoftLimit)
	defer debug.SetMemoryLimit(-1)
	engine.SetHeapFloor(budget.HeapFloor)
	defer engine.SetHeapFloor(0)
	rocks := state.NewRocksResources(budget.BlockCache, budget.WriteBuffers, budget.ValueCache)
	defer rocks.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), ServiceID: "mem", InstanceID: "bench",
		StateDir: dir + "/state", RocksResources: rocks, FetchMaxBytes: budget.FetchMaxBytes, MaxTxnRecords: budget.MaxTxnRecords, Threads: *threads})
	if err != nil {
		return err
	}
	defer eng.Close()
	exec := func(stmt string) error {
		if _, err := eng.Execute(ctx, engine.NewSession(), stmt, nopWriter{}); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
		return nil
	}
	if err := exec(fmt.Sprintf("CREATE STREAM g (k VARCHAR KEY, v BIGINT) WITH (KAFKA_TOPIC='%s', VALUE_FORMAT='JSON')", input)); err != nil {
		return err
	}
	resetPeakRSS()
	t0 := time.Now()
	for i := range *memQueries {
		if err := exec(fmt.Sprintf("CREATE TABLE agg%d AS SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top FROM g GROUP BY k", i)); err != nil {
			return err
		}
	}
	var maxRSS float64
	for i := 0; i < *memQueries; {
		group := fmt.Sprintf("mem_query_CTAS_AGG%d_%d", i, i+1)
		done, err := committedAll(ctx, admin, group, ends)
		if err != nil {
			return err
		}
		maxRSS = max(maxRSS, procStatusMB("VmRSS:"))
		if done {
			i++
			continue
		}
		if time.Since(t0) > 30*time.Minute {
			return fmt.Errorf("timed out waiting for %s", group)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wall := time.Since(t0)
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile + ".memory"); err != nil {
			return err
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	peak := peakRSSMB()
	fmt.Printf("| scenario | queries × groups | memory limit MiB | peak RSS MiB | RSS/limit | Go heap in use MiB | wall s | records/s (all queries) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| memory | %d × %d | %d | %.0f | %.2f | %.0f | %.1f | %.0f |\n", *memQueries, n, limit>>20, peak, peak/float64(limit>>20),
		float64(ms.HeapInuse)/(1<<20), wall.Seconds(), float64(n**memQueries)/wall.Seconds())
	fmt.Printf("\npeak RSS: VmHWM of this process from the first CREATE TABLE to the last committed offset (the broker runs in a child process); block cache %d MiB, memtables %d MiB, value cache %d MiB, Go soft limit %d MiB, fetches ≤ %d KiB and transactions ≤ %d records per thread. Sampled max RSS %.0f MiB.\n",
		budget.BlockCache>>20, budget.WriteBuffers>>20, budget.ValueCache>>20, budget.GoSoftLimit>>20, budget.FetchMaxBytes>>10, budget.MaxTxnRecords, maxRSS)
	return nil
}

// preloadKeys writes n records with distinct keys k0 … k<n-1> and values
// {"V":i} into a new 4-partition topic.
func preloadKeys(ctx context.Context, brokers []string, topic string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(200_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, -1, nil, topic); err != nil {
		return err
	}
	errc := make(chan error, 1)
	for i := range n {
		r := &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte(`{"V":` + strconv.Itoa(i) + `}`)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}
