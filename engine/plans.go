package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// A catalog command records its plan (package plan): the source it
// registers, the topology of the query it starts and how that runs. A
// statement run now is bound and planned once, its plan recorded with
// the command and decoded back, and the query runs the decoded plan: the
// very topology every replay, restart and upgrade builds from the
// record. A command with a plan is never bound again; one recorded
// before plans is migrated (migrate.go).

const (
	// throwOnInvalidProp is ksqlDB's: "true" fails the query on a record
	// whose TIMESTAMP column cannot be read, instead of skipping it.
	throwOnInvalidProp = "ksql.timestamp.throw.on.invalid"
	// prefixProp prefixes the default topic name of a CREATE … AS
	// without KAFKA_TOPIC, as ksqlDB's config does.
	prefixProp = "ksql.output.topic.name.prefix"
	// wrapProp is ksqlDB's default for WRAP_SINGLE_VALUE.
	wrapProp = "ksql.persistence.wrap.single.values"
)

// timestampPolicy marks topo's sources and sinks with what its query
// does with invalid event times: keep passes on negative ones (commands
// recorded before sqlstreams skipped them), throw fails the query on an
// unreadable one (ksql.timestamp.throw.on.invalid) rather than skip it.
func timestampPolicy(topo *physical.Topology, keep, throw bool) {
	throw = throw && !keep
	for _, n := range topo.Nodes {
		switch op := n.Op.(type) {
		case *physical.Source:
			op.KeepInvalidTimestamps, op.ThrowOnInvalidTimestamp = keep, throw
		case *physical.ForeignKeyJoin:
			if op.RightSource != nil {
				op.RightSource.KeepInvalidTimestamps, op.RightSource.ThrowOnInvalidTimestamp = keep, throw
			}
		case *physical.Sink:
			op.KeepInvalidTimestamps = keep
		}
	}
}

// ksqlConfigs applies to src, a source declared or a CREATE … AS's sink
// (asSelect), the ksqlDB configs of its command that shape it:
// ksql.output.topic.name.prefix before the default topic name of a sink
// whose WITH gives no KAFKA_TOPIC, and ksql.persistence.wrap.single.values
// as WRAP_SINGLE_VALUE when the statement leaves it out and the value is
// one column of a format that can wrap it (JSON, JSON_SR, AVRO). Commands
// recorded before they took effect (l.noConfigs) ignore them.
func (e *Engine) ksqlConfigs(src *catalog.Source, with sql.Props, asSelect bool, props map[string]string, l legacy) error {
	if l.noConfigs {
		return nil
	}
	if _, named := with["KAFKA_TOPIC"]; asSelect && !named && props[prefixProp] != "" {
		src.Topic = props[prefixProp] + src.Topic
	}
	v, ok, err := queryProp(props, wrapProp)
	if err != nil {
		return err
	}
	if !ok || src.ValueOptions.WrapSingleValue != nil {
		return nil
	}
	wrap := v == "true"
	switch src.ValueFormat {
	case types.FormatJSON, types.FormatJSONSR, types.FormatAvro:
		if len(src.Schema.ValueIndexes()) == 1 {
			src.ValueOptions.WrapSingleValue = &wrap
		}
	}
	return nil
}

// collectLimits reads ksqlDB's ksql.functions.collect_list.limit and
// ksql.functions.collect_set.limit from a command's properties.
func collectLimits(props map[string]string) (map[string]int, error) {
	var out map[string]int
	for _, fn := range []string{"COLLECT_LIST", "COLLECT_SET"} {
		prop := "ksql.functions." + strings.ToLower(fn) + ".limit"
		n, ok, err := queryInt(props, prop)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		out[fn] = int(n)
	}
	return out, nil
}

// runFlags are the query-level behaviours a plan records beside its
// topology.
type runFlags struct {
	headers, delimited bool
}

func flagsOf(p *plan.Plan) runFlags {
	return runFlags{headers: p.PropagateHeaders, delimited: p.KsqlDelimited}
}

// planFlags sets in p the query-level behaviours of a command that binds
// with l.
func (e *Engine) planFlags(p *plan.Plan, l legacy) {
	p.PropagateHeaders = !l.noHeaders
	p.KsqlDelimited = !l.oldDelimited
}

// finishPlan records p with cmd (record, which returns the command's
// offset), names the query (prefix and the offset, or the ID the
// command carries) and returns the plan as recorded, decoded for that
// ID: what runs is what a replay runs. A command recorded before plans
// (migrate) gets a migration command instead.
func (e *Engine) finishPlan(ctx context.Context, p *plan.Plan, cmd *catalog.Command, record recorder, prefix string, migrate bool) (*plan.Plan, string, error) {
	b, err := plan.Encode(p)
	if err != nil {
		return nil, "", err
	}
	// What is recorded must decode into what was planned: a plan the
	// codec cannot reproduce is refused before it is recorded.
	if back, err := plan.Decode(b, "", e.cfg.Schemas); err != nil {
		return nil, "", fmt.Errorf("the query's plan cannot be recorded: %w", err)
	} else if again, err := plan.Encode(back); err != nil || !bytes.Equal(again, b) {
		return nil, "", fmt.Errorf("the query's plan cannot be recorded: it does not decode into itself (%v)", err)
	}
	cmd.Plan = b
	off, err := record(*cmd)
	if err != nil {
		return nil, "", err
	}
	id := ""
	if prefix != "" || cmd.QueryID != "" {
		id = e.queryID(prefix, *cmd, off)
	}
	if migrate {
		e.recordMigration(ctx, off, id, b)
	}
	dp, err := plan.Decode(b, id, e.cfg.Schemas)
	if err != nil {
		return nil, "", err
	}
	return dp, id, nil
}

// queryBuildID is the ID a query's topology is built under before its
// command is recorded: the one the command carries, else the
// placeholder the recorded plan's decoding replaces.
func queryBuildID(cmd catalog.Command) string {
	if cmd.QueryID != "" {
		return cmd.QueryID
	}
	return plan.QueryIDPlaceholder
}
