package expr

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/types"
)

// fnCase is a call and the text it must give.
type fnCase struct {
	name string
	args []any
	want string
}

func f(name string, want string, args ...any) fnCase { return fnCase{name, args, want} }

func runFnCases(t *testing.T, cases []fnCase, tested map[string]bool) {
	t.Helper()
	for _, c := range cases {
		if tested != nil {
			tested[c.name] = true
		}
		fn, ok := Lookup(c.name)
		if !ok {
			t.Errorf("no function %s", c.name)
			continue
		}
		e, err := NewCall(fn, lits(c.args...))
		if err != nil {
			t.Errorf("%s%v: %v", c.name, c.args, err)
			continue
		}
		ev, err := Compile(e)
		if err != nil {
			t.Errorf("%s: %v", e, err)
			continue
		}
		for run := 0; run < 2; run++ { // a second run checks that scratch state is reset
			d, err := ev(xrow)
			if err != nil {
				t.Errorf("%s: error %v, want %s", e, err, c.want)
				break
			}
			if got := render(d, e.Type()); got != c.want {
				t.Errorf("%s = %s, want %s (run %d)", e, got, c.want, run+1)
				break
			}
		}
	}
}

// TestFunctionsWithNullArguments calls every function with untyped NULLs
// wherever its Check accepts them: nothing may panic, and strict
// functions give NULL.
func TestFunctionsWithNullArguments(t *testing.T) {
	for _, fn := range Functions() {
		for n := 0; n <= 6; n++ {
			args := make([]Expr, n)
			for i := range args {
				args[i] = NullLiteral()
			}
			e, err := NewCall(fn, args)
			if err != nil {
				continue
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s with %d NULLs panicked: %v", fn.Name, n, r)
					}
				}()
				ev, err := Compile(e)
				if err != nil {
					t.Errorf("%s: %v", e, err)
					return
				}
				if _, err := ev(xrow); err != nil {
					t.Errorf("%s: %v", e, err)
				}
			}()
		}
	}
}

var strNull = cast(nil, types.StringType)

func stringCases() []fnCase {
	return []fnCase{
		f("UCASE", "ABC", "abc"), f("UCASE", "HÉLLO", "héllo"), f("UCASE", "NULL", nil), f("UCASE", "AB", col("S")),
		f("LCASE", "abc", "ABC"), f("LCASE", "été", "ÉTÉ"), f("LCASE", "NULL", strNull),
		f("LEN", "5", "héllo"), f("LEN", "0", ""), f("LEN", "1", col("BY")), f("LEN", "NULL", nil),
		f("CONCAT", "ab", "a", nil, "b"), f("CONCAT", "abab", col("S"), col("S")), f("CONCAT", "", nil),
		f("CONCAT", "SyM=", []byte("K"), []byte("#")),
		f("CONCAT_WS", "apple, banana, date", ", ", "apple", "banana", nil, "date"),
		f("CONCAT_WS", "NULL", strNull, "a"), f("CONCAT_WS", "", "-", strNull),
		f("TRIM", "x", "  x \t"), f("TRIM", "", "   "), f("TRIM", "NULL", nil),
		f("LTRIM", "x ", " x "), f("RTRIM", " x", " x "),
		f("SUBSTRING", "stre", "stream", 1, 4), f("SUBSTRING", "ream", "stream", 3), f("SUBSTRING", "eam", "stream", -3),
		f("SUBSTRING", "ea", "stream", -3, 2), f("SUBSTRING", "", "stream", 10), f("SUBSTRING", "st", "stream", 0, 2),
		f("SUBSTRING", "stream", "stream", -10), f("SUBSTRING", "", "stream", 2, -1), f("SUBSTRING", "éll", "héllo", 2, 3),
		f("SUBSTRING", "NULL", "x", nil), f("SUBSTRING", "NULL", nil, 1), f("SUBSTRING", "SA==", []byte("GHI"), 2, 1),
		f("REPLACE", "aXYcaXYc", "abcabc", "b", "XY"), f("REPLACE", "-a-b-c-", "abc", "", "-"), f("REPLACE", "NULL", "abc", nil, "x"),
		f("REGEXP_REPLACE", "a#b#c", "a1b22c", "[0-9]+", "#"), f("REGEXP_REPLACE", "smith john", "john smith", `(\w+) (\w+)`, "$2 $1"),
		f("REGEXP_REPLACE", "cost $5", "cost 5", `(\d)`, `\$$1`), f("REGEXP_REPLACE", "NULL", "x", nil, "y"),
		f("REGEXP_EXTRACT", "there", "(.*) (.*)", "hello there", 2), f("REGEXP_EXTRACT", "e", "[aeiou]", "hello"),
		f("REGEXP_EXTRACT", "NULL", "x", "abc"), f("REGEXP_EXTRACT", "NULL", "(a)|(b)", "b", 1), f("REGEXP_EXTRACT", "NULL", "(a)", "a", 5),
		f("REGEXP_EXTRACT_ALL", "[there, day]", `(\w+) (\w+)`, "hello there nice day", 2),
		f("REGEXP_EXTRACT_ALL", "[1, 22]", `\d+`, "a1b22c"), f("REGEXP_EXTRACT_ALL", "[]", "x", "abc"),
		f("REGEXP_SPLIT_TO_ARRAY", "[a, b, c]", "a1b2c", "[0-9]"), f("REGEXP_SPLIT_TO_ARRAY", "[, a, ]", "1a1", "1"),
		f("REGEXP_SPLIT_TO_ARRAY", "[a, b]", "ab", ""), f("REGEXP_SPLIT_TO_ARRAY", "[abc]", "abc", "x"), f("REGEXP_SPLIT_TO_ARRAY", "NULL", nil, "x"),
		f("SPLIT", "[a, b, , c]", "a,b,,c", ","), f("SPLIT", "[a, b, c]", "abc", ""), f("SPLIT", "[, a, ]", ",a,", ","),
		f("SPLIT", "[abc]", "abc", "x"), f("SPLIT", "[a, b]", "a::b", "::"), f("SPLIT", "NULL", "a", nil),
		f("SPLIT", "[YQ==, Yw==]", []byte("abc"), []byte("b")),
		f("SPLIT_TO_MAP", "{apple=green, cherry=red}", "apple:=green/cherry:=red", "/", ":="),
		f("SPLIT_TO_MAP", "{a=3, b=2}", "a=1;b=2;;a=3;junk", ";", "="), f("SPLIT_TO_MAP", "NULL", "a=1", "", "="),
		f("SPLIT_TO_MAP", "NULL", nil, ";", "="), f("SPLIT_TO_MAP", "{}", "", ";", "="),
		// An entry with more key-value delimiters keeps the part before the second, as ksqlDB's.
		f("SPLIT_TO_MAP", "{apple=green/banana}", "apple:green/banana:yellow/cherry:red", "&&", ":"),
		f("INSTR", "2", "CORPORATE FLOOR", "OR"), f("INSTR", "5", "CORPORATE FLOOR", "OR", 3),
		f("INSTR", "14", "CORPORATE FLOOR", "OR", 3, 2), f("INSTR", "5", "CORPORATE FLOOR", "OR", -3),
		f("INSTR", "2", "CORPORATE FLOOR", "OR", -3, 2), f("INSTR", "0", "CORPORATE FLOOR", "MISSING"),
		f("INSTR", "0", "CORPORATE FLOOR", "OR", 3, 5), f("INSTR", "0", "abc", "a", 10), f("INSTR", "0", nil, "a"),
		f("INSTR", "3", "héllo", "l"),
		f("LPAD", "BarBFoo", "Foo", 7, "Bar"), f("LPAD", "Fo", "Foo", 2, "Bar"), f("LPAD", "Ba", "", 2, "Bar"),
		f("LPAD", "00123", "123", 5, "0"), f("LPAD", "NULL", "x", -1, "y"), f("LPAD", "NULL", "x", 3, ""),
		f("LPAD", "NULL", "x", 3, nil), f("LPAD", "ééx", "x", 3, "é"), f("LPAD", "QUFC", []byte("B"), 3, []byte("A")),
		f("RPAD", "FooBarB", "Foo", 7, "Bar"), f("RPAD", "Fo", "Foo", 2, "Bar"), f("RPAD", "Ba", "", 2, "Bar"),
		f("INITCAP", "Hello World  Foo", "hello wORLD  foo"), f("INITCAP", "", ""), f("INITCAP", "NULL", nil),
		f("CHR", "K", 75), f("CHR", "K", `\u004b`), f("CHR", "好", 22909), f("CHR", "好", `\u597d`),
		f("CHR", "NULL", -1), f("CHR", "NULL", "x"), f("CHR", "NULL", `\uzzzz`), f("CHR", "NULL", 0xD800), f("CHR", "\t", 9), f("CHR", "𘊸", `\ud820\udeb8`), f("CHR", "Kx", `\u004bx`),
		f("MASK", "Xx-Xxxx--nnn", "My Test $123"), f("MASK", "*y *est $111", "My Test $123", "*", nil, "1", nil),
		f("MASK", "NULL", nil),
		f("MASK_KEEP_LEFT", "My Txxx--nnn", "My Test $123", 4), f("MASK_KEEP_RIGHT", "Xx-Xxxx-$123", "My Test $123", 4),
		f("MASK_LEFT", "Xx-Xest $123", "My Test $123", 4), f("MASK_RIGHT", "My Test -nnn", "My Test $123", 4),
		f("MASK_LEFT", "####est $123", "My Test $123", 4, "#", "#", "#", "#"), f("MASK_LEFT", "Xx-Xxxx--nnn", "My Test $123", 40),
		f("ELT", "b", 2, "a", "b"), f("ELT", "NULL", 3, "a", "b"), f("ELT", "NULL", 0, "a"), f("ELT", "NULL", nil, "a"),
		f("FIELD", "2", "b", "a", "b"), f("FIELD", "0", "z", "a", "b"), f("FIELD", "0", strNull, "a"),
	}
}

