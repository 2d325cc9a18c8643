package pgwire

// This file answers SELECTs over pg_catalog and information_schema — the
// queries behind psql's \d, \dt, \d name, \dn, \l and the table listings
// of GUI tools and ORMs — from the engine's catalog.
//
// It is a small emulation, not string matching of known queries: each
// emulated relation is a list of rows (name → value) built from the
// catalog when the query runs, and a query is answered by
//
//   - taking the first relation after FROM as the one rows come from
//     (LEFT JOINed relations are folded into its rows: a pg_class row
//     also carries nspname; an INNER or comma join with a relation that
//     is always empty here, such as pg_inherits, makes the result empty);
//   - keeping the rows that pass the WHERE conjuncts it understands:
//     col = | <> | != | < | <= | > | >= literal, col ~ | !~ 'regex' (also
//     written OPERATOR(pg_catalog.~), matched case-insensitively, since
//     psql lower-cases the names it is given and sqlstreams upper-cases
//     them), col [NOT] IN (literals), col [NOT] LIKE 'pattern', [NOT]
//     col; other conjuncts (function calls, column-to-column comparisons,
//     ORs) and conjuncts on columns the rows lack are taken as true;
//   - projecting each select item by its alias when the rows have a
//     value under that name (psql's "Schema", "Name", "Type", "Owner"),
//     else by the column or function it names (a.attname, format_type(…),
//     pg_get_userbyid(…)), else a literal's value, else NULL;
//   - sorting by ORDER BY ordinals or names, and LIMIT.
//
// Emulated relations: pg_class, pg_namespace, pg_attribute, pg_type,
// pg_database, pg_roles/pg_user, pg_tables, pg_views,
// information_schema.tables, .columns, .schemata; always empty: pg_index,
// pg_constraint, pg_policy, pg_statistic_ext, pg_publication*, pg_inherits,
// pg_trigger, pg_rewrite, pg_description, pg_attrdef, pg_proc,
// pg_foreign_table, pg_partitioned_table, pg_extension, pg_matviews,
// pg_sequence, pg_collation, pg_event_trigger, pg_am. Other pg_catalog
// relations fail with 42P01.
//
// Streams and tables are relations of kind 'r' in schema public, listed
// with Type "stream" or "table"; their columns carry ksqlDB type names
// (format_type gives "INTEGER KEY", "ARRAY<STRING>", …) and Postgres type
// OIDs (atttypid). Checked with psql 15: \d, \dt, \d+, \d name, \dn, \l.

