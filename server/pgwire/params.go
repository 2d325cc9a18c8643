package pgwire

// This file handles statement parameters ($1, $2, …) of the extended
// protocol.
//
// A statement with parameters goes to the engine's Prepare (pull.go,
// prepareParams): its placeholders are expression nodes there, typed by
// the engine, and Bind's values go to the engine as datums of those types
// (bindValues) — pull queries, push queries, LIMIT $n, INSERT … VALUES,
// cursors alike. The engine refuses parameters in other statements
// (42P02). Only where there is no engine statement are the values
// substituted into the text: the statements pgwire answers itself (the
// catalog queries clients send, SET, SHOW, …) and executors without
// Prepare. There, at Bind, each value becomes a literal of its type written
// into the statement text.
// A parameter's type comes, in order, from the type Parse declared for
// it; from a cast written on it ($1::int, which is dropped from the text);
// or from its context: compared with a column (col = $1, $1 < t.col, col
// BETWEEN $1 AND $2), a value in INSERT INTO s [(cols)] VALUES (…), or a
// LIMIT count, the column's type is looked up in the catalog. Failing
// those, it is text: ParameterDescription reports text (25) and the value
// is written as a quoted string; write CAST($1 AS INT) or declare the type
// where the engine needs another.
//
// Values arrive in text or binary format (Bind's parameter format codes).
// Binary values are decoded for bool, int2, int4, int8, float4, float8,
// numeric, text, varchar, bpchar, name, json, jsonb, bytea, date, time,
// timestamp, timestamptz and uuid; other binary types fail with 0A000.

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Type OIDs parameters may declare, beyond those in encode.go.
const (
	oidInt2        = 21
	oidOID         = 26
	oidFloat4      = 700
	oidUnknown     = 705
	oidBPChar      = 1042
	oidVarchar     = 1043
	oidName        = 19
	oidJSONB       = 3802
	oidTimestampTZ = 1184
	oidUUID        = 2950
	oidChar        = 18
)

// maxParams is the most parameters a statement may have, as in Postgres.
const maxParams = 65535

// paramSlot is one $n occurrence in a statement.
type paramSlot struct {
	n        int // 1-based parameter number
	from, to int // byte range to replace (the placeholder and any ::cast)
}

// paramInfo is what Parse learns about a statement's parameters.
type paramInfo struct {
	slots []paramSlot
	oids  []uint32 // per parameter: declared, cast or inferred; 0 is text
}

// analyzeParams finds the placeholders of stmt and their types: declared
// holds the OIDs Parse gave (0 for unspecified).
func (c *conn) analyzeParams(stmt string, declared []uint32) (paramInfo, error) {
	toks := lex(stmt)
	var pi paramInfo
	n := len(declared)
	for i, t := range toks {
		if t.kind != tokParam {
			continue
		}
		k, err := strconv.Atoi(t.val)
		if err != nil || k < 1 || k > maxParams {
			return pi, sql.Errorf(codeSyntaxError, "invalid parameter reference $%s", t.val)
		}
		slot := paramSlot{n: k, from: t.from, to: t.to}
		if i+2 < len(toks) && toks[i+1].is("::") {
			// $1::type[(…)]: the cast gives the type; drop it from the text.
			j := i + 2
			for j+2 < len(toks) && toks[j+1].is(".") {
				j += 2
			}
			name, _ := toks[j].name()
			if j+1 < len(toks) && (toks[j+1].is("PRECISION") || toks[j+1].is("VARYING")) {
				j++
				name += " " + strings.ToLower(toks[j].val)
			}
			if j+1 < len(toks) && toks[j+1].is("(") {
				for j < len(toks) && !toks[j].is(")") {
					j++
				}
			}
			if j < len(toks) {
				slot.to = toks[j].to
			}
			if oid := oidByName(name); oid != 0 && (k > len(declared) || declared[k-1] == 0) {
				n = max(n, k)
				for len(pi.oids) < n {
					pi.oids = append(pi.oids, 0)
				}
				pi.oids[k-1] = oid
			}
		}
		pi.slots = append(pi.slots, slot)
		n = max(n, k)
	}
	for len(pi.oids) < n {
		pi.oids = append(pi.oids, 0)
	}
	for i, oid := range declared {
		if oid != 0 {
			pi.oids[i] = oid
		}
	}
	if len(pi.slots) > 0 {
		c.inferParams(toks, pi.oids)
	}
	return pi, nil
}