func mathCases() []fnCase {
	return []fnCase{
		f("ABS", "3", -3), f("ABS", "2.5", -2.5), f("ABS", "1.50", dec("-1.50")), f("ABS", "1099511627776", col("B")), f("ABS", "NULL", nil),
		f("CEIL", "2.0", 1.2), f("CEIL", "2.00", dec("1.21")), f("CEIL", "-1.0", dec("-1.5")), f("CEIL", "5", 5), f("CEIL", "NULL", col("N")),
		f("FLOOR", "2.0", 2.7), f("FLOOR", "-2.0", dec("-1.5")), f("FLOOR", "1.00", dec("1.99")), f("FLOOR", "-3.0", -2.5),
		f("ROUND", "2", 1.5), f("ROUND", "-1", -1.5), f("ROUND", "-2", -1.6), f("ROUND", "7", 7), f("ROUND", "1.26", 1.255, 2),
		f("ROUND", "-1.25", -1.255, 2), f("ROUND", "1200.0", 1234.5, -2), f("ROUND", "12.350", dec("12.345"), 2),
		f("ROUND", "13", dec("12.5")), f("ROUND", "-12", dec("-12.5")), f("ROUND", "-13", dec("-12.51")),
		f("ROUND", "1200", 1234, -2), f("ROUND", "0.1", 0.05, 1), f("ROUND", "NULL", 1.5, nil),
		f("TRUNC", "1.78", 1.789, 2), f("TRUNC", "-1", -1.7), f("TRUNC", "12.300", dec("12.345"), 1), f("TRUNC", "12", dec("12.9")),
		f("TRUNC", "7", 7), f("TRUNC", "1200", 1299, -2),
		f("SIGN", "-1", -5), f("SIGN", "0", 0.0), f("SIGN", "1", dec("1.5")), f("SIGN", "NULL", nil),
		f("SQRT", "4.0", 16), f("CBRT", "3.0", 27.0), f("EXP", "1.0", 0), f("LN", "0.0", 1), f("LN", "-Infinity", 0),
		f("LOG", "2.0", 100), f("LOG", "3.0", 2, 8), f("LOG", "NaN", 1, 8), f("LOG", "-Infinity", 10, 0),
		f("SIN", "0.0", 0), f("COS", "1.0", 0), f("TAN", "0.0", 0), f("COT", "Infinity", 0.0), f("ASIN", "1.5707963267948966", 1),
		f("ACOS", "NaN", 2), f("ATAN", "0.0", 0), f("ATAN2", "0.7853981633974483", 1, 1), f("SINH", "0.0", 0),
		f("COSH", "1.0", 0), f("TANH", "0.0", 0), f("DEGREES", "180.0", math.Pi), f("RADIANS", "3.141592653589793", 180),
		f("PI", "3.141592653589793"), f("POWER", "1024.0", 2, 10), f("POWER", "Infinity", 10, 400), f("SQRT", "NULL", nil),
		f("SQRT", "3.5128336140500593", col("DEC")),
		f("GREATEST", "5", 1, 5, nil, 3), f("GREATEST", "2.5", 1, 2.5), f("GREATEST", "b", "a", "b"), f("GREATEST", "NULL", nil, col("N")),
		f("GREATEST", "2021-10-11", col("DT"), date("2020-01-01")),
		f("LEAST", "a", "b", "a"), f("LEAST", "1", 1, 5, nil), f("LEAST", "-1.5", dec("-1.5"), 2),
		f("GENERATE_SERIES", "[1, 2, 3, 4, 5]", 1, 5), f("GENERATE_SERIES", "[5, 4, 3, 2, 1]", 5, 1),
		f("GENERATE_SERIES", "[1, 4, 7, 10]", 1, 10, 3), f("GENERATE_SERIES", "[10, 8]", 10, 7, -2), f("GENERATE_SERIES", "[3]", 3, 3),
		f("GENERATE_SERIES", "[1099511627776, 1099511627777]", col("B"), lit(int64(1<<40+1))), f("GENERATE_SERIES", "NULL", nil, 3),
		f("GEO_DISTANCE", "0.0", 1, 1, 1, 1), f("GEO_DISTANCE", "0.0", 1, 1, 1, 1, "MILES"),
	}
}