import (
	"context"
	"hash/fnv"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// CatalogSource is what pgwire needs to list streams and tables in
// pg_catalog; *engine.Engine implements it. An Executor that does not
// implement it shows an empty schema.
type CatalogSource interface {
	Catalog() *catalog.Catalog
}

// vrow is one row of an emulated relation.
type vrow map[string]any

// Fixed OIDs, as in Postgres.
const (
	oidNamespacePublic  = 2200
	oidNamespaceCatalog = 11
	oidNamespaceInfo    = 13000
	oidOwner            = 10
	firstUserOID        = 16384
	ownerName           = "sqlstreams"
)

// emptyRelations are relations that never have rows here.
var emptyRelations = map[string]bool{
	"pg_index": true, "pg_constraint": true, "pg_policy": true, "pg_statistic_ext": true,
	"pg_publication": true, "pg_publication_rel": true, "pg_publication_namespace": true,
	"pg_publication_tables": true, "pg_inherits": true, "pg_trigger": true, "pg_rewrite": true,
	"pg_description": true, "pg_attrdef": true, "pg_proc": true, "pg_foreign_table": true,
	"pg_partitioned_table": true, "pg_extension": true, "pg_matviews": true, "pg_sequence": true,
	"pg_collation": true, "pg_event_trigger": true, "pg_am": true, "pg_depend": true,
	"pg_shdescription": true, "pg_seclabel": true, "pg_foreign_server": true,
	"pg_foreign_data_wrapper": true, "pg_opclass": true, "pg_operator": true,
	"pg_aggregate": true, "pg_cast": true, "pg_conversion": true, "pg_enum": true,
	"pg_range": true, "pg_language": true, "pg_ts_config": true, "pg_ts_dict": true,
	"pg_ts_parser": true, "pg_ts_template": true, "pg_default_acl": true,
	"pg_init_privs": true, "pg_largeobject_metadata": true, "pg_subscription": true,
	"pg_statistic_ext_data": true, "pg_stat_activity": true, "pg_locks": true,
	"pg_indexes": true, "pg_stats": true, "pg_sequences": true, "pg_settings": true,
	"pg_prepared_statements": true, "pg_cursors": true,
	// information_schema
	"views": true, "routines": true, "table_constraints": true, "key_column_usage": true,
	"referential_constraints": true, "constraint_column_usage": true, "triggers": true,
	"sequences": true, "parameters": true, "check_constraints": true,
}

// relationDef describes an emulated relation: its columns in order (for
// SELECT *) and their types (for RowDescription).
type relationDef struct {
	cols []types.Column
	rows func(c *conn) []vrow
}

func cols(spec ...string) []types.Column {
	out := make([]types.Column, 0, len(spec))
	for _, s := range spec {
		name, kind, _ := strings.Cut(s, ":")
		t := types.StringType
		switch kind {
		case "int":
			t = types.IntType
		case "bigint":
			t = types.BigintType
		case "bool":
			t = types.BooleanType
		}
		out = append(out, types.Column{Name: name, Type: t})
	}
	return out
}

var relations = map[string]relationDef{
	"pg_class": {cols("oid:bigint", "relname", "relnamespace:bigint", "relkind", "relowner:bigint",
		"relchecks:int", "relhasindex:bool", "relhasrules:bool", "relhastriggers:bool",
		"relrowsecurity:bool", "relforcerowsecurity:bool", "relispartition:bool",
		"reltablespace:bigint", "reloftype:bigint", "relpersistence", "relreplident",
		"relam:bigint", "relnatts:int", "reltuples:bigint"), (*conn).pgClass},
	"pg_namespace":       {cols("oid:bigint", "nspname", "nspowner:bigint"), (*conn).pgNamespace},
	"pg_attribute":       {cols("attrelid:bigint", "attname", "atttypid:bigint", "attnum:int", "atttypmod:int", "attnotnull:bool", "atthasdef:bool", "attisdropped:bool", "attidentity", "attgenerated"), (*conn).pgAttribute},
	"pg_type":            {cols("oid:bigint", "typname", "typnamespace:bigint", "typlen:int", "typtype", "typcategory", "typelem:bigint", "typarray:bigint", "typbasetype:bigint", "typrelid:bigint", "typnotnull:bool"), (*conn).pgType},
	"pg_database":        {cols("oid:bigint", "datname", "datdba:bigint", "encoding:int", "datcollate", "datctype", "datallowconn:bool", "datistemplate:bool"), (*conn).pgDatabase},
	"pg_roles":           {cols("oid:bigint", "rolname", "rolsuper:bool", "rolinherit:bool", "rolcreaterole:bool", "rolcreatedb:bool", "rolcanlogin:bool", "rolreplication:bool", "rolconnlimit:int", "rolbypassrls:bool"), (*conn).pgRoles},
	"pg_user":            {cols("usename", "usesysid:bigint", "usecreatedb:bool", "usesuper:bool"), (*conn).pgRoles},
	"pg_tables":          {cols("schemaname", "tablename", "tableowner", "tablespace", "hasindexes:bool", "hasrules:bool", "hastriggers:bool", "rowsecurity:bool"), (*conn).pgTables},
	"pg_views":           {cols("schemaname", "viewname", "viewowner", "definition"), func(*conn) []vrow { return nil }},
	"tables":             {cols("table_catalog", "table_schema", "table_name", "table_type", "is_insertable_into", "is_typed"), (*conn).infoTables},
	"columns":            {cols("table_catalog", "table_schema", "table_name", "column_name", "ordinal_position:int", "column_default", "is_nullable", "data_type", "udt_name"), (*conn).infoColumns},
	"schemata":           {cols("catalog_name", "schema_name", "schema_owner"), (*conn).infoSchemata},
	"pg_stat_all_tables": {cols("relid:bigint", "schemaname", "relname"), func(*conn) []vrow { return nil }},
}

// sourceOID is the stable OID of a stream or table: derived from its
// name, so that the OID psql reads in one query finds the source in the
// next.
func sourceOID(name string) int64 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return firstUserOID + int64(h.Sum32()%(1<<30))
}

