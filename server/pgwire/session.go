package pgwire

// This file holds the Postgres session parameters a connection keeps and
// the statements that read and change them: SET, RESET, SHOW and
// set_config/current_setting (see intercept.go for where they are
// recognized).
//
// Supported parameters (SET checks the value; SHOW and SHOW ALL list
// them; those marked R are reported with ParameterStatus at startup and
// when they change, as Postgres reports them):
//
//	application_name (R)             any text
//	client_encoding (R)              UTF8 only (UNICODE is an alias); the startup parameter is answered with UTF8
//	DateStyle (R)                    ISO with any field order; values are always written in ISO form
//	TimeZone (R)                     any IANA zone or UTC offset; TIMESTAMP has no time zone, so nothing changes
//	extra_float_digits               -15..3; DOUBLE values are always written in the shortest exact form
//	search_path                      any list; every stream and table lives in schema public
//	standard_conforming_strings (R)  on only
//	statement_timeout                milliseconds or a duration ('5s', '1min'); 0 disables; cancels with 57014
//	IntervalStyle (R), bytea_output (hex only), client_min_messages, lock_timeout,
//	idle_in_transaction_session_timeout, idle_session_timeout,
//	transaction_isolation, default_transaction_isolation,
//	default_transaction_read_only (R), row_security, jit: accepted and shown, no effect
//	server_version (R), server_version_num, server_encoding (R), integer_datetimes (R),
//	is_superuser (R), session_authorization (R), in_hot_standby (R),
//	max_identifier_length: read-only
//
// A name with a dot (myapp.setting) is a custom parameter and is accepted,
// as in Postgres. SET LOCAL is treated as SET: there are no real
// transactions. SET 'name'='value' (a quoted name) is a ksqlDB property
// and goes to the engine.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/sql"
)

// SQLSTATE codes of parameter errors.
const (
	codeUndefinedObject   = "42704"
	codeCantChangeRuntime = "55P02"
	codeInvalidValue      = "22023"
	codeNotSupported      = "0A000"
)

// pgParam describes one session parameter.
type pgParam struct {
	name     string // canonical spelling
	def      string
	report   bool // sent with ParameterStatus
	readOnly bool
	desc     string
	check    func(v string) (string, error) // canonical value, or error; nil accepts anything
}

var pgParams = []*pgParam{
	{name: "application_name", report: true, desc: "Sets the application name to be reported in statistics and logs."},
	{name: "bytea_output", def: "hex", desc: "Sets the output format for bytea.", check: oneOf("hex")},
	{name: "client_encoding", def: "UTF8", report: true, desc: "Sets the client's character set encoding.", check: checkEncoding},
	{name: "client_min_messages", def: "notice", desc: "Sets the message levels that are sent to the client."},
	{name: "DateStyle", def: "ISO, MDY", report: true, desc: "Sets the display format for date and time values.", check: checkDateStyle},
	{name: "default_transaction_isolation", def: "read committed", desc: "Sets the transaction isolation level of each new transaction."},
	{name: "default_transaction_read_only", def: "off", report: true, desc: "Sets the default read-only status of new transactions."},
	{name: "extra_float_digits", def: "1", desc: "Sets the number of digits displayed for floating-point values.", check: checkFloatDigits},
	{name: "idle_in_transaction_session_timeout", def: "0", desc: "Sets the maximum allowed idle time between queries, when in a transaction."},
	{name: "idle_session_timeout", def: "0", desc: "Sets the maximum allowed idle time between queries, when not in a transaction."},
	{name: "in_hot_standby", def: "off", report: true, readOnly: true, desc: "Shows whether hot standby is currently active."},
	{name: "integer_datetimes", def: "on", report: true, readOnly: true, desc: "Shows whether datetimes are integer based."},
	{name: "IntervalStyle", def: "postgres", report: true, desc: "Sets the display format for interval values.", check: oneOf("postgres", "postgres_verbose", "sql_standard", "iso_8601")},
	{name: "is_superuser", def: "off", report: true, readOnly: true, desc: "Shows whether the current user is a superuser."},
	{name: "jit", def: "off", desc: "Allow JIT compilation."},
	{name: "lock_timeout", def: "0", desc: "Sets the maximum allowed duration of any wait for a lock."},
	{name: "max_identifier_length", def: "63", readOnly: true, desc: "Shows the maximum identifier length."},
	{name: "row_security", def: "on", desc: "Enable row security."},
	{name: "search_path", def: `"$user", public`, desc: "Sets the schema search order for names that are not schema-qualified."},
	{name: "server_encoding", def: "UTF8", report: true, readOnly: true, desc: "Shows the server (database) character set encoding."},
	{name: "server_version", def: ServerVersion, report: true, readOnly: true, desc: "Shows the server version."},
	{name: "server_version_num", def: ServerVersionNum, readOnly: true, desc: "Shows the server version as an integer."},
	{name: "session_authorization", report: true, readOnly: true, desc: "Sets the session user name."},
	{name: "standard_conforming_strings", def: "on", report: true, desc: "Causes '...' strings to treat backslashes literally.", check: oneOf("on")},
	{name: "statement_timeout", def: "0", desc: "Sets the maximum allowed duration of any statement.", check: checkTimeout},
	{name: "TimeZone", def: "UTC", report: true, desc: "Sets the time zone for displaying and interpreting time stamps.", check: checkTimeZone},
	{name: "transaction_isolation", def: "read committed", desc: "Sets the current transaction's isolation level."},
	{name: "transaction_read_only", def: "off", desc: "Sets the current transaction's read-only status."},
}

