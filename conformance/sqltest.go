package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// ksqlDB's SQL test files (its sql-tests/ format, run by its
// SqlTestExecutor): statements separated by semicolons, tests started by
// a "--@test: name" comment, "--@expected.error: class" and
// "--@expected.message: text" comments saying the test must fail with an
// error containing text, and the test statements ASSERT VALUES, ASSERT
// NULL VALUES, ASSERT STREAM|TABLE and RUN SCRIPT.
//
// The runner follows ksqlDB's: statements run in order on one engine
// (SET and UNSET change the session); each INSERT … VALUES is written as
// one record (ROWTIME, when named, is its timestamp; else the current
// time) to the target's topic; each ASSERT VALUES takes the next record
// of its source's topic — records inserted there count, as in ksqlDB —
// after every query has consumed all its input, and compares the named
// columns (key, value and ROWTIME); ASSERT NULL VALUES wants a tombstone
// with that key; ASSERT STREAM|TABLE compares the source's kind, columns,
// topic, formats, WRAP_SINGLE_VALUE and timestamp column and format. The
// first error ends the test: a pass when the test expects an error (its
// message is compared as for QTT cases), a failure otherwise.

// directive is "--@type: contents" (ksqlDB's DirectiveParser).
var directive = regexp.MustCompile(`^--@([a-zA-Z.]+):\s*(.*)$`)

// LoadSQLTests reads a SQL test file, or every file in a directory tree
// (as ksqlDB's SqlTestLoader does), into one case per test. File names
// are relative to path when it is a directory.
func LoadSQLTests(path string) ([]Case, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &FileError{path, err}
	}
	if !st.IsDir() {
		return loadSQLTestFile(path, filepath.Base(path))
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, &FileError{path, err}
	}
	sort.Strings(files)
	var out []Case
	for _, f := range files {
		rel, _ := filepath.Rel(path, f)
		cs, err := loadSQLTestFile(f, filepath.ToSlash(rel))
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

func loadSQLTestFile(path, name string) ([]Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{path, err}
	}
	text := string(b)
	var out []Case
	var cur *Case
	onDirective := func(line string) error {
		m := directive.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			return fmt.Errorf("expected a directive --@type: contents, got %q", line)
		}
		contents := strings.TrimSpace(m[2])
		switch strings.ToLower(m[1]) {
		case "test":
			out = append(out, Case{File: name, Name: contents, Properties: map[string]string{}, SQLTest: true})
			cur = &out[len(out)-1]
			return nil
		}
		if cur == nil {
			return errors.New("expected the file to start with --@test")
		}
		switch strings.ToLower(m[1]) {
		case "expected.error":
			if cur.Expected == nil {
				cur.Expected = &ExpectedError{}
			}
			cur.Expected.Type = contents
		case "expected.message":
			if cur.Expected == nil {
				cur.Expected = &ExpectedError{}
			}
			cur.Expected.Message = contents
		}
		return nil
	}
	// scanComments takes the directives among the comments that start s
	// and returns what follows them.
	scanComments := func(s string) (string, error) {
		for {
			s = strings.TrimLeft(s, " \t\r\n\f")
			switch {
			case strings.HasPrefix(s, "--"):
				line, rest, _ := strings.Cut(s, "\n")
				if strings.HasPrefix(line, "--@") {
					if err := onDirective(line); err != nil {
						return "", err
					}
				}
				s = rest
			case strings.HasPrefix(s, "/*"):
				_, rest, ok := strings.Cut(s[2:], "*/")
				if !ok {
					return "", nil
				}
				s = rest
			default:
				return s, nil
			}
		}
	}
	end := 0
	for _, seg := range sql.Segments(text) {
		stmt, err := scanComments(seg.Text)
		if err != nil {
			return nil, &FileError{path, err}
		}
		end = seg.End
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if cur == nil {
			return nil, &FileError{path, errors.New("expected the file to start with --@test")}
		}
		stmts := []string{stmt}
		if rs, err := sql.Parse(stmt); err == nil {
			if r, ok := rs.(*sql.RunScript); ok {
				if script, ok := findScript(r.Path, filepath.Dir(path)); ok {
					stmts = sql.Split(script)
				}
			}
		}
		for _, s := range stmts {
			if strings.TrimSpace(s) != "" {
				cur.Statements = append(cur.Statements, s)
			}
		}
	}
	if _, err := scanComments(text[end:]); err != nil {
		return nil, &FileError{path, err}
	}
	if len(out) == 0 {
		return nil, &FileError{path, errors.New("no --@test")}
	}
	return out, nil
}

