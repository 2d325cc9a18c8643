package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// The property registry: every property a session (SET/UNSET, a REST
// request's streamsProperties, a queries file, a test case) may set, by
// its ksqlDB name, with its aliases, how its value is checked and how it
// takes effect. A name not in it is refused, naming the property; so is
// a value its check refuses. A ksqlDB property whose effect sqlstreams
// does not have is either accepted only at the value that is
// sqlstreams' behaviour (fixed) or refused with why (refusedProps).
// docs/properties.md lists the registry (TestPropertiesDocumented).

// Where a property takes effect.
const (
	// ScopeQuery: recorded with the CREATE … AS or INSERT INTO … SELECT
	// after it, and read whenever that query starts (so at every
	// restart and replay too).
	ScopeQuery = "query"
	// ScopeStatement: shapes the CREATE statement after it (its sink's
	// or source's topic, formats and serde), recorded with it.
	ScopeStatement = "statement"
	// ScopeSession: read by the session's pull and push queries.
	ScopeSession = "session"
)

// PropertyDef is one property of the registry.
type PropertyDef struct {
	// Name is the property's ksqlDB name; Aliases are the other names
	// it is set by. A name that is neither ksql.* nor sqlstreams.* is
	// also set by ksql.streams.<name>, as in ksqlDB.
	Name    string
	Aliases []string
	Scope   string
	// Type describes the value: "int", "ms" (whole milliseconds),
	// "bool", "enum", "string", "format".
	Type string
	// Default is the value without a SET ("server" when the server's
	// setting is).
	Default string
	// Effect says, in one line, what the property does.
	Effect string
	// Values are an enum's values, the first of each group as stored.
	Values []string
	// Min and Max bound an int or ms property.
	Min, Max int64
	// Fixed, when set, is the only value accepted: sqlstreams' own
	// behaviour, which ksqlDB makes a choice of; FixedWhy says so.
	Fixed    string
	FixedWhy string
	// canon maps an accepted enum spelling to the value stored.
	canon map[string]string
}

const maxMs = 7 * 24 * 3600 * 1000