// ServerVersionNum is server_version_num, the integer form of ServerVersion.
const ServerVersionNum = "150000"

// lookupParam finds a parameter by name, case-insensitively.
func lookupParam(name string) *pgParam {
	for _, p := range pgParams {
		if strings.EqualFold(p.name, name) {
			return p
		}
	}
	return nil
}

// initParams sets the connection's parameters from their defaults and the
// startup message's options.
func (c *conn) initParams(startup map[string]string) {
	c.params = make(map[string]string, len(pgParams))
	for _, p := range pgParams {
		c.params[p.name] = p.def
	}
	c.params["session_authorization"] = c.user
	for k, v := range startup {
		switch strings.ToLower(k) {
		case "user", "database", "options", "replication", "client_encoding":
			// client_encoding is answered with UTF8 whatever was asked
			// (psql sends what the locale says): the client adapts to the
			// ParameterStatus.
			continue
		}
		if p := lookupParam(k); p != nil && !p.readOnly {
			if v, err := p.value(v); err == nil {
				c.params[p.name] = v
			}
		}
	}
	c.stmtTimeout = c.srv.cfg.statementTimeout
	if ms, err := parseTimeout(c.params["statement_timeout"]); err == nil && ms > 0 {
		c.stmtTimeout = ms
	}
}

// value checks v for p and returns its canonical form.
func (p *pgParam) value(v string) (string, error) {
	if p.check == nil {
		return v, nil
	}
	return p.check(v)
}

// setParam changes a parameter, sending ParameterStatus when Postgres
// would. An empty value with reset set restores the default.
func (c *conn) setParam(name, value string, reset bool) error {
	p := lookupParam(name)
	if p == nil {
		if strings.Contains(name, ".") {
			if reset {
				delete(c.params, strings.ToLower(name))
			} else {
				c.params[strings.ToLower(name)] = value
			}
			return nil
		}
		return sql.Errorf(codeUndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if p.readOnly {
		return sql.Errorf(codeCantChangeRuntime, "parameter %q cannot be changed", p.name)
	}
	if reset {
		value = p.def
	} else {
		var err error
		if value, err = p.value(value); err != nil {
			return err
		}
	}
	if p.name == "statement_timeout" {
		d, _ := parseTimeout(value)
		c.stmtTimeout = d
		if reset {
			c.stmtTimeout = c.srv.cfg.statementTimeout
		}
	}
	changed := c.params[p.name] != value
	c.params[p.name] = value
	if p.report && changed {
		c.w.send(&pgproto3.ParameterStatus{Name: p.name, Value: value})
	}
	return nil
}

// showParam returns a parameter's value.
func (c *conn) showParam(name string) (string, string, error) {
	if p := lookupParam(name); p != nil {
		return p.name, c.params[p.name], nil
	}
	if v, ok := c.params[strings.ToLower(name)]; ok && strings.Contains(name, ".") {
		return strings.ToLower(name), v, nil
	}
	return "", "", sql.Errorf(codeUndefinedObject, "unrecognized configuration parameter %q", name)
}

// allParams returns name, setting and description of every parameter,
// sorted by name, as SHOW ALL lists them.
func (c *conn) allParams() [][3]string {
	var out [][3]string
	for _, p := range pgParams {
		out = append(out, [3]string{p.name, c.params[p.name], p.desc})
	}
	for k, v := range c.params {
		if strings.Contains(k, ".") {
			out = append(out, [3]string{k, v, ""})
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i][0]) < strings.ToLower(out[j][0]) })
	return out
}

