package engine

import (
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/sql"
)

// Standby replicas and warm-ups of a persistent query (exec's
// standbyassign.go), set for the server by its flags and for one query
// by these properties, SET before its CREATE … AS (Kafka Streams' names,
// with or without ksqlDB's ksql.streams. prefix).
const (
	StandbyReplicasProp   = "num.standby.replicas"
	AcceptableLagProp     = "acceptable.recovery.lag"
	MaxWarmupReplicasProp = "max.warmup.replicas"
	ProbingIntervalProp   = "probing.rebalance.interval.ms"
)

// standbyProp returns the value of property name (or its ksql.streams.
// form) in props.
func standbyProp(props map[string]string, name string) (string, string, bool) {
	for _, n := range []string{name, "ksql.streams." + name} {
		if v, ok := props[n]; ok {
			return n, strings.TrimSpace(v), true
		}
	}
	return "", "", false
}

// queryStandby fills cfg's standby settings from the server's and props.
func (e *Engine) queryStandby(props map[string]string, cfg *exec.Config) error {
	cfg.StandbyReplicas = e.cfg.StandbyReplicas
	cfg.AcceptableRecoveryLag = e.cfg.AcceptableRecoveryLag
	cfg.ProbingRebalanceInterval = e.cfg.ProbingInterval
	if name, v, ok := standbyProp(props, StandbyReplicasProp); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 16 {
			return sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number from 0 to 16, not %q", name, v)
		}
		cfg.StandbyReplicas = n
	}
	if name, v, ok := standbyProp(props, AcceptableLagProp); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number of changelog offsets, 0 or more, not %q", name, v)
		}
		cfg.AcceptableRecoveryLag = n
		if n == 0 {
			cfg.AcceptableRecoveryLag = -1 // exec: 0 offsets
		}
	}
	if name, v, ok := standbyProp(props, MaxWarmupReplicasProp); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number from 1 to 1000, not %q", name, v)
		}
		cfg.MaxWarmupReplicas = n
	}
	if name, v, ok := standbyProp(props, ProbingIntervalProp); ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 100 || ms > 7*24*3600*1000 {
			return sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number of milliseconds from 100, not %q", name, v)
		}
		cfg.ProbingRebalanceInterval = time.Duration(ms) * time.Millisecond
	}
	return nil
}
