package expr

import (
	"bytes"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/types"
)

// Functions under the names Flink SQL and Postgres give them, for the
// statements people bring from those engines (the Nexmark suite among
// them). Where ksqlDB has the same function under another name the
// implementation is shared; where the two dialects give one name
// different signatures (REGEXP_EXTRACT) the binder tells the calls apart
// by their arguments (sql/bind_expr.go), never by a silent NULL.
var sqlFunctions = []*Function{
	caseMapper("UPPER", "Converts a string to upper case (ksqlDB: UCASE).", true),
	caseMapper("LOWER", "Converts a string to lower case (ksqlDB: LCASE).", false),
	charLength("CHAR_LENGTH"),
	charLength("CHARACTER_LENGTH"),
	dateFormat(),
	timePart("YEAR", "the year", true, func(t time.Time) int64 { return int64(t.Year()) }),
	timePart("QUARTER", "the quarter of the year (1 to 4)", true, func(t time.Time) int64 { return int64(t.Month()-1)/3 + 1 }),
	timePart("MONTH", "the month (1 to 12)", true, func(t time.Time) int64 { return int64(t.Month()) }),
	timePart("DAYOFMONTH", "the day of the month (1 to 31)", true, func(t time.Time) int64 { return int64(t.Day()) }),
	timePart("DAYOFYEAR", "the day of the year (1 to 366)", true, func(t time.Time) int64 { return int64(t.YearDay()) }),
	timePart("DAYOFWEEK", "the day of the week (1 = Sunday to 7 = Saturday)", true, func(t time.Time) int64 { return int64(t.Weekday()) + 1 }),
	timePart("HOUR", "the hour of the day (0 to 23)", false, func(t time.Time) int64 { return int64(t.Hour()) }),
	timePart("MINUTE", "the minute of the hour (0 to 59)", false, func(t time.Time) int64 { return int64(t.Minute()) }),
	timePart("SECOND", "the second of the minute (0 to 59)", false, func(t time.Time) int64 { return int64(t.Second()) }),
	{
		Name:        "SPLIT_INDEX",
		Description: "Splits a string at a separator and returns the piece at a zero-based index; NULL when the index is negative or past the last piece (Flink's SPLIT_INDEX; ksqlDB: SPLIT(s, sep)[i + 1]).",
		Signatures:  []string{"SPLIT_INDEX(STRING, STRING separator, INTEGER index) -> STRING"},
		Check:       overloads("SPLIT_INDEX", ov{in: ps(pString, pString, pInt), out: ret(types.StringType)}),
		New: func([]types.Type) Impl {
			return strict(func(a []types.Datum) (types.Datum, error) {
				if piece, ok := splitIndex(a[0].B, a[1].B, a[2].I); ok {
					return types.Datum{B: piece}, nil
				}
				return null()
			})
		},
	},
}

// dateFormat is Flink's DATE_FORMAT(ts, pattern): FORMAT_TIMESTAMP in
// UTC, without a zone argument, refusing MySQL's %-codes.
func dateFormat() *Function {
	f := timestampFormatter("DATE_FORMAT", "Formats a TIMESTAMP with a Java (Flink) pattern such as 'yyyy-MM-dd HH:mm', in UTC (ksqlDB: FORMAT_TIMESTAMP).", types.TimestampType)
	f.Signatures = f.Signatures[:1]
	f.Check = overloads("DATE_FORMAT", ov{in: ps(pTimestamp, pString), out: ret(types.StringType)})
	pattern := f.validate
	f.validate = func(args []Expr) error {
		if b, ok := constArg(args, 1); ok {
			if i := bytes.IndexByte(b, '%'); i >= 0 && i+1 < len(b) && isASCIILetter(b[i+1]) {
				return typeErrorf("function DATE_FORMAT takes Java's (Flink's) pattern letters, e.g. 'yyyy-MM-dd HH:mm:ss', not MySQL's %%-codes: got '%s'", b)
			}
		}
		return pattern(args)
	}
	return f
}

// charLength is Postgres's and Flink's name of LEN over strings.
func charLength(name string) *Function {
	return &Function{
		Name:        name,
		Description: "Returns the number of characters in a string (ksqlDB: LEN).",
		Signatures:  []string{name + "(STRING) -> INTEGER"},
		Check:       overloads(name, ov{in: ps(pString), out: ret(types.IntType)}),
		New:         func([]types.Type) Impl { return runeCount() },
	}
}