func (c *conn) sources() []*catalog.Source {
	if c.srv.catalog == nil {
		return nil
	}
	return c.srv.catalog.Catalog().Sources()
}

func kindName(k catalog.Kind) string {
	if k == catalog.Table {
		return "table"
	}
	return "stream"
}

func (c *conn) pgClass() []vrow {
	var rows []vrow
	for _, s := range c.sources() {
		rows = append(rows, vrow{
			"oid": sourceOID(s.Name), "relname": s.Name, "relnamespace": int64(oidNamespacePublic),
			"relkind": "r", "relowner": int64(oidOwner), "relchecks": 0, "relhasindex": false,
			"relhasrules": false, "relhastriggers": false, "relrowsecurity": false,
			"relforcerowsecurity": false, "relhasoids": false, "relispartition": false,
			"reltablespace": int64(0), "reloftype": int64(0), "relpersistence": "p", "relreplident": "d",
			"relam": int64(2), "relnatts": len(s.Schema.Columns), "reltuples": int64(-1),
			"amname": "heap", "nspname": "public", "array_to_string": "", "case": "",
			// psql's column aliases
			"Schema": "public", "Name": s.Name, "Type": kindName(s.Kind), "Owner": ownerName,
			"Persistence": "permanent", "Access method": "heap", "Size": "0 bytes",
			"Description": describeSource(s),
		})
	}
	return rows
}

// describeSource is a source's description, shown by \d+.
func describeSource(s *catalog.Source) string {
	d := "Kafka topic " + s.Topic + ", " + s.KeyFormat + " keys, " + s.ValueFormat + " values"
	if s.WriterQuery != "" {
		d += ", written by " + s.WriterQuery
	}
	return d
}

func (c *conn) pgNamespace() []vrow {
	ns := func(oid int64, name string) vrow {
		return vrow{"oid": oid, "nspname": name, "nspowner": int64(oidOwner), "Name": name, "Owner": ownerName}
	}
	return []vrow{ns(oidNamespaceCatalog, "pg_catalog"), ns(oidNamespacePublic, "public"), ns(oidNamespaceInfo, "information_schema")}
}

// columnType is how a column's type shows in \d name: the ksqlDB type,
// with KEY or PRIMARY KEY for key columns.
func columnType(s *catalog.Source, col types.Column) string {
	t := col.Type.String()
	if col.Key {
		if s.Kind == catalog.Table {
			return t + " PRIMARY KEY"
		}
		return t + " KEY"
	}
	return t
}

func (c *conn) pgAttribute() []vrow {
	var rows []vrow
	for _, s := range c.sources() {
		oid := sourceOID(s.Name)
		for i, col := range s.Schema.Columns {
			storage := "x"
			if typeSize(col.Type) > 0 {
				storage = "p"
			}
			rows = append(rows, vrow{
				"attrelid": oid, "attname": col.Name, "atttypid": int64(typeOID(col.Type)), "attnum": i + 1,
				"atttypmod": int(typeMod(col.Type)), "attnotnull": false, "atthasdef": false,
				"attisdropped": false, "attidentity": "", "attgenerated": "",
				"attstorage": storage, "attcompression": "",
				"format_type": columnType(s, col), "relname": s.Name, "nspname": "public",
			})
		}
	}
	return rows
}

