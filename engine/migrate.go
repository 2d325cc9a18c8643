package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
)

// Commands recorded before plans (plan format 1) carry, instead of a
// plan, behaviour properties: each semantics fix since the first release
// was a property a command recorded from then on, and a command recorded
// without it was bound the old way. Such a command is migrated once: it
// is bound with its recorded properties (legacyOf, the one place that
// reads them), the plan that comes out runs its query, and a migration
// command records that plan (recordMigration), after which every replay
// carries the command out from the plan.
//
// Remove at plan-format version 2, once every command topic has been
// migrated: this file, the legacy fields of sql.Select and
// sql.CreateSource and the binder branches they reach, and
// expr.LookupLegacyAggregate (plans of version 1 name it: keep it as
// long as they are read).

// The behaviour properties of commands recorded before plans. No
// command records them any more.
const (
	// aliasesProp: aliasesKsql names a statement's unnamed expressions
	// by ksqlDB's numbering; without it, by position
	// (sql.Select.PositionalAliases, sql.CreateSource.OriginalFieldNames).
	aliasesProp = "sqlstreams.generated.aliases"
	aliasesKsql = "ksql"
	// headersProp: "true" carries input headers onto the output
	// (exec.Config.PropagateHeaders).
	headersProp = "sqlstreams.headers.propagate"
	// delimitedProp: delimitedKsql quotes DELIMITED values as ksqlDB
	// does (exec.Config.KsqlDelimited).
	delimitedProp = "sqlstreams.delimited.quoting"
	delimitedKsql = "ksql"
	// functionsProp: functionsKsql binds STDDEV_SAMP, STDDEV_SAMPLE,
	// CORRELATION, COLLECT_SET, LOG and SELECT * over table functions as
	// ksqlDB does (sql.Select.LegacyFunctions without it).
	functionsProp = "sqlstreams.functions"
	functionsKsql = "ksql"
	// nullsProp: nullsKsql makes comparisons, IN and BETWEEN with a NULL
	// FALSE, as ksqlDB's (sql.Select.SQLNulls without it).
	nullsProp = "sqlstreams.null.comparison"
	nullsKsql = "ksql"
	// finalProp: finalKsql gives EMIT FINAL ksqlDB's grace and emission
	// on close (sql.Select.LegacyFinal without it).
	finalProp = "sqlstreams.emit.final"
	finalKsql = "ksql"
	// timestampsProp: timestampsSkip skips records with a negative or
	// unreadable event time (physical.Source and Sink
	// KeepInvalidTimestamps without it).
	timestampsProp = "sqlstreams.timestamps.invalid"
	timestampsSkip = "skip"
	// configsProp: configsOn applies the command's ksqlDB configs that
	// shape what it creates (ksqlConfigs).
	configsProp = "sqlstreams.ksql.configs"
	configsOn   = "true"
	// joinKeysProp: joinKeysKsql follows ksqlDB's join key rules
	// (sql.Select.LegacyJoinKeys without it).
	joinKeysProp = "sqlstreams.join.keys"
	joinKeysKsql = "ksql"
	// joinsProp: the revision of join planning (sql.Select.LegacyJoins
	// below 2, LegacyJoins2 below 3, LegacyJoins3 below 4).
	joinsProp = "sqlstreams.joins"
	joinsV2   = "2"
	joinsV3   = "3"
	joinsV4   = "4"
	// sumProp: sumKsql makes SUM of no values 0 (sql.Select.LegacySum
	// without it).
	sumProp = "sqlstreams.sum"
	sumKsql = "ksql"
	// distinctProp: distinctCounted keeps a count per value for
	// COUNT_DISTINCT and COLLECT_SET over a table
	// (sql.Select.LegacyDistinct without it).
	distinctProp    = "sqlstreams.table.distinct"
	distinctCounted = "counted"
	// keyInferenceProp: keyInferenceKsql infers an AVRO or JSON_SR key
	// as one ROWKEY column (sql.CreateSource.LegacyKeyColumns without
	// it).
	keyInferenceProp = "sqlstreams.key.inference"
	keyInferenceKsql = "ksql"
)

// legacy says which old behaviours a command binds with: none for a
// statement run now, a headless server's, or a command with a plan.
type legacy struct {
	positional, sqlNulls, final, functions, joinKeys, joins, joins2, joins3, sum, distinct bool
	keyColumns                                                                             bool // sql.CreateSource.LegacyKeyColumns
	noConfigs                                                                              bool // the ksqlDB configs of ksqlConfigs are ignored
	keepTimestamps                                                                         bool // invalid event times are passed on
	noHeaders                                                                              bool // input headers are not carried onto the output
	oldDelimited                                                                           bool // DELIMITED values are quoted only where needed
	formats                                                                                bool // FORMAT with KEY_FORMAT or VALUE_FORMAT is accepted
	distinctState                                                                          bool // sql.Select.LegacyDistinctState
	wideRepartitions                                                                       bool // physical.WideRepartitions
	plainFKJoins                                                                           bool // physical.PlainForeignKeyJoins
	noFilterPushdown                                                                       bool // sql.Select.NoFilterPushdown
}

