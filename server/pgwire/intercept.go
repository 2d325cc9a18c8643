package pgwire

// This file recognizes the Postgres-specific statements that drivers and
// tools send and answers them without the engine, in both protocols:
//
//	BEGIN, START TRANSACTION, COMMIT, END, ROLLBACK, ABORT, SAVEPOINT,
//	RELEASE, ROLLBACK TO  accepted: see "Transactions" below
//	SET name {TO|=} value, SET TIME ZONE, SET NAMES, RESET, SHOW name,
//	SHOW ALL              session parameters (session.go)
//	SELECT without FROM   of literals and version(), current_database(),
//	                      current_schema(), current_user, session_user,
//	                      pg_backend_pid(), current_setting(), set_config(),
//	                      pg_is_in_recovery(): health checks and drivers
//	SELECT … FROM pg_catalog.… / information_schema.…  (pgcatalog.go)
//	COPY (SELECT …) TO STDOUT                          (copy.go)
//	DISCARD ALL, DEALLOCATE [PREPARE] name|ALL
//
// Everything else, including SET 'prop'='value' and SHOW STREAMS, goes to
// the engine.
//
// Transactions. sqlstreams has none: every statement takes effect when it
// runs. BEGIN is accepted so that drivers that wrap statements in a
// transaction (psycopg2 by default, JDBC without autocommit) work, and the
// connection then reports the status Postgres would (ReadyForQuery 'T',
// or 'E' after an error, when statements other than COMMIT and ROLLBACK
// fail with 25P02 until the block ends). COMMIT and ROLLBACK end the
// block; ROLLBACK undoes nothing. Portals live until the block ends, so a
// client can fetch from a suspended portal across Syncs inside one.