// pgTypeNames are the types sqlstreams sends.
var pgTypeNames = []struct {
	oid  int64
	name string
	len  int
	cat  string
}{
	{oidBool, "bool", 1, "B"}, {oidBytea, "bytea", -1, "U"}, {oidInt8, "int8", 8, "N"},
	{oidInt4, "int4", 4, "N"}, {oidText, "text", -1, "S"}, {oidJSON, "json", -1, "U"},
	{oidFloat8, "float8", 8, "N"}, {oidDate, "date", 4, "D"}, {oidTime, "time", 8, "D"},
	{oidTimestamp, "timestamp", 8, "D"}, {oidNumeric, "numeric", -1, "N"}, {oidUnknown, "unknown", -2, "X"},
}

func (c *conn) pgType() []vrow {
	var rows []vrow
	for _, t := range pgTypeNames {
		rows = append(rows, vrow{
			"oid": t.oid, "typname": t.name, "typnamespace": int64(oidNamespaceCatalog), "typlen": t.len,
			"typtype": "b", "typcategory": t.cat, "typelem": int64(0), "typarray": int64(0),
			"typbasetype": int64(0), "typrelid": int64(0), "typnotnull": false, "nspname": "pg_catalog",
			"Schema": "pg_catalog", "Name": t.name,
		})
	}
	return rows
}

func (c *conn) pgDatabase() []vrow {
	return []vrow{{
		"oid": int64(firstUserOID - 1), "datname": c.database, "datdba": int64(oidOwner), "encoding": 6,
		"datcollate": "C", "datctype": "C", "datallowconn": true, "datistemplate": false,
		"Name": c.database, "Owner": ownerName, "Encoding": "UTF8", "Collate": "C", "Ctype": "C",
		"Locale Provider": "libc",
	}}
}

func (c *conn) pgRoles() []vrow {
	return []vrow{{
		"oid": int64(oidOwner), "rolname": ownerName, "usename": ownerName, "usesysid": int64(oidOwner),
		"rolsuper": false, "usesuper": false, "rolinherit": true, "rolcreaterole": false,
		"rolcreatedb": false, "usecreatedb": false, "rolcanlogin": true, "rolreplication": false,
		"rolconnlimit": -1, "rolbypassrls": false,
	}}
}

func (c *conn) pgTables() []vrow {
	var rows []vrow
	for _, s := range c.sources() {
		rows = append(rows, vrow{"schemaname": "public", "tablename": s.Name, "tableowner": ownerName,
			"hasindexes": false, "hasrules": false, "hastriggers": false, "rowsecurity": false})
	}
	return rows
}

func (c *conn) infoTables() []vrow {
	var rows []vrow
	for _, s := range c.sources() {
		rows = append(rows, vrow{"table_catalog": c.database, "table_schema": "public", "table_name": s.Name,
			"table_type": "BASE TABLE", "is_insertable_into": yesNo(!s.IsSource && s.WriterQuery == ""), "is_typed": "NO"})
	}
	return rows
}

func (c *conn) infoColumns() []vrow {
	var rows []vrow
	for _, s := range c.sources() {
		for i, col := range s.Schema.Columns {
			rows = append(rows, vrow{"table_catalog": c.database, "table_schema": "public", "table_name": s.Name,
				"column_name": col.Name, "ordinal_position": i + 1, "is_nullable": "YES",
				"data_type": pgTypeName(col.Type), "udt_name": udtName(col.Type)})
		}
	}
	return rows
}