// timePart is one of Flink's YEAR, MONTH, …, SECOND: a field of a
// TIMESTAMP (and, for the date fields, of a DATE) in UTC, as BIGINT.
func timePart(name, what string, date bool, part func(time.Time) int64) *Function {
	sigs := []string{name + "(TIMESTAMP) -> BIGINT"}
	ovs := []ov{{in: ps(pTimestamp), out: ret(types.BigintType)}}
	of := "TIMESTAMP"
	if date {
		of = "TIMESTAMP or DATE"
		sigs = append(sigs, name+"(DATE) -> BIGINT")
		ovs = append(ovs, ov{in: ps(pDate), out: ret(types.BigintType)})
	}
	return &Function{
		Name:        name,
		Description: "Returns " + what + " of a " + of + ", in UTC.",
		Signatures:  sigs,
		Check:       overloads(name, ovs...),
		New: func(ts []types.Type) Impl {
			if ts[0].Kind == types.Date {
				return strict(func(a []types.Datum) (types.Datum, error) {
					return types.IntDatum(part(time.Unix(a[0].I*86400, 0).UTC())), nil
				})
			}
			return strict(func(a []types.Datum) (types.Datum, error) {
				return types.IntDatum(part(time.UnixMilli(a[0].I).UTC())), nil
			})
		},
	}
}

// splitIndex returns the index-th (from 0) piece of s split at sep, as
// Flink's SPLIT_INDEX does (Apache Commons' whole-separator split that
// keeps empty pieces): an empty s has no pieces, and an empty sep splits
// at each whitespace character.
func splitIndex(s, sep []byte, index int64) ([]byte, bool) {
	if index < 0 || len(s) == 0 {
		return nil, false
	}
	for n := int64(0); ; n++ {
		var i, w int
		if len(sep) == 0 {
			i = bytes.IndexFunc(s, unicode.IsSpace)
			if i >= 0 {
				_, w = utf8.DecodeRune(s[i:])
			}
		} else {
			i, w = bytes.Index(s, sep), len(sep)
		}
		if n == index {
			if i < 0 {
				return s, true
			}
			return s[:i], true
		}
		if i < 0 {
			return nil, false
		}
		s = s[i+w:]
	}
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// RegexpExtractOrder reads a REGEXP_EXTRACT call's first two arguments,
// which ksqlDB writes (regex, string) and Flink (string, regex), and
// reports whether they are in Flink's order and must be swapped into
// ksqlDB's, the one the function takes. A literal beside a column is
// the regex (a column of patterns matched against one constant string
// is not a query anybody writes). Two literals take the reading that
// matches when only one does (ksqlDB's when neither does); two readings
// that match differently are an error: a call must not silently answer
// what the other dialect would not.
func RegexpExtractOrder(args []Expr) (swap bool, err error) {
	if len(args) < 2 {
		return false, nil
	}
	a, aLit := constArg(args, 0)
	b, bLit := constArg(args, 1)
	switch {
	case !aLit && bLit:
		return true, nil
	case !aLit || !bLit:
		return false, nil
	}
	group := 0
	if len(args) > 2 {
		l, ok := args[2].(*Literal)
		if !ok || l.V.Null {
			return false, nil
		}
		group = int(l.V.I)
	}
	ksql, flink := extractConst(a, b, group), extractConst(b, a, group)
	switch {
	case ksql == nil && flink != nil:
		return true, nil // only Flink's reading matches
	case ksql != nil && flink != nil && !bytes.Equal(ksql, flink):
		return false, typeErrorf("REGEXP_EXTRACT('%s', '%s') reads differently in ksqlDB's order (regex, string) and Flink's (string, regex): write one of them as a column, or compute the constant", a, b)
	}
	return false, nil
}

// extractConst is REGEXP_EXTRACT over constants, nil for no match or a
// bad pattern.
func extractConst(re, s []byte, group int) []byte {
	r, err := compilePattern(string(re))
	if err != nil {
		return nil
	}
	m, _ := submatch(r, s, group)
	return m
}
