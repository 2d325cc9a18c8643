package engine

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Result layouts of the statements that return fixed columns.
var (
	streamsCols     = textCols("Stream Name", "Kafka Topic", "Key Format", "Value Format", "Windowed")
	tablesCols      = textCols("Table Name", "Kafka Topic", "Key Format", "Value Format", "Windowed")
	queriesCols     = textCols("Query ID", "Query Type", "Status", "Sink Name", "Sink Kafka Topic", "Query String")
	topicsCols      = textCols("Kafka Topic", "Partitions")
	propertiesCols  = textCols("Property", "Value", "Source")
	functionsCols   = textCols("Name", "Type", "Description")
	describeCols    = textCols("Field", "Type")
	describeExtCols = textCols("Property", "Value")
	describeFnCols  = textCols("Name", "Signature", "Description")
	explainCols     = textCols("QUERY PLAN")
)

func textCols(names ...string) []types.Column {
	cols := make([]types.Column, len(names))
	for i, n := range names {
		cols[i] = types.Column{Name: n, Type: types.StringType}
	}
	return cols
}

// writeTable sends a table of strings.
func writeTable(w ResultWriter, cols []types.Column, rows [][]string) (Result, error) {
	if err := w.Columns(cols); err != nil {
		return Result{}, err
	}
	row := make(types.Row, len(cols))
	for _, r := range rows {
		for i, v := range r {
			row[i] = types.Datum{B: []byte(v)}
		}
		if err := w.Row(row); err != nil {
			return Result{}, err
		}
	}
	return Result{Tag: "SELECT " + strconv.Itoa(len(rows))}, nil
}

