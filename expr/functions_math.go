package expr

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// Numeric functions. Those that compute in floating point take any number
// and return DOUBLE; ABS, CEIL, FLOOR, ROUND, TRUNC keep integer and
// DECIMAL types as ksqlDB does.

var mathFunctions = []*Function{
	{
		Name:        "ABS",
		Description: "Returns the absolute value of a number.",
		Signatures:  []string{"ABS(INTEGER) -> INTEGER", "ABS(BIGINT) -> BIGINT", "ABS(DOUBLE) -> DOUBLE", "ABS(DECIMAL) -> DECIMAL"},
		Check:       overloads("ABS", ov{in: ps(pNumeric), out: argOr(0, types.IntType)}),
		New: func(ts []types.Type) Impl {
			if isWide(ts[0]) {
				return wideAbs(ts[0])
			}
			dbl := ts[0].Kind == types.Double
			narrow := ts[0].Kind == types.Int
			return strict(func(a []types.Datum) (types.Datum, error) {
				d := a[0]
				if dbl {
					d.F = math.Abs(d.F)
				} else if d.I < 0 {
					d.I = -d.I
					if narrow {
						d.I = int64(int32(d.I))
					}
				}
				return d, nil
			})
		},
	},
	roundingFn("CEIL", "Returns the smallest integer value not less than a number.", math.Ceil),
	roundingFn("FLOOR", "Returns the largest integer value not greater than a number.", math.Floor),
	{
		Name: "ROUND",
		Description: "Rounds a number to a number of decimal places (default 0; negative rounds left of the point); " +
			"ties round up, toward positive infinity.",
		Signatures: []string{"ROUND(INTEGER) -> BIGINT", "ROUND(BIGINT) -> BIGINT", "ROUND(DOUBLE) -> BIGINT",
			"ROUND(DOUBLE, INTEGER) -> DOUBLE", "ROUND(DECIMAL(p, s)) -> DECIMAL(p-s+1, 0)", "ROUND(DECIMAL, INTEGER) -> DECIMAL"},
		Check: roundCheck("ROUND"),
		New:   func(ts []types.Type) Impl { return roundImpl(ts, false) },
	},
	{
		Name:        "TRUNC",
		Description: "Truncates a number toward zero to a number of decimal places (default 0).",
		Signatures: []string{"TRUNC(INTEGER) -> BIGINT", "TRUNC(BIGINT) -> BIGINT", "TRUNC(DOUBLE) -> BIGINT",
			"TRUNC(DOUBLE, INTEGER) -> DOUBLE", "TRUNC(DECIMAL(p, s)) -> DECIMAL(p-s+1, 0)", "TRUNC(DECIMAL, INTEGER) -> DECIMAL"},
		Check: roundCheck("TRUNC"),
		New:   func(ts []types.Type) Impl { return roundImpl(ts, true) },
	},
	{
		Name:        "SIGN",
		Description: "Returns -1, 0 or 1 as a number is negative, zero or positive.",
		Signatures:  []string{"SIGN(INTEGER) -> INTEGER", "SIGN(BIGINT) -> INTEGER", "SIGN(DOUBLE) -> INTEGER", "SIGN(DECIMAL) -> INTEGER"},
		Check:       overloads("SIGN", ov{in: ps(pNumeric), out: ret(types.IntType)}),
		New: func(ts []types.Type) Impl {
			if isWide(ts[0]) {
				return strict(wideSign)
			}
			dbl := ts[0].Kind == types.Double
			return strict(func(a []types.Datum) (types.Datum, error) {
				if dbl {
					switch f := a[0].F; {
					case f > 0:
						return types.IntDatum(1), nil
					case f < 0:
						return types.IntDatum(-1), nil
					}
					return types.IntDatum(0), nil
				}
				return types.IntDatum(int64(cmpInt(a[0].I, 0))), nil
			})
		},
	},
	float1("SQRT", "Returns the square root of a number.", math.Sqrt),
	float1("CBRT", "Returns the cube root of a number.", math.Cbrt),
	float1("EXP", "Returns e raised to a number.", math.Exp),
	float1("LN", "Returns the natural logarithm of a number.", math.Log),
	float1("SIN", "Returns the sine of an angle in radians.", math.Sin),
	float1("COS", "Returns the cosine of an angle in radians.", math.Cos),
	float1("TAN", "Returns the tangent of an angle in radians.", math.Tan),
	float1("COT", "Returns the cotangent of an angle in radians.", func(x float64) float64 { return 1 / math.Tan(x) }),
	float1("ASIN", "Returns the arc sine, in radians; NaN outside [-1, 1].", math.Asin),
	float1("ACOS", "Returns the arc cosine, in radians; NaN outside [-1, 1].", math.Acos),
	float1("ATAN", "Returns the arc tangent, in radians.", math.Atan),
	float1("SINH", "Returns the hyperbolic sine.", math.Sinh),
	float1("COSH", "Returns the hyperbolic cosine.", math.Cosh),
	float1("TANH", "Returns the hyperbolic tangent.", math.Tanh),
	float1("DEGREES", "Converts radians to degrees.", func(x float64) float64 { return x * 180 / math.Pi }),
	float1("RADIANS", "Converts degrees to radians.", func(x float64) float64 { return x / 180 * math.Pi }),
	float2("ATAN2", "Returns the angle theta of the point (x, y) in polar coordinates, from ATAN2(y, x).", "y", "x", math.Atan2),
	float2("POWER", "Returns a base raised to an exponent.", "base", "exponent", math.Pow),
	{
		Name:        "LOG",
		Description: "Returns the logarithm of a value in a given base with LOG(base, value); LOG(value) is the natural logarithm, as in ksqlDB (statements recorded before bind it as the base-10 logarithm).",
		Signatures:  []string{"LOG(DOUBLE value) -> DOUBLE", "LOG(DOUBLE base, DOUBLE value) -> DOUBLE"},
		Check:       overloads("LOG", ov{in: ps(pDouble, pDouble), opt: 1, out: ret(types.DoubleType)}),
		New: func(ts []types.Type) Impl {
			f0 := asFloat(ts[0])
			if len(ts) == 1 {
				return strict(func(a []types.Datum) (types.Datum, error) { return types.DoubleDatum(math.Log10(f0(a[0]))), nil })
			}
			f1 := asFloat(ts[1])
			return strict(func(a []types.Datum) (types.Datum, error) {
				base, v := f0(a[0]), f1(a[1])
				if base <= 0 || base == 1 {
					return types.DoubleDatum(math.NaN()), nil
				}
				return types.DoubleDatum(math.Log(v) / math.Log(base)), nil
			})
		},
	},
	{
		Name:        "PI",
		Description: "Returns the value of π.",
		Signatures:  []string{"PI() -> DOUBLE"},
		Check:       exactly("PI", types.DoubleType),
		New: func([]types.Type) Impl {
			return func([]types.Datum) (types.Datum, error) { return types.DoubleDatum(math.Pi), nil }
		},
	},
	{
		Name:        "RANDOM",
		Description: "Returns a random DOUBLE in [0.0, 1.0).",
		Signatures:  []string{"RANDOM() -> DOUBLE"},
		Check:       exactly("RANDOM", types.DoubleType),
		New: func([]types.Type) Impl {
			return func([]types.Datum) (types.Datum, error) { return types.DoubleDatum(rand.Float64()), nil }
		},
	},
	extremum("GREATEST", "Returns the largest of its arguments, ignoring NULLs.", 1),
	extremum("LEAST", "Returns the smallest of its arguments, ignoring NULLs.", -1),
	{
		Name:        "GENERATE_SERIES",
		Description: "Returns an array of the values from start to end inclusive, by a step (default 1).",
		Signatures: []string{"GENERATE_SERIES(INTEGER start, INTEGER end) -> ARRAY<INTEGER>", "GENERATE_SERIES(INTEGER start, INTEGER end, INTEGER step) -> ARRAY<INTEGER>",
			"GENERATE_SERIES(BIGINT start, BIGINT end) -> ARRAY<BIGINT>", "GENERATE_SERIES(BIGINT start, BIGINT end, INTEGER step) -> ARRAY<BIGINT>"},
		Check: overloads("GENERATE_SERIES",
			ov{in: ps(kinds(types.Int), kinds(types.Int), pInt), opt: 1, out: ret(arrayOf(types.IntType))},
			ov{in: ps(pBigint, pBigint, pInt), opt: 1, out: ret(arrayOf(types.BigintType))}),
		New: func([]types.Type) Impl {
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				start, end := a[0].I, a[1].I
				step := int64(1)
				if start > end {
					step = -1
				}
				if len(a) > 2 {
					step = a[2].I
				}
				if step == 0 {
					return types.NullDatum, funcErrorf("GENERATE_SERIES", "step cannot be zero")
				}
				if (start > end) != (step < 0) && start != end {
					return types.NullDatum, funcErrorf("GENERATE_SERIES", "step %d has the wrong sign for %d to %d", step, start, end)
				}
				var span, stride uint64 // the distance, without overflow
				if start <= end {
					span, stride = uint64(end)-uint64(start), uint64(step)
				} else {
					span, stride = uint64(start)-uint64(end), uint64(-step)
				}
				if span/stride >= maxSeries {
					return types.NullDatum, funcErrorf("GENERATE_SERIES", "more than %d values", maxSeries)
				}
				n := int64(span/stride) + 1
				if n > maxSeries {
					return types.NullDatum, funcErrorf("GENERATE_SERIES", "more than %d values", maxSeries)
				}
				out = out[:0]
				for i := int64(0); i < n; i++ {
					out = append(out, types.IntDatum(start+i*step))
				}
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "GEO_DISTANCE",
		Description: "Returns the great-circle distance between two latitude/longitude points in degrees, in KM (default) or MILES.",
		Signatures:  []string{"GEO_DISTANCE(DOUBLE lat1, DOUBLE lon1, DOUBLE lat2, DOUBLE lon2) -> DOUBLE", "GEO_DISTANCE(DOUBLE lat1, DOUBLE lon1, DOUBLE lat2, DOUBLE lon2, STRING unit) -> DOUBLE"},
		Check:       overloads("GEO_DISTANCE", ov{in: ps(pDouble, pDouble, pDouble, pDouble, pString), opt: 1, out: ret(types.DoubleType)}),
		validate: validateConst(4, func(b []byte) error {
			if _, ok := earthRadius(b); !ok {
				return typeErrorf("function GEO_DISTANCE: unit must be KM or MILES, got '%s'", b)
			}
			return nil
		}),
		New: func(ts []types.Type) Impl {
			fs := make([]func(types.Datum) float64, 4)
			for i := range fs {
				fs[i] = asFloat(ts[i])
			}
			// A NULL unit is the default, KM (ksqlDB); a NULL point is NULL.
			return func(a []types.Datum) (types.Datum, error) {
				for _, d := range a[:4] {
					if d.Null {
						return types.NullDatum, nil
					}
				}
				r := 6371.0
				if len(a) > 4 && !a[4].Null {
					var ok bool
					if r, ok = earthRadius(a[4].B); !ok {
						return types.NullDatum, funcErrorf("GEO_DISTANCE", "unit must be KM or MILES, got '%s'", a[4].B)
					}
				}
				lat1, lon1, lat2, lon2 := fs[0](a[0]), fs[1](a[1]), fs[2](a[2]), fs[3](a[3])
				if math.Abs(lat1) > 90 || math.Abs(lat2) > 90 || math.Abs(lon1) > 180 || math.Abs(lon2) > 180 {
					return types.NullDatum, funcErrorf("GEO_DISTANCE", "latitudes must be within ±90 and longitudes within ±180")
				}
				// In ksqlDB's order of operations (Java's sin and cos may still
				// differ from Go's in the last digit).
				dLat, dLon := toRadians(lat2-lat1), toRadians(lon2-lon1)
				h := math.Pow(math.Sin(dLat/2), 2) + math.Pow(math.Sin(dLon/2), 2)*math.Cos(toRadians(lat1))*math.Cos(toRadians(lat2))
				return types.DoubleDatum(2 * math.Asin(math.Sqrt(h)) * r), nil
			}
		},
	},
}

// maxSeries bounds GENERATE_SERIES so that one bad record cannot take the
// process's memory.
const maxSeries = 10_000_000

func earthRadius(unit []byte) (float64, bool) {
	switch string(asciiUpper(unit)) {
	case "KM", "KILOMETERS", "KILOMETRES":
		return 6371, true
	case "MI", "MILES":
		return 3959, true
	}
	return 0, false
}

// asciiUpper upper-cases short ASCII text into a stack buffer.
func asciiUpper(b []byte) []byte {
	var buf [32]byte
	if len(b) > len(buf) {
		return b
	}
	out := append(buf[:0], b...)
	asciiMap(out, true)
	return out
}

func float1(name, desc string, f func(float64) float64) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(DOUBLE) -> DOUBLE"},
		Check:       overloads(name, ov{in: ps(pDouble), out: ret(types.DoubleType)}),
		New: func(ts []types.Type) Impl {
			x := asFloat(ts[0])
			return strict(func(a []types.Datum) (types.Datum, error) { return types.DoubleDatum(f(x(a[0]))), nil })
		},
	}
}