// Properties is the registry, in the order docs/properties.md lists it.
var Properties = []*PropertyDef{
	// Persistent queries: read when the query starts.
	{Name: "auto.offset.reset", Scope: ScopeQuery, Type: "enum", Values: []string{"earliest", "latest"}, Default: "earliest (persistent queries), latest (push queries)",
		Effect: "where a query starts reading a source without committed offsets; also the session's push queries"},
	{Name: "processing.guarantee", Scope: ScopeQuery, Type: "enum", Values: []string{ExactlyOnce, AtLeastOnce}, Default: "server (--processing-guarantee)",
		Effect: "exactly-once (transactions) or at-least-once processing of the query", canon: map[string]string{"exactly_once": ExactlyOnce, "exactly_once_beta": ExactlyOnce}},
	{Name: "commit.interval.ms", Scope: ScopeQuery, Type: "ms", Min: 1, Max: 3600 * 1000, Default: "server (--commit-interval-ms)",
		Effect: "how often the query commits its output, state and offsets"},
	{Name: "num.stream.threads", Scope: ScopeQuery, Type: "int", Min: 1, Max: 64, Default: "server (--num-stream-threads)",
		Effect: "stream threads (group members, transactional producers) the query runs"},
	{Name: "transaction.timeout.ms", Aliases: []string{"producer.transaction.timeout.ms", "ksql.streams.producer.transaction.timeout.ms"}, Scope: ScopeQuery, Type: "ms", Min: 1000, Max: MaxTransactionTimeout.Milliseconds(), Default: "server (--transaction-timeout-ms)",
		Effect: "the query's producers' transaction timeout"},
	{Name: StoreProp, Scope: ScopeQuery, Type: "enum", Values: []string{StoreRocksDB, StoreInMemory}, Default: "server (--default-dsl-store)",
		Effect: "where the query's state stores live: RocksDB on disk, or the heap (restored from their changelogs at every start)", canon: map[string]string{"rocksdb": StoreRocksDB, "rocks_db": StoreRocksDB}},
	{Name: "windowstore.changelog.additional.retention.ms", Scope: ScopeQuery, Type: "ms", Min: 0, Max: 1 << 62, Default: "86400000",
		Effect: "how much longer than its window store a window or session changelog topic keeps records"},
	{Name: StandbyReplicasProp, Scope: ScopeQuery, Type: "int", Min: 0, Max: 16, Default: "server (--num-standby-replicas)",
		Effect: "standby copies of each of the query's stateful tasks"},
	{Name: AcceptableLagProp, Scope: ScopeQuery, Type: "int", Min: 0, Max: 1 << 62, Default: "server (--acceptable-recovery-lag)",
		Effect: "changelog offsets a standby may lag and still take over a task at once"},
	{Name: MaxWarmupReplicasProp, Scope: ScopeQuery, Type: "int", Min: 1, Max: 1000, Default: "2",
		Effect: "warm-up copies of tasks being moved, at most, at a time"},
	{Name: ProbingIntervalProp, Scope: ScopeQuery, Type: "ms", Min: 100, Max: maxMs, Default: "server (--probing-rebalance-interval-ms)",
		Effect: "how often a query checks whether warm-ups have caught up"},
	{Name: IdleAdvanceProp, Scope: ScopeQuery, Type: "ms", Min: 0, Max: maxMs, Default: "0 (off)",
		Effect: "a windowed aggregation idle this long advances stream time by wall-clock time, closing windows"},
	{Name: throwOnInvalidProp, Scope: ScopeQuery, Type: "bool", Default: "false",
		Effect: "fail the query on an unreadable TIMESTAMP column instead of skipping the record"},
	{Name: "ksql.functions.collect_list.limit", Scope: ScopeQuery, Type: "int", Min: 1, Max: 1<<31 - 1, Default: "unlimited",
		Effect: "most elements COLLECT_LIST keeps"},
	{Name: "ksql.functions.collect_set.limit", Scope: ScopeQuery, Type: "int", Min: 1, Max: 1<<31 - 1, Default: "unlimited",
		Effect: "most elements COLLECT_SET keeps"},
	{Name: "cache.max.bytes.buffering", Aliases: []string{"statestore.cache.max.bytes"}, Scope: ScopeQuery, Type: "int", Fixed: "0", Default: "0",
		FixedWhy: "sqlstreams has no record cache: every update of a table is emitted, as with a cache of 0"},
	{Name: "__emit.interval.ms.kstreams.windowed.aggregation__", Scope: ScopeQuery, Type: "ms", Fixed: "0", Default: "0",
		FixedWhy: "EMIT FINAL emits a window as soon as stream time closes it"},
	{Name: "default.timestamp.extractor", Scope: ScopeQuery, Type: "string", Fixed: "org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp", Default: "LogAndSkipOnInvalidTimestamp",
		FixedWhy: "a record with an invalid timestamp is logged and skipped (ksql.timestamp.throw.on.invalid fails the query instead)"},

	// CREATE statements: shape the statement after the SET.
	{Name: "ksql.output.topic.name.prefix", Scope: ScopeStatement, Type: "string", Default: "",
		Effect: "prefix of the default topic name of a CREATE … AS without KAFKA_TOPIC"},
	{Name: wrapProp, Scope: ScopeStatement, Type: "bool", Default: "true",
		Effect: "WRAP_SINGLE_VALUE of a CREATE that leaves it out"},
	{Name: "ksql.persistence.default.format.key", Scope: ScopeStatement, Type: "format", Default: "KAFKA",
		Effect: "KEY_FORMAT of a CREATE that gives neither it nor FORMAT"},
	{Name: "ksql.persistence.default.format.value", Scope: ScopeStatement, Type: "format", Default: "none (VALUE_FORMAT is required)",
		Effect: "VALUE_FORMAT of a CREATE that gives neither it nor FORMAT"},
	{Name: createOrReplaceProp, Scope: ScopeStatement, Type: "bool", Default: "true",
		Effect: "false refuses CREATE OR REPLACE … AS of a sink a query writes"},
	{Name: "ksql.windowed.session.key.legacy", Scope: ScopeStatement, Type: "bool", Fixed: "false", Default: "false",
		FixedWhy: "session window keys carry their end time, as ksqlDB's non-legacy keys"},
	{Name: "ksql.functions.substring.legacy.args", Scope: ScopeStatement, Type: "bool", Fixed: "false", Default: "false",
		FixedWhy: "SUBSTRING takes ksqlDB's current (1-based, length) arguments"},

	// Pull and push queries of the session.
	{Name: "ksql.query.pull.table.scan.enabled", Scope: ScopeSession, Type: "bool", Default: "true",
		Effect: "pull queries may scan a table (no key or range in WHERE)"},
	{Name: "ksql.query.pull.range.scan.enabled", Scope: ScopeSession, Type: "bool", Default: "true",
		Effect: "pull queries may scan a range of keys"},
	{Name: "ksql.query.pull.limit.clause.enabled", Scope: ScopeSession, Type: "bool", Default: "true",
		Effect: "pull queries may have a LIMIT"},
	{Name: StandbyReadsProp, Scope: ScopeSession, Type: "bool", Default: "false",
		Effect: "a pull query whose partition's owner does not answer reads a standby copy"},
	{Name: MaxOffsetLagProp, Scope: ScopeSession, Type: "int", Min: 0, Max: 1 << 62, Default: "unlimited",
		Effect: "most changelog offsets a standby copy a pull query reads may lag"},
	{Name: streamPullProp, Scope: ScopeSession, Type: "bool", Default: "true",
		Effect: "false refuses pull queries over streams"},
}