func timeCases() []fnCase {
	ts1 := ts("2021-04-01T09:00:00Z")
	return []fnCase{
		f("UNIX_TIMESTAMP", "1617267600000", ts1), f("UNIX_TIMESTAMP", "NULL", cast(nil, types.TimestampType)),
		f("UNIX_DATE", "18911", col("DT")), f("UNIX_DATE", "0", date("1970-01-01")),
		f("FROM_UNIXTIME", "1970-01-01T00:00:01.000", int64(1000)), f("FROM_UNIXTIME", "NULL", nil),
		f("FROM_DAYS", "1970-01-02", 1), f("FROM_DAYS", "2021-10-11", 18911),
		f("FORMAT_TIMESTAMP", "2021-04-01 09:00:00.000", ts1, "yyyy-MM-dd HH:mm:ss.SSS"),
		f("FORMAT_TIMESTAMP", "2021-04-01 05:00:00.000 EDT", ts1, "yyyy-MM-dd HH:mm:ss.SSS z", "America/New_York"),
		f("FORMAT_TIMESTAMP", "01/Apr/2021:14:30:00 +0530", ts1, "dd/MMM/yyyy:HH:mm:ss Z", "Asia/Kolkata"),
		f("FORMAT_TIMESTAMP", "NULL", ts1, "yyyy", nil),
		f("TIMESTAMPTOSTRING", "2021-04-01T09:00:00Z", int64(1617267600000), "yyyy-MM-dd'T'HH:mm:ssX", "UTC"),
		f("TIMESTAMPTOSTRING", "2021-04-01 02:00", int64(1617267600000), "yyyy-MM-dd HH:mm", "PST"),
		f("TIMESTAMPTOSTRING", "2021-04-01", int64(tsInstant), "yyyy-MM-dd"),
		f("PARSE_TIMESTAMP", "2021-06-30T12:18:39.446", "2021-06-31 12:18:39.446", "yyyy-MM-dd HH:mm:ss.SSS"),
		f("PARSE_TIMESTAMP", "2021-04-01T16:00:00.000", "2021-04-01 12:00", "yyyy-MM-dd HH:mm", "America/New_York"),
		f("PARSE_TIMESTAMP", "NULL", "not a date", "yyyy-MM-dd"),
		f("STRINGTOTIMESTAMP", "1617267600000", "2021-04-01 05:00:00", "yyyy-MM-dd HH:mm:ss", "America/New_York"),
		f("STRINGTOTIMESTAMP", "1617267600000", "2021-04-01T09:00:00Z", "yyyy-MM-dd'T'HH:mm:ssX"),
		// Text, the zero offset included, is read ignoring case, as ksqlDB's parser does.
		f("STRINGTOTIMESTAMP", "1617267600000", "2021-04-01T09:00:00z", "yyyy-MM-dd'T'HH:mm:ssX"),
		f("PARSE_DATE", "2021-10-11", "2021-10-11", "yyyy-MM-dd"), f("PARSE_DATE", "2021-10-11", "11/10/21", "dd/MM/yy"),
		f("PARSE_DATE", "NULL", "2021-13-01", "yyyy-MM-dd"),
		f("STRINGTODATE", "18911", "2021-10-11", "yyyy-MM-dd"),
		f("PARSE_TIME", "13:25:00", "13:25", "HH:mm"), f("PARSE_TIME", "13:25:07.5", "01:25:07.500 PM", "hh:mm:ss.SSS a"),
		f("PARSE_TIME", "NULL", "25:00", "HH:mm"),
		f("FORMAT_DATE", "11/10/2021", col("DT"), "dd/MM/yyyy"), f("FORMAT_DATE", "2021-10-11'T'", col("DT"), "yyyy-MM-dd'''T'''"),
		f("DATETOSTRING", "2021-10-11", 18911, "yyyy-MM-dd"),
		f("FORMAT_TIME", "01:25 PM", col("TM"), "hh:mm a"), f("FORMAT_TIME", "13:25:00.000", col("TM"), "HH:mm:ss.SSS"),
		f("CONVERT_TZ", "2021-04-01T02:00:00.000", ts1, "UTC", "America/Los_Angeles"),
		f("CONVERT_TZ", "2021-04-01T14:30:00.000", ts1, "UTC", "+05:30"),
		f("CONVERT_TZ", "2021-04-01T15:00:00.000", ts1, "America/New_York", "Europe/Berlin"),
		f("DATEADD", "2021-10-14", "DAYS", 3, col("DT")), f("DATEADD", "2021-10-12", "hours", 24, col("DT")),
		f("DATEADD", "2021-10-11", "HOURS", 23, col("DT")), f("DATEADD", "NULL", "DAYS", nil, col("DT")),
		f("DATESUB", "2021-10-01", "DAY", 10, col("DT")),
		f("TIMEADD", "01:00:00", "HOURS", 2, tm("23:00")), f("TIMEADD", "13:25:00.001", "MILLISECONDS", 1, col("TM")),
		f("TIMEADD", "13:25:00", "DAYS", 5, col("TM")),
		f("TIMESUB", "23:40:00", "MINUTES", 30, tm("00:10")), f("TIMESUB", "13:24:59", "SECONDS", 86401, col("TM")),
		f("TIMESTAMPADD", "2021-04-01T09:00:10.000", "SECONDS", 10, ts1), f("TIMESTAMPADD", "2021-04-01T09:00:00.001", "MICROSECONDS", int64(1500), ts1),
		f("TIMESTAMPSUB", "2021-04-01T08:59:59.999", "MILLISECONDS", 1, ts1), f("TIMESTAMPSUB", "2021-03-31T09:00:00.000", "DAYS", 1, ts1),
	}
}