func float2(name, desc, p1, p2 string, f func(a, b float64) float64) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(DOUBLE " + p1 + ", DOUBLE " + p2 + ") -> DOUBLE"},
		Check:       overloads(name, ov{in: ps(pDouble, pDouble), out: ret(types.DoubleType)}),
		New: func(ts []types.Type) Impl {
			x, y := asFloat(ts[0]), asFloat(ts[1])
			return strict(func(a []types.Datum) (types.Datum, error) { return types.DoubleDatum(f(x(a[0]), y(a[1]))), nil })
		},
	}
}

// roundingFn is CEIL or FLOOR: integers unchanged, DOUBLE stays DOUBLE,
// DECIMAL(p, s) becomes DECIMAL(p-s+1, 0).
func roundingFn(name, desc string, f func(float64) float64) *Function {
	ceil := name == "CEIL"
	return &Function{
		Name:        name,
		Description: desc,
		// A DECIMAL keeps its type, its value rounded to a whole number
		// (ksqlDB: setScale(0, …).setScale(scale)).
		Signatures: []string{name + "(INTEGER) -> INTEGER", name + "(BIGINT) -> BIGINT", name + "(DOUBLE) -> DOUBLE", name + "(DECIMAL(p, s)) -> DECIMAL(p, s)"},
		Check:      overloads(name, ov{in: ps(pNumeric), out: argOr(0, types.IntType)}),
		New: func(ts []types.Type) Impl {
			switch ts[0].Kind {
			case types.Double:
				return strict(func(a []types.Datum) (types.Datum, error) { return types.DoubleDatum(f(a[0].F)), nil })
			case types.Decimal:
				if isWide(ts[0]) {
					mode := byte('F')
					if ceil {
						mode = 'C'
					}
					return wideRounding(ts[0], ts[0], mode)
				}
				div := pow10[ts[0].Scale]
				return strict(func(a []types.Datum) (types.Datum, error) {
					v := a[0].I
					q, r := v/div, v%div
					if ceil && r > 0 {
						q++
					} else if !ceil && r < 0 {
						q--
					}
					return types.IntDatum(q * div), nil
				})
			}
			return func(a []types.Datum) (types.Datum, error) { return a[0], nil }
		},
	}
}