const (
	createOrReplaceProp = "ksql.create.or.replace.enabled"
	streamPullProp      = "ksql.query.pull.stream.enabled"
)

// propFalse says whether props set bool property name to false.
func propFalse(props map[string]string, name string) bool {
	v, ok, err := queryProp(props, name)
	return ok && err == nil && v == "false"
}

// refusedProps are ksqlDB properties sqlstreams refuses, with why.
var refusedProps = map[string]string{
	"ksql.new.query.planner.enabled":            "sqlstreams has one planner",
	"ksql.sink.partitions":                      "ksqlDB no longer has it: give PARTITIONS in the statement's WITH (a sink gets its input's partitions)",
	"ksql.sink.replicas":                        "ksqlDB no longer has it: give REPLICAS in the statement's WITH",
	"topology.optimization":                     "a query's internal topics are fixed when it is created, whatever Kafka Streams' optimization",
	"state.dir":                                 "the server's --state-dir holds every query's state",
	"application.id":                            "each query's application id is <service id>_query_<query id>",
	"ksql.service.id":                           "it is the server's (--service-id)",
	"ksql.query.pull.max.qps":                   "pull queries are not rate limited",
	"ksql.query.push.v2.enabled":                "push queries of a persistent query's sink are always scalable (see README)",
	"ksql.query.pull.interpreter.enabled":       "pull queries run compiled plans only",
	"ksql.suppress.enabled":                     "EMIT FINAL is always enabled",
	"ksql.headers.columns.enabled":              "HEADERS columns are always enabled",
	"ksql.rowpartition.rowoffset.enabled":       "ROWPARTITION and ROWOFFSET are always enabled",
	"ksql.source.table.materialization.enabled": "source tables are always materialized",
}

// propsByName finds a property by any of its names.
var propsByName = func() map[string]*PropertyDef {
	m := map[string]*PropertyDef{}
	for _, d := range Properties {
		for _, n := range d.Names() {
			m[n] = d
		}
	}
	return m
}()

// Names returns every name d is set by, its own first.
func (d *PropertyDef) Names() []string {
	out := append([]string{d.Name}, d.Aliases...)
	if !strings.HasPrefix(d.Name, "ksql.") && !strings.HasPrefix(d.Name, "sqlstreams.") {
		out = append(out, "ksql.streams."+d.Name)
	}
	return out
}

// LookupProperty returns the registry's property named name (by any of
// its names); the error refuses a name sqlstreams does not accept,
// naming it and saying why.
func LookupProperty(name string) (*PropertyDef, error) {
	name = strings.TrimSpace(name)
	if d, ok := propsByName[name]; ok {
		return d, nil
	}
	bare := strings.TrimPrefix(name, "ksql.streams.")
	for _, n := range []string{name, bare} {
		if why, ok := refusedProps[n]; ok {
			return nil, sql.Errorf(sql.CodeFeatureNotSupport, "Property '%s' is not supported: %s", name, why)
		}
	}
	if kafka.KnownClientProperty(name) {
		return nil, sql.Errorf(sql.CodeFeatureNotSupport, "Property '%s' is a Kafka client setting of the server: give it in the server's --config file or with -X, not per session", name)
	}
	for n := range propsByName {
		if strings.EqualFold(n, name) {
			return nil, sql.Errorf(sql.CodeUndefinedObject, "Unknown property: %s (property names are case-sensitive: did you mean '%s'?)", name, n)
		}
	}
	return nil, sql.Errorf(sql.CodeUndefinedObject, "Unknown property: %s (not one sqlstreams accepts; see docs/properties.md or SHOW PROPERTIES)", name)
}