import (
	"context"
	"runtime"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// SQLSTATE codes of transaction states.
const (
	codeInFailedTx       = "25P02"
	codeNoActiveTx       = "25P01"
	codeActiveTx         = "25001"
	codeFeatureNotSupp   = "0A000"
	codeSyntaxError      = "42601"
	codeUndefinedFunc    = "42883"
	codeUndefinedTableID = "42P01"
)

// Transaction statuses, as ReadyForQuery reports them.
const (
	txIdle   = 'I'
	txBlock  = 'T'
	txFailed = 'E'
)

// local is a statement pgwire answers itself.
type local struct {
	cols []types.Column // what it returns; nil for no rows
	// run carries it out. It reads and changes connection state before it
	// sends its first row, so that a suspended portal holding it never
	// races with the connection's other statements.
	run func(ctx context.Context, w engine.ResultWriter) (engine.Result, error)
	// txControl marks COMMIT, ROLLBACK and the like, which run in a failed
	// transaction block.
	txControl bool
	// copyOut marks COPY … TO STDOUT: run sends CopyOutResponse and
	// CopyData itself, and the statement describes as returning no rows.
	copyOut bool
}

// intercept returns how pgwire answers stmt itself, or nil when the engine
// runs it.
func (c *conn) intercept(stmt string) *local {
	toks := lex(stmt)
	if len(toks) == 0 || toks[0].kind != tokIdent {
		return nil
	}
	switch strings.ToUpper(toks[0].val) {
	case "BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE":
		return c.txStatement(toks)
	case "SET":
		if len(toks) > 1 && toks[1].kind == tokString {
			return nil // SET 'prop'='value': a ksqlDB property
		}
		return c.setStatement(toks)
	case "RESET":
		return c.resetStatement(toks)
	case "SHOW":
		return c.showStatement(toks)
	case "SELECT":
		if l := c.catalogQuery(stmt, toks); l != nil {
			return l
		}
		return c.selectNoFrom(toks)
	case "COPY":
		return c.copyStatement(stmt, toks)
	case "DISCARD":
		if words(toks, "DISCARD", "ALL") && len(toks) == 2 {
			return command(func() (string, error) {
				if c.txStatus != txIdle {
					return "", sql.Errorf(codeActiveTx, "DISCARD ALL cannot run inside a transaction block")
				}
				c.discardAll = true
				return "DISCARD ALL", nil
			})
		}
	case "DEALLOCATE":
		rest := toks[1:]
		if len(rest) > 0 && rest[0].is("PREPARE") {
			rest = rest[1:]
		}
		if len(rest) == 1 {
			return command(func() (string, error) {
				if rest[0].is("ALL") {
					clear(c.stmts)
					return "DEALLOCATE ALL", nil
				}
				name, _ := rest[0].name()
				if c.stmts[name] == nil {
					return "", sql.Errorf(codeInvalidStatementName, "prepared statement %q does not exist", name)
				}
				delete(c.stmts, name)
				return "DEALLOCATE", nil
			})
		}
	}
	return nil
}

// command is a local statement that returns no rows, only a tag.
func command(f func() (string, error)) *local {
	return &local{run: func(context.Context, engine.ResultWriter) (engine.Result, error) {
		tag, err := f()
		return engine.Result{Tag: tag}, err
	}}
}

// rowsOf is a local statement that returns fixed columns and the rows f
// builds when it runs.
func rowsOf(cols []types.Column, f func() ([]types.Row, error)) *local {
	return &local{cols: cols, run: func(_ context.Context, w engine.ResultWriter) (engine.Result, error) {
		rows, err := f()
		if err != nil {
			return engine.Result{}, err
		}
		return sendRows(w, cols, rows)
	}}
}

// sendRows sends columns and rows to w.
func sendRows(w engine.ResultWriter, cols []types.Column, rows []types.Row) (engine.Result, error) {
	if err := w.Columns(cols); err != nil {
		return engine.Result{}, err
	}
	for _, r := range rows {
		if err := w.Row(r); err != nil {
			return engine.Result{}, err
		}
	}
	return engine.Result{Tag: "SELECT " + strconv.Itoa(len(rows))}, nil
}

func textCol(name string) types.Column { return types.Column{Name: name, Type: types.StringType} }

// datum converts a Go value (string, int, int64, bool, nil) to a datum.
func datum(v any) types.Datum {
	switch v := v.(type) {
	case string:
		return types.StringDatum(v)
	case int:
		return types.IntDatum(int64(v))
	case int64:
		return types.IntDatum(v)
	case uint32:
		return types.IntDatum(int64(v))
	case bool:
		return types.BoolDatum(v)
	}
	return types.NullDatum
}

// notice sends a NoticeResponse (a WARNING) to the client.
func (c *conn) notice(code, msg string) {
	c.w.send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: code, Message: msg})
}

// txStatement handles the transaction statements.
func (c *conn) txStatement(toks []token) *local {
	kw := strings.ToUpper(toks[0].val)
	switch kw {
	case "BEGIN", "START":
		if kw == "START" && !words(toks, "START", "TRANSACTION") {
			return nil
		}
		return command(func() (string, error) {
			if c.txStatus != txIdle {
				c.notice(codeActiveTx, "there is already a transaction in progress")
			}
			c.txStatus = txBlock
			return "BEGIN", nil
		})
	case "COMMIT", "END":
		if words(toks, "COMMIT", "PREPARED") {
			return nil
		}
		return &local{txControl: true, run: func(context.Context, engine.ResultWriter) (engine.Result, error) {
			tag := "COMMIT"
			switch c.txStatus {
			case txIdle:
				c.notice(codeNoActiveTx, "there is no transaction in progress")
			case txFailed:
				tag = "ROLLBACK"
			}
			c.txStatus = txIdle
			return engine.Result{Tag: tag}, nil
		}}
	case "ROLLBACK", "ABORT":
		if words(toks, "ROLLBACK", "PREPARED") {
			return nil
		}
		if i := findTop(toks, func(t token) bool { return t.is("TO") }); i > 0 {
			return &local{txControl: true, run: func(context.Context, engine.ResultWriter) (engine.Result, error) {
				if c.txStatus == txIdle {
					return engine.Result{}, sql.Errorf(codeNoActiveTx, "ROLLBACK TO SAVEPOINT can only be used in transaction blocks")
				}
				c.txStatus = txBlock
				return engine.Result{Tag: "ROLLBACK"}, nil
			}}
		}
		return &local{txControl: true, run: func(context.Context, engine.ResultWriter) (engine.Result, error) {
			if c.txStatus == txIdle {
				c.notice(codeNoActiveTx, "there is no transaction in progress")
			}
			c.txStatus = txIdle
			return engine.Result{Tag: "ROLLBACK"}, nil
		}}
	case "SAVEPOINT", "RELEASE":
		return command(func() (string, error) {
			if c.txStatus == txIdle {
				return "", sql.Errorf(codeNoActiveTx, "%s can only be used in transaction blocks", kw)
			}
			return kw, nil
		})
	}
	return nil
}