func (c *conn) infoSchemata() []vrow {
	var rows []vrow
	for _, ns := range []string{"information_schema", "pg_catalog", "public"} {
		rows = append(rows, vrow{"catalog_name": c.database, "schema_name": ns, "schema_owner": ownerName})
	}
	return rows
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// pgTypeName is information_schema's data_type for t.
func pgTypeName(t types.Type) string {
	switch typeOID(t) {
	case oidBool:
		return "boolean"
	case oidInt4:
		return "integer"
	case oidInt8:
		return "bigint"
	case oidFloat8:
		return "double precision"
	case oidNumeric:
		return "numeric"
	case oidBytea:
		return "bytea"
	case oidDate:
		return "date"
	case oidTime:
		return "time without time zone"
	case oidTimestamp:
		return "timestamp without time zone"
	case oidJSON:
		return "json"
	}
	return "text"
}

func udtName(t types.Type) string {
	oid := int64(typeOID(t))
	for _, n := range pgTypeNames {
		if n.oid == oid {
			return n.name
		}
	}
	return "text"
}

// selectItem is one item of a select list.
type selectItem struct {
	alias string  // AS name, or ""
	key   string  // the column or function it names, or ""
	star  bool    // *
	lit   *token  // a literal item
	toks  []token // the expression
}

// catalogQuery answers a SELECT whose FROM names a pg_catalog or
// information_schema relation; nil when it names none.
func (c *conn) catalogQuery(stmt string, toks []token) *local {
	body := toks[1:]
	from := findTop(body, func(t token) bool { return t.is("FROM") })
	if from < 0 {
		return nil
	}
	end := findTop(body, func(t token) bool {
		return t.is("UNION") || t.is("EXCEPT") || t.is("INTERSECT")
	})
	if end >= 0 {
		body = body[:end]
	}
	clause := func(kw ...string) int {
		return findTop(body, func(t token) bool {
			for _, k := range kw {
				if t.is(k) {
					return true
				}
			}
			return false
		})
	}
	where, order, limit := clause("WHERE"), clause("ORDER"), clause("LIMIT")
	group := clause("GROUP")
	fromEnd := len(body)
	for _, i := range []int{where, group, order, limit} {
		if i > from && i < fromEnd {
			fromEnd = i
		}
	}
	rel, empty, ok := fromRelation(body[from+1 : fromEnd])
	if !ok {
		return nil
	}
	def, known := relations[rel]
	if !known && !emptyRelations[rel] {
		return &local{run: func(context.Context, engine.ResultWriter) (engine.Result, error) {
			return engine.Result{}, sql.Errorf(codeUndefinedTableID, "relation %q is not available: sqlstreams emulates only the pg_catalog relations psql's \\d commands read", rel)
		}}
	}
	var conds [][]token
	if where >= 0 {
		we := len(body)
		for _, i := range []int{group, order, limit} {
			if i > where && i < we {
				we = i
			}
		}
		conds = splitTop(body[where+1:we], func(t token) bool { return t.is("AND") })
	}
	items := parseSelectList(body[:from])
	outCols := make([]types.Column, 0, len(items))
	var proj []selectItem
	for _, it := range items {
		if it.star {
			for _, col := range def.cols {
				outCols = append(outCols, col)
				proj = append(proj, selectItem{key: col.Name})
			}
			continue
		}
		outCols = append(outCols, itemColumn(it, def))
		proj = append(proj, it)
	}
	var orderBy [][]token
	if order >= 0 && order+1 < len(body) && body[order+1].is("BY") {
		oe := len(body)
		if limit > order {
			oe = limit
		}
		orderBy = splitTop(body[order+2:oe], func(t token) bool { return t.is(",") })
	}
	limitN := -1
	if limit >= 0 && limit+1 < len(body) && body[limit+1].kind == tokNumber {
		limitN, _ = strconv.Atoi(body[limit+1].val)
	}
	return rowsOf(outCols, func() ([]types.Row, error) {
		var src []vrow
		if known && !empty {
			src = def.rows(c)
		}
		var out []types.Row
		for _, r := range src {
			if !matchAll(r, conds) {
				continue
			}
			row := make(types.Row, len(proj))
			for i, it := range proj {
				row[i] = coerce(project(r, it), outCols[i].Type)
			}
			out = append(out, row)
		}
		sortRows(out, orderBy, outCols, proj)
		if limitN >= 0 && len(out) > limitN {
			out = out[:limitN]
		}
		return out, nil
	})
}

// fromRelation reads a FROM clause: the first relation's name (without
// its schema), and whether an inner join with an always-empty relation
// makes the result empty. ok is false unless the first relation is in
// pg_catalog or information_schema (qualified, or unqualified pg_*).
func fromRelation(toks []token) (rel string, empty bool, ok bool) {
	refs := splitTop(toks, func(t token) bool { return t.is(",") })
	for i, ref := range refs {
		// Split the reference at its JOINs.
		var parts [][]token
		var inner []bool
		start, isInner := 0, true
		for j := 0; j < len(ref); j++ {
			t := ref[j]
			if t.is("LEFT") || t.is("RIGHT") || t.is("FULL") || t.is("INNER") || t.is("CROSS") || t.is("JOIN") {
				if j > start {
					parts, inner = append(parts, ref[start:j]), append(inner, isInner)
				}
				isInner = !(t.is("LEFT") || t.is("RIGHT") || t.is("FULL"))
				for j < len(ref) && !ref[j].is("JOIN") {
					j++
				}
				start = j + 1
			}
		}
		if start < len(ref) {
			parts, inner = append(parts, ref[start:]), append(inner, isInner)
		}
		for k, p := range parts {
			name, qualified := relName(p)
			if i == 0 && k == 0 {
				if name == "" || !qualified && !strings.HasPrefix(name, "pg_") {
					return "", false, false
				}
				rel, ok = name, true
				continue
			}
			if inner[k] && emptyRelations[name] {
				empty = true
			}
		}
	}
	return rel, empty, ok
}

// relName reads [schema.]name at the start of a table reference; qualified
// reports a pg_catalog or information_schema qualifier.
func relName(toks []token) (string, bool) {
	if len(toks) >= 3 && toks[1].is(".") {
		schema, _ := toks[0].name()
		name, _ := toks[2].name()
		if schema == "pg_catalog" || schema == "information_schema" {
			return name, true
		}
		return "", false
	}
	if len(toks) >= 1 {
		name, _ := toks[0].name()
		return name, false
	}
	return "", false
}

// parseSelectList reads the items of a select list.
func parseSelectList(toks []token) []selectItem {
	if len(toks) > 0 && toks[0].is("DISTINCT") {
		toks = toks[1:]
	}
	var out []selectItem
	for _, item := range splitTop(toks, func(t token) bool { return t.is(",") }) {
		it := selectItem{toks: item}
		n := len(item)
		switch {
		case n == 1 && item[0].is("*"), n == 3 && item[2].is("*"):
			it.star = true
			out = append(out, it)
			continue
		case n >= 2 && item[n-2].is("AS"):
			it.alias, _ = item[n-1].name()
			if item[n-1].kind == tokIdent {
				it.alias = item[n-1].val
			}
			if item[n-1].kind == tokQIdent {
				it.alias = item[n-1].val
			}
			item = item[:n-2]
		case n >= 2 && item[n-1].kind == tokQIdent && !item[n-2].is("."):
			it.alias = item[n-1].val
			item = item[:n-1]
		}
		it.toks = item
		it.key = itemKey(item)
		if len(item) == 1 && (item[0].kind == tokString || item[0].kind == tokNumber || item[0].is("TRUE") || item[0].is("FALSE") || item[0].is("NULL")) {
			it.lit = &item[0]
		}
		out = append(out, it)
	}
	return out
}

// itemKey names what an expression reads: the last identifier of a column
// reference, a function's name, or "case".
func itemKey(toks []token) string {
	if len(toks) == 0 {
		return ""
	}
	// Strip a trailing ::type cast.
	if i := findTop(toks, func(t token) bool { return t.is("::") }); i > 0 {
		toks = toks[:i]
	}
	if toks[0].is("CASE") {
		return "case"
	}
	// [q.]…name or [q.]…func(…)
	i := 0
	for i+2 < len(toks) && toks[i+1].is(".") {
		i += 2
	}
	name, ok := toks[i].name()
	if !ok {
		return ""
	}
	if i == len(toks)-1 || toks[i+1].is("(") {
		return name
	}
	return ""
}

// itemColumn returns the result column of a select item.
func itemColumn(it selectItem, def relationDef) types.Column {
	name := it.alias
	if name == "" {
		name = it.key
		if name == "" {
			name = "?column?"
		}
	}
	t := types.StringType
	switch {
	case it.lit != nil && it.lit.kind == tokNumber:
		t = types.BigintType
	case it.lit != nil && (it.lit.is("TRUE") || it.lit.is("FALSE")):
		t = types.BooleanType
	default:
		for _, col := range def.cols {
			if col.Name == it.key && it.alias == "" || col.Name == it.key && len(it.toks) == 1 ||
				col.Name == it.key && len(it.toks) == 3 && it.toks[1].is(".") {
				t = col.Type
			}
		}
	}
	return types.Column{Name: name, Type: t}
}

// project computes a select item's value for a row.
func project(r vrow, it selectItem) any {
	if it.alias != "" {
		if v, ok := r[it.alias]; ok {
			return v
		}
	}
	if it.lit != nil {
		switch {
		case it.lit.is("TRUE"):
			return true
		case it.lit.is("FALSE"):
			return false
		case it.lit.is("NULL"):
			return nil
		case it.lit.kind == tokNumber:
			n, _ := strconv.ParseInt(it.lit.val, 10, 64)
			return n
		}
		return it.lit.val
	}
	if it.key == "pg_get_userbyid" {
		return ownerName
	}
	return r[it.key]
}

// coerce makes a datum of type t from a row value.
func coerce(v any, t types.Type) types.Datum {
	switch v := v.(type) {
	case nil:
		return types.NullDatum
	case bool:
		if t.Kind == types.Boolean {
			return types.BoolDatum(v)
		}
		if v {
			return types.StringDatum("t")
		}
		return types.StringDatum("f")
	case int:
		return coerce(int64(v), t)
	case int64:
		if t.Kind == types.Int || t.Kind == types.Bigint {
			return types.IntDatum(v)
		}
		return types.StringDatum(strconv.FormatInt(v, 10))
	case string:
		return types.StringDatum(v)
	}
	return types.NullDatum
}

// valueText is a row value as text, for comparisons.
func valueText(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case bool:
		if v {
			return "t", true
		}
		return "f", true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case string:
		return v, true
	}
	return "", false
}