func (e *Engine) show(ctx context.Context, s *Session, st *sql.Show, w ResultWriter) (Result, error) {
	switch st.What {
	case "STREAMS", "TABLES":
		kind, cols := catalog.Stream, streamsCols
		if st.What == "TABLES" {
			kind, cols = catalog.Table, tablesCols
		}
		var rows [][]string
		for _, src := range e.cat.Sources() {
			if src.Kind == kind {
				rows = append(rows, []string{src.Name, src.Topic, src.KeyFormat, src.ValueFormat, strconv.FormatBool(src.Windowed())})
			}
		}
		return writeTable(w, cols, rows)
	case "QUERIES":
		var rows [][]string
		for _, q := range e.cat.Queries() {
			status := "UNKNOWN"
			if qs, ok := e.QueryStatus(q.ID); ok {
				status = qs.State
				if qs.Err != "" {
					status += ": " + qs.Err
				}
			}
			topic := ""
			if src, ok := e.cat.Source(q.Sink); ok {
				topic = src.Topic
			}
			rows = append(rows, []string{q.ID, "PERSISTENT", status, q.Sink, topic, q.SQL})
		}
		return writeTable(w, queriesCols, rows)
	case "TOPICS":
		details, err := e.adm.ListTopics(ctx)
		if err != nil {
			return Result{}, err
		}
		var rows [][]string
		for _, name := range details.Names() {
			if strings.HasPrefix(name, "_") && !st.Extended {
				continue
			}
			rows = append(rows, []string{name, strconv.Itoa(len(details[name].Partitions))})
		}
		return writeTable(w, topicsCols, rows)
	case "PROPERTIES":
		props := map[string]string{
			"auto.offset.reset":    "latest (push queries), earliest (persistent queries)",
			"processing.guarantee": e.guarantee(),
			"commit.interval.ms":   strconv.FormatInt(e.commitInterval().Milliseconds(), 10),
			"ksql.service.id":      e.cfg.ServiceID,
			"num.stream.threads":   strconv.Itoa(max(e.cfg.Threads, 1)),
			IdleAdvanceProp:        "0",
		}
		source := map[string]string{}
		for k := range props {
			source[k] = "default"
		}
		for k, v := range s.Props {
			props[k], source[k] = v, "session (SET)"
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		rows := make([][]string, 0, len(keys)+len(e.cfg.Settings))
		for _, k := range keys {
			rows = append(rows, []string{k, props[k], source[k]})
		}
		// The server's own settings, as sqlstreams server took them.
		for _, st := range e.cfg.Settings {
			rows = append(rows, []string{"server." + st.Name, st.Value, st.Source})
		}
		return writeTable(w, propertiesCols, rows)
	case "FUNCTIONS":
		var rows [][]string
		for _, f := range expr.Functions() {
			rows = append(rows, []string{f.Name, "SCALAR", f.Description})
		}
		for _, f := range expr.TableFunctions() {
			rows = append(rows, []string{f.Name, "TABLE", f.Description})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
		return writeTable(w, functionsCols, rows)
	}
	return Result{}, sql.Errorf(sql.CodeFeatureNotSupport, "SHOW %s is not supported yet", st.What)
}

func (e *Engine) commitInterval() time.Duration {
	if e.cfg.CommitInterval > 0 {
		return e.cfg.CommitInterval
	}
	return defaultCommitInterval
}

func (e *Engine) describe(st *sql.Describe, w ResultWriter) (Result, error) {
	if st.Function {
		var name, desc string
		var sigs []string
		if fn, ok := expr.Lookup(st.Name); ok {
			name, desc, sigs = fn.Name, fn.Description, fn.Signatures
		} else if tf, ok := expr.LookupTable(st.Name); ok {
			name, desc, sigs = tf.Name, tf.Description, tf.Signatures
		} else {
			return Result{}, sql.NameError(st, sql.CodeUndefinedFunction, "function %s does not exist", st.Name)
		}
		var rows [][]string
		for _, sig := range sigs {
			rows = append(rows, []string{name, sig, desc})
		}
		return writeTable(w, describeFnCols, rows)
	}
	src, ok := e.cat.Source(st.Name)
	if !ok {
		return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "stream or table %s does not exist", st.Name)
	}
	var rows [][]string
	for _, c := range src.Schema.Columns {
		t := c.Type.String()
		if c.Key {
			if src.Kind == catalog.Table {
				t += " (primary key)"
			} else {
				t += " (key)"
			}
			if src.Windowed() {
				t += " (window type: " + windowDesc(src) + ")"
			}
		}
		rows = append(rows, []string{c.Name, t})
	}
	if !st.Extended {
		return writeTable(w, describeCols, rows)
	}
	// EXTENDED: the columns, then the source's properties and the queries
	// that write and read it, as "Property | Value" rows.
	for i := range rows {
		rows[i][0] = "column " + rows[i][0]
	}
	rows = append([][]string{
		{"name", src.Name},
		{"type", src.Kind.String()},
		{"kafka topic", src.Topic},
		{"partitions", strconv.Itoa(int(src.Partitions))},
		{"key format", src.KeyFormat},
		{"value format", src.ValueFormat},
		{"source (read-only)", strconv.FormatBool(src.IsSource)},
		{"windowed", windowDesc(src)},
		{"statement", src.SQL},
	}, rows...)
	if src.WriterQuery != "" {
		rows = append(rows, []string{"written by query", src.WriterQuery})
		if qs, ok := e.QueryStatus(src.WriterQuery); ok {
			rows = append(rows,
				[]string{"query status", qs.State},
				[]string{"query status since", qs.Since.UTC().Format(time.RFC3339)},
				[]string{"records in", strconv.FormatInt(qs.RecordsIn, 10)},
				[]string{"records out", strconv.FormatInt(qs.RecordsOut, 10)},
				[]string{"bad records", strconv.FormatInt(qs.BadRecords, 10)},
				[]string{"restarts", strconv.FormatInt(qs.Restarts, 10)},
				[]string{"late records dropped", strconv.FormatInt(qs.LateRecords, 10)})
			if qs.Err != "" {
				rows = append(rows, []string{"query error", qs.Err})
			}
		}
	}
	for _, id := range e.cat.Users(src.Name) {
		if id != src.WriterQuery {
			rows = append(rows, []string{"read by query", id})
		}
	}
	return writeTable(w, describeExtCols, rows)
}

func (e *Engine) explain(st *sql.Explain, w ResultWriter) (Result, error) {
	var text string
	switch {
	case st.QueryID != "":
		q, ok := e.cat.Query(st.QueryID)
		if !ok {
			return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "query %s does not exist", st.QueryID)
		}
		e.mu.Lock()
		rq := e.running[q.ID]
		e.mu.Unlock()
		var b strings.Builder
		b.WriteString("Query ID: " + q.ID + "\n")
		b.WriteString("SQL: " + q.SQL + "\n")
		if rq != nil {
			status := rq.Status()
			b.WriteString("Status: " + status.State + "\n")
			if status.Err != "" {
				b.WriteString("Error: " + status.Err + "\n")
			}
			b.WriteString("Application ID: " + rq.Topology().AppID + "\n")
			b.WriteString("Fingerprint: " + rq.Topology().Fingerprint() + "\n")
			b.WriteString("Records in/out/bad: " + strconv.FormatInt(status.RecordsIn, 10) + "/" +
				strconv.FormatInt(status.RecordsOut, 10) + "/" + strconv.FormatInt(status.BadRecords, 10) + "\n")
			b.WriteString("Topology:\n")
			b.WriteString(rq.Topology().String())
		}
		text = b.String()
	default:
		var err error
		if text, err = e.explainStatement(st.Stmt); err != nil {
			return Result{}, err
		}
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		rows = append(rows, []string{line})
	}
	return writeTable(w, explainCols, rows)
}