// findScript reads a RUN SCRIPT file: its path as given, else (ksqlDB
// looks it up on its class path first) the path under the test file's
// directory or one of its parents.
func findScript(path, dir string) (string, bool) {
	if b, err := os.ReadFile(path); err == nil {
		return string(b), true
	}
	rel := strings.TrimPrefix(path, "/")
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, rel)); err == nil {
			return string(b), true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// runSQLTest runs a SQL test's statements in order on e (see the
// comment at the top of this file).
func (e *env) runSQLTest(ctx context.Context, c *Case) Result {
	s := engine.NewSession()
	s.Props["auto.offset.reset"] = "earliest"
	asserted := map[string]int{} // topic → records ASSERT VALUES took
	for i, text := range c.Statements {
		var err error
		st, _ := sql.Parse(text) // a parse error is the engine's to report
		switch st := st.(type) {
		case *sql.AssertValues:
			err = e.assertValues(ctx, st, asserted)
		case *sql.AssertSource:
			err = e.assertSource(st, s)
		case *sql.InsertValues:
			if err = e.insertRecord(ctx, st); err == nil {
				// ksqlDB's runner pipes the record through every query
				// before the next statement (a CREATE OR REPLACE must
				// not see it again).
				err = e.catchUp(ctx)
			}
		case *sql.RunScript:
			err = fmt.Errorf("RUN SCRIPT: cannot read %s", st.Path)
		default:
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			_, err = e.eng.Execute(sctx, s, text, discard{})
			cancel()
		}
		if err == nil {
			continue
		}
		if c.Expected != nil {
			return expectedError(c, err)
		}
		reason := classify(err)
		var ae *assertionError
		if errors.As(err, &ae) {
			reason = "assertion failed"
		}
		return fail(reason, "statement %d failed: %v\n  %s", i+1, err, oneLine(text))
	}
	if c.Expected != nil {
		return fail("no error", "wanted an error (%s: %q), the statements succeeded", c.Expected.Type, c.Expected.Message)
	}
	return Result{Status: Pass}
}

// assertionError is an ASSERT that does not hold (ksqlDB's
// AssertionError or the KsqlException of ASSERT STREAM|TABLE).
type assertionError struct{ msg string }

func (e *assertionError) Error() string { return e.msg }

func assertionf(format string, args ...any) error {
	return &assertionError{fmt.Sprintf(format, args...)}
}

func (e *env) source(name string) (*catalog.Source, error) {
	src, ok := e.eng.Catalog().Source(name)
	if !ok {
		return nil, fmt.Errorf("Source %s does not exist", name)
	}
	return src, nil
}

// insertRecord writes an INSERT … VALUES row as ksqlDB's SQL test runner
// pipes it: one record with the target's formats, ROWTIME as its
// timestamp when named.
func (e *env) insertRecord(ctx context.Context, st *sql.InsertValues) error {
	target, err := e.source(st.Target)
	if err != nil {
		return err
	}
	row, ts, err := sql.BindRecord(st, target)
	if err != nil {
		return err
	}
	keys := target.Schema.KeyIndexes()
	r := &kgo.Record{Topic: target.Topic, Timestamp: time.Now()}
	if ts != nil {
		r.Timestamp = time.UnixMilli(*ts)
	}
	if len(keys) > 0 && !allNull(row, keys) {
		kenc, err := types.NewEncoderOpts(target.KeyFormat, target.Schema, keys, target.KeyOptions)
		if err != nil {
			return err
		}
		if r.Key, err = kenc.Encode(nil, row); err != nil {
			return err
		}
	}
	vo := target.ValueOptions
	vo.KsqlQuoting = true
	venc, err := types.NewEncoderOpts(target.ValueFormat, target.Schema, target.Schema.ValueIndexes(), vo)
	if err != nil {
		return err
	}
	if r.Value, err = venc.Encode(nil, row); err != nil {
		return err
	}
	td, err := e.adm.ListTopics(ctx, target.Topic)
	if err != nil {
		return err
	}
	if n := len(td[target.Topic].Partitions); n > 1 && r.Key != nil {
		r.Partition = int32(kgo.StickyKeyPartitioner(nil).ForTopic(r.Topic).Partition(r, n))
	}
	return e.cl.ProduceSync(ctx, r).FirstErr()
}

func allNull(row types.Row, idx []int) bool {
	for _, i := range idx {
		if !row[i].Null {
			return false
		}
	}
	return true
}

// gotRecord is a record of a source's topic, decoded by its schema.
type gotRecord struct {
	row       types.Row // nil value columns and a nil value: tombstone
	tombstone bool
	ts        int64
}

// assertValues takes the next record of the source's topic, once the
// queries have consumed all their input, and compares it.
func (e *env) assertValues(ctx context.Context, st *sql.AssertValues, asserted map[string]int) error {
	src, err := e.source(st.Target)
	if err != nil {
		return err
	}
	want, wantTS, err := sql.BindRecord(st.Insert, src)
	if err != nil {
		return err
	}
	if st.Tombstone {
		for _, i := range src.Schema.ValueIndexes() {
			if !want[i].Null {
				return assertionf("Unexpected value columns specified in ASSERT NULL VALUES.")
			}
		}
	}
	var recs []gotRecord
	deadline := time.Now().Add(time.Second)
	for {
		if err := e.catchUp(ctx); err != nil {
			return err
		}
		if recs, err = e.readSource(ctx, src); err != nil {
			return err
		}
		if asserted[src.Topic] < len(recs) || time.Now().After(deadline) {
			break
		}
		// A record the queries emit after catching up (a punctuation):
		// give it a moment.
		time.Sleep(100 * time.Millisecond)
	}
	n := asserted[src.Topic]
	if n >= len(recs) {
		return assertionf("Expected another record, but all records have already been read:\n%s\n%s",
			showRow(src, "EXPECTED", want, wantTS, false), showRecords(src, recs))
	}
	asserted[src.Topic] = n + 1
	got := recs[n]
	if !recordHolds(src, st, want, wantTS, got) {
		return assertionf("Expected record does not match actual.\n%s\n%s",
			showRow(src, "EXPECTED", want, wantTS, st.Tombstone), showRow(src, "ACTUAL", got.row, &got.ts, got.tombstone))
	}
	return nil
}

// catchUp waits until every query has consumed all its input.
func (e *env) catchUp(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	why, err := e.waitCaughtUp(wctx)
	if err != nil || why != "" {
		return fmt.Errorf("the queries did not consume all input: %v %s", err, why)
	}
	return nil
}

// recordHolds compares as ksqlDB's AssertExecutor: a tombstone's whole
// key; else the named columns (every column when none are named) and
// ROWTIME when named.
func recordHolds(src *catalog.Source, st *sql.AssertValues, want types.Row, wantTS *int64, got gotRecord) bool {
	if st.Tombstone {
		if !got.tombstone {
			return false
		}
		for _, i := range src.Schema.KeyIndexes() {
			if !sameDatum(want[i], got.row[i], src.Schema.Columns[i].Type) {
				return false
			}
		}
		return true
	}
	if got.tombstone {
		return false
	}
	if wantTS != nil && *wantTS != got.ts {
		return false
	}
	cols := st.Columns
	if len(cols) == 0 {
		for _, i := range src.Schema.Visible() {
			cols = append(cols, src.Schema.Columns[i].Name)
		}
	}
	for _, name := range cols {
		i := src.Schema.Index(name)
		if i < 0 {
			continue // ROWTIME
		}
		if !sameDatum(want[i], got.row[i], src.Schema.Columns[i].Type) {
			return false
		}
	}
	return true
}

func sameDatum(a, b types.Datum, t types.Type) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	return types.Text(a, t) == types.Text(b, t)
}