// legacyOf returns how cmd binds: by its recorded behaviour properties
// when it is a command recorded before plans (migrate), else as now.
func (e *Engine) legacyOf(cmd catalog.Command, migrate bool) legacy {
	if !migrate {
		return legacy{}
	}
	p := cmd.Props
	joins := p[joinsProp]
	return legacy{
		positional:     p[aliasesProp] != aliasesKsql,
		sqlNulls:       p[nullsProp] != nullsKsql,
		final:          p[finalProp] != finalKsql,
		functions:      p[functionsProp] != functionsKsql,
		joinKeys:       p[joinKeysProp] != joinKeysKsql,
		joins:          joins != joinsV2 && joins != joinsV3 && joins != joinsV4,
		joins2:         joins != joinsV3 && joins != joinsV4,
		joins3:         joins != joinsV4,
		sum:            p[sumProp] != sumKsql,
		distinct:       p[distinctProp] != distinctCounted,
		keyColumns:     p[keyInferenceProp] != keyInferenceKsql,
		noConfigs:      p[configsProp] != configsOn,
		keepTimestamps: p[timestampsProp] != timestampsSkip,
		noHeaders:      p[headersProp] != "true",
		oldDelimited:   p[delimitedProp] != delimitedKsql,
		// Every command recorded before plans was recorded before
		// FORMAT with KEY_FORMAT or VALUE_FORMAT was refused.
		formats: true,
		// ... and before distinct aggregates kept their values apart
		// from the group's state.
		distinctState: true,
		// ... and before repartitions wrote only the columns read
		// after them.
		wideRepartitions: true,
		// ... and before foreign-key joins ordered their
		// subscriptions (version 1 registrations) and dropped unchanged
		// right rows.
		plainFKJoins: true,
		// ... and before filters went below foreign-key joins.
		noFilterPushdown: true,
	}
}

// bindWith sets on st the old behaviours it binds with.
func (l legacy) bindWith(st sql.Statement) {
	sel := func(s *sql.Select) {
		s.PositionalAliases = l.positional
		s.SQLNulls = l.sqlNulls
		s.LegacyFinal = l.final
		s.LegacyFunctions = l.functions
		s.LegacyJoinKeys, s.LegacyJoins, s.LegacyJoins2, s.LegacyJoins3 = l.joinKeys, l.joins, l.joins2, l.joins3
		s.LegacySum = l.sum
		s.LegacyDistinct = l.distinct
		s.LegacyDistinctState = l.distinctState
		s.NoFilterPushdown = l.noFilterPushdown
	}
	switch st := st.(type) {
	case *sql.CreateSource:
		st.OriginalFieldNames = l.positional
		st.LegacyKeyColumns = l.keyColumns
		st.LegacyFormats = l.formats
	case *sql.CreateAs:
		st.LegacyFormats = l.formats
		sel(st.Select)
	case *sql.InsertSelect:
		sel(st.Select)
	}
}

// recordMigration writes the migration command of the command at off (a
// command recorded before plans, just bound): its plan, for the query id.
// A write that fails is logged: the next start binds the command again
// and tries again.
func (e *Engine) recordMigration(ctx context.Context, off int64, id string, p []byte) {
	if e.cmds == nil || off < 0 {
		return
	}
	c := catalog.Command{Statement: fmt.Sprintf("-- the plan of the command at offset %d", off), QueryID: id, Plan: p, Migrates: &off}
	if _, err := e.cmds.Append(ctx, c); err != nil {
		e.log.Warn("recording the plan of a command recorded before plans; it is bound again at the next start", "offset", off, "err", err)
		return
	}
	e.log.Info("recorded the plan of a command recorded before plans", "offset", off, "query", id)
}

// timestampsThrow reports whether a query fails on an unreadable event
// time (ksqlDB's ksql.timestamp.throw.on.invalid) rather than skip it.
func timestampsThrow(props map[string]string) bool {
	_, v, _ := propValue(props, throwOnInvalidProp)
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

// migrateIdleAdvance gives the windowed aggregations of a plan recorded
// before plans held the idle advance (before 2026-12-07, plan format 1)
// the one its command's properties ask for. A plan recorded since holds
// it wherever the properties ask for it, so this changes nothing there.
// Remove with plan format 1: plans of version 2 always hold it.
func migrateIdleAdvance(topo *physical.Topology, props map[string]string) error {
	for _, n := range topo.Nodes {
		if a, ok := n.Op.(*physical.Aggregate); ok && a.IdleAdvance > 0 {
			return nil
		}
	}
	return idleAdvancePolicy(topo, props)
}
