package engine

import (
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
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
	v, ok := props["processing.guarantee"]
	if !ok {
		return e.cfg.AtLeastOnce, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case ExactlyOnce, "exactly_once", "exactly_once_beta":
		return false, nil
	case AtLeastOnce:
		return true, nil
	}
	return false, sql.Errorf(sql.CodeInvalidParameter, "processing.guarantee must be %s or %s, not %q", ExactlyOnce, AtLeastOnce, v)
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
	for _, name := range []string{"commit.interval.ms", "ksql.streams.commit.interval.ms"} {
		v, ok := props[name]
		if !ok {
			continue
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms < 1 || ms > 3600*1000 {
			return 0, sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number of milliseconds from 1 to 3600000, not %q", name, v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	return e.commitInterval(), nil
}

// windowChangelogExtra returns how much longer than its store a window
// or session store's changelog keeps records: Kafka Streams'
// windowstore.changelog.additional.retention.ms (ksqlDB users set it
// with or without ksql.streams.), one day by default.
func windowChangelogExtra(props map[string]string) (int64, error) {
	for _, name := range []string{"windowstore.changelog.additional.retention.ms", "ksql.streams.windowstore.changelog.additional.retention.ms"} {
		v, ok := props[name]
		if !ok {
			continue
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms < 0 {
			return 0, sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number of milliseconds, not %q", name, v)
		}
		return ms, nil
	}
	return physical.DefaultAdditionalRetentionMs, nil
}

// TransactionTimeoutProps are the names a query's transaction timeout is
// set by (SET before its CREATE … AS), as Kafka Streams and ksqlDB users
// write it.
var TransactionTimeoutProps = []string{
	"transaction.timeout.ms", "producer.transaction.timeout.ms",
	"ksql.streams.transaction.timeout.ms", "ksql.streams.producer.transaction.timeout.ms",
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
	for _, name := range TransactionTimeoutProps {
		v, ok := props[name]
		if !ok {
			continue
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms < 1000 || ms > MaxTransactionTimeout.Milliseconds() {
			return 0, sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number of milliseconds from 1000 to %d, not %q", name, MaxTransactionTimeout.Milliseconds(), v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	return e.transactionTimeout(), nil
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