// matchAll reports whether r passes every condition it can check.
func matchAll(r vrow, conds [][]token) bool {
	for _, cond := range conds {
		if !match(r, cond) {
			return false
		}
	}
	return true
}

// match checks one WHERE conjunct against r; conjuncts it does not
// understand pass.
func match(r vrow, cond []token) bool {
	// Drop COLLATE … and ::type casts, and surrounding parentheses.
	var ts []token
	for i := 0; i < len(cond); i++ {
		switch {
		case cond[i].is("COLLATE"):
			i++
			for i+2 < len(cond) && cond[i+1].is(".") {
				i += 2
			}
		case cond[i].is("::"):
			i++
			for i+2 < len(cond) && cond[i+1].is(".") {
				i += 2
			}
		default:
			ts = append(ts, cond[i])
		}
	}
	for len(ts) >= 2 && ts[0].is("(") && ts[len(ts)-1].is(")") && findTop(ts[1:len(ts)-1], func(t token) bool { return t.is(")") }) < 0 {
		ts = ts[1 : len(ts)-1]
	}
	if len(ts) > 0 && findTop(ts, func(t token) bool { return t.is("OR") }) >= 0 {
		return true
	}
	not := false
	if len(ts) > 0 && ts[0].is("NOT") {
		not, ts = true, ts[1:]
	}
	// Column reference: [q.]name
	n := 1
	for n+1 < len(ts) && ts[n].is(".") {
		n += 2
	}
	if len(ts) == 0 {
		return true
	}
	key, ok := ts[n-1].name()
	if !ok {
		return true
	}
	v, has := r[key]
	if !has {
		return true
	}
	rest := ts[n:]
	if len(rest) == 0 {
		b, isBool := v.(bool)
		return !isBool || b != not
	}
	text, notNull := valueText(v)
	// OPERATOR(pg_catalog.~) → ~
	op := rest[0].val
	if rest[0].is("OPERATOR") {
		i := 1
		for i < len(rest) && !rest[i].is(")") {
			i++
		}
		if i == len(rest) || i < 2 {
			return true
		}
		op = rest[i-1].val
		rest = append([]token{{kind: tokOp, val: op}}, rest[i+1:]...)
	}
	if rest[0].is("NOT") && len(rest) > 1 {
		not = !not
		rest = rest[1:]
		op = rest[0].val
	}
	switch {
	case rest[0].is("IN"):
		if len(rest) < 3 || !rest[1].is("(") {
			return true
		}
		in := false
		for _, t := range rest[2:] {
			if (t.kind == tokString || t.kind == tokNumber) && notNull && t.val == text {
				in = true
			}
		}
		return in != not
	case rest[0].is("LIKE"), rest[0].is("ILIKE"):
		if len(rest) != 2 || rest[1].kind != tokString {
			return true
		}
		return notNull && likeMatch(rest[1].val, text) != not
	case rest[0].is("IS"):
		isNull := len(rest) >= 2 && rest[len(rest)-1].is("NULL")
		negated := len(rest) == 3 && rest[1].is("NOT")
		if !isNull {
			return true
		}
		return (!notNull) != negated
	}
	if len(rest) != 2 || rest[1].kind != tokString && rest[1].kind != tokNumber {
		return true
	}
	lit := rest[1].val
	var res bool
	switch op {
	case "=":
		res = notNull && text == lit
	case "<>", "!=":
		res = notNull && text != lit
	case "~", "~*":
		res = notNull && regexMatch(lit, text)
	case "!~", "!~*":
		res = notNull && !regexMatch(lit, text)
	case "<", "<=", ">", ">=":
		a, err1 := strconv.ParseFloat(text, 64)
		b, err2 := strconv.ParseFloat(lit, 64)
		if err1 != nil || err2 != nil {
			return true
		}
		res = op == "<" && a < b || op == "<=" && a <= b || op == ">" && a > b || op == ">=" && a >= b
	default:
		return true
	}
	return res != not
}