func roundCheck(name string) func([]types.Type) (types.Type, error) {
	return overloads(name,
		ov{in: ps(kinds(types.Int, types.Bigint)), out: ret(types.BigintType)},
		ov{in: ps(kinds(types.Double)), out: ret(types.BigintType)},
		ov{in: ps(kinds(types.Double), pInt), out: ret(types.DoubleType)},
		ov{in: ps(kinds(types.Decimal)), out: func(a []types.Type) types.Type {
			if isWide(a[0]) { // ksqlDB's type; the short one stays as it was
				return types.Type{Kind: types.Decimal, Precision: max(a[0].Precision-a[0].Scale, 1)}
			}
			return capDecimal(a[0].Precision-a[0].Scale+1, 0)
		}},
		ov{in: ps(kinds(types.Decimal), pInt), out: argOr(0, types.DoubleType)},
		ov{in: ps(kinds(types.Int, types.Bigint), pInt), out: ret(types.BigintType)},
	)
}

// roundImpl is ROUND (or TRUNC when trunc). ROUND rounds ties toward
// positive infinity (Java's Math.round), on the decimal digits of the
// value as BigDecimal.valueOf sees them.
func roundImpl(ts []types.Type, trunc bool) Impl {
	switch ts[0].Kind {
	case types.Double:
		if len(ts) == 1 {
			return strict(func(a []types.Datum) (types.Datum, error) {
				f := a[0].F
				if trunc {
					return types.IntDatum(javaF2L(f)), nil
				}
				return types.IntDatum(javaF2L(math.Floor(f + 0.5))), nil
			})
		}
		return strict(func(a []types.Datum) (types.Datum, error) {
			return types.DoubleDatum(roundDouble(a[0].F, a[1].I, trunc)), nil
		})
	case types.Decimal:
		if isWide(ts[0]) {
			out := ts[0]
			if len(ts) == 1 {
				out = types.Type{Kind: types.Decimal, Precision: max(ts[0].Precision-ts[0].Scale, 1)}
			}
			mode := byte('R')
			if trunc {
				mode = 'T'
			}
			return wideRounding(ts[0], out, mode)
		}
		scale := ts[0].Scale
		if len(ts) == 1 {
			return strict(func(a []types.Datum) (types.Datum, error) {
				return types.IntDatum(roundUnscaled(a[0].I, scale, 0, trunc) / pow10[scale]), nil
			})
		}
		return strict(func(a []types.Datum) (types.Datum, error) {
			places := a[1].I
			if places >= int64(scale) {
				return a[0], nil
			}
			return types.IntDatum(roundUnscaled(a[0].I, scale, places, trunc)), nil
		})
	}
	if len(ts) == 1 {
		return func(a []types.Datum) (types.Datum, error) { return a[0], nil }
	}
	return strict(func(a []types.Datum) (types.Datum, error) {
		return types.IntDatum(roundUnscaled(a[0].I, 0, a[1].I, trunc)), nil
	})
}