func jsonCases() []fnCase {
	doc := `{"log":{"cloud":"gcp","app":"ks","instance":4,"tags":["a","b"],"n":null}}`
	return []fnCase{
		f("EXTRACTJSONFIELD", "gcp", doc, "$.log.cloud"), f("EXTRACTJSONFIELD", "4", doc, "$.log.instance"),
		f("EXTRACTJSONFIELD", `["a","b"]`, doc, "$.log.tags"), f("EXTRACTJSONFIELD", "b", doc, "$.log.tags[1]"),
		f("EXTRACTJSONFIELD", "gcp", doc, "$['log'][\"cloud\"]"), f("EXTRACTJSONFIELD", "NULL", doc, "$.log.missing"),
		f("EXTRACTJSONFIELD", "NULL", doc, "$.log.tags[5]"), f("EXTRACTJSONFIELD", "NULL", doc, "$.log.n"),
		f("EXTRACTJSONFIELD", "NULL", "not json", "$.a"), f("EXTRACTJSONFIELD", "NULL", nil, "$.a"),
		f("EXTRACTJSONFIELD", doc, doc, "$"), f("EXTRACTJSONFIELD", "1", `[1,2]`, "$[0]"),
		f("IS_JSON_STRING", "true", "[1, 2, 3]"), f("IS_JSON_STRING", "true", "{}"), f("IS_JSON_STRING", "true", "1"),
		f("IS_JSON_STRING", "true", `"abc"`), f("IS_JSON_STRING", "true", "null"), f("IS_JSON_STRING", "false", ""),
		f("IS_JSON_STRING", "false", "abc"), f("IS_JSON_STRING", "false", nil),
		f("JSON_ARRAY_LENGTH", "3", "[1, [1, [2]], 3]"), f("JSON_ARRAY_LENGTH", "0", "[]"), f("JSON_ARRAY_LENGTH", "NULL", "{}"),
		f("JSON_ARRAY_LENGTH", "NULL", "123"), f("JSON_ARRAY_LENGTH", "NULL", "abc"), f("JSON_ARRAY_LENGTH", "NULL", nil),
		f("JSON_ARRAY_CONTAINS", "true", "[1, 2, 3]", 3), f("JSON_ARRAY_CONTAINS", "false", "[1, 2, 3]", 4),
		f("JSON_ARRAY_CONTAINS", "true", `["a", "b"]`, "b"), f("JSON_ARRAY_CONTAINS", "true", "[true]", true),
		f("JSON_ARRAY_CONTAINS", "true", "[1.5]", 1.5), f("JSON_ARRAY_CONTAINS", "false", "{}", 1), f("JSON_ARRAY_CONTAINS", "false", "x", 1),
		f("JSON_CONCAT", `{"a":1,"b":2}`, `{"a": 1}`, `{"b": 2}`), f("JSON_CONCAT", `{"a":{"3":4}}`, `{"a": {"5": 6}}`, `{"a": {"3": 4}}`),
		f("JSON_CONCAT", `{}`, `{}`, `{}`), f("JSON_CONCAT", `[1,2,3,4]`, `[1, 2]`, `[3, 4]`),
		f("JSON_CONCAT", `[1,[2],[[3]],[[[4]]]]`, `[1, [2]]`, `[[[3]], [[[4]]]]`), f("JSON_CONCAT", `[null,null]`, "null", "null"),
		f("JSON_CONCAT", `[1,2,{"a":1}]`, `[1, 2]`, `{"a": 1}`), f("JSON_CONCAT", `[1,2]`, "1", "2"), f("JSON_CONCAT", `[]`, "[]", "[]"),
		f("JSON_CONCAT", "NULL", "abc", "[1]"), f("JSON_CONCAT", "NULL", nil, "[1]"),
		f("JSON_KEYS", "[a, b, d]", `{"a": "abc", "b": { "c": "a" }, "d": 1}`), f("JSON_KEYS", "[]", "{}"),
		f("JSON_KEYS", "NULL", "[]"), f("JSON_KEYS", "NULL", ""),
		f("JSON_RECORDS", `{a="abc", b={"c":"a"}, d=1}`, `{"a": "abc", "b": { "c": "a" }, "d": 1}`), f("JSON_RECORDS", "{}", "{}"),
		f("JSON_RECORDS", "NULL", "[]"),
		f("JSON_ITEMS", `[1, {"a":2}, "x"]`, `[1, {"a": 2}, "x"]`), f("JSON_ITEMS", "NULL", "{}"),
		f("TO_JSON_STRING", "1", 1), f("TO_JSON_STRING", "15.3", 15.3), f("TO_JSON_STRING", `"abc"`, "abc"), f("TO_JSON_STRING", "true", true),
		f("TO_JSON_STRING", `"2021-10-11"`, col("DT")), f("TO_JSON_STRING", `"13:25"`, col("TM")),
		f("TO_JSON_STRING", `"2021-04-01T09:05:07.089"`, col("TS")), f("TO_JSON_STRING", "null", nil), f("TO_JSON_STRING", "12.34", col("DEC")),
		f("TO_JSON_STRING", "[1,2,3]", arr(1, 2, 3)), f("TO_JSON_STRING", `{"ID":1,"NAME":"A"}`, st("ID", 1, "NAME", "A")),
		f("TO_JSON_STRING", `{"c":2,"d":4}`, mp("c", 2, "d", 4)), f("TO_JSON_STRING", `"Sw=="`, col("BY")),
		f("TO_JSON_STRING", `[{"JSON_KEY":1,"JSON_VALUE":{"c":2,"d":3}}]`, arr(st("JSON_KEY", 1, "JSON_VALUE", mp("c", 2, "d", 3)))),
	}
}

func collectionCases() []fnCase {
	nullArr := cast(nil, tArrInt)
	return []fnCase{
		f("ARRAY_LENGTH", "3", col("ARR")), f("ARRAY_LENGTH", "0", call("SLICE", col("ARR"), 2, 1)), f("ARRAY_LENGTH", "NULL", nullArr),
		f("ARRAY_CONTAINS", "true", col("ARR"), 30), f("ARRAY_CONTAINS", "false", col("ARR"), 5), f("ARRAY_CONTAINS", "true", arr(1, nil), nil),
		f("ARRAY_CONTAINS", "false", nullArr, 1), f("ARRAY_CONTAINS", "true", col("ARR"), int64(10)), f("ARRAY_CONTAINS", "true", arr("a", "b"), "b"),
		f("ARRAY_CONCAT", "[1, 2, 3, 1, 2, 4, 1]", arr(1, 2, 3, 1, 2), arr(4, 1)), f("ARRAY_CONCAT", "[1]", nullArr, arr(1)),
		f("ARRAY_CONCAT", "[apple, apple, null, cherry, cherry]", arr("apple", "apple", nil, "cherry"), arr("cherry")),
		f("ARRAY_CONCAT", "NULL", nullArr, nullArr), f("ARRAY_CONCAT", "[1, 2]", arr(1), arr(int64(2))),
		f("ARRAY_DISTINCT", "[1, 2, 3]", arr(1, 1, 2, 3, 1, 2)), f("ARRAY_DISTINCT", "[apple, null, cherry]", arr("apple", "apple", nil, "cherry", nil)),
		f("ARRAY_DISTINCT", "NULL", nullArr), f("ARRAY_DISTINCT", "[[1], [2]]", arr(arr(1), arr(2), arr(1))),
		f("ARRAY_DISTINCT", "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]", call("TRANSFORM", call("GENERATE_SERIES", 0, 39), NewLambda([]string{"X"}, []types.Type{types.IntType}, op2(OpMod, NewLambdaVar(0, "X", types.IntType), 20)))),
		f("ARRAY_DISTINCT", "[0, 1, 2, 3, 4]", call("TRANSFORM", call("GENERATE_SERIES", 0, 39), NewLambda([]string{"X"}, []types.Type{types.IntType}, cast(op2(OpMod, NewLambdaVar(0, "X", types.IntType), 5), types.StringType)))),
		f("ARRAY_DISTINCT", "[[0], [1]]", call("TRANSFORM", call("GENERATE_SERIES", 0, 39), NewLambda([]string{"X"}, []types.Type{types.IntType}, arr(op2(OpMod, NewLambdaVar(0, "X", types.IntType), 2))))),
		f("ARRAY_DISTINCT", "[NaN, 1.0]", arr(math.NaN(), 1.0, math.NaN())),
		f("ARRAY_SORT", "[-1.0, -0.0, 0.0, 2.5, NaN]", arr(2.5, math.NaN(), math.Copysign(0, -1), 0.0, -1.0)),
		f("ARRAY_EXCEPT", "[1]", arr(1, 2, 3, 1, 2), arr(2, 3)), f("ARRAY_EXCEPT", "[apple, null]", arr("apple", "apple", nil, "cherry"), arr("cherry")),
		f("ARRAY_EXCEPT", "NULL", nullArr, arr(1)),
		f("ARRAY_INTERSECT", "[1, 2]", arr(1, 2, 3, 1, 2), arr(2, 1)), f("ARRAY_INTERSECT", "[apple]", arr("apple", "apple", nil, "cherry"), arr("apple")),
		f("ARRAY_UNION", "[1, 2, 3, 4]", arr(1, 2, 3, 1, 2), arr(4, 1)), f("ARRAY_UNION", "[apple, null, cherry]", arr("apple", "apple", nil, "cherry"), arr("cherry")),
		f("ARRAY_UNION", "NULL", nullArr, arr(1)),
		f("ARRAY_JOIN", "10,20,30", col("ARR")), f("ARRAY_JOIN", "x-y", col("SA"), "-"), f("ARRAY_JOIN", "1.5|null", arr(1.5, nil), "|"),
		f("ARRAY_JOIN", "NULL", nullArr),
		f("ARRAY_MAX", "2", arr(-1, 2, nil, 0)), f("ARRAY_MAX", "true", arr(false, nil, true)), f("ARRAY_MAX", "baz", arr("Foo", "Bar", nil, "baz")),
		f("ARRAY_MAX", "NULL", arr(cast(nil, types.IntType))), f("ARRAY_MAX", "NULL", nullArr),
		f("ARRAY_MIN", "-1", arr(-1, 2, nil, 0)), f("ARRAY_MIN", "false", arr(false, nil, true)), f("ARRAY_MIN", "Bar", arr("Foo", "Bar", nil, "baz")),
		f("ARRAY_REMOVE", "[1, 3, 1]", arr(1, 2, 3, 2, 1), 2), f("ARRAY_REMOVE", "[null, true, true]", arr(false, nil, true, true), false),
		f("ARRAY_REMOVE", "[Foo, Bar, baz]", arr("Foo", "Bar", nil, "baz"), nil), f("ARRAY_REMOVE", "NULL", nullArr, 1),
		f("ARRAY_SORT", "[-1, 0, 2, null]", arr(-1, 2, nil, 0)), f("ARRAY_SORT", "[2, 0, -1, null]", arr(-1, 2, nil, 0), "DESC"),
		f("ARRAY_SORT", "[false, true, null]", arr(false, nil, true)), f("ARRAY_SORT", "[Bar, Foo, baz, null]", arr("Foo", "Bar", nil, "baz")),
		f("ARRAY_SORT", "[1.50, 2.25]", arr(dec("2.25"), dec("1.5")), "asc"), f("ARRAY_SORT", "NULL", nullArr),
		f("SLICE", "[20, 30]", col("ARR"), 2, 3), f("SLICE", "[10, 20, 30]", col("ARR"), 1, 3), f("SLICE", "NULL", col("ARR"), 0, 2),
		f("SLICE", "NULL", col("ARR"), 3, 10), f("SLICE", "[]", col("ARR"), 2, 1), f("SLICE", "[20, 30]", col("ARR"), 2, nil),
		f("ENTRIES", "[Struct{K=a,V=1}, Struct{K=b,V=2}]", mp("b", 2, "a", 1), true),
		f("ENTRIES", "[Struct{K=b,V=2}, Struct{K=a,V=1}]", mp("b", 2, "a", 1), false), f("ENTRIES", "NULL", cast(nil, tMapSI), true),
		f("MAP_KEYS", "[apple, banana]", mp("apple", 10, "banana", 20)), f("MAP_KEYS", "NULL", cast(nil, tMapSI)),
		f("MAP_VALUES", "[10, 20]", mp("apple", 10, "banana", 20)),
		f("MAP_UNION", "{apple=10, banana=20, cherry=99}", mp("apple", 10, "banana", 20), mp("cherry", 99)),
		f("MAP_UNION", "{apple=50, banana=20}", mp("apple", 10, "banana", 20), mp("apple", 50)),
		f("MAP_UNION", "{a=1, b=2}", cast(nil, tMapSI), col("M")), f("MAP_UNION", "NULL", cast(nil, tMapSI), cast(nil, tMapSI)),
		f("AS_MAP", "{a=1, b=2}", arr("a", "b"), arr(1, 2)), f("AS_MAP", "{a=1, b=null}", arr("a", "b"), arr(1)),
		f("AS_MAP", "NULL", cast(nil, tArrStr), arr(1)),
		f("COALESCE", "2", nil, 2, 3), f("COALESCE", "2.5", nil, 2.5, 1), f("COALESCE", "1.0", col("N"), 1, 2.5),
		f("COALESCE", "NULL", col("N")), f("COALESCE", "[10, 20, 30]", cast(nil, tArrInt), col("ARR")),
		f("IFNULL", "x", strNull, "x"), f("IFNULL", "ab", col("S"), "x"), f("IFNULL", "7", col("N"), int64(7)),
		f("NULLIF", "NULL", 1, 1), f("NULLIF", "1", 1, 2), f("NULLIF", "NULL", dec("1.0"), 1), f("NULLIF", "NULL", nil, 1),
		f("AS_VALUE", "5", 5), f("AS_VALUE", "ab", col("S")),
	}
}

