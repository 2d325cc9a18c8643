package engine

import (
	"time"

	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/physical"
)

// The processing guarantees a query may ask for with
// SET 'processing.guarantee' before its CREATE … AS (ksqlDB's names;
// exactly_once is taken as exactly_once_v2, as Kafka Streams 3 does).
const (
	ExactlyOnce = "exactly_once_v2"
	AtLeastOnce = "at_least_once"
)

// queryAtLeastOnce reports whether a query with props runs at-least-once.
func (e *Engine) queryAtLeastOnce(props map[string]string) (bool, error) {
	v, ok, err := queryProp(props, "processing.guarantee")
	if err != nil || !ok {
		return e.cfg.AtLeastOnce, err
	}
	return v == AtLeastOnce, nil
}

// guarantee names the server's default processing guarantee.
func (e *Engine) guarantee() string {
	if e.cfg.AtLeastOnce {
		return AtLeastOnce
	}
	return ExactlyOnce
}

// queryCommitInterval returns the commit interval of a query with props
// (commit.interval.ms, as ksqlDB users set it), else the server's.
func (e *Engine) queryCommitInterval(props map[string]string) (time.Duration, error) {
	ms, ok, err := queryInt(props, "commit.interval.ms")
	if err != nil || !ok {
		return e.commitInterval(), err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// windowChangelogExtra returns how much longer than its store a window
// or session store's changelog keeps records: Kafka Streams'
// windowstore.changelog.additional.retention.ms (ksqlDB users set it
// with or without ksql.streams.), one day by default.
func windowChangelogExtra(props map[string]string) (int64, error) {
	ms, ok, err := queryInt(props, "windowstore.changelog.additional.retention.ms")
	if err != nil || !ok {
		return physical.DefaultAdditionalRetentionMs, err
	}
	return ms, nil
}

// DefaultTransactionTimeout is a query's transaction timeout when neither
// the server nor the query sets one: Kafka Streams' under exactly-once.
const DefaultTransactionTimeout = exec.DefaultTransactionTimeout

// MaxTransactionTimeout is the largest transaction timeout a query may
// ask for: Kafka's default transaction.max.timeout.ms (brokers refuse
// more than theirs).
const MaxTransactionTimeout = 15 * time.Minute

// queryTransactionTimeout returns the transaction timeout of a query with
// props, else the server's.
func (e *Engine) queryTransactionTimeout(props map[string]string) (time.Duration, error) {
	ms, ok, err := queryInt(props, "transaction.timeout.ms")
	if err != nil || !ok {
		return e.transactionTimeout(), err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// transactionTimeout is the server's transaction timeout: the engine's
// setting, else the Kafka settings' transaction.timeout.ms, else Kafka
// Streams' default under exactly-once.
func (e *Engine) transactionTimeout() time.Duration {
	if e.cfg.TransactionTimeout > 0 {
		return e.cfg.TransactionTimeout
	}
	if e.cfg.Kafka.TransactionTimeout > 0 {
		return e.cfg.Kafka.TransactionTimeout
	}
	return DefaultTransactionTimeout
}

// StoreProp is the query property that says where its state stores live
// (Kafka Streams' default.dsl.store, with its values).
const (
	StoreProp     = "default.dsl.store"
	StoreRocksDB  = "rocksDB"
	StoreInMemory = "in_memory"
)

// queryMemoryStores reports whether a query with props keeps its state
// stores in memory.
func (e *Engine) queryMemoryStores(props map[string]string) (bool, error) {
	v, ok, err := queryProp(props, StoreProp)
	if err != nil || !ok {
		return e.cfg.MemoryStores, err
	}
	return v == StoreInMemory, nil
}