// roundUnscaled rounds unscaled v (scale s) to places decimal places and
// returns it at scale s again: ties toward positive infinity, or toward
// zero when trunc.
func roundUnscaled(v int64, s int, places int64, trunc bool) int64 {
	k := int64(s) - places // digits to drop
	if k <= 0 {
		return v
	}
	if k > 18 {
		return 0
	}
	div := pow10[k]
	q, r := v/div, v%div
	if !trunc {
		switch {
		case r > 0 && 2*r >= div:
			q++
		case r < 0 && -2*r > div:
			q--
		}
	}
	return q * div
}

// roundDouble rounds f to places decimal places on its shortest decimal
// representation, as ksqlDB does through BigDecimal.
func roundDouble(f float64, places int64, trunc bool) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) || places > 300 || places < -300 {
		return f
	}
	var buf [40]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	e := 0
	for i, c := range b {
		if c == 'e' {
			e, _ = strconv.Atoi(string(b[i+1:]))
			b = b[:i]
			break
		}
	}
	// digits d0.d1d2… × 10^e; keep digits up to position places after the point
	var digits [24]byte
	nd := 0
	for _, c := range b {
		if c != '.' {
			digits[nd] = c
			nd++
		}
	}
	keep := e + 1 + int(places) // number of leading digits kept
	if keep >= nd {
		return f
	}
	up := false
	if keep >= 0 && !trunc {
		first := digits[keep]
		if neg {
			// ties go toward +infinity: down in magnitude for negatives
			rest := false
			for _, c := range digits[keep+1 : nd] {
				if c != '0' {
					rest = true
				}
			}
			up = first > '5' || first == '5' && rest
		} else {
			up = first >= '5'
		}
	}
	var mant int64
	for i := 0; i < keep && i < nd; i++ {
		mant = mant*10 + int64(digits[i]-'0')
	}
	if keep < 0 {
		mant = 0
	}
	if up {
		mant++
	}
	exp := e + 1 - keep // value = mant × 10^exp
	out := strconv.AppendInt(buf[:0], mant, 10)
	out = append(out, 'e')
	out = strconv.AppendInt(out, int64(exp), 10)
	r, _ := strconv.ParseFloat(string(out), 64)
	if neg {
		r = -r
	}
	return r
}