// explainStatement plans a statement without running it and renders its
// logical plan and topology.
func (e *Engine) explainStatement(st sql.Statement) (string, error) {
	var b strings.Builder
	switch st := st.(type) {
	case *sql.CreateAs:
		sink, err := sql.BindCreateAs(st, e.cat)
		if err != nil {
			return "", err
		}
		topo, err := physical.Build(physical.AppID(e.cfg.ServiceID, "CSAS_"+st.Name+"_0"), sink)
		if err != nil {
			return "", err
		}
		b.WriteString("Logical plan:\n")
		b.WriteString(planner.Explain(sink))
		b.WriteString("Physical plan:\n")
		b.WriteString(topo.String())
	case *sql.Select:
		q, err := sql.BindSelect(st, e.cat)
		if err != nil {
			return "", err
		}
		b.WriteString("Logical plan:\n")
		b.WriteString(planner.Explain(q.Root))
		if q.Emit != "" {
			topo, err := physical.BuildPush(q)
			if err != nil {
				return "", err
			}
			b.WriteString("Physical plan:\n")
			b.WriteString(topo.String())
		}
	default:
		return "", sql.Errorf(sql.CodeFeatureNotSupport, "EXPLAIN of this statement is not supported yet")
	}
	return b.String(), nil
}

// Describe returns the columns a statement would return, without running
// it; nil for statements that return no rows.
func (e *Engine) Describe(ctx context.Context, s *Session, text string) ([]types.Column, error) {
	st, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	switch st := st.(type) {
	case *sql.Select:
		q, err := sql.BindSelect(st, e.cat)
		if err != nil {
			return nil, err
		}
		return q.Root.Schema().Columns, nil
	case *sql.Show:
		switch st.What {
		case "STREAMS":
			return streamsCols, nil
		case "TABLES":
			return tablesCols, nil
		case "QUERIES":
			return queriesCols, nil
		case "TOPICS":
			return topicsCols, nil
		case "PROPERTIES":
			return propertiesCols, nil
		case "FUNCTIONS":
			return functionsCols, nil
		}
	case *sql.Describe:
		if st.Function {
			return describeFnCols, nil
		}
		if st.Extended {
			return describeExtCols, nil
		}
		return describeCols, nil
	case *sql.Explain:
		return explainCols, nil
	case *sql.Print:
		return printCols, nil
	}
	return nil, nil
}

// windowDesc describes a source's windowing for DESCRIBE: its type and,
// for time windows, its size ("TUMBLING, 1 MINUTE"); "false" when it has
// none.
func windowDesc(src *catalog.Source) string {
	switch src.WindowType {
	case types.NoWindow:
		return "false"
	case types.Session:
		return string(src.WindowType)
	}
	return string(src.WindowType) + ", " + planner.FormatDuration(src.WindowSizeMs)
}