// Check returns the value of d to store for v, or an error naming the
// property (as the user wrote it, name) and the value.
func (d *PropertyDef) Check(name, v string) (string, error) {
	t := strings.TrimSpace(v)
	bad := func(format string, args ...any) (string, error) {
		return "", sql.Errorf(sql.CodeInvalidParameter, "%s must be %s, not %q", name, fmt.Sprintf(format, args...), v)
	}
	if d.Fixed != "" {
		ok := strings.EqualFold(t, d.Fixed)
		if d.Type == "string" {
			ok = t == d.Fixed || t == d.Fixed[strings.LastIndex(d.Fixed, ".")+1:]
		}
		if !ok {
			return "", sql.Errorf(sql.CodeFeatureNotSupport, "%s can only be %s here, not %q: %s", name, d.Fixed, v, d.FixedWhy)
		}
		return d.Fixed, nil
	}
	switch d.Type {
	case "bool":
		// Go's spellings too (1, t, TRUE, …): commands recorded before
		// the registry were read with strconv.ParseBool.
		if b, err := strconv.ParseBool(strings.ToLower(t)); err == nil {
			return strconv.FormatBool(b), nil
		}
		return bad("true or false")
	case "int", "ms":
		n, err := strconv.ParseInt(t, 10, 64)
		if err == nil && n >= d.Min && n <= d.Max {
			return strconv.FormatInt(n, 10), nil
		}
		unit := ""
		if d.Type == "ms" {
			unit = " of milliseconds"
		}
		if d.Max >= 1<<62 {
			return bad("a whole number%s, %d or more", unit, d.Min)
		}
		return bad("a whole number%s from %d to %d", unit, d.Min, d.Max)
	case "enum":
		l := strings.ToLower(t)
		if c, ok := d.canon[l]; ok {
			return c, nil
		}
		for _, e := range d.Values {
			if l == e {
				return e, nil
			}
		}
		if d.Name == "auto.offset.reset" && l == "none" {
			return "", sql.Errorf(sql.CodeInvalidParameter, "'none' is not valid for this property within KSQL: %s must be earliest or latest", name)
		}
		return bad("%s", strings.Join(d.Values, " or "))
	case "format":
		f, err := types.NormalizeFormat(t)
		if err != nil || f == "" {
			return bad("a format (KAFKA, JSON, JSON_SR, AVRO, PROTOBUF, PROTOBUF_NOSR, DELIMITED, NONE)")
		}
		return f, nil
	}
	return v, nil
}

// CheckProperty checks that name may be set to value and returns the
// property and the value to store.
func CheckProperty(name, value string) (*PropertyDef, string, error) {
	d, err := LookupProperty(name)
	if err != nil {
		return nil, "", err
	}
	v, err := d.Check(strings.TrimSpace(name), value)
	return d, v, err
}

// SetProperty sets name to value in props, under the property's own
// name (dropping its aliases), once the registry accepts both.
func SetProperty(props map[string]string, name, value string) error {
	d, v, err := CheckProperty(name, value)
	if err != nil {
		return err
	}
	for _, n := range d.Names() {
		delete(props, n)
	}
	props[d.Name] = v
	return nil
}

// UnsetProperty removes name (by any of its names) from props.
func UnsetProperty(props map[string]string, name string) error {
	d, err := LookupProperty(name)
	if err != nil {
		return err
	}
	for _, n := range d.Names() {
		delete(props, n)
	}
	return nil
}

// propValue returns the value props give property name (a registry
// name) under any of its names, and the name it was given by. Commands
// recorded before the registry may hold an alias.
func propValue(props map[string]string, name string) (string, string, bool) {
	d := propsByName[name]
	if d == nil {
		v, ok := props[name]
		return name, v, ok
	}
	for _, n := range d.Names() {
		if v, ok := props[n]; ok {
			return n, v, true
		}
	}
	return "", "", false
}

// queryProp returns the value props give registry property name (under
// any of its names), checked; ok is false when props do not set it.
func queryProp(props map[string]string, name string) (v string, ok bool, err error) {
	given, raw, ok := propValue(props, name)
	if !ok {
		return "", false, nil
	}
	v, err = propsByName[name].Check(given, raw)
	return v, true, err
}

// queryInt is queryProp of an int or ms property.
func queryInt(props map[string]string, name string) (int64, bool, error) {
	v, ok, err := queryProp(props, name)
	if !ok || err != nil {
		return 0, ok, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, true, err
}

// offsetReset returns the auto.offset.reset props give, else def. A
// value the registry refuses (only a command recorded before it could
// hold one) is passed on as it is, as it was then.
func offsetReset(props map[string]string, def string) string {
	_, raw, ok := propValue(props, "auto.offset.reset")
	if !ok || raw == "" {
		return def
	}
	if v, err := propsByName["auto.offset.reset"].Check("auto.offset.reset", raw); err == nil {
		return v
	}
	return raw
}

// QueryConfig returns the settings persistent query id runs with here
// (the effect of its properties) and its topology.
func (e *Engine) QueryConfig(id string) (exec.Config, *physical.Topology, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.running[id]
	if q == nil {
		return exec.Config{}, nil, false
	}
	return q.Config(), q.Topology(), true
}

// PropertyNames returns the registry's names, sorted.
func PropertyNames() []string {
	out := make([]string, 0, len(Properties))
	for _, d := range Properties {
		out = append(out, d.Name)
	}
	sort.Strings(out)
	return out
}