func urlHashCases() []fnCase {
	return []fnCase{
		f("URL_DECODE_PARAM", "url encoded", "url%20encoded"), f("URL_DECODE_PARAM", "a b", "a+b"), f("URL_DECODE_PARAM", "NULL", "%zz"),
		f("URL_ENCODE_PARAM", "url+encoded", "url encoded"), f("URL_ENCODE_PARAM", "a%26b%3Dc%2F%C3%A9", "a&b=c/é"),
		f("URL_EXTRACT_FRAGMENT", "frag", "http://test.com#frag"), f("URL_EXTRACT_FRAGMENT", "frag space", "http://test.com#frag%20space"),
		f("URL_EXTRACT_FRAGMENT", "NULL", "http://test.com"), f("URL_EXTRACT_FRAGMENT", "NULL", "http://te st.com#x"),
		f("URL_EXTRACT_HOST", "test.com", "http://test.com:8080/path"), f("URL_EXTRACT_HOST", "NULL", "/relative/path"),
		f("URL_EXTRACT_PARAMETER", "c d", "http://test.com?a%20b=c%20d", "a b"), f("URL_EXTRACT_PARAMETER", "bar", "http://test.com?a=foo&b=bar", "b"),
		f("URL_EXTRACT_PARAMETER", "NULL", "http://test.com?a=foo", "b"), f("URL_EXTRACT_PARAMETER", "NULL", "http://test.com?a&b=1", "a"),
		f("URL_EXTRACT_PATH", "/path/to", "http://test.com/path/to#a"), f("URL_EXTRACT_PATH", "", "http://test.com"),
		f("URL_EXTRACT_PATH", "/a b", "http://test.com/a%20b"),
		f("URL_EXTRACT_PORT", "8080", "http://localhost:8080/path"), f("URL_EXTRACT_PORT", "NULL", "http://localhost/path"),
		f("URL_EXTRACT_PROTOCOL", "http", "http://test.com?a=foo&b=bar"), f("URL_EXTRACT_PROTOCOL", "NULL", "test.com"),
		f("URL_EXTRACT_QUERY", "a=foo bar&b=baz", "http://test.com?a=foo%20bar&b=baz"), f("URL_EXTRACT_QUERY", "NULL", "http://test.com"),
		f("MD5", "5d41402abc4b2a76b9719d911017c592", "hello"), f("MD5", "d41d8cd98f00b204e9800998ecf8427e", ""), f("MD5", "NULL", nil),
		f("ENCODE", "K", "4b", "hex", "utf8"), f("ENCODE", "Sw==", "K", "utf8", "base64"), f("ENCODE", "4b", "Sw==", "base64", "hex"),
		f("ENCODE", "NULL", "zz", "hex", "utf8"), f("ENCODE", "NULL", "b", "hex", "ascii"), f("ENCODE", "\x0b", "0xb", "hex", "ascii"), f("ENCODE", "Example!", "X'4578616d706C6521'", "hex", "utf8"), f("ENCODE", "??", "Ελ", "ascii", "utf8"), f("ENCODE", "c3a9", "é", "UTF8", "HEX"),
		f("ENCODE", "NULL", nil, "hex", "utf8"), f("ENCODE", "NULL", "a", "hex", "rot13"), f("ENCODE", "NULL", "a", "null", "utf8"),
		f("TO_BYTES", "Sw==", "4b", "hex"), f("TO_BYTES", "YWJj", "abc", "utf8"), f("TO_BYTES", "NULL", "%%", "base64"),
		f("FROM_BYTES", "616263", call("TO_BYTES", "abc", "utf8"), "hex"), f("FROM_BYTES", "0AFF", call("TO_BYTES", "0aff", "hex"), "hex"), f("FROM_BYTES", "K", col("BY"), "ascii"),
		f("FROM_BYTES", "Sw==", col("BY"), "base64"),
		f("INT_FROM_BYTES", "2021", call("TO_BYTES", "AAAH5Q==", "base64")), f("INT_FROM_BYTES", "-452526080", call("TO_BYTES", "AAAH5Q==", "base64"), "LITTLE_ENDIAN"),
		f("INT_FROM_BYTES", "NULL", col("BY")), f("INT_FROM_BYTES", "NULL", call("TO_BYTES", "AAAH5Q==", "base64"), "MIDDLE_ENDIAN"),
		f("BIGINT_FROM_BYTES", "5000000000", call("TO_BYTES", "AAAAASoF8gA=", "base64"), "BIG_ENDIAN"),
		f("DOUBLE_FROM_BYTES", "532.8738323", call("TO_BYTES", "QICm/ZvJ9YI=", "base64")),
	}
}