// setStatement handles SET of Postgres session parameters.
func (c *conn) setStatement(toks []token) *local {
	rest := toks[1:]
	if len(rest) > 0 && (rest[0].is("SESSION") || rest[0].is("LOCAL")) {
		if len(rest) > 1 && (rest[1].is("CHARACTERISTICS") || rest[1].is("AUTHORIZATION")) {
			return nil
		}
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return nil
	}
	var name string
	var vals []token
	switch {
	case words(rest, "TIME", "ZONE"):
		name, vals = "TimeZone", rest[2:]
	case words(rest, "NAMES"):
		name, vals = "client_encoding", rest[1:]
	case words(rest, "TRANSACTION"):
		return command(func() (string, error) { return "SET", nil })
	default:
		// name[.name] {TO | =} value[, value …]
		n := 0
		for n < len(rest) && (rest[n].kind == tokIdent || rest[n].kind == tokQIdent || rest[n].is(".")) {
			if rest[n].is("TO") && n > 0 {
				break
			}
			n++
		}
		if n == 0 || n == len(rest) || !(rest[n].is("TO") || rest[n].is("=")) {
			return nil
		}
		for _, t := range rest[:n] {
			name += t.val
		}
		vals = rest[n+1:]
	}
	value, isDefault, ok := setValue(vals)
	if !ok {
		return command(func() (string, error) {
			return "", sql.Errorf(codeSyntaxError, "syntax error in SET %s: expected a value", name)
		})
	}
	return command(func() (string, error) {
		return "SET", c.setParam(name, value, isDefault)
	})
}