// reported is the OID ParameterDescription gives for parameter i.
func (pi paramInfo) reported(i int) uint32 {
	if pi.oids[i] == 0 {
		return oidText
	}
	return pi.oids[i]
}

// oidByName maps a Postgres type name used in a cast to its OID.
func oidByName(name string) uint32 {
	switch strings.ToLower(name) {
	case "bool", "boolean":
		return oidBool
	case "int2", "smallint":
		return oidInt2
	case "int", "int4", "integer":
		return oidInt4
	case "int8", "bigint":
		return oidInt8
	case "float4", "real":
		return oidFloat4
	case "float8", "double precision", "double", "float":
		return oidFloat8
	case "numeric", "decimal":
		return oidNumeric
	case "text", "string":
		return oidText
	case "varchar", "character varying":
		return oidVarchar
	case "bytea", "bytes":
		return oidBytea
	case "date":
		return oidDate
	case "time":
		return oidTime
	case "timestamp":
		return oidTimestamp
	case "timestamptz":
		return oidTimestampTZ
	case "json":
		return oidJSON
	case "jsonb":
		return oidJSONB
	}
	return 0
}

// inferParams fills unknown parameter types from their context, looking
// columns up in the sources the statement names.
func (c *conn) inferParams(toks []token, oids []uint32) {
	srcs := c.namedSources(toks)
	colType := func(i int) (types.Type, bool) {
		// toks[i] ends a column reference [q.]name.
		if i < 0 || i >= len(toks) {
			return types.Type{}, false
		}
		name, ok := sourceName(toks[i])
		if !ok {
			return types.Type{}, false
		}
		for _, s := range srcs {
			if j := s.Schema.IndexFold(name); j >= 0 {
				return s.Schema.Columns[j].Type, true
			}
		}
		return types.Type{}, false
	}
	set := func(n int, t types.Type) {
		if n >= 1 && n <= len(oids) && oids[n-1] == 0 {
			oids[n-1] = typeOID(t)
		}
	}
	isCmp := func(t token) bool {
		switch t.val {
		case "=", "<>", "!=", "<", "<=", ">", ">=":
			return t.kind == tokOp
		}
		return false
	}
	for i, t := range toks {
		if t.kind != tokParam {
			continue
		}
		n, _ := strconv.Atoi(t.val)
		switch {
		case i >= 2 && isCmp(toks[i-1]):
			if ct, ok := colType(i - 2); ok {
				set(n, ct)
			}
		case i+2 < len(toks) && isCmp(toks[i+1]):
			j := i + 2
			for j+2 < len(toks) && toks[j+1].is(".") {
				j += 2
			}
			if ct, ok := colType(j); ok {
				set(n, ct)
			}
		case i >= 2 && toks[i-1].is("BETWEEN"):
			if ct, ok := colType(i - 2); ok {
				set(n, ct)
			}
		case i >= 4 && toks[i-1].is("AND") && toks[i-3].is("BETWEEN"):
			if ct, ok := colType(i - 4); ok {
				set(n, ct)
			}
		case i >= 1 && toks[i-1].is("LIMIT"):
			set(n, types.BigintType)
		}
	}
	c.inferInsert(toks, srcs, set)
}