// sqlNameCases are the functions under Flink's and Postgres's names
// (functions_sql.go).
func sqlNameCases() []fnCase {
	ts1 := ts("2021-04-01T09:05:07Z") // a Thursday
	return []fnCase{
		f("UPPER", "ÉTÉ", "été"), f("LOWER", "abc", "ABC"), f("LOWER", "NULL", strNull),
		f("CHAR_LENGTH", "3", "été"), f("CHARACTER_LENGTH", "0", ""), f("CHAR_LENGTH", "NULL", strNull),
		f("DATE_FORMAT", "2021-04-01", ts1, "yyyy-MM-dd"), f("DATE_FORMAT", "09:05", ts1, "HH:mm"),
		f("DATE_FORMAT", "NULL", cast(nil, types.TimestampType), "HH:mm"),
		f("YEAR", "2021", ts1), f("QUARTER", "2", ts1), f("MONTH", "4", ts1), f("DAYOFMONTH", "1", ts1),
		f("DAYOFYEAR", "91", ts1), f("DAYOFWEEK", "5", ts1), f("HOUR", "9", ts1), f("MINUTE", "5", ts1),
		f("SECOND", "7", ts1), f("YEAR", "2021", col("DT")), f("DAYOFMONTH", "11", col("DT")), f("HOUR", "NULL", cast(nil, types.TimestampType)),
		f("SPLIT_INDEX", "c", "a/b/c", "/", 2), f("SPLIT_INDEX", "a", "a/b/c", "/", 0), f("SPLIT_INDEX", "NULL", "a/b/c", "/", 3),
		f("SPLIT_INDEX", "NULL", "a/b/c", "/", -1), f("SPLIT_INDEX", "", "a//c", "/", 1), f("SPLIT_INDEX", "b", "a::b", "::", 1),
		f("SPLIT_INDEX", "NULL", "", "/", 0), f("SPLIT_INDEX", "y", "x y", "", 1), f("SPLIT_INDEX", "NULL", strNull, "/", 0),
	}
}