// readSource reads the source's topic (read_committed, to its end) and
// decodes every record with the source's formats.
func (e *env) readSource(ctx context.Context, src *catalog.Source) ([]gotRecord, error) {
	raw, err := e.readAll(ctx, src.Topic)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(raw, func(i, j int) bool {
		if raw[i].Partition != raw[j].Partition {
			return raw[i].Partition < raw[j].Partition
		}
		return raw[i].Offset < raw[j].Offset
	})
	keys, vals := src.Schema.KeyIndexes(), src.Schema.ValueIndexes()
	kdec, err := types.NewDecoderOpts(src.KeyFormat, src.Schema, keys, src.KeyOptions)
	if err != nil {
		return nil, err
	}
	vdec, err := types.NewDecoderOpts(src.ValueFormat, src.Schema, vals, src.ValueOptions)
	if err != nil {
		return nil, err
	}
	out := make([]gotRecord, 0, len(raw))
	for _, r := range raw {
		g := gotRecord{row: make(types.Row, src.Schema.Len()), ts: r.Timestamp.UnixMilli(), tombstone: r.Value == nil}
		for i := range g.row {
			g.row[i] = types.NullDatum
		}
		key := r.Key
		if src.Windowed() && key != nil {
			if key, _, _, err = src.WindowType.SplitWindowKey(key, src.WindowSizeMs); err != nil {
				return nil, fmt.Errorf("%s: key: %w", src.Topic, err)
			}
		}
		if key != nil && len(keys) > 0 {
			if err := kdec.Decode(key, g.row); err != nil {
				return nil, fmt.Errorf("%s: key: %w", src.Topic, err)
			}
		}
		if r.Value != nil {
			if err := vdec.Decode(r.Value, g.row); err != nil {
				return nil, fmt.Errorf("%s: value: %w", src.Topic, err)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// showRow prints a row as ksqlDB's assertion errors do: key columns,
// ROWTIME, value columns (<TOMBSTONE> for a tombstone's).
func showRow(src *catalog.Source, label string, row types.Row, ts *int64, tombstone bool) string {
	parts := []string{label}
	add := func(idx []int, tomb bool) {
		for _, i := range idx {
			c := src.Schema.Columns[i]
			switch {
			case tomb:
				parts = append(parts, c.Name+"=<TOMBSTONE>")
			case row[i].Null:
				parts = append(parts, c.Name+"=NULL")
			default:
				parts = append(parts, c.Name+"="+types.Text(row[i], c.Type))
			}
		}
	}
	add(src.Schema.KeyIndexes(), false)
	if ts != nil {
		parts = append(parts, fmt.Sprintf("ROWTIME=%d", *ts))
	}
	add(src.Schema.ValueIndexes(), tombstone)
	return strings.Join(parts, " ")
}

func showRecords(src *catalog.Source, recs []gotRecord) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(showRow(src, "ACTUAL", r.row, &r.ts, r.tombstone))
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// assertSource compares a source with ASSERT STREAM|TABLE's statement as
// ksqlDB's AssertExecutor does, property by property, in its order and
// with its messages; a format the statement does not give is the
// session's default (ksql.persistence.default.format.key|value).
func (e *env) assertSource(st *sql.AssertSource, s *engine.Session) error {
	src, err := e.source(st.Create.Name)
	if err != nil {
		return err
	}
	cs := *st.Create
	cs.Props = sql.Props{}
	for k, v := range st.Create.Props {
		cs.Props[k] = v
	}
	_, hasFormat := cs.Props["FORMAT"]
	defaults := map[string]string{"KEY_FORMAT": "ksql.persistence.default.format.key", "VALUE_FORMAT": "ksql.persistence.default.format.value"}
	for name, prop := range defaults {
		if _, ok := cs.Props[name]; !ok && !hasFormat {
			if v := s.Props[prop]; v != "" {
				cs.Props[name] = sql.Property{Value: v, Pos: -1}
			}
		}
	}
	if _, ok := cs.Props["KAFKA_TOPIC"]; !ok {
		cs.Props["KAFKA_TOPIC"] = sql.Property{Value: "", Pos: -1}
	}
	want, err := sql.BindCreateSource(&cs)
	if err != nil {
		return err
	}
	wrap := func(o types.FormatOptions) string {
		if o.WrapSingleValue == nil {
			return "[]"
		}
		if *o.WrapSingleValue {
			return "[WRAP_SINGLES]"
		}
		return "[UNWRAP_SINGLES]"
	}
	for _, p := range []struct{ what, want, got string }{
		{"schema", want.Schema.String(), src.Schema.String()},
		{"type", want.Kind.String(), src.Kind.String()},
		{"kafka topic", want.Topic, src.Topic},
		{"key format", want.KeyFormat, src.KeyFormat},
		{"value format", want.ValueFormat, src.ValueFormat},
		{"value serde features", wrap(want.ValueOptions), wrap(src.ValueOptions)},
		{"timestamp column", want.TimestampColumn, src.TimestampColumn},
		{"timestamp format", want.TimestampFormat, src.TimestampFormat},
	} {
		if p.want != p.got {
			return assertionf("Expected %s does not match actual for source %s.\n\tExpected: %s\n\tActual: %s", p.what, src.Name, p.want, p.got)
		}
	}
	return nil
}
