package expr

import (
	"math"
	"math/bits"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/types"
)

// Date and time functions. Patterns follow timefmt.go; time zones are
// java.util.TimeZone ids (UTC when absent).
//
// DATEADD, DATESUB, TIMEADD, TIMESUB, TIMESTAMPADD and TIMESTAMPSUB take
// their unit as a STRING argument: ksqlDB writes DATEADD(DAYS, 1, d) with
// the unit as a bare word, and the binder passes that word as a STRING
// literal ('DAYS'). Units are java.util.concurrent.TimeUnit names,
// singular or plural, any case: NANOSECONDS, MICROSECONDS, MILLISECONDS,
// SECONDS, MINUTES, HOURS, DAYS.
//
// Text that does not parse gives NULL; a bad pattern, zone or unit is an
// error (at statement time when the argument is a constant).

var timeFunctions = []*Function{
	{
		Name:        "UNIX_TIMESTAMP",
		Description: "Returns a TIMESTAMP as milliseconds since the epoch, or the current time without an argument.",
		Signatures:  []string{"UNIX_TIMESTAMP() -> BIGINT", "UNIX_TIMESTAMP(TIMESTAMP) -> BIGINT"},
		Check:       overloads("UNIX_TIMESTAMP", ov{in: ps(pTimestamp), opt: 1, out: ret(types.BigintType)}),
		New: func(ts []types.Type) Impl {
			if len(ts) == 0 {
				return func([]types.Datum) (types.Datum, error) { return types.IntDatum(time.Now().UnixMilli()), nil }
			}
			return strict(func(a []types.Datum) (types.Datum, error) { return types.IntDatum(a[0].I), nil })
		},
	},
	{
		Name:        "UNIX_DATE",
		Description: "Returns a DATE as days since 1970-01-01, or today (UTC) without an argument.",
		Signatures:  []string{"UNIX_DATE() -> INTEGER", "UNIX_DATE(DATE) -> INTEGER"},
		Check:       overloads("UNIX_DATE", ov{in: ps(pDate), opt: 1, out: ret(types.IntType)}),
		New: func(ts []types.Type) Impl {
			if len(ts) == 0 {
				return func([]types.Datum) (types.Datum, error) {
					return types.IntDatum(floorDiv(time.Now().UnixMilli(), msPerDay)), nil
				}
			}
			return strict(func(a []types.Datum) (types.Datum, error) { return types.IntDatum(a[0].I), nil })
		},
	},
	{
		Name:        "FROM_UNIXTIME",
		Description: "Converts milliseconds since the epoch into a TIMESTAMP.",
		Signatures:  []string{"FROM_UNIXTIME(BIGINT) -> TIMESTAMP"},
		Check:       overloads("FROM_UNIXTIME", ov{in: ps(pBigint), out: ret(types.TimestampType)}),
		New:         func([]types.Type) Impl { return passThrough },
	},
	{
		Name:        "FROM_DAYS",
		Description: "Converts days since 1970-01-01 into a DATE.",
		Signatures:  []string{"FROM_DAYS(INTEGER) -> DATE"},
		Check:       overloads("FROM_DAYS", ov{in: ps(pInt), out: ret(types.DateType)}),
		New:         func([]types.Type) Impl { return passThrough },
	},
	dateFormatter("FORMAT_DATE", "Formats a DATE with a pattern such as 'yyyy-MM-dd'.", types.DateType),
	dateFormatter("DATETOSTRING", "Formats days since the epoch (INTEGER) with a pattern; deprecated, use FORMAT_DATE.", types.IntType),
	dateFormatter("FORMAT_TIME", "Formats a TIME with a pattern such as 'HH:mm:ss.SSS'.", types.TimeType),
	timestampFormatter("FORMAT_TIMESTAMP", "Formats a TIMESTAMP with a pattern such as 'yyyy-MM-dd HH:mm:ss.SSS', in a time zone (default UTC).", types.TimestampType),
	timestampFormatter("TIMESTAMPTOSTRING", "Formats milliseconds since the epoch (BIGINT) with a pattern, in a time zone (default UTC); deprecated, use FORMAT_TIMESTAMP.", types.BigintType),
	dateParser("PARSE_DATE", "Parses a string into a DATE with a pattern such as 'yyyy-MM-dd'.", types.DateType),
	dateParser("STRINGTODATE", "Parses a string into days since the epoch (INTEGER) with a pattern; deprecated, use PARSE_DATE.", types.IntType),
	dateParser("PARSE_TIME", "Parses a string into a TIME with a pattern such as 'HH:mm:ss'.", types.TimeType),
	timestampParser("PARSE_TIMESTAMP", "Parses a string into a TIMESTAMP with a pattern, reading it in a time zone (default UTC) unless the text has one.", types.TimestampType),
	timestampParser("STRINGTOTIMESTAMP", "Parses a string into milliseconds since the epoch (BIGINT) with a pattern, in a time zone (default UTC); deprecated, use PARSE_TIMESTAMP.", types.BigintType),
	{
		Name:        "CONVERT_TZ",
		Description: "Converts a TIMESTAMP read as local time in one time zone into the local time of another.",
		Signatures:  []string{"CONVERT_TZ(TIMESTAMP, STRING fromZone, STRING toZone) -> TIMESTAMP"},
		Check:       exactly("CONVERT_TZ", types.TimestampType, types.TimestampType, types.StringType, types.StringType),
		validate:    validateZones(1, 2),
		New: func([]types.Type) Impl {
			from, to := zoneArgCache("CONVERT_TZ"), zoneArgCache("CONVERT_TZ")
			return strict(func(a []types.Datum) (types.Datum, error) {
				fl, err := from.get(a[1].B)
				if err != nil {
					return types.NullDatum, err
				}
				tl, err := to.get(a[2].B)
				if err != nil {
					return types.NullDatum, err
				}
				t := time.UnixMilli(a[0].I)
				_, fo := t.In(fl).Zone()
				_, to := t.In(tl).Zone()
				return types.IntDatum(a[0].I + int64(to-fo)*1000), nil
			})
		},
	},
	timeArith("DATEADD", "Adds an interval (unit, count) to a DATE.", types.DateType, types.IntType, 1),
	timeArith("DATESUB", "Subtracts an interval (unit, count) from a DATE.", types.DateType, types.IntType, -1),
	timeArith("TIMEADD", "Adds an interval (unit, count) to a TIME, wrapping around midnight.", types.TimeType, types.IntType, 1),
	timeArith("TIMESUB", "Subtracts an interval (unit, count) from a TIME, wrapping around midnight.", types.TimeType, types.IntType, -1),
	timeArith("TIMESTAMPADD", "Adds an interval (unit, count) to a TIMESTAMP.", types.TimestampType, types.BigintType, 1),
	timeArith("TIMESTAMPSUB", "Subtracts an interval (unit, count) from a TIMESTAMP.", types.TimestampType, types.BigintType, -1),
}

