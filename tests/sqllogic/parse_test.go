package sqllogic

// This file reads .slt files into records. See README.md for the dialect.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// kind is a record's directive.
type kind string

const (
	kindStatement    kind = "statement"
	kindQuery        kind = "query"
	kindProduce      kind = "produce"
	kindWaitCaughtUp kind = "wait-caught-up"
	kindRestart      kind = "restart"
	kindKill         kind = "kill"
	kindHalt         kind = "halt"
	kindSleep        kind = "sleep"
)

// record is one directive of a file and what follows it.
type record struct {
	kind kind
	line int // 1-based line of the directive

	// statement
	errRE *regexp.Regexp // statement error <regexp>; nil for statement ok

	// query
	types   string // one letter per column: I, R, B, T or ? (any)
	rowsort bool
	colname bool
	retry   time.Duration // re-run until the output matches, for this long

	// produce
	topic     string
	keySep    string
	partition int32 // -1: the default partitioner
	txn       bool  // in one transaction
	timestamp bool  // each line starts with a timestamp in milliseconds

	// statement, query, wait-caught-up: how long one attempt may take; 0
	// is the runner's default.
	timeout time.Duration

	body []string // the SQL, or produce's records

	// query: the expected output and where it sits in the file, for
	// -rewrite: lines [expFrom, expTo) (0-based) follow the "----" line at
	// sepLine; sepLine is -1 when the record has no "----" yet, and then
	// the output goes after line expFrom-1.
	expected       []string
	sepLine        int
	expFrom, expTo int
	typesLine      int // 0-based line of the directive, to rewrite types

	// knownBug, when set, is the reason a "# known-bug: …" comment right
	// before the record gave: the record states the right behaviour, the
	// engine does not have it yet, and the record is skipped (and logged).
	knownBug string
}

// parse reads the records of an .slt file.
func parse(path, text string) ([]*record, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var recs []*record
	knownBug := ""
	for i := 0; i < len(lines); {
		line := strings.TrimSpace(lines[i])
		if bug, ok := strings.CutPrefix(line, "# known-bug:"); ok {
			knownBug = strings.TrimSpace(bug)
		}
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		rec, err := parseDirective(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		rec.knownBug, knownBug = knownBug, ""
		rec.line, rec.typesLine = i+1, i
		i++
		// The body: until a blank line, or "----" in a query.
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			if rec.kind == kindQuery && strings.TrimSpace(lines[i]) == "----" {
				break
			}
			rec.body = append(rec.body, lines[i])
			i++
		}
		switch rec.kind {
		case kindStatement, kindQuery, kindProduce:
			if len(rec.body) == 0 {
				return nil, fmt.Errorf("%s:%d: %s without a body", path, rec.line, rec.kind)
			}
		default:
			if len(rec.body) > 0 {
				return nil, fmt.Errorf("%s:%d: %s takes no body", path, rec.line, rec.kind)
			}
		}
		if rec.kind == kindQuery {
			rec.sepLine, rec.expFrom = -1, i
			if i < len(lines) && strings.TrimSpace(lines[i]) == "----" {
				rec.sepLine = i
				i++
				rec.expFrom = i
				for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
					rec.expected = append(rec.expected, strings.TrimRight(lines[i], " \t"))
					i++
				}
			}
			rec.expTo = i
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// parseDirective reads a record's first line.
func parseDirective(line string) (*record, error) {
	words := strings.Fields(line)
	rec := &record{kind: kind(words[0]), partition: -1, keySep: ":"}
	args := words[1:]
	switch rec.kind {
	case kindStatement:
		switch {
		case len(args) == 1 && args[0] == "ok":
		case len(args) >= 2 && args[0] == "error":
			pattern := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line[len("statement"):]), "error"))
			re, err := regexp.Compile(pattern)
			if err != nil {
				return nil, fmt.Errorf("statement error: bad regexp: %v", err)
			}
			rec.errRE = re
		default:
			return nil, fmt.Errorf("want \"statement ok\" or \"statement error <regexp>\"")
		}
		return rec, nil
	case kindQuery:
		if len(args) == 0 || !regexp.MustCompile(`^[IRBT?]+$`).MatchString(args[0]) {
			return nil, fmt.Errorf("query needs its column types, letters of I, R, B, T, ?")
		}
		rec.types = args[0]
		return rec, options(rec, args[1:])
	case kindProduce:
		if len(args) == 0 {
			return nil, fmt.Errorf("produce needs a topic")
		}
		rec.topic = args[0]
		return rec, options(rec, args[1:])
	case kindWaitCaughtUp:
		if len(args) > 1 {
			return nil, fmt.Errorf("want wait-caught-up [timeout]")
		}
		if len(args) == 1 {
			d, err := time.ParseDuration(strings.TrimPrefix(args[0], "timeout="))
			if err != nil {
				return nil, fmt.Errorf("wait-caught-up: %v", err)
			}
			rec.timeout = d
		}
		return rec, nil
	case kindSleep:
		if len(args) != 1 {
			return nil, fmt.Errorf("want sleep <duration>")
		}
		d, err := time.ParseDuration(args[0])
		if err != nil || d <= 0 || d > time.Minute {
			return nil, fmt.Errorf("sleep: want a duration up to 1m, not %q", args[0])
		}
		rec.timeout = d
		return rec, nil
	case kindRestart, kindKill, kindHalt:
		if len(args) > 0 {
			return nil, fmt.Errorf("%s takes no arguments", rec.kind)
		}
		return rec, nil
	}
	return nil, fmt.Errorf("unknown directive %q", words[0])
}

// options reads the options of a query or produce line. An option with a
// value is written "name value" or "name=value".
func options(rec *record, args []string) error {
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		needValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("option %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		duration := func() (time.Duration, error) {
			v, err := needValue()
			if err != nil {
				return 0, err
			}
			return time.ParseDuration(v)
		}
		var err error
		switch {
		case rec.kind == kindQuery && name == "rowsort":
			rec.rowsort = true
		case rec.kind == kindQuery && name == "colnames":
			rec.colname = true
		case rec.kind == kindQuery && name == "retry":
			rec.retry, err = duration()
		case rec.kind == kindQuery && name == "timeout":
			rec.timeout, err = duration()
		case rec.kind == kindProduce && name == "key-separator":
			rec.keySep, err = needValue()
		case rec.kind == kindProduce && name == "partition":
			var v string
			if v, err = needValue(); err == nil {
				var p int64
				p, err = strconv.ParseInt(v, 10, 32)
				rec.partition = int32(p)
			}
		case rec.kind == kindProduce && name == "txn":
			rec.txn = true
		case rec.kind == kindProduce && name == "timestamp":
			rec.timestamp = true
		default:
			return fmt.Errorf("unknown %s option %q", rec.kind, args[i])
		}
		if err != nil {
			return fmt.Errorf("option %s: %v", name, err)
		}
	}
	return nil
}

// sql is the record's body as one statement text.
func (r *record) sql() string { return strings.Join(r.body, "\n") }
