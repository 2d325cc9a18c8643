package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// matches compares an actual value (see decode) with an expected spec
// value exactly as ksqlDB's ExpectedRecordComparator does, with its
// tolerances and no others: doubles within 1e-6, an integer expected
// value against a decimal without fraction digits, a string expected
// value against a decimal or base64 bytes, and struct field names
// matched as written or upper-cased.
func matches(actual, expected any) bool {
	switch e := expected.(type) {
	case nil:
		return actual == nil
	case bool:
		a, ok := actual.(bool)
		return ok && a == e
	case string:
		switch a := actual.(type) {
		case string:
			return a == e
		case bigDec:
			d, ok := parseDec(e)
			return ok && d.equal(a)
		case []byte:
			return e == base64.StdEncoding.EncodeToString(a)
		}
		return false
	case json.Number:
		return matchNumber(actual, string(e))
	case []any:
		a, ok := actual.([]any)
		if !ok || len(a) != len(e) {
			return false
		}
		for i := range e {
			if !matches(a[i], e[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		a, ok := actual.(map[string]any)
		if !ok || len(a) != len(e) {
			return false
		}
		for k, ev := range e {
			av, ok := a[k]
			if !ok || av == nil {
				av = a[strings.ToUpper(k)]
			}
			if !matches(av, ev) {
				return false
			}
		}
		return true
	}
	return false
}

func isIntegral(n string) bool { return !strings.ContainsAny(n, ".eE") }

// longValue is Jackson's NumericNode.longValue: decimals truncated.
func longValue(n string) (int64, bool) {
	if isIntegral(n) {
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	r, ok := new(big.Rat).SetString(n)
	if !ok {
		return 0, false
	}
	q := new(big.Int).Quo(r.Num(), r.Denom())
	return q.Int64(), true
}

func matchNumber(actual any, e string) bool {
	switch a := actual.(type) {
	case int64:
		l, ok := longValue(e)
		return ok && l == a
	case float64:
		f, err := strconv.ParseFloat(e, 64)
		return err == nil && math.Abs(f-a) < 0.000_001
	case bigDec:
		if isIntegral(e) {
			if a.scale > 0 {
				return false
			}
			d, ok := parseDec(e)
			return ok && new(big.Int).Mul(a.unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-a.scale)), nil)).Cmp(d.unscaled) == 0
		}
		d, ok := parseDec(e)
		return ok && d.equal(a)
	}
	return false
}

// headersMatch compares headers in order, keys and values exactly.
func headersMatch(actual, expected []Header) bool {
	if len(actual) != len(expected) {
		return false
	}
	for i := range actual {
		if actual[i].Key != expected[i].Key || !bytes.Equal(actual[i].Value, expected[i].Value) {
			return false
		}
	}
	return true
}
