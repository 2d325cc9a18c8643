package engine

import (
	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Views (CREATE VIEW): a named query kept in the catalog and recorded in
// the command topic like other DDL, so that a restart has it again. A
// view has no topology, topic or state of its own: a query that reads it
// (persistent, push or pull) binds the view's SELECT in its place, as a
// derived table, when the query is created. A persistent query keeps
// the plan recorded then, so DROP VIEW, or CREATE OR REPLACE VIEW, does
// not change the queries already running (they are not refused); only
// queries created afterwards see the change.

// createView validates a CREATE VIEW's SELECT against the catalog (as a
// push query reading the view would bind it) and records the view.
func (e *Engine) createView(st *sql.CreateView, cmd catalog.Command, record recorder, live bool) (Result, error) {
	tag := Result{Tag: "CREATE VIEW"}
	if _, ok := e.cat.View(st.Name); ok && !st.OrReplace {
		if st.IfNotExists {
			return tag, nil
		}
		return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "view %s already exists", st.Name)
	}
	if live {
		if err := sql.CheckView(st, e.cat); err != nil {
			return Result{}, err
		}
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	e.cat.PutView(st.Name, st.Text())
	return tag, nil
}

// dropView removes a view. The persistent queries created from it keep
// running with the plans they recorded; a view that another view reads
// is not dropped (the other would no longer bind).
func (e *Engine) dropView(st *sql.DropView, cmd catalog.Command, record recorder) (Result, error) {
	tag := Result{Tag: "DROP VIEW"}
	if _, ok := e.cat.View(st.Name); !ok {
		if st.IfExists {
			return tag, nil
		}
		if src, ok := e.cat.Source(st.Name); ok {
			return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "%s is a %s, not a view: use DROP %s", st.Name, src.Kind, src.Kind)
		}
		return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "view %s does not exist", st.Name)
	}
	snap := e.cat.Snapshot()
	for _, other := range snap.Views() {
		if text, _ := snap.View(other); other != st.Name && sql.ViewReads(text, st.Name) {
			return Result{}, sql.NameError(st, sql.CodeObjectInUse, "Cannot drop view %s: view %s reads it; drop or replace %s first", st.Name, other, other)
		}
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	e.cat.DropView(st.Name)
	return tag, nil
}

// viewNameTaken refuses a new stream or table named as a view (live
// statements only).
func (e *Engine) viewNameTaken(st sql.Statement) error {
	name := ""
	switch st := st.(type) {
	case *sql.CreateSource:
		name = st.Name
	case *sql.CreateAs:
		name = st.Name
	default:
		return nil
	}
	if _, ok := e.cat.View(name); ok {
		return sql.NameError(st, sql.CodeDuplicateObject, "Cannot add '%s': a view of that name exists", name)
	}
	return nil
}

// ViewInfo is one view as SHOW VIEWS lists it.
type ViewInfo struct {
	Name      string `json:"name"`
	Statement string `json:"statement"`
}

// ViewList is SHOW VIEWS: the views of CREATE VIEW.
type ViewList struct {
	Views []ViewInfo
}

var viewsCols = textCols("View Name", "Statement")

// Table implements Tabular.
func (l *ViewList) Table() ([]types.Column, [][]string) {
	rows := make([][]string, len(l.Views))
	for i, v := range l.Views {
		rows[i] = []string{v.Name, v.Statement}
	}
	return viewsCols, rows
}

func (e *Engine) showViews(w ResultWriter) (Result, error) {
	l := &ViewList{Views: []ViewInfo{}}
	snap := e.cat.Snapshot()
	for _, n := range snap.Views() {
		v, _ := snap.View(n)
		l.Views = append(l.Views, ViewInfo{Name: n, Statement: v})
	}
	return writeTyped(w, l)
}