func passThrough(a []types.Datum) (types.Datum, error) {
	if a[0].Null {
		return null()
	}
	return types.IntDatum(a[0].I), nil
}

func patternCache(name string) *cache[*timeFormat] {
	return &cache[*timeFormat]{compile: func(s string) (*timeFormat, error) {
		f, err := compileTimeFormat(s)
		if err != nil {
			return nil, funcErrorf(name, "%v", err)
		}
		return f, nil
	}}
}

func zoneArgCache(name string) *cache[*time.Location] {
	return &cache[*time.Location]{compile: func(s string) (*time.Location, error) {
		loc, err := loadZone(s)
		if err != nil {
			return nil, funcErrorf(name, "%v", err)
		}
		return loc, nil
	}}
}

func validatePattern(name string, i int) func([]Expr) error {
	return validateConst(i, func(b []byte) error {
		if _, err := compileTimeFormat(string(b)); err != nil {
			return typeErrorf("function %s: %v", name, err)
		}
		return nil
	})
}

func validateZones(idx ...int) func([]Expr) error {
	return func(args []Expr) error {
		for _, i := range idx {
			if b, ok := constArg(args, i); ok {
				if _, err := loadZone(string(b)); err != nil {
					return typeErrorf("%v", err)
				}
			}
		}
		return nil
	}
}

