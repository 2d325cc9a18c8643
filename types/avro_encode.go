package types

import (
	"fmt"
	"math"
	"strings"

	"github.com/hamba/avro/v2"
)

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
	wide      bool             // eDecimal*: the value is a wide DECIMAL's bytes
	size      int              // eFixed, eDecimalFixed
	symbols   map[string]int32 // eEnum
	fieldName string
}

type aencField struct {
	pos  int // the column or struct field it writes; -1 writes null or def
	node *aenc
	// def, when the schema field has a default, is its encoding: what
	// is written for a field no column fills, and for a NULL where the
	// field allows none (as Kafka Connect's Avro converter does).
	def []byte
}

// encodeDefault encodes the default of a record field, or returns nil
// when it has none. A union's default is of its first branch.
func encodeDefault(f *avro.Field) []byte {
	if !f.HasDefault() {
		return nil
	}
	sch := f.Type()
	var prefix []byte
	if u, ok := sch.(*avro.UnionSchema); ok {
		sch, prefix = u.Types()[0], []byte{0}
	}
	b, err := avro.Marshal(sch, f.Default())
	if err != nil {
		return nil
	}
	return append(prefix, b...)
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
		def := encodeDefault(f)
		if pos < 0 || used[pos] {
			if def == nil && !nullable(f.Type()) {
				return nil, fmt.Errorf("schema field %s is not nullable, has no default and no column has its name", f.Name())
			}
			n.fields = append(n.fields, aencField{pos: -1, node: &aenc{op: eNull, nullIdx: nullIndex(f.Type())}, def: def})
			continue
		}
		used[pos] = true
		fn, err := encNode(f.Type(), types[pos])
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", f.Name(), err)
		}
		if nullable(f.Type()) {
			def = nil // a NULL is written as null
		}
		n.fields = append(n.fields, aencField{pos: pos, node: fn, def: def})
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
			n.op, n.scale, n.wide = eDecimal, t.Scale, t.IsWideDecimal()
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
			n.op, n.scale, n.wide = eDecimalFixed, t.Scale, t.IsWideDecimal()
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
	if c.opts.writeSchemaID() != 0 {
		rs, err := c.opts.Schemas.SchemaByID(c.opts.writeSchemaID())
		if err != nil {
			return fmt.Errorf("schema ID %d: %w", c.opts.writeSchemaID(), err)
		}
		sch, err := parseAvroCached(c.opts.Schemas, rs)
		if err == nil {
			c.enc, err = c.encPlan(sch)
		}
		if err != nil {
			c.encErr = fmt.Errorf("cannot write the columns with schema ID %d: %v", c.opts.writeSchemaID(), err)
			return c.encErr
		}
		c.encID = c.opts.writeSchemaID()
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
		if f.def != nil && (f.pos < 0 || row[c.cols[f.pos]].Null) {
			_, _ = c.w.Write(f.def)
			continue
		}
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
		if n.wide {
			w.WriteBytes(d.B)
			break
		}
		c.scratch = appendTwosComplement(c.scratch[:0], d.I)
		w.WriteBytes(c.scratch)
	case eDecimalFixed:
		neg := d.I < 0
		if n.wide {
			c.scratch = append(c.scratch[:0], d.B...)
			neg = len(d.B) > 0 && d.B[0]&0x80 != 0
		} else {
			c.scratch = appendTwosComplement(c.scratch[:0], d.I)
		}
		if len(c.scratch) > n.size {
			return fmt.Errorf("decimal does not fit a fixed of %d", n.size)
		}
		pad := byte(0)
		if neg {
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
			if f.def != nil && (f.pos < 0 || d.L[f.pos].Null) {
				_, _ = c.w.Write(f.def)
				continue
			}
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
