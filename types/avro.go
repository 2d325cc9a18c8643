package types

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// The AVRO format, as ksqlDB reads and writes it: the Confluent wire
// format (a zero byte, the 4-byte big-endian schema ID, the Avro binary
// encoding) with schemas kept in a schema registry (FormatOptions.Schemas).
//
// The schema sqlstreams writes (AvroSchema) maps SQL types as ksqlDB does:
//
//	BOOLEAN    boolean          DOUBLE     double
//	INT        int              STRING     string
//	BIGINT     long             BYTES      bytes
//	DECIMAL    bytes, logicalType decimal with the precision and scale
//	DATE       int, date        TIME       int, time-millis
//	TIMESTAMP  long, timestamp-millis
//	ARRAY      array            MAP        map (STRING keys only)
//	STRUCT     record named <parent's full name>_<FIELD>
//
// Every column, array element, map value and struct field is a union
// ["null", T] with default null. The columns of a value are the fields of a
// record named io.confluent.ksql.avro_schemas.KsqlDataSourceSchema
// (FormatOptions.FullName) unless there is one column and it is unwrapped
// (FormatOptions.WrapSingleValue; a single key column is unwrapped by
// default): the schema is then that column's union.
//
// Reading is driven by the writer's schema, fetched by the ID in each
// record's header, and resolved against the columns as Avro schema
// resolution does: fields match columns by name (an exact match first, then
// case-insensitively, then by the writer field's aliases); writer fields
// without a column are skipped; columns without a writer field are NULL;
// int widens to BIGINT and DOUBLE, long and float to DOUBLE, string and
// bytes read as each other, an enum reads as its symbol's STRING, fixed as
// BYTES, time-micros and timestamp-micros are truncated to milliseconds and
// a decimal is rescaled to the column's scale when that loses nothing. A
// writer schema that cannot be resolved (a long field for an INT column,
// say) makes each of its records a bad record naming the schema ID, as do
// an unknown schema ID, a missing or wrong header and a truncated payload.
type avroCodec struct {
	cols  []int
	names []string
	types []Type
	wrap  bool
	opts  FormatOptions

	// own is the schema made from the columns (AvroSchema).
	own     string
	ownPlan *aenc

	// encoding, prepared on the first Encode
	encID   int
	enc     *aenc
	encErr  error
	w       *avro.Writer
	hdr     sr.ConfluentHeader
	scratch []byte

	// decoding
	r       *avro.Reader
	plans   map[int]*adec // by writer schema ID
	lastID  int
	last    *adec
	payload int    // length of the record being read: no string is longer
	buf     []byte // STRING and BYTES values of the record being read
}

// maxBadPlans bounds the schema IDs a decoder remembers as unreadable:
// records with random IDs must not grow its memory without limit (past it,
// each such record asks the registry again).
const maxBadPlans = 1024

// avroDefaultName is the full name ksqlDB gives a value's record schema.
const avroDefaultName = "io.confluent.ksql.avro_schemas.KsqlDataSourceSchema"

// errNoRegistry is returned by registry-format codecs built without a
// registry.
var errNoRegistry = fmt.Errorf("%w: AVRO, PROTOBUF and JSON_SR need a schema registry: start sqlstreams with its embedded broker (which serves one) or --schema-registry-url", ErrRegistry)

func newAvroCodec(s Schema, cols []int, wrap bool, o FormatOptions) (*avroCodec, error) {
	c := &avroCodec{cols: cols, wrap: wrap, opts: o, plans: map[int]*adec{}}
	for _, col := range cols {
		sc := s.Columns[col]
		if err := avroCheck(sc.Type); err != nil {
			return nil, fmt.Errorf("AVRO column %s: %v", sc.Name, err)
		}
		c.names = append(c.names, sc.Name)
		c.types = append(c.types, sc.Type)
	}
	if !wrap && len(cols) != 1 {
		return nil, fmt.Errorf("an unwrapped AVRO value needs exactly one column, got %d", len(cols))
	}
	name := o.FullName
	if name == "" {
		name = avroDefaultName
		if isKey(s, cols) {
			name = "io.confluent.ksql.avro_schemas.KsqlDataSourceSchemaKey"
		}
	}
	c.own = AvroSchema(c.names, c.types, wrap, name)
	sch, err := avro.ParseWithCache(c.own, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("AVRO schema of the columns: %v", err)
	}
	if c.ownPlan, err = c.encPlan(sch); err != nil {
		return nil, err
	}
	c.w = avro.NewWriter(nil, 256)
	c.r = avro.NewReader(nil, 0)
	return c, nil
}