func oneOf(allowed ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				return a, nil
			}
		}
		return "", sql.Errorf(codeInvalidValue, "invalid value %q: sqlstreams supports %s", v, strings.Join(allowed, ", "))
	}
}

func checkEncoding(v string) (string, error) {
	switch strings.ToUpper(strings.NewReplacer("-", "", "_", "").Replace(v)) {
	case "UTF8", "UNICODE":
		return "UTF8", nil
	}
	return "", sql.Errorf(codeNotSupported, "client encoding %q is not supported: sqlstreams speaks UTF8 only", v)
}

func checkDateStyle(v string) (string, error) {
	order := "MDY"
	iso := false
	for _, f := range strings.Split(v, ",") {
		switch f = strings.ToUpper(strings.TrimSpace(f)); f {
		case "ISO":
			iso = true
		case "MDY", "DMY", "YMD":
			order = f
		case "US", "NONEURO", "NONEUROPEAN":
			order = "MDY"
		case "EURO", "EUROPEAN":
			order = "DMY"
		case "DEFAULT":
			iso = true
		default:
			return "", sql.Errorf(codeNotSupported, "DateStyle %q is not supported: sqlstreams writes dates in ISO form only", v)
		}
	}
	if !iso && strings.ContainsAny(strings.ToUpper(v), "SGP") {
		return "", sql.Errorf(codeNotSupported, "DateStyle %q is not supported: sqlstreams writes dates in ISO form only", v)
	}
	return "ISO, " + order, nil
}

func checkFloatDigits(v string) (string, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < -15 || n > 3 {
		return "", sql.Errorf(codeInvalidValue, "invalid value for parameter \"extra_float_digits\": %q (an integer from -15 to 3)", v)
	}
	return strconv.Itoa(n), nil
}

func checkTimeZone(v string) (string, error) {
	s := strings.TrimSpace(v)
	switch strings.ToUpper(s) {
	case "UTC", "GMT", "Z", "ZULU", "UCT", "ETC/UTC", "LOCAL", "DEFAULT":
		return "UTC", nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return s, nil
	}
	if _, err := time.LoadLocation(s); err == nil {
		return s, nil
	}
	if len(s) > 1 && (s[0] == '+' || s[0] == '-') {
		return s, nil
	}
	return "", sql.Errorf(codeInvalidValue, "invalid value for parameter \"TimeZone\": %q", v)
}

func checkTimeout(v string) (string, error) {
	d, err := parseTimeout(v)
	if err != nil {
		return "", err
	}
	if d == 0 {
		return "0", nil
	}
	return formatMillis(d), nil
}

// parseTimeout reads a Postgres time value: a number of milliseconds, or a
// number with a unit (us, ms, s, min, h, d).
func parseTimeout(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && (isDigit(s[i]) || s[i] == '.') {
		i++
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || n < 0 {
		return 0, sql.Errorf(codeInvalidValue, "invalid value for a timeout: %q", v)
	}
	unit := time.Millisecond
	switch strings.ToLower(strings.TrimSpace(s[i:])) {
	case "", "ms":
	case "us":
		unit = time.Microsecond
	case "s":
		unit = time.Second
	case "min":
		unit = time.Minute
	case "h":
		unit = time.Hour
	case "d":
		unit = 24 * time.Hour
	default:
		return 0, sql.Errorf(codeInvalidValue, "invalid value for a timeout: %q (valid units: us, ms, s, min, h, d)", v)
	}
	return time.Duration(n * float64(unit)), nil
}

// formatMillis writes d as Postgres shows a timeout: with the largest unit
// that divides it.
func formatMillis(d time.Duration) string {
	ms := d.Milliseconds()
	switch {
	case ms%(3600*1000) == 0:
		return fmt.Sprintf("%dh", ms/(3600*1000))
	case ms%(60*1000) == 0:
		return fmt.Sprintf("%dmin", ms/(60*1000))
	case ms%1000 == 0:
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprintf("%dms", ms)
}
