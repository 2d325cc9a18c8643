package engine

import (
	"time"

	"github.com/sqlstreams/sqlstreams/exec"
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

// queryStandby fills cfg's standby settings from the server's and props.
func (e *Engine) queryStandby(props map[string]string, cfg *exec.Config) error {
	cfg.StandbyReplicas = e.cfg.StandbyReplicas
	cfg.AcceptableRecoveryLag = e.cfg.AcceptableRecoveryLag
	cfg.ProbingRebalanceInterval = e.cfg.ProbingInterval
	n, ok, err := queryInt(props, StandbyReplicasProp)
	if err != nil {
		return err
	} else if ok {
		cfg.StandbyReplicas = int(n)
	}
	if n, ok, err = queryInt(props, AcceptableLagProp); err != nil {
		return err
	} else if ok {
		cfg.AcceptableRecoveryLag = n
		if n == 0 {
			cfg.AcceptableRecoveryLag = -1 // exec: 0 offsets
		}
	}
	if n, ok, err = queryInt(props, MaxWarmupReplicasProp); err != nil {
		return err
	} else if ok {
		cfg.MaxWarmupReplicas = int(n)
	}
	if n, ok, err = queryInt(props, ProbingIntervalProp); err != nil {
		return err
	} else if ok {
		cfg.ProbingRebalanceInterval = time.Duration(n) * time.Millisecond
	}
	return nil
}
