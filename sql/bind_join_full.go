package sql

import (
	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
)

// rowsKeyNamed returns the position of the key column of the left side's
// rows when the left is an earlier table–table join whose key is a FULL
// OUTER join's synthetic column (ROWKEY) and name is that column's name,
// which no source of the join has; -1 otherwise. The next join's ON and
// the SELECT name the rows' key so (beyond ksqlDB, whose JOIN ON cannot
// name a synthetic key). A stream join's rows keep ksqlDB's refusal.
func (js *joinScope) rowsKeyNamed(name string) int {
	left := &js.sides[0]
	if left.inner == nil || left.src == nil || left.src.Kind != catalog.Table {
		return -1
	}
	keys := left.src.Schema.KeyIndexes()
	if len(keys) != 1 {
		return -1
	}
	if _, ok := js.rowsOnly(keys[0]); !ok || left.schema.Columns[keys[0]].Name != name {
		return -1
	}
	return keys[0]
}

// rowsOnly returns the name of column i of the join's rows when it is a
// column of the left side's rows (an earlier join's) that belongs to none
// of its sources: a FULL OUTER join's synthetic key.
func (js *joinScope) rowsOnly(i int) (string, bool) {
	left := &js.sides[0]
	if left.inner == nil || i < left.inner.end() || i >= js.sides[1].offset || i >= left.schema.Len() {
		return "", false
	}
	return left.schema.Columns[i].Name, true
}

// bindAfterFullJoin binds a join of a table to the rows of an earlier
// FULL OUTER table–table join (beyond ksqlDB, which refuses it: its JOIN
// ON cannot name the synthetic key, and a source's column is not the
// key, so the rows would have to be repartitioned, which a table cannot
// be). The rows are keyed by their synthetic key column (ROWKEY):
//
//   - ON ROWKEY = t.key joins them on that key: INNER and LEFT find the
//     table's row by the rows' key (as a join of an earlier join's rows on
//     their key does); RIGHT and FULL keep the rows in a store of the
//     join's own (bindRowsTableJoin). The result is keyed by ROWKEY (RIGHT,
//     INNER, LEFT; t.key may stand for it in the projection, as ksqlDB
//     lets a join's columns stand for its key) or, for FULL, by a new
//     synthetic column (ROWKEY_1, as ROWKEY is taken by the rows').
//   - ON over another expression of the rows (a source's column, NULL
//     where that source had no row) is a foreign-key join, INNER or LEFT,
//     keyed by ROWKEY.
//
// lkey is the rows' key column, rkey the table's.
func (b *binder) bindAfterFullJoin(js *joinScope, typ string, lk, rk expr.Expr, lkey, rkey int) (*planner.Join, error) {
	c, isCol := lk.(*expr.Column)
	onKey := isCol && c.Index == lkey
	switch {
	case !onKey && (typ == "RIGHT" || typ == "FULL"):
		name := js.sides[0].schema.Columns[lkey].Name
		return nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: a %s OUTER JOIN after a FULL OUTER JOIN of tables joins on the rows' key, the synthetic column %s (ON %s = %s). Got %s = %s.",
			typ, name, name, b.show(rk), b.show(lk), b.show(rk))
	case !onKey:
		return b.bindForeignKeyJoin(js, typ, lk, rkey)
	case typ == "RIGHT" || typ == "FULL":
		return b.bindRowsTableJoin(js, typ, lk, rk, lkey, rkey)
	}
	join, err := b.bindForeignKeyJoin(js, typ, lk, rkey)
	if err == nil && !js.legacy {
		js.setKeys(lk, rk, lkey, false)
	}
	return join, err
}