// TestFunctions runs every family's cases and checks that every function
// has at least one.
func TestFunctionCases(t *testing.T) {
	tested := map[string]bool{}
	for name, cases := range map[string][]fnCase{
		"string": stringCases(), "math": mathCases(), "time": timeCases(), "json": jsonCases(),
		"collection": collectionCases(), "url and hash": urlHashCases(), "flink and postgres names": sqlNameCases(),
	} {
		t.Run(name, func(t *testing.T) { runFnCases(t, cases, tested) })
	}
	for _, name := range []string{"TRANSFORM", "FILTER", "REDUCE"} {
		tested[name] = true // lambda_test.go
	}
	tested["UUID"], tested["RANDOM"] = true, true // below
	var missing []string
	for _, fn := range Functions() {
		if !tested[fn.Name] {
			missing = append(missing, fn.Name)
		}
		if fn.Description == "" || len(fn.Signatures) == 0 {
			t.Errorf("%s has no description or signatures", fn.Name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("functions without test cases: %v", missing)
	}
	if n := len(Functions()); n < 90 {
		t.Errorf("only %d functions", n)
	}
}

func TestNonDeterministic(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	ev, _ := Compile(call("UUID"))
	a, _ := ev(xrow)
	first := string(a.B)
	b, _ := ev(xrow)
	if !uuid.MatchString(first) || !uuid.MatchString(string(b.B)) || first == string(b.B) {
		t.Errorf("UUID() gave %s then %s", first, b.B)
	}
	ev, _ = Compile(call("RANDOM"))
	for i := 0; i < 100; i++ {
		if d, _ := ev(xrow); d.F < 0 || d.F >= 1 {
			t.Fatalf("RANDOM() = %v", d.F)
		}
	}
	for _, e := range []Expr{call("UNIX_TIMESTAMP"), call("UNIX_DATE")} {
		ev, _ := Compile(e)
		d, _ := ev(xrow)
		now := time.Now().UnixMilli()
		if e.(*Call).Fn.Name == "UNIX_DATE" {
			now /= msPerDay
		}
		if d.I < now-86400000 || d.I > now+1 {
			t.Errorf("%s = %d, now %d", e, d.I, now)
		}
	}
	ev, _ = Compile(call("GEO_DISTANCE", 37.4439, -122.1663, 51.5072, -0.1276))
	if d, _ := ev(xrow); math.Abs(d.F-8634.6) > 1 {
		t.Errorf("GEO_DISTANCE Palo Alto to London = %v km", d.F)
	}
	ev, _ = Compile(call("GEO_DISTANCE", 37.4439, -122.1663, 51.5072, -0.1276, "mi"))
	if d, _ := ev(xrow); math.Abs(d.F-5365.3) > 1 {
		t.Errorf("GEO_DISTANCE in miles = %v", d.F)
	}
}

// TestFunctionTypeErrors checks that Check rejects wrong argument types
// with a *TypeError naming the function and the types.
func TestFunctionTypeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args []any
	}{
		{"UPPER", []any{1}}, {"CHAR_LENGTH", []any{[]byte("x")}}, {"DATE_FORMAT", []any{"x", "yyyy"}}, {"DATE_FORMAT", []any{col("TS"), "%Y-%m-%d"}},
		{"HOUR", []any{col("DT")}}, {"YEAR", []any{"2021"}}, {"SPLIT_INDEX", []any{"a", "/"}}, {"SPLIT_INDEX", []any{"a", "/", "1"}},
		{"UCASE", []any{1}}, {"UCASE", []any{"a", "b"}}, {"LCASE", []any{true}}, {"LEN", []any{1}},
		{"CONCAT", []any{"a", 1}}, {"CONCAT", []any{"a", []byte("b")}}, {"CONCAT", nil}, {"CONCAT_WS", []any{",", 1}},
		{"TRIM", []any{1}}, {"SUBSTRING", []any{"a", "b"}}, {"SUBSTRING", []any{"a"}}, {"SUBSTRING", []any{1, 1}},
		{"REPLACE", []any{"a", "b"}}, {"REGEXP_REPLACE", []any{"a", 1, "b"}}, {"REGEXP_EXTRACT", []any{1, "a"}},
		{"REGEXP_EXTRACT_ALL", []any{"a", "b", "c"}}, {"REGEXP_SPLIT_TO_ARRAY", []any{"a", 1}}, {"SPLIT", []any{"a", []byte(",")}},
		{"SPLIT_TO_MAP", []any{"a", ";"}}, {"INSTR", []any{"a", 1}}, {"LPAD", []any{"a", "b", "c"}}, {"RPAD", []any{"a", 1, []byte("x")}},
		{"INITCAP", []any{1}}, {"CHR", []any{1.5}}, {"MASK", []any{"a", "b"}}, {"MASK_LEFT", []any{"a", "b"}}, {"MASK_RIGHT", []any{1, 1}},
		{"MASK_KEEP_LEFT", []any{"a"}}, {"MASK_KEEP_RIGHT", []any{"a", 1, "x"}}, {"UUID", []any{1}}, {"ELT", []any{"a", "b"}},
		{"FIELD", []any{1, 2}}, {"ABS", []any{"a"}}, {"CEIL", []any{true}}, {"FLOOR", []any{"1"}}, {"ROUND", []any{"1"}},
		{"ROUND", []any{1.5, 1.5}}, {"TRUNC", []any{"a"}}, {"SIGN", []any{"a"}}, {"SQRT", []any{"4"}}, {"LOG", []any{1, 2, 3}},
		{"POWER", []any{2}}, {"ATAN2", []any{"a", 1}}, {"PI", []any{1}}, {"RANDOM", []any{1}}, {"GREATEST", []any{1, "a"}},
		{"GREATEST", []any{true, false}}, {"LEAST", []any{arr(1), arr(2)}}, {"GREATEST", nil}, {"GENERATE_SERIES", []any{1.5, 2}},
		{"GENERATE_SERIES", []any{1}}, {"GEO_DISTANCE", []any{1, 2, 3}}, {"UNIX_TIMESTAMP", []any{int64(1)}}, {"UNIX_DATE", []any{1}},
		{"FROM_UNIXTIME", []any{"x"}}, {"FROM_DAYS", []any{date("2021-01-01")}}, {"FORMAT_DATE", []any{col("TS"), "yyyy"}},
		{"FORMAT_TIME", []any{col("DT"), "HH"}}, {"FORMAT_TIMESTAMP", []any{int64(1), "yyyy"}}, {"TIMESTAMPTOSTRING", []any{col("TS"), "yyyy"}},
		{"DATETOSTRING", []any{col("DT"), "yyyy"}}, {"PARSE_DATE", []any{1, "yyyy"}}, {"PARSE_TIME", []any{"1"}},
		{"PARSE_TIMESTAMP", []any{"1", 1}}, {"STRINGTODATE", []any{"x", "y", "z"}}, {"STRINGTOTIMESTAMP", []any{1, "y"}},
		{"CONVERT_TZ", []any{int64(1), "UTC", "UTC"}}, {"DATEADD", []any{"DAYS", 1, col("TS")}}, {"DATESUB", []any{1, 1, col("DT")}},
		{"TIMEADD", []any{"HOURS", 1.5, col("TM")}}, {"TIMESUB", []any{"HOURS", 1, col("DT")}}, {"TIMESTAMPADD", []any{"DAYS", 1, col("DT")}},
		{"TIMESTAMPSUB", []any{"DAYS", "1", col("TS")}}, {"EXTRACTJSONFIELD", []any{1, "$.a"}}, {"IS_JSON_STRING", []any{1}},
		{"JSON_ARRAY_LENGTH", []any{arr(1)}}, {"JSON_ARRAY_CONTAINS", []any{"[]", arr(1)}}, {"JSON_CONCAT", []any{"{}", 1}},
		{"JSON_KEYS", []any{1}}, {"JSON_RECORDS", []any{true}}, {"JSON_ITEMS", []any{1}}, {"TO_JSON_STRING", []any{1, 2}},
		{"ARRAY_LENGTH", []any{"a"}}, {"ARRAY_LENGTH", []any{nil}}, {"ARRAY_CONTAINS", []any{arr(1), "a"}}, {"ARRAY_CONCAT", []any{arr(1), arr("a")}},
		{"ARRAY_DISTINCT", []any{1}}, {"ARRAY_EXCEPT", []any{arr(1), 1}}, {"ARRAY_INTERSECT", []any{arr(1)}}, {"ARRAY_UNION", []any{arr(1), mp("a", 1)}},
		{"ARRAY_JOIN", []any{arr(arr(1))}}, {"ARRAY_JOIN", []any{arr(1), 1}}, {"ARRAY_MAX", []any{arr(mp("a", 1))}}, {"ARRAY_MIN", []any{1}},
		{"ARRAY_REMOVE", []any{arr(1), "x"}}, {"ARRAY_SORT", []any{arr(1), 1}}, {"SLICE", []any{arr(1), "a", 1}}, {"ENTRIES", []any{mp("a", 1)}},
		{"ENTRIES", []any{arr(1), true}}, {"MAP_KEYS", []any{arr(1)}}, {"MAP_VALUES", []any{1}}, {"MAP_UNION", []any{mp("a", 1), mp("a", "x")}},
		{"AS_MAP", []any{arr(arr(1)), arr(1)}}, {"AS_MAP", []any{arr(1), 1}}, {"COALESCE", []any{1, "a"}}, {"COALESCE", nil},
		{"IFNULL", []any{1}}, {"IFNULL", []any{1, "a"}}, {"NULLIF", []any{arr(1), 1}}, {"AS_VALUE", []any{1, 2}},
		{"URL_DECODE_PARAM", []any{1}}, {"URL_ENCODE_PARAM", []any{true}}, {"URL_EXTRACT_FRAGMENT", []any{1}}, {"URL_EXTRACT_HOST", []any{1}},
		{"URL_EXTRACT_PARAMETER", []any{"a"}}, {"URL_EXTRACT_PATH", []any{1}}, {"URL_EXTRACT_PORT", []any{1}}, {"URL_EXTRACT_PROTOCOL", []any{1}},
		{"URL_EXTRACT_QUERY", []any{1}}, {"MD5", []any{[]byte("x")}}, {"ENCODE", []any{"a", "hex"}}, {"TO_BYTES", []any{[]byte("a"), "hex"}},
		{"FROM_BYTES", []any{"a", "hex"}}, {"INT_FROM_BYTES", []any{"a"}}, {"BIGINT_FROM_BYTES", []any{[]byte("a"), 1}}, {"DOUBLE_FROM_BYTES", []any{1}},
		{"TRANSFORM", []any{1, 2}}, {"FILTER", []any{arr(1)}}, {"REDUCE", []any{arr(1), 1}},
	} {
		err := callErr(c.name, c.args...)
		if !isTypeError(err, c.name) {
			t.Errorf("%s%v: %v, want a type error naming the function", c.name, c.args, err)
		}
	}
	if err := callErr("UCASE", 1); err == nil || err.Error() != "Function 'UCASE' does not accept parameters (INTEGER)." {
		t.Errorf("UCASE(1): %v", err)
	}
	if err := callErr("SUBSTRING", nil, "x"); err == nil || err.Error() != "Function 'SUBSTRING' does not accept parameters (NULL, STRING)." {
		t.Errorf("SUBSTRING(NULL, 'x'): %v", err)
	}
}