// inferInsert types the parameters of INSERT INTO s [(cols)] VALUES (…).
func (c *conn) inferInsert(toks []token, srcs []*catalog.Source, set func(int, types.Type)) {
	if !words(toks, "INSERT", "INTO") || len(srcs) == 0 {
		return
	}
	target := srcs[0]
	i := 3
	for i+1 < len(toks) && toks[i].is(".") {
		i += 2
	}
	var cols []int
	if i < len(toks) && toks[i].is("(") {
		for i++; i < len(toks) && !toks[i].is(")"); i++ {
			if name, ok := sourceName(toks[i]); ok {
				cols = append(cols, target.Schema.IndexFold(name))
			}
		}
		i++
	} else {
		cols = target.Schema.Visible()
	}
	if i >= len(toks) || !toks[i].is("VALUES") {
		return
	}
	for _, tuple := range splitTop(toks[i+1:], func(t token) bool { return t.is(",") }) {
		if len(tuple) < 2 || !tuple[0].is("(") {
			continue
		}
		for k, v := range splitTop(tuple[1:len(tuple)-1], func(t token) bool { return t.is(",") }) {
			if len(v) >= 1 && v[0].kind == tokParam && k < len(cols) && cols[k] >= 0 {
				n, _ := strconv.Atoi(v[0].val)
				set(n, target.Schema.Columns[cols[k]].Type)
			}
		}
	}
}

// sourceName is the name an identifier token gives a column or source:
// upper case unless quoted, as the engine normalizes names.
func sourceName(t token) (string, bool) {
	switch t.kind {
	case tokIdent:
		return strings.ToUpper(t.val), true
	case tokQIdent:
		return t.val, true
	}
	return "", false
}

// namedSources returns the catalog sources named after FROM, JOIN and INTO.
func (c *conn) namedSources(toks []token) []*catalog.Source {
	if c.srv.catalog == nil {
		return nil
	}
	cat := c.srv.catalog.Catalog()
	var out []*catalog.Source
	for i := 0; i+1 < len(toks); i++ {
		if !(toks[i].is("FROM") || toks[i].is("JOIN") || toks[i].is("INTO")) {
			continue
		}
		j := i + 1
		for j+2 < len(toks) && toks[j+1].is(".") {
			j += 2
		}
		if name, ok := sourceName(toks[j]); ok {
			if s, ok := cat.Source(name); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// bindParams substitutes the values of Bind into stmt.
func bindParams(stmt string, pi paramInfo, formats []int16, values [][]byte) (string, error) {
	if len(values) != len(pi.oids) {
		return "", sql.Errorf(codeProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(values), len(pi.oids))
	}
	if len(formats) > 1 && len(formats) != len(values) {
		return "", sql.Errorf(codeProtocolViolation, "bind message has %d parameter formats but %d parameters", len(formats), len(values))
	}
	lits := make([]string, len(values))
	for i, v := range values {
		f := formatText
		switch len(formats) {
		case 0:
		case 1:
			f = formats[0]
		default:
			f = formats[i]
		}
		if f != formatText && f != formatBinary {
			return "", sql.Errorf(codeProtocolViolation, "unsupported format code: %d", f)
		}
		lit, err := paramLiteral(v, pi.oids[i], f)
		if err != nil {
			return "", sql.Errorf(codeInvalidBinary, "parameter $%d: %v", i+1, err)
		}
		lits[i] = lit
	}
	return substitute(stmt, pi, func(n int) string { return lits[n-1] }), nil
}

// placeholderText substitutes stand-in values for the parameters, so that
// a statement with parameters can be described before Bind.
func placeholderText(stmt string, pi paramInfo) string {
	return substitute(stmt, pi, func(n int) string {
		switch pi.oids[n-1] {
		case oidBool:
			return boolFalse
		case oidInt2, oidInt4, oidInt8, oidOID, oidNumeric:
			return "1"
		case oidFloat4, oidFloat8:
			return "1.0"
		case oidDate:
			return "'1970-01-01'"
		case oidTime:
			return "'00:00:00'"
		case oidTimestamp, oidTimestampTZ:
			return "'1970-01-01 00:00:00'"
		case oidBytea:
			return "TO_BYTES('', 'hex')"
		}
		return "''"
	})
}

func substitute(stmt string, pi paramInfo, lit func(n int) string) string {
	var b strings.Builder
	last := 0
	for _, s := range pi.slots {
		b.WriteString(stmt[last:s.from])
		b.WriteString(lit(s.n))
		last = s.to
	}
	b.WriteString(stmt[last:])
	return b.String()
}

// codeInvalidBinary is Postgres's invalid_binary_representation; text
// values that do not parse get 22P02 through the same path.
const codeInvalidBinary = "22P02"

// paramLiteral writes one parameter value as a literal of type oid.
func paramLiteral(v []byte, oid uint32, format int16) (string, error) {
	if v == nil {
		return "NULL", nil
	}
	if format == formatBinary {
		text, err := decodeBinary(v, oid)
		if err != nil {
			return "", err
		}
		v = []byte(text)
	}
	s := string(v)
	switch oid {
	case oidBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "1", "yes", "y", "on":
			return boolTrue, nil
		case "f", "false", "0", "no", "n", "off":
			return boolFalse, nil
		}
		return "", errorf("invalid input syntax for type boolean: %q", s)
	case oidInt2, oidInt4, oidInt8, oidOID:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return "", errorf("invalid input syntax for type integer: %q", s)
		}
		return strconv.FormatInt(n, 10), nil
	case oidFloat4, oidFloat8:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", errorf("invalid or unsupported double precision value: %q", s)
		}
		out := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(out, ".eE") {
			out += ".0"
		}
		return out, nil
	case oidNumeric:
		s = strings.TrimSpace(s)
		if !isDecimalText(s) {
			return "", errorf("invalid or unsupported numeric value: %q", s)
		}
		return s, nil
	case oidBytea:
		raw := v
		if format == formatText {
			var err error
			if raw, err = parseByteaText(s); err != nil {
				return "", err
			}
		}
		return "TO_BYTES('" + hex.EncodeToString(raw) + "', 'hex')", nil
	}
	return quoteString(s)
}

