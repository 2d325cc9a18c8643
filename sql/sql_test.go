package sql

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// The files in testdata/ are datadriven tests; run with -rewrite to
// regenerate the expected output. Commands:
//
//	parse    the statement parses; prints its summary or the error
//	bind     parses and binds against the test catalog; prints the plan
//	split    prints the statements Split finds, one per line
//	rewrite  prints the SELECT text handed to TiDB
func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if fi, err := os.Stat(path); err != nil || fi.IsDir() {
			continue // testdata/fuzz holds the fuzzer's corpus
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			cat := testCatalog()
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				switch d.Cmd {
				case "split":
					return strings.Join(Split(d.Input), "\n---\n") + "\n"
				case "rewrite":
					st, err := Parse(d.Input)
					if err != nil {
						return errText(d.Input, err)
					}
					if ex, ok := st.(*Explain); ok {
						st = ex.Stmt
					}
					switch st := st.(type) {
					case *Select:
						return strings.TrimSpace(st.rw.text) + "\n"
					case *CreateAs:
						return strings.TrimSpace(st.Select.rw.text) + "\n"
					}
					return "not a SELECT\n"
				case "parse":
					st, err := Parse(d.Input)
					if err == nil {
						// Custom type names resolve against an
						// empty catalog: unknown ones are errors.
						err = ResolveTypes(st, nil)
					}
					if err != nil {
						return errText(d.Input, err)
					}
					return summary(st)
				case "bind":
					st, err := Parse(d.Input)
					if err != nil {
						return errText(d.Input, err)
					}
					out, err := bind(st, cat)
					if err != nil {
						return errText(d.Input, err)
					}
					return out
				}
				t.Fatalf("unknown command %s", d.Cmd)
				return ""
			})
		})
	}
}

func testCatalog() *catalog.Catalog {
	cat := catalog.New()
	cat.AddSource(&catalog.Source{
		Name: "PAGEVIEWS", Kind: catalog.Stream, Topic: "pageviews", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "PAGEID", Type: types.StringType},
			{Name: "VIEWTIME", Type: types.BigintType},
		}},
	}, false)
	// For joins: a table keyed like PAGEVIEWS, and sources that are not
	// co-partitioned with it.
	cat.AddSource(&catalog.Source{
		Name: "USERS", Kind: catalog.Table, Topic: "users", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "REGION", Type: types.StringType},
			{Name: "PAGEID", Type: types.StringType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "REGIONS", Kind: catalog.Table, Topic: "regions", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 1,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "REGION", Type: types.StringType, Key: true},
			{Name: "ZONE", Type: types.IntType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "LEVELS", Kind: catalog.Table, Topic: "levels", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "LEVEL", Type: types.BigintType, Key: true},
			{Name: "TITLE", Type: types.StringType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "CLICKS", Kind: catalog.Stream, Topic: "clicks", KeyFormat: "JSON", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "URL", Type: types.StringType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "BLOBS", Kind: catalog.Stream, Topic: "blobs", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 1,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "ID", Type: types.IntType, Key: true},
			{Name: "DATA", Type: types.BytesType},
		}},
	}, false)
	return cat
}

func bind(st Statement, cat *catalog.Catalog) (string, error) {
	switch st := st.(type) {
	case *Select:
		q, err := BindSelect(st, cat)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("emit=%q limit=%d\n%s", q.Emit, q.Limit, planner.Explain(q.Root)), nil
	case *CreateAs:
		sink, err := BindCreateAs(st, cat)
		if err != nil {
			return "", err
		}
		return planner.Explain(sink), nil
	case *CreateSource:
		src, err := BindCreateSource(st)
		if err != nil {
			return "", err
		}
		win := ""
		if src.Windowed() {
			win = fmt.Sprintf(" window=%s/%d", src.WindowType, src.WindowSizeMs)
		}
		if src.Partitioner != types.Murmur2 {
			win += " partitioner=" + src.Partitioner.String()
		}
		return fmt.Sprintf("%s %s topic=%s key=%s value=%s partitions=%d%s\n%s\n", src.Kind, src.Name, src.Topic, src.KeyFormat, src.ValueFormat, src.Partitions, win, src.Schema), nil
	case *AssertValues:
		src, _ := cat.Source(st.Target)
		if src == nil {
			return "", fmt.Errorf("no target")
		}
		row, ts, err := BindRecord(st.Insert, src)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		if ts != nil {
			fmt.Fprintf(&b, "rowtime=%d ", *ts)
		}
		for i, d := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(types.Text(d, src.Schema.Columns[i].Type))
		}
		return b.String() + "\n", nil
	case *InsertValues:
		src, _ := cat.Source(st.Target)
		if src == nil {
			return "", fmt.Errorf("no target")
		}
		rows, err := BindInsertValues(st, src)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, r := range rows {
			for i, d := range r {
				if i > 0 {
					b.WriteString(" | ")
				}
				b.WriteString(types.Text(d, src.Schema.Columns[i].Type))
			}
			b.WriteString("\n")
		}
		return b.String(), nil
	}
	return summary(st), nil
}