// TestFunctionsRejectStructs calls every function with STRUCT arguments,
// which only the functions that take any type accept.
func TestFunctionsRejectStructs(t *testing.T) {
	niladic := map[string]bool{"PI": true, "RANDOM": true, "UUID": true, "UNIX_DATE": true, "UNIX_TIMESTAMP": true}
	anyType := map[string]bool{"COALESCE": true, "IFNULL": true, "NULLIF": true, "AS_VALUE": true, "TO_JSON_STRING": true}
	s := tStruct
	for _, fn := range Functions() {
		for n := 0; n <= 6; n++ {
			args := make([]types.Type, n)
			for i := range args {
				args[i] = s
			}
			_, err := fn.Check(args)
			if n == 0 && niladic[fn.Name] {
				continue
			}
			if anyType[fn.Name] && (n == 1 && fn.Name != "IFNULL" && fn.Name != "NULLIF" || n == 2 && fn.Name != "AS_VALUE" && fn.Name != "TO_JSON_STRING" || n > 2 && fn.Name == "COALESCE") {
				if err != nil {
					t.Errorf("%s of %d STRUCTs: %v", fn.Name, n, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s accepted %d STRUCT arguments", fn.Name, n)
			} else if !isTypeError(err, fn.Name) {
				t.Errorf("%s: error %v does not name the function", fn.Name, err)
			}
		}
	}
}

// TestConstantArgumentErrors checks the statement-time validation of
// constant patterns, zones, units and encodings.
func TestConstantArgumentErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args []any
		word string
	}{
		{"REGEXP_REPLACE", []any{"a", "(", "b"}, "regular expression"},
		{"REGEXP_EXTRACT", []any{`(a)\1`, "aa"}, "regular expression"},
		{"REGEXP_EXTRACT_ALL", []any{"[", "a"}, "regular expression"},
		{"REGEXP_SPLIT_TO_ARRAY", []any{"a", "*"}, "regular expression"},
		{"FORMAT_TIMESTAMP", []any{col("TS"), "yyyy-MM-ddTHH:mm"}, "unknown pattern letter"},
		{"FORMAT_TIMESTAMP", []any{col("TS"), "yyyy", "Mars/Olympus"}, "time zone"},
		{"PARSE_DATE", []any{"x", "HHH"}, "pattern letters"},
		{"PARSE_TIMESTAMP", []any{"x", "'oops"}, "quote"},
		{"FORMAT_DATE", []any{col("DT"), "{yyyy}"}, "reserved"},
		{"CONVERT_TZ", []any{col("TS"), "UTC", "Nowhere/Special"}, "time zone"},
		{"DATEADD", []any{"FORTNIGHTS", 1, col("DT")}, "time unit"},
		{"TIMESTAMPSUB", []any{"YEARS", int64(1), col("TS")}, "time unit"},
		{"TO_BYTES", []any{"a", "latin1"}, "encoding"},
		{"FROM_BYTES", []any{col("BY"), "ebcdic"}, "encoding"},
		{"EXTRACTJSONFIELD", []any{"{}", "a.b"}, "$"},
		{"EXTRACTJSONFIELD", []any{"{}", "$.a[x]"}, "index"},
		{"MASK", []any{"a", "XX", "x", "n", "-"}, "one character"},
		{"ARRAY_SORT", []any{arr(1), "UP"}, "direction"},
		{"GEO_DISTANCE", []any{1, 2, 3, 4, "furlongs"}, "unit"},
	} {
		if err := callErr(c.name, c.args...); !isTypeError(err, c.word) {
			t.Errorf("%s%v: %v, want a type error about %s", c.name, c.args, err, c.word)
		}
	}
	// the same problems in column values surface when evaluating
	row := types.Row{types.StringDatum("("), types.StringDatum("Mars/Olympus"), types.StringDatum("FORTNIGHTS"), types.StringDatum("DD DD")}
	for i, c := range []struct {
		name string
		args []Expr
	}{
		{"REGEXP_REPLACE", []Expr{lit("a"), &Column{Index: 0, T: types.StringType}, lit("b")}},
		{"FORMAT_TIMESTAMP", []Expr{nil, lit("yyyy"), &Column{Index: 1, T: types.StringType}}},
		{"DATEADD", []Expr{&Column{Index: 2, T: types.StringType}, lit(1), date("2021-01-01")}},
		{"MASK", []Expr{lit("a"), &Column{Index: 3, T: types.StringType}, lit("x"), lit("n"), lit("-")}},
	} {
		if i == 1 {
			c.args[0] = ts("2021-01-01")
		}
		e := must(NewCall(mustLookup(c.name), c.args))
		ev, err := Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ev(row); err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s with a bad column argument: %v", e, err)
		}
	}
	if err := func() error {
		ev, _ := Compile(call("GENERATE_SERIES", 1, 5, 0))
		_, err := ev(xrow)
		return err
	}(); err == nil {
		t.Error("GENERATE_SERIES with step 0 did not fail")
	}
	if err := func() error {
		ev, _ := Compile(call("GENERATE_SERIES", lit(int64(math.MinInt64)), lit(int64(math.MaxInt64))))
		_, err := ev(xrow)
		return err
	}(); err == nil {
		t.Error("GENERATE_SERIES over the whole BIGINT range did not fail")
	}
	if err := func() error {
		ev, _ := Compile(call("LPAD", "x", 1<<30, "y"))
		_, err := ev(xrow)
		return err
	}(); err == nil {
		t.Error("LPAD to a gigabyte did not fail")
	}
	if err := func() error {
		ev, _ := Compile(call("GENERATE_SERIES", 1, 5, -1))
		_, err := ev(xrow)
		return err
	}(); err == nil {
		t.Error("GENERATE_SERIES with a step of the wrong sign did not fail")
	}
}

func TestCubeCombinations(t *testing.T) {
	arr := types.Datum{L: []types.Datum{types.IntDatum(1), types.NullDatum, types.IntDatum(3)}}
	var got []string
	for _, d := range CubeCombinations(arr) {
		got = append(got, types.Text(d, types.Type{Kind: types.Array, Elem: &types.IntType}))
	}
	want := "[null,null,null] [null,null,3] [1,null,null] [1,null,3]"
	if strings.Join(got, " ") != want {
		t.Errorf("CUBE_EXPLODE([1, NULL, 3]) = %s, want %s", strings.Join(got, " "), want)
	}
	if CubeCombinations(types.NullDatum) != nil {
		t.Error("CUBE_EXPLODE(NULL) gave rows")
	}
}

func TestTableFunctions(t *testing.T) {
	tf, ok := LookupTable("explode")
	if !ok || len(TableFunctions()) != 2 || tf.Description == "" {
		t.Fatal("EXPLODE is not registered")
	}
	et, err := tf.Check([]types.Type{tArrStr})
	if err != nil || et.Kind != types.String {
		t.Errorf("EXPLODE(ARRAY<STRING>) produces %s, %v", et, err)
	}
	if _, err := tf.Check([]types.Type{types.IntType}); !isTypeError(err, "EXPLODE") {
		t.Errorf("EXPLODE(INT): %v", err)
	}
	if got := tf.Expand([]types.Datum{xrow[10]}); len(got) != 3 || got[2].I != 30 {
		t.Errorf("EXPLODE(ARR) = %v", got)
	}
	if got := ExplodeElements(types.NullDatum); got != nil {
		t.Errorf("EXPLODE(NULL) = %v", got)
	}
}

func TestFunctionListIsSorted(t *testing.T) {
	fs := Functions()
	names := make([]string, len(fs))
	for i, fn := range fs {
		names[i] = fn.Name
	}
	if !sort.StringsAreSorted(names) {
		t.Error("Functions() is not sorted")
	}
	for _, fn := range fs {
		if _, err := strconv.Atoi(fn.Name); err == nil || strings.ToUpper(fn.Name) != fn.Name {
			t.Errorf("bad function name %q", fn.Name)
		}
	}
}