// avroCheck refuses types the AVRO format cannot hold.
func avroCheck(t Type) error {
	switch t.Kind {
	case Map:
		if t.KeyType.Kind != String {
			return fmt.Errorf("AVRO maps have STRING keys, not %s", t.KeyType)
		}
		return avroCheck(*t.Elem)
	case Array:
		return avroCheck(*t.Elem)
	case Struct:
		for _, f := range t.Fields {
			if err := avroCheck(f.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

// AvroSchema returns the Avro schema ksqlDB would register for columns
// with these names and types: a record named fullName whose fields are the
// columns, or, when wrap is false, the one column's type. Every value is
// nullable (see the format's doc).
func AvroSchema(names []string, types []Type, wrap bool, fullName string) string {
	var v any
	if wrap {
		v = avroRecord(fullName, names, types)
	} else {
		v = avroType(types[0], fullName)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

type avroFieldJSON struct {
	Name    string `json:"name"`
	Type    any    `json:"type"`
	Default any    `json:"default"`
}

type avroRecordJSON struct {
	Type   string          `json:"type"`
	Name   string          `json:"name"`
	Fields []avroFieldJSON `json:"fields"`
}

func avroRecord(fullName string, names []string, types []Type) avroRecordJSON {
	r := avroRecordJSON{Type: "record", Name: fullName, Fields: []avroFieldJSON{}}
	for i, n := range names {
		r.Fields = append(r.Fields, avroFieldJSON{Name: n, Type: avroType(types[i], fullName+"_"+n)})
	}
	return r
}

// avroType is the nullable Avro type of t; name names a record.
func avroType(t Type, name string) any {
	var v any
	switch t.Kind {
	case Boolean:
		v = "boolean"
	case Int:
		v = "int"
	case Bigint:
		v = "long"
	case Double:
		v = "double"
	case String:
		v = "string"
	case Bytes:
		v = "bytes"
	case Decimal:
		v = map[string]any{"type": "bytes", "logicalType": "decimal", "precision": t.Precision, "scale": t.Scale}
	case Date:
		v = map[string]any{"type": "int", "logicalType": "date"}
	case Time:
		v = map[string]any{"type": "int", "logicalType": "time-millis"}
	case Timestamp:
		v = map[string]any{"type": "long", "logicalType": "timestamp-millis"}
	case Array:
		v = map[string]any{"type": "array", "items": avroType(*t.Elem, name)}
	case Map:
		v = map[string]any{"type": "map", "values": avroType(*t.Elem, name)}
	case Struct:
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		v = avroRecord(name, names, types)
	}
	return []any{"null", v}
}

// ---- encoding ----

type aeop uint8

const (
	eUnion aeop = iota // nullable: index null or value, then the value
	eBool
	eInt
	eLong
	eFloat
	eDouble
	eIntToLong
	eIntToDouble
	eString
	eBytes
	eEnum
	eFixed
	eDecimal
	eDecimalFixed
	eMicros // TIME or TIMESTAMP in micros
	eArray
	eMap
	eRecord
	eNull // a field of the writer schema no column fills: null
)

// aenc is the encoding plan for one value: how a datum of type t is
// written as one Avro schema.
type aenc struct {
	op        aeop
	t         Type
	nullIdx   int   // eUnion: the null branch, -1 if none
	valIdx    int   // eUnion: the value's branch
	val       *aenc // eUnion: the value's plan
	elem      *aenc
	fields    []aencField
	scale     int
	size      int              // eFixed, eDecimalFixed
	symbols   map[string]int32 // eEnum
	fieldName string
}

type aencField struct {
	pos  int // the column or struct field it writes; -1 writes null
	node *aenc
}

// encPlan plans writing the columns as the writer schema sch (the codec's
// own schema, or one given by SchemaID).
func (c *avroCodec) encPlan(sch avro.Schema) (*aenc, error) {
	if !c.wrap {
		return encNode(sch, c.types[0])
	}
	return encRecord(sch, c.names, c.types)
}

func encRecord(sch avro.Schema, names []string, types []Type) (*aenc, error) {
	if u, ok := sch.(*avro.UnionSchema); ok {
		// A top-level nullable record: write the record branch.
		n, err := encUnion(u, Type{Kind: Struct}, func(s avro.Schema) (*aenc, error) { return encRecord(s, names, types) })
		return n, err
	}
	rs, ok := sch.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("schema is %s, not a record", sch.Type())
	}
	n := &aenc{op: eRecord}
	used := make([]bool, len(names))
	for _, f := range rs.Fields() {
		pos := matchName(f.Name(), f.Aliases(), names)
		if pos < 0 || used[pos] {
			if !nullable(f.Type()) {
				return nil, fmt.Errorf("schema field %s is not nullable and no column has its name", f.Name())
			}
			n.fields = append(n.fields, aencField{pos: -1, node: &aenc{op: eNull, nullIdx: nullIndex(f.Type())}})
			continue
		}
		used[pos] = true
		fn, err := encNode(f.Type(), types[pos])
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", f.Name(), err)
		}
		n.fields = append(n.fields, aencField{pos: pos, node: fn})
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("the schema has no field for column %s", names[i])
		}
	}
	return n, nil
}

func nullable(s avro.Schema) bool {
	if s.Type() == avro.Null {
		return true
	}
	return nullIndex(s) >= 0
}

func nullIndex(s avro.Schema) int {
	if u, ok := s.(*avro.UnionSchema); ok {
		for i, b := range u.Types() {
			if b.Type() == avro.Null {
				return i
			}
		}
	}
	return -1
}

// matchName finds the column named name (exactly, then ignoring case, then
// by one of aliases) in names, or -1.
func matchName(name string, aliases []string, names []string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	for i, n := range names {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	for _, a := range aliases {
		for i, n := range names {
			if strings.EqualFold(n, a) {
				return i
			}
		}
	}
	return -1
}

func encUnion(u *avro.UnionSchema, t Type, branch func(avro.Schema) (*aenc, error)) (*aenc, error) {
	n := &aenc{op: eUnion, t: t, nullIdx: -1, valIdx: -1}
	var firstErr error
	for i, b := range u.Types() {
		if b.Type() == avro.Null {
			n.nullIdx = i
			continue
		}
		if n.val != nil {
			continue
		}
		v, err := branch(b)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		n.val, n.valIdx = v, i
	}
	if n.val == nil {
		if firstErr == nil {
			firstErr = fmt.Errorf("union %s has no branch for %s", u, t)
		}
		return nil, firstErr
	}
	return n, nil
}

func logical(s avro.Schema) avro.LogicalSchema {
	if l, ok := s.(avro.LogicalTypeSchema); ok {
		return l.Logical()
	}
	return nil
}

func encNode(s avro.Schema, t Type) (*aenc, error) {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if u, ok := s.(*avro.UnionSchema); ok {
		return encUnion(u, t, func(b avro.Schema) (*aenc, error) { return encNode(b, t) })
	}
	bad := func() (*aenc, error) { return nil, fmt.Errorf("cannot write %s as Avro %s", t, avroTypeName(s)) }
	lt := avro.LogicalType("")
	if l := logical(s); l != nil {
		lt = l.Type()
	}
	n := &aenc{t: t}
	switch s.Type() {
	case avro.Boolean:
		n.op = eBool
		if t.Kind != Boolean {
			return bad()
		}
	case avro.Int:
		switch {
		case t.Kind == Int && lt == "", t.Kind == Date && lt == avro.Date, t.Kind == Time && lt == avro.TimeMillis:
			n.op = eInt
		default:
			return bad()
		}
	case avro.Long:
		switch {
		case t.Kind == Bigint && lt == "", t.Kind == Timestamp && (lt == avro.TimestampMillis || lt == avro.LocalTimestampMillis):
			n.op = eLong
		case t.Kind == Int && lt == "":
			n.op = eIntToLong
		case t.Kind == Time && lt == avro.TimeMicros, t.Kind == Timestamp && (lt == avro.TimestampMicros || lt == avro.LocalTimestampMicros):
			n.op = eMicros
		default:
			return bad()
		}
	case avro.Float:
		if t.Kind != Double {
			return bad()
		}
		n.op = eFloat
	case avro.Double:
		switch t.Kind {
		case Double:
			n.op = eDouble
		case Int, Bigint:
			n.op = eIntToDouble
		default:
			return bad()
		}
	case avro.String:
		if t.Kind != String {
			return bad()
		}
		n.op = eString
	case avro.Bytes:
		switch {
		case t.Kind == Bytes && lt == "":
			n.op = eBytes
		case t.Kind == Decimal && lt == avro.Decimal:
			d := logical(s).(*avro.DecimalLogicalSchema)
			if d.Scale() != t.Scale {
				return nil, fmt.Errorf("cannot write %s as an Avro decimal of scale %d", t, d.Scale())
			}
			n.op, n.scale = eDecimal, t.Scale
		default:
			return bad()
		}
	case avro.Fixed:
		f := s.(*avro.FixedSchema)
		n.size = f.Size()
		switch {
		case t.Kind == Bytes && lt == "":
			n.op = eFixed
		case t.Kind == Decimal && lt == avro.Decimal:
			d := logical(s).(*avro.DecimalLogicalSchema)
			if d.Scale() != t.Scale {
				return nil, fmt.Errorf("cannot write %s as an Avro decimal of scale %d", t, d.Scale())
			}
			n.op, n.scale = eDecimalFixed, t.Scale
		default:
			return bad()
		}
	case avro.Enum:
		if t.Kind != String {
			return bad()
		}
		n.op, n.symbols = eEnum, map[string]int32{}
		for i, sym := range s.(*avro.EnumSchema).Symbols() {
			n.symbols[sym] = int32(i)
		}
	case avro.Array:
		if t.Kind != Array {
			return bad()
		}
		e, err := encNode(s.(*avro.ArraySchema).Items(), *t.Elem)
		if err != nil {
			return nil, err
		}
		n.op, n.elem = eArray, e
	case avro.Map:
		if t.Kind != Map {
			return bad()
		}
		e, err := encNode(s.(*avro.MapSchema).Values(), *t.Elem)
		if err != nil {
			return nil, err
		}
		n.op, n.elem = eMap, e
	case avro.Record:
		if t.Kind != Struct {
			return bad()
		}
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		return encRecord(s, names, types)
	default:
		return bad()
	}
	return n, nil
}

func avroTypeName(s avro.Schema) string {
	if l := logical(s); l != nil {
		return string(s.Type()) + " (" + string(l.Type()) + ")"
	}
	return string(s.Type())
}

// Encode appends the Confluent wire header and the Avro encoding of the
// codec's columns of row to dst. The first call registers the columns'
// schema under FormatOptions.Subject (or fetches FormatOptions.SchemaID).
func (c *avroCodec) Encode(dst []byte, row Row) ([]byte, error) {
	if c.enc == nil {
		if err := c.prepareEncode(); err != nil {
			return dst, registryErr(err)
		}
	}
	dst, _ = c.hdr.AppendEncode(dst, c.encID, nil)
	c.w.Reset(nil)
	var err error
	if c.wrap {
		err = c.encodeRecordRow(c.enc, row)
	} else {
		err = c.encode(c.enc, row[c.cols[0]])
	}
	if err != nil {
		return dst, err
	}
	return append(dst, c.w.Buffer()...), nil
}

func (c *avroCodec) prepareEncode() error {
	if c.encErr != nil {
		return c.encErr
	}
	if c.opts.Schemas == nil {
		return errNoRegistry
	}
	if c.opts.SchemaID != 0 {
		rs, err := c.opts.Schemas.SchemaByID(c.opts.SchemaID)
		if err != nil {
			return fmt.Errorf("schema ID %d: %w", c.opts.SchemaID, err)
		}
		sch, err := parseAvroCached(c.opts.Schemas, rs)
		if err == nil {
			c.enc, err = c.encPlan(sch)
		}
		if err != nil {
			c.encErr = fmt.Errorf("cannot write the columns with schema ID %d: %v", c.opts.SchemaID, err)
			return c.encErr
		}
		c.encID = c.opts.SchemaID
		return nil
	}
	if c.opts.Subject == "" {
		return fmt.Errorf("the AVRO encoder has no registry subject")
	}
	id, err := c.opts.Schemas.Register(c.opts.Subject, RegisteredSchema{Type: SchemaTypeAvro, Text: c.own})
	if err != nil {
		return fmt.Errorf("registering the schema under %s: %w", c.opts.Subject, err)
	}
	c.encID, c.enc = id, c.ownPlan
	return nil
}

// parseAvro parses an Avro schema after the schemas it references.
func parseAvro(rs RegisteredSchema, deps []namedSchema) (avro.Schema, error) {
	if rs.Type != "" && rs.Type != SchemaTypeAvro {
		return nil, fmt.Errorf("the schema is %s, not AVRO", rs.Type)
	}
	cache := &avro.SchemaCache{}
	for _, d := range deps {
		if _, err := avro.ParseWithCache(d.text, "", cache); err != nil {
			return nil, fmt.Errorf("referenced schema %s: %v", d.name, err)
		}
	}
	return avro.ParseWithCache(rs.Text, "", cache)
}

func (c *avroCodec) encodeRecordRow(n *aenc, row Row) error {
	if n.op == eUnion {
		c.w.WriteLong(int64(n.valIdx))
		n = n.val
	}
	for _, f := range n.fields {
		if f.pos < 0 {
			c.w.WriteLong(int64(f.node.nullIdx))
			continue
		}
		if err := c.encode(f.node, row[c.cols[f.pos]]); err != nil {
			return inField(err, c.names[f.pos])
		}
	}
	return nil
}

func (c *avroCodec) encode(n *aenc, d Datum) error {
	w := c.w
	if n.op == eUnion {
		if d.Null {
			if n.nullIdx < 0 {
				return fmt.Errorf("NULL where the schema allows none")
			}
			w.WriteLong(int64(n.nullIdx))
			return nil
		}
		w.WriteLong(int64(n.valIdx))
		n = n.val
	} else if d.Null && n.op != eNull {
		return fmt.Errorf("NULL where the schema allows none")
	}
	switch n.op {
	case eNull:
		if n.nullIdx >= 0 {
			w.WriteLong(int64(n.nullIdx))
		}
	case eBool:
		w.WriteBool(d.I != 0)
	case eInt:
		if d.I < math.MinInt32 || d.I > math.MaxInt32 {
			return fmt.Errorf("%d does not fit an Avro int", d.I)
		}
		w.WriteInt(int32(d.I))
	case eLong, eIntToLong:
		w.WriteLong(d.I)
	case eMicros:
		w.WriteLong(d.I * 1000)
	case eFloat:
		w.WriteFloat(float32(d.F))
	case eDouble:
		w.WriteDouble(d.F)
	case eIntToDouble:
		w.WriteDouble(float64(d.I))
	case eString, eBytes:
		w.WriteBytes(d.B)
	case eEnum:
		i, ok := n.symbols[string(d.B)]
		if !ok {
			return fmt.Errorf("%q is not a symbol of the enum", d.B)
		}
		w.WriteInt(i)
	case eFixed:
		if len(d.B) != n.size {
			return fmt.Errorf("%d bytes for a fixed of %d", len(d.B), n.size)
		}
		_, _ = w.Write(d.B)
	case eDecimal:
		c.scratch = appendTwosComplement(c.scratch[:0], d.I)
		w.WriteBytes(c.scratch)
	case eDecimalFixed:
		c.scratch = appendTwosComplement(c.scratch[:0], d.I)
		if len(c.scratch) > n.size {
			return fmt.Errorf("decimal does not fit a fixed of %d", n.size)
		}
		pad := byte(0)
		if d.I < 0 {
			pad = 0xff
		}
		for i := len(c.scratch); i < n.size; i++ {
			w.Write([]byte{pad})
		}
		_, _ = w.Write(c.scratch)
	case eArray:
		if len(d.L) > 0 {
			w.WriteLong(int64(len(d.L)))
			for i, e := range d.L {
				if err := c.encode(n.elem, e); err != nil {
					return inField(err, fmt.Sprintf("[%d]", i))
				}
			}
		}
		w.WriteLong(0)
	case eMap:
		if len(d.L) > 0 {
			w.WriteLong(int64(len(d.L) / 2))
			for i := 0; i+1 < len(d.L); i += 2 {
				if d.L[i].Null {
					return fmt.Errorf("a NULL map key")
				}
				w.WriteBytes(d.L[i].B)
				if err := c.encode(n.elem, d.L[i+1]); err != nil {
					return inField(err, "['"+string(d.L[i].B)+"']")
				}
			}
		}
		w.WriteLong(0)
	case eRecord:
		for _, f := range n.fields {
			if f.pos < 0 {
				c.w.WriteLong(int64(f.node.nullIdx))
				continue
			}
			if err := c.encode(f.node, d.L[f.pos]); err != nil {
				return inField(err, n.t.fieldNameOr(f.pos))
			}
		}
	}
	return nil
}

func (t Type) fieldNameOr(i int) string {
	if i < len(t.Fields) {
		return t.Fields[i].Name
	}
	return fmt.Sprintf("#%d", i)
}

// appendTwosComplement appends v as the shortest big-endian two's
// complement, as Avro decimals are written.
func appendTwosComplement(dst []byte, v int64) []byte {
	n := 8
	for n > 1 {
		b := byte(v >> (8 * (n - 1)))
		next := byte(v >> (8 * (n - 2)))
		if (b == 0 && next&0x80 == 0) || (b == 0xff && next&0x80 != 0) {
			n--
			continue
		}
		break
	}
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// ---- decoding ----

type adop uint8

const (
	dSkip adop = iota // read and drop a value of the writer schema
	dNull
	dBool
	dInt
	dLong
	dIntDouble
	dLongDouble
	dFloat
	dDouble
	dString // string or bytes into B
	dEnum
	dFixed
	dDecimal
	dDecimalFixed
	dMicros
	dUnion
	dArray
	dMap
	dRecord
)

// adec is the plan for reading one writer schema into a type.
type adec struct {
	op       adop
	skipType avro.Type // dSkip of a primitive
	branches []*adec   // dUnion: per writer branch
	elem     *adec     // dArray, dMap
	fields   []adecField
	nfields  int     // dRecord: fields of the struct read into
	missing  []int   // dRecord: reader fields the writer lacks
	defaults []Datum // top-level dRecord: per missing field, the reader schema's default (Null: none)
	size     int     // dFixed, dDecimalFixed
	scale    int64   // dDecimal*: multiply the unscaled value by this
	symbols  [][]byte
	err      error // a plan that did not resolve: each record is bad
}

type adecField struct {
	pos  int // the reader field; -1 skips the writer field
	node *adec
}

func (c *avroCodec) plan(id int) *adec {
	if id == c.lastID && c.last != nil {
		return c.last
	}
	p, ok := c.plans[id]
	if !ok {
		p = c.newPlan(id)
		if p == nil {
			return nil
		}
		if p.err == nil || len(c.plans) < maxBadPlans {
			c.plans[id] = p
		}
	}
	c.lastID, c.last = id, p
	return p
}

// newPlan fetches the writer schema id and resolves it against the
// columns. nil means the registry could not be asked (retry later).
func (c *avroCodec) newPlan(id int) *adec {
	rs, err := c.opts.Schemas.SchemaByID(id)
	if err != nil {
		if errors.Is(err, ErrSchemaNotFound) {
			return &adec{err: fmt.Errorf("schema ID %d: %v", id, err)}
		}
		return nil
	}
	sch, err := parseAvroCached(c.opts.Schemas, rs)
	if registryDown(err) {
		return nil // the registry did not answer for a reference
	}
	if err != nil {
		return &adec{err: fmt.Errorf("schema ID %d: %v", id, err)}
	}
	var p *adec
	if c.wrap {
		p, err = decRecordTop(sch, c.names, c.types)
	} else {
		p, err = decNode(sch, c.types[0])
	}
	if err != nil {
		return &adec{err: fmt.Errorf("schema ID %d cannot be read as the columns: %v", id, err)}
	}
	if c.wrap && c.opts.ReaderSchemaID != 0 {
		if registryDown(c.readerDefaults(p)) {
			return nil
		}
	}
	return p
}

// readerDefaults fills, for the columns writer plan p lacks, the defaults
// of the reader schema (FormatOptions.ReaderSchemaID) as Avro schema
// resolution would: a field added with a default reads as that default
// from records written before it. Scalar defaults only; others stay NULL.
func (c *avroCodec) readerDefaults(p *adec) error {
	rs, err := c.opts.Schemas.SchemaByID(c.opts.ReaderSchemaID)
	if err != nil {
		return err
	}
	sch, err := parseAvroCached(c.opts.Schemas, rs)
	if err != nil {
		return err
	}
	if u, ok := sch.(*avro.UnionSchema); ok {
		sch = unionValue(u)
	}
	rec, ok := sch.(*avro.RecordSchema)
	if !ok {
		return nil
	}
	var fill func(p *adec)
	fill = func(p *adec) {
		if p.op == dUnion {
			for _, b := range p.branches {
				fill(b)
			}
			return
		}
		if p.op != dRecord || len(p.missing) == 0 {
			return
		}
		p.defaults = make([]Datum, len(p.missing))
		for i, m := range p.missing {
			p.defaults[i] = NullDatum
			for _, f := range rec.Fields() {
				if matchName(f.Name(), nil, c.names[m:m+1]) == 0 && f.HasDefault() {
					p.defaults[i] = avroDefault(f.Default(), c.types[m])
					break
				}
			}
		}
	}
	fill(p)
	return nil
}

// avroDefault converts a field default as hamba/avro gives it to a datum
// of type t; NULL when it does not fit.
func avroDefault(v any, t Type) Datum {
	switch x := v.(type) {
	case string:
		if t.Kind == String || t.Kind == Bytes {
			return Datum{B: []byte(x)}
		}
	case []byte:
		if t.Kind == String || t.Kind == Bytes {
			return Datum{B: x}
		}
	case bool:
		if t.Kind == Boolean {
			return BoolDatum(x)
		}
	case int, int32, int64:
		var n int64
		switch y := x.(type) {
		case int:
			n = int64(y)
		case int32:
			n = int64(y)
		case int64:
			n = y
		}
		switch t.Kind {
		case Int, Bigint, Date, Time, Timestamp:
			return Datum{I: n}
		case Double:
			return Datum{F: float64(n)}
		}
	case float32:
		if t.Kind == Double {
			return Datum{F: float64(x)}
		}
	case float64:
		if t.Kind == Double {
			return Datum{F: x}
		}
		if t.IsIntegral() && x == math.Trunc(x) {
			return Datum{I: int64(x)}
		}
	}
	return NullDatum
}

var avroParsed sync.Map // depsKey → avro.Schema, shared by codecs

// errParse marks a schema that does not parse (as opposed to a registry
// that did not answer).
var errParse = errors.New("invalid schema")

// registryDown reports whether err is the registry failing to answer, not
// a schema that is missing or does not parse.
func registryDown(err error) bool {
	return err != nil && !errors.Is(err, ErrSchemaNotFound) && !errors.Is(err, errParse) && !errors.Is(err, errNoRegistry)
}

// parseAvroCached parses rs with its references fetched from src.
func parseAvroCached(src SchemaSource, rs RegisteredSchema) (avro.Schema, error) {
	deps, err := resolveRefs(src, rs)
	if err != nil {
		return nil, err
	}
	key := depsKey(rs.Text, deps)
	if s, ok := avroParsed.Load(key); ok {
		return s.(avro.Schema), nil
	}
	s, err := parseAvro(rs, deps)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errParse, err)
	}
	avroParsed.Store(key, s)
	return s, nil
}

func decRecordTop(sch avro.Schema, names []string, types []Type) (*adec, error) {
	if u, ok := sch.(*avro.UnionSchema); ok {
		return decUnion(u, func(b avro.Schema) (*adec, error) {
			if b.Type() == avro.Null {
				return &adec{op: dNull}, nil
			}
			return decRecordTop(b, names, types)
		})
	}
	if r, ok := sch.(*avro.RefSchema); ok {
		sch = r.Schema()
	}
	rs, ok := sch.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the writer schema is %s, not a record", sch.Type())
	}
	return decRecord(rs, names, types)
}

func decRecord(rs *avro.RecordSchema, names []string, types []Type) (*adec, error) {
	n := &adec{op: dRecord, nfields: len(names)}
	seen := make([]bool, len(names))
	for _, f := range rs.Fields() {
		pos := matchName(f.Name(), f.Aliases(), names)
		if pos < 0 || seen[pos] {
			n.fields = append(n.fields, adecField{pos: -1, node: skipNode(f.Type())})
			continue
		}
		seen[pos] = true
		fn, err := decNode(f.Type(), types[pos])
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", f.Name(), err)
		}
		n.fields = append(n.fields, adecField{pos: pos, node: fn})
	}
	for i, s := range seen {
		if !s {
			n.missing = append(n.missing, i)
		}
	}
	return n, nil
}

func decUnion(u *avro.UnionSchema, branch func(avro.Schema) (*adec, error)) (*adec, error) {
	n := &adec{op: dUnion}
	ok := false
	var firstErr error
	for _, b := range u.Types() {
		bn, err := branch(b)
		if err != nil {
			// A branch the column cannot take makes only the records
			// that use it bad.
			if firstErr == nil {
				firstErr = err
			}
			bn = &adec{err: err}
		} else if b.Type() != avro.Null {
			ok = true
		}
		n.branches = append(n.branches, bn)
	}
	if !ok && firstErr != nil {
		return nil, firstErr
	}
	return n, nil
}

// skipNode plans stepping over a value of schema s.
func skipNode(s avro.Schema) *adec {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	switch s := s.(type) {
	case *avro.UnionSchema:
		n := &adec{op: dUnion}
		for _, b := range s.Types() {
			n.branches = append(n.branches, skipNode(b))
		}
		return n
	case *avro.ArraySchema:
		return &adec{op: dArray, elem: skipNode(s.Items()), skipType: avro.Array}
	case *avro.MapSchema:
		return &adec{op: dMap, elem: skipNode(s.Values()), skipType: avro.Map}
	case *avro.RecordSchema:
		n := &adec{op: dRecord, skipType: avro.Record}
		for _, f := range s.Fields() {
			n.fields = append(n.fields, adecField{pos: -1, node: skipNode(f.Type())})
		}
		return n
	case *avro.FixedSchema:
		return &adec{op: dSkip, skipType: avro.Fixed, size: s.Size()}
	}
	return &adec{op: dSkip, skipType: s.Type()}
}

func decNode(s avro.Schema, t Type) (*adec, error) {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if u, ok := s.(*avro.UnionSchema); ok {
		return decUnion(u, func(b avro.Schema) (*adec, error) {
			if b.Type() == avro.Null {
				return &adec{op: dNull}, nil
			}
			return decNode(b, t)
		})
	}
	bad := func() (*adec, error) {
		return nil, fmt.Errorf("cannot read Avro %s as %s", avroTypeName(s), t)
	}
	lt := avro.LogicalType("")
	if l := logical(s); l != nil {
		lt = l.Type()
	}
	n := &adec{}
	switch s.Type() {
	case avro.Null:
		n.op = dNull
	case avro.Boolean:
		if t.Kind != Boolean {
			return bad()
		}
		n.op = dBool
	case avro.Int:
		switch {
		case t.Kind == Int && lt == "", t.Kind == Bigint && lt == "",
			t.Kind == Date && lt == avro.Date, t.Kind == Time && lt == avro.TimeMillis:
			n.op = dInt
		case t.Kind == Double && lt == "":
			n.op = dIntDouble
		default:
			return bad()
		}
	case avro.Long:
		switch {
		case t.Kind == Bigint && lt == "",
			t.Kind == Timestamp && (lt == avro.TimestampMillis || lt == avro.LocalTimestampMillis):
			n.op = dLong
		case t.Kind == Double && lt == "":
			n.op = dLongDouble
		case t.Kind == Time && lt == avro.TimeMicros,
			t.Kind == Timestamp && (lt == avro.TimestampMicros || lt == avro.LocalTimestampMicros):
			n.op = dMicros
		default:
			return bad()
		}
	case avro.Float:
		if t.Kind != Double {
			return bad()
		}
		n.op = dFloat
	case avro.Double:
		if t.Kind != Double {
			return bad()
		}
		n.op = dDouble
	case avro.String:
		if t.Kind != String && t.Kind != Bytes {
			return bad()
		}
		n.op = dString
	case avro.Bytes, avro.Fixed:
		fixed := s.Type() == avro.Fixed
		if fixed {
			n.size = s.(*avro.FixedSchema).Size()
		}
		switch {
		case (t.Kind == Bytes || t.Kind == String && !fixed) && lt == "":
			n.op = dString
			if fixed {
				n.op = dFixed
			}
		case t.Kind == Decimal && lt == avro.Decimal:
			d := logical(s).(*avro.DecimalLogicalSchema)
			if d.Scale() > t.Scale || d.Precision()-d.Scale() > t.Precision-t.Scale {
				return nil, fmt.Errorf("cannot read Avro decimal(%d, %d) as %s", d.Precision(), d.Scale(), t)
			}
			n.op, n.scale = dDecimal, pow10[t.Scale-d.Scale()]
			if fixed {
				n.op = dDecimalFixed
			}
		default:
			return bad()
		}
	case avro.Enum:
		if t.Kind != String {
			return bad()
		}
		n.op = dEnum
		for _, sym := range s.(*avro.EnumSchema).Symbols() {
			n.symbols = append(n.symbols, []byte(sym))
		}
	case avro.Array:
		if t.Kind != Array {
			return bad()
		}
		e, err := decNode(s.(*avro.ArraySchema).Items(), *t.Elem)
		if err != nil {
			return nil, inField(err, "[]")
		}
		n.op, n.elem = dArray, e
	case avro.Map:
		if t.Kind != Map {
			return bad()
		}
		e, err := decNode(s.(*avro.MapSchema).Values(), *t.Elem)
		if err != nil {
			return nil, err
		}
		n.op, n.elem = dMap, e
	case avro.Record:
		if t.Kind != Struct {
			return bad()
		}
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		return decRecord(s.(*avro.RecordSchema), names, types)
	default:
		return bad()
	}
	return n, nil
}

// Decode reads the header's schema ID, then the payload as that writer
// schema into the codec's columns.
func (c *avroCodec) Decode(data []byte, row Row) error {
	if data == nil {
		for _, col := range c.cols {
			setNull(&row[col])
		}
		return nil
	}
	id, payload, err := c.hdr.DecodeID(data)
	if err != nil {
		return badRecord("not in the schema registry's wire format: %d bytes, first %s", len(data), firstByte(data))
	}
	if c.opts.Schemas == nil {
		return errNoRegistry
	}
	p := c.plan(id)
	if p == nil {
		// The registry did not answer: not the record's fault.
		_, err := c.opts.Schemas.SchemaByID(id)
		return fmt.Errorf("%w: fetching Avro schema ID %d: %w", ErrRegistry, id, err)
	}
	if p.err != nil {
		return badRecord("%v", p.err)
	}
	c.r.Reset(payload)
	c.r.Error = nil
	c.buf = c.buf[:0]
	c.payload = len(payload)
	if c.wrap {
		err = c.decodeTop(p, row)
	} else {
		err = c.decode(p, &row[c.cols[0]])
	}
	if err == nil && c.r.Error != nil {
		err = c.r.Error
	}
	if err != nil {
		return badRecord("schema ID %d: %v", id, err)
	}
	return nil
}

func firstByte(b []byte) string {
	if len(b) == 0 {
		return "none"
	}
	return fmt.Sprintf("0x%02x", b[0])
}

func (c *avroCodec) decodeTop(n *adec, row Row) error {
	if n.op == dUnion {
		b, err := c.branch(n)
		if err != nil {
			return err
		}
		if b.op == dNull {
			for _, col := range c.cols {
				setNull(&row[col])
			}
			return nil
		}
		n = b
	}
	for _, f := range n.fields {
		if f.pos < 0 {
			if err := c.decode(f.node, nil); err != nil {
				return err
			}
			continue
		}
		if err := c.decode(f.node, &row[c.cols[f.pos]]); err != nil {
			return inField(err, c.names[f.pos])
		}
	}
	for i, m := range n.missing {
		d := &row[c.cols[m]]
		if n.defaults != nil && !n.defaults[i].Null {
			def := n.defaults[i]
			*d = Datum{I: def.I, F: def.F, B: def.B, L: d.L[:0]}
			continue
		}
		setNull(d)
	}
	return nil
}

func (c *avroCodec) branch(n *adec) (*adec, error) {
	i := c.r.ReadLong()
	if c.r.Error != nil {
		return nil, c.r.Error
	}
	if i < 0 || int(i) >= len(n.branches) {
		return nil, fmt.Errorf("union branch %d of %d", i, len(n.branches))
	}
	b := n.branches[i]
	if b.err != nil {
		return nil, b.err
	}
	return b, nil
}

// readBytes reads a string or bytes value into the codec's buffer.
func (c *avroCodec) readBytes(size int) ([]byte, error) {
	if size < 0 || size > c.payload {
		return nil, fmt.Errorf("invalid length %d", size)
	}
	off := len(c.buf)
	c.buf = append(c.buf, make([]byte, size)...)
	b := c.buf[off : off+size : off+size]
	c.r.Read(b)
	return b, c.r.Error
}

// decode reads one value of plan n into d; a nil d steps over it.
func (c *avroCodec) decode(n *adec, d *Datum) error {
	r := c.r
	if n.op == dUnion {
		b, err := c.branch(n)
		if err != nil {
			return err
		}
		n = b
	}
	if d == nil {
		return c.skip(n)
	}
	switch n.op {
	case dSkip:
		setNull(d)
		return c.skip(n)
	case dNull:
		setNull(d)
		return nil
	case dBool:
		*d = Datum{L: d.L[:0]}
		if r.ReadBool() {
			d.I = 1
		}
	case dInt:
		*d = Datum{I: int64(r.ReadInt()), L: d.L[:0]}
	case dLong:
		*d = Datum{I: r.ReadLong(), L: d.L[:0]}
	case dMicros:
		*d = Datum{I: floorDiv(r.ReadLong(), 1000), L: d.L[:0]}
	case dIntDouble:
		*d = Datum{F: float64(r.ReadInt()), L: d.L[:0]}
	case dLongDouble:
		*d = Datum{F: float64(r.ReadLong()), L: d.L[:0]}
	case dFloat:
		*d = Datum{F: float64(r.ReadFloat()), L: d.L[:0]}
	case dDouble:
		*d = Datum{F: r.ReadDouble(), L: d.L[:0]}
	case dString:
		b, err := c.readBytes(int(r.ReadLong()))
		if err != nil {
			return err
		}
		*d = Datum{B: b, L: d.L[:0]}
	case dFixed:
		b, err := c.readBytes(n.size)
		if err != nil {
			return err
		}
		*d = Datum{B: b, L: d.L[:0]}
	case dEnum:
		i := r.ReadInt()
		if i < 0 || int(i) >= len(n.symbols) {
			return fmt.Errorf("enum symbol %d of %d", i, len(n.symbols))
		}
		*d = Datum{B: n.symbols[i], L: d.L[:0]}
	case dDecimal, dDecimalFixed:
		size := n.size
		if n.op == dDecimal {
			size = int(r.ReadLong())
		}
		b, err := c.readBytes(size)
		if err != nil {
			return err
		}
		v, ok := fromTwosComplement(b)
		if ok && n.scale != 1 {
			if v > math.MaxInt64/n.scale || v < math.MinInt64/n.scale {
				ok = false
			}
			v *= n.scale
		}
		if !ok || v >= pow10[MaxDecimalPrecision] || v <= -pow10[MaxDecimalPrecision] {
			return fmt.Errorf("decimal out of range")
		}
		*d = Datum{I: v, L: d.L[:0]}
	case dArray:
		l := d.L[:0]
		for {
			count, _ := r.ReadBlockHeader()
			if r.Error != nil {
				return r.Error
			}
			if count == 0 {
				break
			}
			if count < 0 || count > int64(c.payload) {
				return fmt.Errorf("invalid array block of %d", count)
			}
			for i := int64(0); i < count; i++ {
				l = growDatums(l, len(l)+1)
				if err := c.decode(n.elem, &l[len(l)-1]); err != nil {
					return inField(err, fmt.Sprintf("[%d]", len(l)-1))
				}
			}
		}
		*d = Datum{L: l}
	case dMap:
		l := d.L[:0]
		for {
			count, _ := r.ReadBlockHeader()
			if r.Error != nil {
				return r.Error
			}
			if count == 0 {
				break
			}
			if count < 0 || count > int64(c.payload) {
				return fmt.Errorf("invalid map block of %d", count)
			}
			for i := int64(0); i < count; i++ {
				l = growDatums(l, len(l)+2)
				k, err := c.readBytes(int(r.ReadLong()))
				if err != nil {
					return err
				}
				l[len(l)-2] = Datum{B: k, L: l[len(l)-2].L[:0]}
				if err := c.decode(n.elem, &l[len(l)-1]); err != nil {
					return inField(err, "['"+string(k)+"']")
				}
			}
		}
		*d = Datum{L: l}
	case dRecord:
		l := growDatums(d.L, n.nfields)
		for _, f := range n.fields {
			var fd *Datum
			if f.pos >= 0 {
				fd = &l[f.pos]
			}
			if err := c.decode(f.node, fd); err != nil {
				return err
			}
		}
		for _, m := range n.missing {
			setNull(&l[m])
		}
		*d = Datum{L: l}
	}
	return r.Error
}

// skip steps over a value of plan n (a skip plan, or a reading one whose
// value nobody wants).
func (c *avroCodec) skip(n *adec) error {
	r := c.r
	switch n.op {
	case dNull:
	case dUnion:
		b, err := c.branch(n)
		if err != nil {
			return err
		}
		return c.skip(b)
	case dBool:
		r.SkipBool()
	case dInt, dIntDouble, dEnum:
		r.SkipInt()
	case dLong, dLongDouble, dMicros:
		r.SkipLong()
	case dFloat:
		r.SkipFloat()
	case dDouble:
		r.SkipDouble()
	case dString, dDecimal:
		r.SkipBytes()
	case dFixed, dDecimalFixed:
		r.SkipNBytes(n.size)
	case dArray, dMap:
		for {
			count, size := r.ReadBlockHeader()
			if r.Error != nil || count == 0 {
				break
			}
			if size > 0 {
				r.SkipNBytes(int(size))
				continue
			}
			if count < 0 || count > int64(c.payload) {
				return fmt.Errorf("invalid block of %d", count)
			}
			for i := int64(0); i < count && r.Error == nil; i++ {
				if n.op == dMap {
					r.SkipString()
				}
				if err := c.skip(n.elem); err != nil {
					return err
				}
			}
		}
	case dRecord:
		for _, f := range n.fields {
			if err := c.skip(f.node); err != nil {
				return err
			}
		}
	case dSkip:
		switch n.skipType {
		case avro.Boolean:
			r.SkipBool()
		case avro.Int, avro.Enum:
			r.SkipInt()
		case avro.Long:
			r.SkipLong()
		case avro.Float:
			r.SkipFloat()
		case avro.Double:
			r.SkipDouble()
		case avro.String, avro.Bytes:
			r.SkipBytes()
		case avro.Fixed:
			r.SkipNBytes(n.size)
		}
	}
	return r.Error
}

// fromTwosComplement reads a big-endian two's complement integer of up to
// 8 significant bytes.
func fromTwosComplement(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	neg := b[0]&0x80 != 0
	for len(b) > 8 {
		if (neg && b[0] != 0xff) || (!neg && b[0] != 0) {
			return 0, false
		}
		b = b[1:]
	}
	var v int64
	if neg {
		v = -1
	}
	for _, x := range b {
		v = v<<8 | int64(x)
	}
	if (v < 0) != neg {
		return 0, false
	}
	return v, true
}