// extremum is GREATEST (sign 1) or LEAST (sign -1) over a common type.
func extremum(name, desc string, sign int) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(T, T, ...) -> T, for T a number, STRING, BYTES, DATE, TIME or TIMESTAMP"},
		Check: commonCheck(name, 1, func(t types.Type) bool {
			return !isComposite(t.Kind) && t.Kind != types.Boolean
		}),
		coerceTo: allTo,
		New: func(ts []types.Type) Impl {
			t, _ := commonTypeOf(ts)
			return func(a []types.Datum) (types.Datum, error) {
				best := types.NullDatum
				for _, d := range a {
					if d.Null {
						continue
					}
					if best.Null || compareDatum(d, best, t)*sign > 0 {
						best = d
					}
				}
				return best, nil
			}
		},
	}
}

// toRadians is Java's Math.toRadians: one multiplication by the constant
// π/180 (the same value rounded once, not x*π then /180).
func toRadians(deg float64) float64 { return deg * 0.017453292519943295 }

// AmbiguousExtremum is ksqlDB's refusal of GREATEST or LEAST over
// numbers of different kinds without a DOUBLE among them (INT with
// BIGINT, or either with a DECIMAL): its variadic overloads for BIGINT,
// DECIMAL and DOUBLE all accept them, and it will not pick one. DOUBLE
// among the arguments leaves one overload; DECIMALs of different
// precision are one kind. nil when the arguments are fine.
func AmbiguousExtremum(name string, args []types.Type) error {
	var kinds [types.Timestamp + 1]bool
	n := 0
	for _, t := range args {
		if !t.IsNumeric() {
			continue
		}
		if t.Kind == types.Double {
			return nil
		}
		if !kinds[t.Kind] {
			kinds[t.Kind] = true
			n++
		}
	}
	if n < 2 {
		return nil
	}
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.String()
		if a.Kind == types.Unknown {
			parts[i] = "null"
		}
	}
	return typeErrorf("Function '%s' cannot be resolved due to ambiguous method parameters (%s).", strings.ToLower(name), strings.Join(parts, ", "))
}
