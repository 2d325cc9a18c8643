package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/exec"
)

// TestStandbyProps: a query's standby properties override the server's,
// with or without ksqlDB's ksql.streams. prefix, and a bad value is an
// error naming the property.
func TestStandbyProps(t *testing.T) {
	e := &Engine{cfg: Config{StandbyReplicas: 1, ProbingInterval: time.Minute}}
	var cfg exec.Config
	if err := e.queryStandby(nil, &cfg); err != nil || cfg.StandbyReplicas != 1 || cfg.ProbingRebalanceInterval != time.Minute {
		t.Fatalf("server defaults: %+v, %v", cfg, err)
	}
	props := map[string]string{"ksql.streams.num.standby.replicas": "2", "acceptable.recovery.lag": "0", "probing.rebalance.interval.ms": "5000", "max.warmup.replicas": "3"}
	if err := e.queryStandby(props, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.StandbyReplicas != 2 || cfg.AcceptableRecoveryLag != -1 || cfg.ProbingRebalanceInterval != 5*time.Second || cfg.MaxWarmupReplicas != 3 {
		t.Errorf("query properties: %+v", cfg)
	}
	for prop, v := range map[string]string{"num.standby.replicas": "-1", "acceptable.recovery.lag": "x", "probing.rebalance.interval.ms": "5", "max.warmup.replicas": "0"} {
		err := e.queryStandby(map[string]string{prop: v}, &cfg)
		if err == nil || !strings.Contains(err.Error(), prop) {
			t.Errorf("%s=%s: %v, want an error naming it", prop, v, err)
		}
	}
	sr, err := pullStandbyRead(map[string]string{StandbyReadsProp: "true", MaxOffsetLagProp: "100"})
	if err != nil || !sr.enabled || sr.maxLag != 100 {
		t.Errorf("standby reads: %+v, %v", sr, err)
	}
	if sr, _ := pullStandbyRead(nil); sr.enabled || sr.maxLag != -1 {
		t.Errorf("default standby reads: %+v, want off and any lag", sr)
	}
	if _, err := pullStandbyRead(map[string]string{StandbyReadsProp: "maybe"}); err == nil || !strings.Contains(err.Error(), StandbyReadsProp) {
		t.Errorf("a bad %s: %v", StandbyReadsProp, err)
	}
}