// regexMatch matches a Postgres regular expression case-insensitively; a
// pattern Go cannot compile matches nothing.
func regexMatch(pattern, s string) bool {
	re, err := regexp.Compile("(?i)" + pattern)
	return err == nil && re.MatchString(s)
}

// likeMatch matches a LIKE pattern (% and _), case-insensitively.
func likeMatch(pattern, s string) bool {
	var b strings.Builder
	b.WriteString("(?is)^")
	for i := 0; i < len(pattern); i++ {
		switch ch := pattern[i]; ch {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
			}
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(s)
}

// sortRows sorts rows by ORDER BY items: ordinals, output names or keys.
func sortRows(rows []types.Row, orderBy [][]token, outCols []types.Column, proj []selectItem) {
	type key struct {
		col  int
		desc bool
	}
	var keys []key
	for _, ob := range orderBy {
		if len(ob) == 0 {
			continue
		}
		desc := len(ob) > 1 && ob[len(ob)-1].is("DESC")
		col := -1
		if ob[0].kind == tokNumber {
			if n, err := strconv.Atoi(ob[0].val); err == nil && n >= 1 && n <= len(outCols) {
				col = n - 1
			}
		} else {
			k := itemKey(trimOrder(ob))
			for i := range outCols {
				if outCols[i].Name == k || proj[i].key == k {
					col = i
					break
				}
			}
		}
		if col >= 0 {
			keys = append(keys, key{col, desc})
		}
	}
	if len(keys) == 0 {
		return
	}
	sort.SliceStable(rows, func(i, j int) bool {
		for _, k := range keys {
			a, b := rows[i][k.col], rows[j][k.col]
			t := outCols[k.col].Type
			c := compareDatums(a, b, t)
			if c != 0 {
				return (c < 0) != k.desc
			}
		}
		return false
	})
}

func trimOrder(ob []token) []token {
	for len(ob) > 1 && (ob[len(ob)-1].is("ASC") || ob[len(ob)-1].is("DESC")) {
		ob = ob[:len(ob)-1]
	}
	return ob
}

func compareDatums(a, b types.Datum, t types.Type) int {
	switch {
	case a.Null && b.Null:
		return 0
	case a.Null:
		return 1
	case b.Null:
		return -1
	}
	switch t.Kind {
	case types.Int, types.Bigint, types.Boolean:
		switch {
		case a.I < b.I:
			return -1
		case a.I > b.I:
			return 1
		}
		return 0
	}
	return strings.Compare(string(a.B), string(b.B))
}
