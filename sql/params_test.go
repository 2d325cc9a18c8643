package sql

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestParams checks how a SELECT's placeholders are numbered and typed:
// $n keeps its number wherever it stands, ?s are numbered in order, and
// each takes the type of what it is compared with, else STRING.
func TestParams(t *testing.T) {
	cat := testCatalog()
	for _, c := range []struct {
		text  string
		types string // the parameters' types, or the error code
	}{
		{"SELECT * FROM levels WHERE level = $1", "[BIGINT]"},
		{"SELECT * FROM levels WHERE $1 = level", "[BIGINT]"},
		{"SELECT * FROM levels WHERE title = $2 AND level > $1", "[BIGINT STRING]"},
		{"SELECT * FROM levels WHERE level BETWEEN $1 AND $2", "[BIGINT BIGINT]"},
		{"SELECT * FROM levels WHERE level IN ($1, $3)", "[BIGINT STRING BIGINT]"},
		{"SELECT * FROM levels WHERE level = ? AND title <> ?", "[BIGINT STRING]"},
		{"SELECT title, $1 FROM levels WHERE level = ($2)", "[STRING BIGINT]"},
		{"SELECT * FROM regions WHERE zone = $1 + 1", "[INTEGER]"},
		{"SELECT * FROM levels WHERE title = '$1'", "[]"},
		{"SELECT * FROM levels WHERE level = $1 AND title = ?", "42601"},
		{"SELECT * FROM levels WHERE level = $0", "42601"},
		{"SELECT * FROM levels WHERE title = $1 LIMIT $2", "[STRING BIGINT]"},
		{"SELECT * FROM levels EMIT CHANGES LIMIT ?", "[BIGINT]"},
		// A cast types its placeholder, as in Postgres ($1::int is int4).
		{"SELECT $1::int AS x FROM levels WHERE level = $2", "[INTEGER BIGINT]"},
		{"SELECT CAST($1 AS DOUBLE) AS x, CAST(($2) AS DATE) AS d FROM levels", "[DOUBLE DATE]"},
		{"SELECT * FROM levels WHERE level = $1 AND CAST($1 AS STRING) = title", "[BIGINT]"},
	} {
		got := func() string {
			st, err := Parse(c.text)
			if err != nil {
				var se *Error
				if errors.As(err, &se) {
					return se.Code
				}
				return err.Error()
			}
			sel := st.(*Select)
			if HasPlaceholder(c.text) != (sel.NumParams() > 0) {
				return fmt.Sprintf("HasPlaceholder %v with %d parameters", HasPlaceholder(c.text), sel.NumParams())
			}
			sel.Params = &expr.Params{Values: make([]types.Datum, sel.NumParams())}
			if _, err := BindSelect(sel, cat); err != nil {
				return err.Error()
			}
			var out []string
			for _, pt := range sel.ParamTypes() {
				out = append(out, pt.String())
			}
			return fmt.Sprint(out)
		}()
		if got != c.types {
			t.Errorf("%s: got %s, want %s", c.text, got, c.types)
		}
	}
	// Without values to bind, a placeholder is an error (Execute).
	st, err := Parse("SELECT * FROM levels WHERE level = $1")
	if err != nil {
		t.Fatal(err)
	}
	var se *Error
	if _, err := BindSelect(st.(*Select), cat); !errors.As(err, &se) || se.Code != "42P02" {
		t.Errorf("bind without values: %v, want 42P02", err)
	}
	// LIMIT $n: the value bound when bound; NULL is no limit, a negative
	// count 2201W, no value 42P02.
	for _, c := range []struct {
		v    types.Datum
		want string
	}{{types.IntDatum(7), "7"}, {types.NullDatum, "-1"}, {types.IntDatum(0), "0"}, {types.IntDatum(-1), "2201W"}} {
		st, err := Parse("SELECT * FROM levels EMIT CHANGES LIMIT $1")
		if err != nil {
			t.Fatal(err)
		}
		sel := st.(*Select)
		sel.Params = &expr.Params{Values: []types.Datum{c.v}}
		got := ""
		if q, err := BindSelect(sel, cat); errors.As(err, &se) {
			got = se.Code
		} else if err != nil {
			got = err.Error()
		} else {
			got = fmt.Sprint(q.Limit)
		}
		if got != c.want || sel.LimitParam() != 1 {
			t.Errorf("LIMIT $1 bound to %v: %s (LimitParam %d), want %s", c.v, got, sel.LimitParam(), c.want)
		}
	}
	st, _ = Parse("SELECT * FROM levels LIMIT $1")
	if _, err := BindSelect(st.(*Select), cat); !errors.As(err, &se) || se.Code != "42P02" {
		t.Errorf("LIMIT $1 without values: %v, want 42P02", err)
	}
}