// errText renders an error with a caret under its position.
func errText(text string, err error) string {
	e, ok := err.(*Error)
	if !ok {
		return "error: " + err.Error() + "\n"
	}
	out := fmt.Sprintf("error %s: %s\n", e.Code, e.Error())
	if e.Offset >= 0 {
		lines := strings.Split(text, "\n")
		out += lines[e.Line-1] + "\n" + strings.Repeat(" ", e.Column-1) + "^\n"
	}
	return out
}

func summary(st Statement) string {
	switch st := st.(type) {
	case *CreateSource:
		var cols []string
		for _, c := range st.Columns {
			s := c.Name + " " + c.Type.String()
			if c.Key {
				s += " KEY"
			}
			cols = append(cols, s)
		}
		return fmt.Sprintf("CreateSource kind=%s name=%s replace=%v ifnotexists=%v source=%v\ncolumns: %s\nprops: %s\n",
			st.Kind, st.Name, st.OrReplace, st.IfNotExists, st.Source, strings.Join(cols, ", "), props(st.Props))
	case *CreateAs:
		return fmt.Sprintf("CreateAs kind=%s name=%s props: %s\nselect emit=%q limit=%d unsupported=%q\n", st.Kind, st.Name, props(st.Props), st.Select.Emit, st.Select.Limit, st.Select.unsupported)
	case *Select:
		return fmt.Sprintf("Select emit=%q limit=%d unsupported=%q%s\n", st.Emit, st.Limit, st.unsupported, windowSummary(st.window))
	case *InsertValues:
		return fmt.Sprintf("InsertValues target=%s columns=%v rows=%d\n", st.Target, st.Columns, len(st.ins.Lists))
	case *Show:
		return fmt.Sprintf("Show %s extended=%v\n", st.What, st.Extended)
	case *Describe:
		return fmt.Sprintf("Describe %s extended=%v function=%v\n", st.Name, st.Extended, st.Function)
	case *Explain:
		if st.Stmt != nil {
			return "Explain " + summary(st.Stmt)
		}
		return "Explain query " + st.QueryID + "\n"
	case *SetProperty:
		return fmt.Sprintf("Set %q = %q\n", st.Name, st.Value)
	case *UnsetProperty:
		return fmt.Sprintf("Unset %q\n", st.Name)
	case *Drop:
		return fmt.Sprintf("Drop %s %s ifexists=%v deletetopic=%v\n", st.Kind, st.Name, st.IfExists, st.DeleteTopic)
	case *Pause:
		return fmt.Sprintf("Pause %s all=%v resume=%v\n", st.QueryID, st.All, st.Resume)
	case *Terminate:
		return fmt.Sprintf("Terminate %q all=%v\n", st.QueryID, st.All)
	case *ResetQuery:
		return "ResetQuery " + st.QueryID + "\n"
	case *InsertSelect:
		return "InsertSelect " + st.Target + "\n"
	case *AssertValues:
		return fmt.Sprintf("AssertValues target=%s columns=%v tombstone=%v\n", st.Target, st.Columns, st.Tombstone)
	case *AssertSource:
		return "Assert" + summary(st.Create)
	case *RunScript:
		return fmt.Sprintf("RunScript %q\n", st.Path)
	}
	return fmt.Sprintf("%T\n", st)
}

func props(p Props) string {
	var parts []string
	for _, k := range []string{"KAFKA_TOPIC", "VALUE_FORMAT", "KEY_FORMAT", "PARTITIONS", "FORMAT"} {
		if v, ok := p[k]; ok {
			parts = append(parts, k+"="+v.Value)
		}
	}
	return strings.Join(parts, " ")
}

func windowSummary(w *windowClause) string {
	if w == nil {
		return ""
	}
	return fmt.Sprintf(" window=%s size=%d advance=%d retention=%d grace=%d zone=%q", w.typ, w.size, w.advance, w.retention, w.grace, w.zone)
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"CREATE STREAM s (a VARCHAR KEY, b INT) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON', PARTITIONS=2);",
		"CREATE STREAM x AS SELECT a, b * 10 AS c FROM s WHERE b = 'x' EMIT CHANGES;",
		"SELECT * FROM s EMIT CHANGES LIMIT 1",
		"INSERT INTO s (a, b) VALUES ('u', 1), ('v', 2)",
		"SHOW STREAMS; DESCRIBE s; EXPLAIN Q_1; SET 'a'='b'; DROP STREAM IF EXISTS s DELETE TOPIC",
		"SELECT a FROM s WINDOW TUMBLING (SIZE 1 MINUTE) PARTITION BY a EMIT CHANGES",
		"CREATE TABLE t AS SELECT a, COUNT(*) FROM s WINDOW HOPPING (SIZE 1 MINUTE, ADVANCE BY 10 SECONDS, GRACE PERIOD 0 SECONDS, TIME ZONE 'Europe/Berlin') GROUP BY a EMIT FINAL",
		"select 'unterminated",
	} {
		f.Add(s)
	}
	cat := testCatalog()
	f.Fuzz(func(t *testing.T, text string) {
		for _, stmt := range Split(text) {
			st, err := Parse(stmt)
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("%q: error %T is not *sql.Error: %v", stmt, err, err)
				}
				continue
			}
			_, _ = bind(st, cat)
		}
	})
}