// setValue reads SET's value list: strings, numbers and words separated by
// commas. DEFAULT (or LOCAL for TIME ZONE) means the default.
func setValue(toks []token) (string, bool, bool) {
	if len(toks) == 1 && (toks[0].is("DEFAULT") || toks[0].is("LOCAL")) {
		return "", true, true
	}
	var parts []string
	for _, item := range splitTop(toks, func(t token) bool { return t.is(",") }) {
		var b strings.Builder
		for i, t := range item {
			switch t.kind {
			case tokOp:
				if t.val != "-" && t.val != "+" || i != 0 {
					return "", false, false
				}
				b.WriteString(t.val)
			case tokQIdent:
				if len(toks) > 1 || strings.ContainsAny(t.val, "$ ") {
					b.WriteString(`"` + strings.ReplaceAll(t.val, `"`, `""`) + `"`)
				} else {
					b.WriteString(t.val)
				}
			case tokParam:
				return "", false, false
			default:
				if i > 0 && t.kind == tokIdent {
					b.WriteByte(' ') // INTERVAL '1' HOUR and the like
				}
				b.WriteString(t.val)
			}
		}
		if b.Len() == 0 {
			return "", false, false
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, ", "), false, len(parts) > 0
}

// resetStatement handles RESET name and RESET ALL. RESET QUERY id is the
// engine's statement (Postgres has no parameter named query).
func (c *conn) resetStatement(toks []token) *local {
	switch {
	case len(toks) >= 2 && toks[1].kind == tokIdent && strings.EqualFold(toks[1].val, "QUERY"):
		return nil
	case words(toks, "RESET", "ALL") && len(toks) == 2:
		return command(func() (string, error) {
			for _, p := range pgParams {
				if !p.readOnly {
					c.setParam(p.name, "", true)
				}
			}
			return "RESET", nil
		})
	case words(toks, "RESET", "TIME", "ZONE"):
		return command(func() (string, error) { return "RESET", c.setParam("TimeZone", "", true) })
	case len(toks) >= 2:
		var name string
		for _, t := range toks[1:] {
			name += t.val
		}
		return command(func() (string, error) { return "RESET", c.setParam(name, "", true) })
	}
	return nil
}

// showStatement handles SHOW of Postgres parameters; SHOW STREAMS and the
// other ksqlDB forms go to the engine.
func (c *conn) showStatement(toks []token) *local {
	rest := toks[1:]
	var name string
	switch {
	case len(rest) == 1 && rest[0].is("ALL"):
		cols := []types.Column{textCol("name"), textCol("setting"), textCol("description")}
		return rowsOf(cols, func() ([]types.Row, error) {
			var rows []types.Row
			for _, p := range c.allParams() {
				rows = append(rows, types.Row{datum(p[0]), datum(p[1]), datum(p[2])})
			}
			return rows, nil
		})
	case words(rest, "TIME", "ZONE") && len(rest) == 2:
		name = "TimeZone"
	case words(rest, "TRANSACTION", "ISOLATION", "LEVEL") && len(rest) == 3:
		name = "transaction_isolation"
	case words(rest, "SESSION", "AUTHORIZATION") && len(rest) == 2:
		name = "session_authorization"
	default:
		for _, t := range rest {
			if t.kind != tokIdent && t.kind != tokQIdent && !t.is(".") {
				return nil
			}
			name += t.val
		}
		if lookupParam(name) == nil && !strings.Contains(name, ".") {
			return nil // SHOW STREAMS, SHOW TABLES, …
		}
	}
	canon := name
	if p := lookupParam(name); p != nil {
		canon = p.name
	}
	return rowsOf([]types.Column{textCol(canon)}, func() ([]types.Row, error) {
		_, v, err := c.showParam(name)
		if err != nil {
			return nil, err
		}
		return []types.Row{{datum(v)}}, nil
	})
}

// selectNoFrom answers a SELECT without FROM whose items are literals and
// the functions drivers and health checks call; anything else goes to the
// engine.
func (c *conn) selectNoFrom(toks []token) *local {
	body := toks[1:]
	if findTop(body, func(t token) bool {
		return t.is("FROM") || t.is("WHERE") || t.is("EMIT") || t.is("LIMIT") || t.is("GROUP") || t.is("ORDER")
	}) >= 0 || len(body) == 0 {
		return nil
	}
	var cols []types.Column
	var evals []func() (types.Datum, error)
	for _, item := range splitTop(body, func(t token) bool { return t.is(",") }) {
		col, eval, n := c.scalarItem(item)
		if eval == nil {
			return nil
		}
		switch rest := item[n:]; {
		case len(rest) == 0:
		case len(rest) == 2 && rest[0].is("AS") && (rest[1].kind == tokIdent || rest[1].kind == tokQIdent):
			col.Name, _ = rest[1].name()
		case len(rest) == 1 && (rest[0].kind == tokIdent || rest[0].kind == tokQIdent):
			col.Name, _ = rest[0].name()
		default:
			return nil
		}
		cols, evals = append(cols, col), append(evals, eval)
	}
	return rowsOf(cols, func() ([]types.Row, error) {
		row := make(types.Row, len(evals))
		for i, e := range evals {
			d, err := e()
			if err != nil {
				return nil, err
			}
			row[i] = d
		}
		return []types.Row{row}, nil
	})
}

// scalarItem reads a literal or a known function call at the start of
// toks: its column, a function computing it when the statement runs, and
// how many tokens it took. eval is nil when the item is not one of them.
func (c *conn) scalarItem(toks []token) (col types.Column, eval func() (types.Datum, error), n int) {
	if len(toks) == 0 {
		return
	}
	konst := func(t types.Type, d types.Datum, n int) (types.Column, func() (types.Datum, error), int) {
		return types.Column{Name: "?column?", Type: t}, func() (types.Datum, error) { return d, nil }, n
	}
	t := toks[0]
	neg := ""
	if t.is("-") && len(toks) > 1 && toks[1].kind == tokNumber {
		neg, t, toks = "-", toks[1], toks[1:]
		defer func() { n++ }()
	}
	switch t.kind {
	case tokNumber:
		if v, err := strconv.ParseInt(neg+t.val, 10, 64); err == nil {
			if int64(int32(v)) == v {
				return konst(types.IntType, types.IntDatum(v), 1)
			}
			return konst(types.BigintType, types.IntDatum(v), 1)
		}
		if v, err := strconv.ParseFloat(neg+t.val, 64); err == nil {
			return konst(types.DoubleType, types.DoubleDatum(v), 1)
		}
		return
	case tokString:
		if neg != "" {
			return
		}
		return konst(types.StringType, types.StringDatum(t.val), 1)
	case tokIdent:
	default:
		return
	}
	if neg != "" {
		return
	}
	switch {
	case t.is("TRUE"), t.is("FALSE"):
		return konst(types.BooleanType, types.BoolDatum(t.is("TRUE")), 1)
	case t.is("NULL"):
		return konst(types.StringType, types.NullDatum, 1)
	}
	// [pg_catalog.]name[(args)]
	i := 0
	if words(toks, "pg_catalog", ".") {
		i = 2
	}
	if i >= len(toks) || toks[i].kind != tokIdent {
		return
	}
	fn := strings.ToLower(toks[i].val)
	i++
	var args []token
	call := i < len(toks) && toks[i].is("(")
	if call {
		j := i + 1
		for ; j < len(toks) && !toks[j].is(")"); j++ {
			if toks[j].kind == tokString || toks[j].kind == tokNumber || toks[j].is("TRUE") || toks[j].is("FALSE") {
				args = append(args, toks[j])
			} else if !toks[j].is(",") {
				return
			}
		}
		if j == len(toks) {
			return
		}
		i = j + 1
	}
	str := func(name string, f func() string) (types.Column, func() (types.Datum, error), int) {
		return types.Column{Name: name, Type: types.StringType}, func() (types.Datum, error) { return types.StringDatum(f()), nil }, i
	}
	switch {
	case fn == "version" && call && len(args) == 0:
		return str(fn, func() string { return versionString() })
	case fn == "current_database" && call && len(args) == 0, fn == "current_catalog" && !call:
		return str(fn, func() string { return c.database })
	case fn == "current_schema" && len(args) == 0:
		return str(fn, func() string { return "public" })
	case (fn == "current_user" || fn == "session_user" || fn == "user") && !call:
		return str(fn, func() string { return c.user })
	case fn == "pg_backend_pid" && call && len(args) == 0:
		return types.Column{Name: fn, Type: types.IntType}, func() (types.Datum, error) { return types.IntDatum(int64(c.pid)), nil }, i
	case fn == "pg_is_in_recovery" && call && len(args) == 0:
		return types.Column{Name: fn, Type: types.BooleanType}, func() (types.Datum, error) { return types.BoolDatum(false), nil }, i
	case fn == "current_setting" && call && len(args) >= 1 && args[0].kind == tokString:
		missingOK := len(args) > 1 && args[1].is("TRUE")
		return types.Column{Name: fn, Type: types.StringType}, func() (types.Datum, error) {
			_, v, err := c.showParam(args[0].val)
			if err != nil {
				if missingOK {
					return types.NullDatum, nil
				}
				return types.Datum{}, err
			}
			return types.StringDatum(v), nil
		}, i
	case fn == "set_config" && call && len(args) == 3 && args[0].kind == tokString:
		return types.Column{Name: fn, Type: types.StringType}, func() (types.Datum, error) {
			if err := c.setParam(args[0].val, args[1].val, false); err != nil {
				return types.Datum{}, err
			}
			_, v, err := c.showParam(args[0].val)
			return types.StringDatum(v), err
		}, i
	}
	return
}

// versionString is what version() returns. Tools parse "PostgreSQL N.M".
func versionString() string {
	return "PostgreSQL " + ServerVersion + " on " + runtime.GOARCH + "-" + runtime.GOOS + ", compiled by " + runtime.Version()
}