// Boolean literals.
const (
	boolTrue  = "TRUE"
	boolFalse = "FALSE"
)

// quoteString writes s as a string literal the engine reads back exactly.
func quoteString(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", &sql.Error{Code: "22021", Msg: "invalid byte sequence for encoding \"UTF8\": 0x00", Offset: -1}
	}
	if !utf8.ValidString(s) {
		return "", &sql.Error{Code: "22021", Msg: "invalid byte sequence for encoding \"UTF8\"", Offset: -1}
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			b.WriteByte('\'')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String(), nil
}

type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

func errorf(format string, args ...any) error {
	return &paramError{msg: fmt.Sprintf(format, args...)}
}

// isDecimalText reports whether s is a plain decimal number: [-+]digits[.digits][e[-+]digits].
func isDecimalText(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// parseByteaText reads bytea's text form: \x followed by hex digits, or
// the escape form (backslash-octal).
func parseByteaText(s string) ([]byte, error) {
	if strings.HasPrefix(s, `\x`) {
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return nil, errorf("invalid hexadecimal bytea value")
		}
		return b, nil
	}
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s):
			n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
			if err != nil {
				return nil, errorf("invalid input syntax for type bytea")
			}
			out = append(out, byte(n))
			i += 3
		default:
			return nil, errorf("invalid input syntax for type bytea")
		}
	}
	return out, nil
}