func both(fs ...func([]Expr) error) func([]Expr) error {
	return func(args []Expr) error {
		for _, f := range fs {
			if err := f(args); err != nil {
				return err
			}
		}
		return nil
	}
}

// dateFormatter formats a DATE, days as INTEGER, or a TIME.
func dateFormatter(name, desc string, in types.Type) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(" + in.String() + ", STRING pattern) -> STRING"},
		Check:       overloads(name, ov{in: ps(kinds(in.Kind), pString), out: ret(types.StringType)}),
		validate:    validatePattern(name, 1),
		New: func([]types.Type) Impl {
			pc := patternCache(name)
			var buf []byte
			isTime := in.Kind == types.Time
			return strict(func(a []types.Datum) (types.Datum, error) {
				f, err := pc.get(a[1].B)
				if err != nil {
					return types.NullDatum, err
				}
				ms := a[0].I * msPerDay
				if isTime {
					ms = a[0].I
				}
				buf = f.appendFormat(buf[:0], time.UnixMilli(ms).UTC())
				return types.Datum{B: buf}, nil
			})
		},
	}
}

func timestampFormatter(name, desc string, in types.Type) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(" + in.String() + ", STRING pattern) -> STRING", name + "(" + in.String() + ", STRING pattern, STRING zone) -> STRING"},
		Check:       overloads(name, ov{in: ps(kinds(in.Kind), pString, pString), opt: 1, out: ret(types.StringType)}),
		validate:    both(validatePattern(name, 1), validateZones(2)),
		New: func([]types.Type) Impl {
			pc, zc := patternCache(name), zoneArgCache(name)
			var buf []byte
			// The text of the last call, which holds for times in [from,
			// to) with the same pattern and zone: consecutive records'
			// times tend to fall in the same day (or hour, …).
			var (
				lastF    *timeFormat
				lastLoc  *time.Location
				from, to int64
				valid    bool
			)
			return strict(func(a []types.Datum) (types.Datum, error) {
				f, err := pc.get(a[1].B)
				if err != nil {
					return types.NullDatum, err
				}
				loc := time.UTC
				if len(a) > 2 {
					if loc, err = zc.get(a[2].B); err != nil {
						return types.NullDatum, err
					}
				}
				ms := a[0].I
				if valid && f == lastF && loc == lastLoc && ms >= from && ms < to {
					return types.Datum{B: buf}, nil
				}
				buf = f.appendFormat(buf[:0], time.UnixMilli(ms).In(loc))
				lastF, lastLoc, valid = f, loc, true
				if loc == time.UTC {
					from, to = utcSpan(ms, f.span)
				} else {
					from, to = ms, ms+1 // a zone's offset may change at any time
				}
				return types.Datum{B: buf}, nil
			})
		},
	}
}

// dateParser parses into a DATE, days as INTEGER, or a TIME.
func dateParser(name, desc string, out types.Type) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING, STRING pattern) -> " + out.String()},
		Check:       exactly(name, out, types.StringType, types.StringType),
		validate:    validatePattern(name, 1),
		New: func([]types.Type) Impl {
			pc := patternCache(name)
			isTime := out.Kind == types.Time
			// PARSE_DATE is SimpleDateFormat's: text after the pattern
			// is ignored.
			prefix := name == "PARSE_DATE"
			return strict(func(a []types.Datum) (types.Datum, error) {
				f, err := pc.get(a[1].B)
				if err != nil {
					return types.NullDatum, err
				}
				parse := f.parse
				if prefix {
					parse = f.parsePrefix
				}
				p, err := parse(string(a[0].B))
				if err != nil {
					return null()
				}
				if isTime {
					ns, err := p.timeOfDay()
					if err != nil {
						return null()
					}
					return types.IntDatum(ns / 1e6), nil
				}
				days, err := p.date()
				if err != nil {
					return null()
				}
				return types.IntDatum(days), nil
			})
		},
	}
}

