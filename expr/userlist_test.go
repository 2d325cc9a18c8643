package expr

import (
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// TestUserListTypes checks the common type ksqlDB's list coercion gives
// an IN list and an ARRAY constructor, and its errors.
func TestUserListTypes(t *testing.T) {
	bigArr := must(NewCast(arr(1), types.Type{Kind: types.Array, Elem: &types.BigintType}))
	cases := []struct {
		name string
		es   []Expr
		want string // the common type, or an error's words
	}{
		{"numbers widen in order", []Expr{lit(1), dec("2.0"), lit("4.000")}, "DECIMAL(13, 3)"},
		{"a double wins", []Expr{lit(1), lit(2.5)}, "DOUBLE"},
		{"a big string number is a BIGINT", []Expr{lit(1), lit("2147483648")}, "BIGINT"},
		{"booleans take prefixes", []Expr{lit(true), lit("tr"), lit("N")}, "BOOLEAN"},
		{"other literals join strings", []Expr{lit("a"), lit(true), lit(10), dec("10.30")}, "STRING"},
		{"arrays widen, never narrow", []Expr{arr(1), bigArr}, "ARRAY<BIGINT>"},
		{"structs take every field, the later one's first", []Expr{st("A", 1), st("B", "x")}, "STRUCT<B STRING, A INTEGER>"},
		{"NULLs take the type", []Expr{lit(nil), lit(1), lit(nil)}, "INTEGER"},
		{"not a number", []Expr{lit(1), lit("x")}, `error: invalid input syntax for type INTEGER: "x".`},
		{"not a boolean", []Expr{lit(true), lit("maybe")}, `error: invalid input syntax for type BOOLEAN`},
		{"another kind", []Expr{lit(true), lit(10)}, "error: operator does not exist: BOOLEAN = INTEGER (10)"},
		{"a string column does not join numbers", []Expr{lit(1), col("S")}, "error: operator does not exist: INTEGER = STRING"},
	}
	for _, c := range cases {
		typ, out, err := userList(c.es)
		got := typ.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
			continue
		}
		for i, e := range out {
			if err == nil && !e.Type().Equal(typ) {
				t.Errorf("%s: element %d is %s, not %s", c.name, i, e.Type(), typ)
			}
		}
	}
}

// TestInCoercesValues checks IN's answers once its value and list are
// coerced: a string literal compared as its number, an INT array widened
// to BIGINT so that a value beyond INT's range does not match.
func TestInCoercesValues(t *testing.T) {
	in := must(NewIn(lit(5), []Expr{lit(1), lit("5.0")}, false))
	if got := evalx(t, in); got != "true" {
		t.Errorf("5 IN (1, '5.0') = %s", got)
	}
	wide := must(NewCast(arr(int64(2147483648)), types.Type{Kind: types.Array, Elem: &types.BigintType}))
	narrow := arr(-2147483648)
	if got := evalx(t, must(NewIn(narrow, []Expr{wide}, false))); got != "false" {
		t.Errorf("ARRAY[-2147483648] IN (ARRAY[2147483648]) = %s", got)
	}
	if got := evalx(t, KsqlNulls(must(NewIn(cast(nil, types.IntType), []Expr{lit(1)}, true)))); got != "true" {
		t.Errorf("NULL NOT IN (1) with ksqlDB's NULLs = %s", got)
	}
}