// pgEpoch is 2000-01-01, where Postgres's binary dates and times count from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// decodeBinary turns a binary parameter value into its text form.
func decodeBinary(v []byte, oid uint32) (string, error) {
	size := func(n int) error {
		if len(v) != n {
			return errorf("binary value of %d bytes for a type of %d", len(v), n)
		}
		return nil
	}
	switch oid {
	case oidBool:
		if err := size(1); err != nil {
			return "", err
		}
		return strconv.FormatBool(v[0] != 0), nil
	case oidInt2:
		if err := size(2); err != nil {
			return "", err
		}
		return strconv.Itoa(int(int16(binary.BigEndian.Uint16(v)))), nil
	case oidInt4, oidOID:
		if err := size(4); err != nil {
			return "", err
		}
		if oid == oidOID {
			return strconv.FormatUint(uint64(binary.BigEndian.Uint32(v)), 10), nil
		}
		return strconv.Itoa(int(int32(binary.BigEndian.Uint32(v)))), nil
	case oidInt8:
		if err := size(8); err != nil {
			return "", err
		}
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10), nil
	case oidFloat4:
		if err := size(4); err != nil {
			return "", err
		}
		return strconv.FormatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(v))), 'g', -1, 32), nil
	case oidFloat8:
		if err := size(8); err != nil {
			return "", err
		}
		return strconv.FormatFloat(math.Float64frombits(binary.BigEndian.Uint64(v)), 'g', -1, 64), nil
	case oidNumeric:
		return decodeNumeric(v)
	case 0, oidText, oidVarchar, oidBPChar, oidName, oidJSON, oidUnknown, oidChar, oidBytea:
		return string(v), nil
	case oidJSONB:
		if len(v) < 1 || v[0] != 1 {
			return "", errorf("unsupported jsonb version")
		}
		return string(v[1:]), nil
	case oidDate:
		if err := size(4); err != nil {
			return "", err
		}
		days := int32(binary.BigEndian.Uint32(v))
		return pgEpoch.AddDate(0, 0, int(days)).Format("2006-01-02"), nil
	case oidTime:
		if err := size(8); err != nil {
			return "", err
		}
		us := int64(binary.BigEndian.Uint64(v))
		return time.UnixMicro(us).UTC().Format("15:04:05.999999"), nil
	case oidTimestamp, oidTimestampTZ:
		if err := size(8); err != nil {
			return "", err
		}
		us := int64(binary.BigEndian.Uint64(v))
		t := pgEpoch.Add(time.Duration(us) * time.Microsecond)
		if us > math.MaxInt64/1000 || us < math.MinInt64/1000 {
			return "", errorf("timestamp out of range")
		}
		s := t.Format("2006-01-02 15:04:05.999999")
		if oid == oidTimestampTZ {
			s += "Z"
		}
		return s, nil
	case oidUUID:
		if err := size(16); err != nil {
			return "", err
		}
		h := hex.EncodeToString(v)
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
	}
	return "", &sql.Error{Code: codeFeatureNotSupp, Msg: "binary format of parameter type " + strconv.FormatUint(uint64(oid), 10) + " is not supported; send it in text format", Offset: -1}
}

// decodeNumeric reads Postgres's binary numeric: ndigits, weight, sign,
// dscale, then base-10000 digits.
func decodeNumeric(v []byte) (string, error) {
	if len(v) < 8 {
		return "", errorf("invalid numeric")
	}
	ndigits := int(binary.BigEndian.Uint16(v[0:]))
	weight := int(int16(binary.BigEndian.Uint16(v[2:])))
	sign := binary.BigEndian.Uint16(v[4:])
	dscale := int(binary.BigEndian.Uint16(v[6:]))
	if len(v) != 8+2*ndigits || dscale > 1000 || ndigits > 1000 {
		return "", errorf("invalid numeric")
	}
	switch sign {
	case numericNaN, numericPosInf, numericNegInf:
		return "", errorf("NaN and infinite numerics are not supported")
	case numericPos, numericNeg:
	default:
		return "", errorf("invalid numeric sign")
	}
	var b strings.Builder
	if sign == numericNeg {
		b.WriteByte('-')
	}
	digit := func(i int) int {
		if i < 0 || i >= ndigits {
			return 0
		}
		return int(binary.BigEndian.Uint16(v[8+2*i:]))
	}
	// Integer part: groups 0..weight.
	if weight < 0 {
		b.WriteByte('0')
	} else {
		for i := 0; i <= weight; i++ {
			d := digit(i)
			if i == 0 {
				b.WriteString(strconv.Itoa(d))
			} else {
				b.WriteString(pad4(d))
			}
		}
	}
	if dscale > 0 {
		var frac strings.Builder
		for i := weight + 1; frac.Len() < dscale; i++ {
			frac.WriteString(pad4(digit(i)))
		}
		b.WriteByte('.')
		b.WriteString(frac.String()[:dscale])
	}
	return b.String(), nil
}

func pad4(d int) string {
	s := strconv.Itoa(d)
	return strings.Repeat("0", 4-len(s)) + s
}