func timestampParser(name, desc string, out types.Type) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING, STRING pattern) -> " + out.String(), name + "(STRING, STRING pattern, STRING zone) -> " + out.String()},
		Check:       overloads(name, ov{in: ps(pString, pString, pString), opt: 1, out: ret(out)}),
		validate:    both(validatePattern(name, 1), validateZones(2)),
		New: func([]types.Type) Impl {
			pc, zc := patternCache(name), zoneArgCache(name)
			return strict(func(a []types.Datum) (types.Datum, error) {
				f, err := pc.get(a[1].B)
				if err != nil {
					return types.NullDatum, err
				}
				loc := time.UTC
				if len(a) > 2 {
					if loc, err = zc.get(a[2].B); err != nil {
						return types.NullDatum, err
					}
				}
				p, err := f.parse(string(a[0].B))
				if err != nil {
					return null()
				}
				ms, err := p.instant(loc)
				if err != nil {
					return null()
				}
				return types.IntDatum(ms), nil
			})
		},
	}
}

// unitMillis is n units of unit nanoseconds in milliseconds, truncated
// toward zero as TimeUnit.toMillis does.
func unitMillis(n, unit int64) int64 {
	if unit >= 1e6 {
		return n * (unit / 1e6)
	}
	return n / (1e6 / unit)
}

// timeUnitNanos maps a TimeUnit name to nanoseconds.
func timeUnitNanos(b []byte) (int64, bool) {
	u := strings.ToUpper(string(b))
	u = strings.TrimSuffix(u, "S")
	switch u {
	case "NANOSECOND":
		return 1, true
	case "MICROSECOND":
		return 1e3, true
	case "MILLISECOND":
		return 1e6, true
	case "SECOND":
		return 1e9, true
	case "MINUTE":
		return 60e9, true
	case "HOUR":
		return 3600e9, true
	case "DAY":
		return 86400e9, true
	}
	return 0, false
}

func timeArith(name, desc string, t, count types.Type, sign int64) *Function {
	countKinds := kinds(types.Int)
	if count.Kind == types.Bigint {
		countKinds = pBigint
	}
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING unit, " + count.String() + " interval, " + t.String() + ") -> " + t.String()},
		Check:       overloads(name, ov{in: ps(pString, countKinds, kinds(t.Kind)), out: ret(t)}),
		validate: validateConst(0, func(b []byte) error {
			if _, ok := timeUnitNanos(b); !ok {
				return typeErrorf("function %s: unknown time unit '%s' (use DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS, …)", name, b)
			}
			return nil
		}),
		New: func([]types.Type) Impl {
			units := &cache[int64]{compile: func(s string) (int64, error) {
				n, ok := timeUnitNanos([]byte(s))
				if !ok {
					return 0, funcErrorf(name, "unknown time unit '%s'", s)
				}
				return n, nil
			}}
			return strict(func(a []types.Datum) (types.Datum, error) {
				unit, err := units.get(a[0].B)
				if err != nil {
					return types.NullDatum, err
				}
				n := a[1].I * sign
				switch t.Kind {
				case types.Date:
					ms := a[2].I*msPerDay + unitMillis(n, unit)
					return types.IntDatum(floorDiv(ms, msPerDay)), nil
				case types.Time:
					const dayNanos = msPerDay * 1e6
					hi, lo := bits.Mul64(uint64(floorMod(n, dayNanos)), uint64(unit%dayNanos))
					_, add := bits.Div64(hi, lo, dayNanos)
					ns := floorMod(a[2].I*1e6+int64(add), dayNanos)
					return types.IntDatum(ns / 1e6), nil
				}
				return types.IntDatum(a[2].I + unitMillis(n, unit)), nil
			})
		},
	}
}

// utcSpan is the span of length span (aligned to the epoch) that holds
// ms; empty when it would overflow.
func utcSpan(ms, span int64) (from, to int64) {
	m := floorMod(ms, span)
	if ms < math.MinInt64+m {
		return 0, 0
	}
	from = ms - m
	if from > math.MaxInt64-span {
		return 0, 0
	}
	return from, from + span
}
