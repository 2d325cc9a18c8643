package types

import (
	"fmt"
	"math"
	"strings"

	"github.com/twmb/avro"
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

// aencPlanner plans writing the columns as one schema.
type aencPlanner struct {
	tree *avroTree
}

// encodeDefault encodes the default of a record field, or returns nil
// when it has none (or twmb/avro cannot encode it as the field's type).
func (p aencPlanner) encodeDefault(f *avro.SchemaField) []byte {
	if !f.HasDefault {
		return nil
	}
	sch, err := f.Type.Schema()
	if err != nil {
		return nil
	}
	b, err := sch.AppendEncode(nil, f.Default)
	if err != nil {
		return nil
	}
	return b
}

// encPlan plans writing the columns as the writer schema sch (the codec's
// own schema, or one given by SchemaID).
func (c *avroCodec) encPlan(sch *avroTree) (*aenc, error) {
	p := aencPlanner{tree: sch}
	if !c.wrap {
		return p.encNode(sch.root, c.types[0])
	}
	return p.encRecord(sch.root, c.names, c.types)
}

func (p aencPlanner) encRecord(sch *avro.SchemaNode, names []string, types []Type) (*aenc, error) {
	sch = p.tree.node(sch)
	if sch.Type == "union" {
		// A top-level nullable record: write the record branch.
		return p.encUnion(sch, Type{Kind: Struct}, func(s *avro.SchemaNode) (*aenc, error) { return p.encRecord(s, names, types) })
	}
	if sch.Type != "record" && sch.Type != "error" {
		return nil, fmt.Errorf("schema is %s, not a record", sch.Type)
	}
	n := &aenc{op: eRecord}
	used := make([]bool, len(names))
	for i := range sch.Fields {
		f := &sch.Fields[i]
		ft := p.tree.node(&f.Type)
		pos := matchName(f.Name, f.Aliases, names)
		def := p.encodeDefault(f)
		if pos < 0 || used[pos] {
			if def == nil && !nullable(ft) {
				return nil, fmt.Errorf("schema field %s is not nullable, has no default and no column has its name", f.Name)
			}
			n.fields = append(n.fields, aencField{pos: -1, node: &aenc{op: eNull, nullIdx: nullIndex(ft)}, def: def})
			continue
		}
		used[pos] = true
		fn, err := p.encNode(ft, types[pos])
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", f.Name, err)
		}
		if nullable(ft) {
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

func (p aencPlanner) encUnion(u *avro.SchemaNode, t Type, branch func(*avro.SchemaNode) (*aenc, error)) (*aenc, error) {
	n := &aenc{op: eUnion, t: t, nullIdx: -1, valIdx: -1}
	var firstErr error
	for i := range u.Branches {
		b := p.tree.node(&u.Branches[i])
		if b.Type == "null" {
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
			firstErr = fmt.Errorf("union %s has no branch for %s", avroTypeName(u), t)
		}
		return nil, firstErr
	}
	return n, nil
}

func (p aencPlanner) encNode(s *avro.SchemaNode, t Type) (*aenc, error) {
	s = p.tree.node(s)
	if s.Type == "union" {
		return p.encUnion(s, t, func(b *avro.SchemaNode) (*aenc, error) { return p.encNode(b, t) })
	}
	bad := func() (*aenc, error) { return nil, fmt.Errorf("cannot write %s as Avro %s", t, avroTypeName(s)) }
	lt := avroLogical(s)
	n := &aenc{t: t}
	switch s.Type {
	case "boolean":
		n.op = eBool
		if t.Kind != Boolean {
			return bad()
		}
	case "int":
		switch {
		case t.Kind == Int && lt == "", t.Kind == Date && lt == "date", t.Kind == Time && lt == "time-millis":
			n.op = eInt
		default:
			return bad()
		}
	case "long":
		switch {
		case t.Kind == Bigint && lt == "", t.Kind == Timestamp && (lt == "timestamp-millis" || lt == "local-timestamp-millis"):
			n.op = eLong
		case t.Kind == Int && lt == "":
			n.op = eIntToLong
		case t.Kind == Time && lt == "time-micros", t.Kind == Timestamp && (lt == "timestamp-micros" || lt == "local-timestamp-micros"):
			n.op = eMicros
		default:
			return bad()
		}
	case "float":
		if t.Kind != Double {
			return bad()
		}
		n.op = eFloat
	case "double":
		switch t.Kind {
		case Double:
			n.op = eDouble
		case Int, Bigint:
			n.op = eIntToDouble
		default:
			return bad()
		}
	case "string":
		if t.Kind != String {
			return bad()
		}
		n.op = eString
	case "bytes":
		switch {
		case t.Kind == Bytes && lt == "":
			n.op = eBytes
		case t.Kind == Decimal && lt == "decimal":
			if s.Scale != t.Scale {
				return nil, fmt.Errorf("cannot write %s as an Avro decimal of scale %d", t, s.Scale)
			}
			n.op, n.scale, n.wide = eDecimal, t.Scale, t.IsWideDecimal()
		default:
			return bad()
		}
	case "fixed":
		n.size = s.Size
		switch {
		case t.Kind == Bytes && lt == "":
			n.op = eFixed
		case t.Kind == Decimal && lt == "decimal":
			if s.Scale != t.Scale {
				return nil, fmt.Errorf("cannot write %s as an Avro decimal of scale %d", t, s.Scale)
			}
			n.op, n.scale, n.wide = eDecimalFixed, t.Scale, t.IsWideDecimal()
		default:
			return bad()
		}
	case "enum":
		if t.Kind != String {
			return bad()
		}
		n.op, n.symbols = eEnum, map[string]int32{}
		for i, sym := range s.Symbols {
			n.symbols[sym] = int32(i)
		}
	case "array":
		if t.Kind != Array {
			return bad()
		}
		e, err := p.encNode(s.Items, *t.Elem)
		if err != nil {
			return nil, err
		}
		n.op, n.elem = eArray, e
	case "map":
		if t.Kind != Map {
			return bad()
		}
		e, err := p.encNode(s.Values, *t.Elem)
		if err != nil {
			return nil, err
		}
		n.op, n.elem = eMap, e
	case "record", "error":
		if t.Kind != Struct {
			return bad()
		}
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		return p.encRecord(s, names, types)
	default:
		return bad()
	}
	return n, nil
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
	start := len(dst)
	c.w.buf, _ = c.hdr.AppendEncode(dst, c.encID, nil)
	var err error
	if c.wrap {
		err = c.encodeRecordRow(c.enc, row)
	} else {
		err = c.encode(c.enc, row[c.cols[0]])
	}
	out := c.w.buf
	c.w.buf = nil // the codec keeps no hold on the caller's buffer
	if err != nil {
		return out[:start], err
	}
	return out, nil
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

func (c *avroCodec) encodeRecordRow(n *aenc, row Row) error {
	if n.op == eUnion {
		c.w.writeLong(int64(n.valIdx))
		n = n.val
	}
	for _, f := range n.fields {
		if f.def != nil && (f.pos < 0 || row[c.cols[f.pos]].Null) {
			c.w.buf = append(c.w.buf, f.def...)
			continue
		}
		if f.pos < 0 {
			c.w.writeLong(int64(f.node.nullIdx))
			continue
		}
		if err := c.encode(f.node, row[c.cols[f.pos]]); err != nil {
			return inField(err, c.names[f.pos])
		}
	}
	return nil
}

func (c *avroCodec) encode(n *aenc, d Datum) error {
	w := &c.w
	if n.op == eUnion {
		if d.Null {
			if n.nullIdx < 0 {
				return fmt.Errorf("NULL where the schema allows none")
			}
			w.writeLong(int64(n.nullIdx))
			return nil
		}
		w.writeLong(int64(n.valIdx))
		n = n.val
	} else if d.Null && n.op != eNull {
		return fmt.Errorf("NULL where the schema allows none")
	}
	switch n.op {
	case eNull:
		if n.nullIdx >= 0 {
			w.writeLong(int64(n.nullIdx))
		}
	case eBool:
		w.writeBool(d.I != 0)
	case eInt:
		if d.I < math.MinInt32 || d.I > math.MaxInt32 {
			return fmt.Errorf("%d does not fit an Avro int", d.I)
		}
		w.writeLong(d.I)
	case eLong, eIntToLong:
		w.writeLong(d.I)
	case eMicros:
		w.writeLong(d.I * 1000)
	case eFloat:
		w.writeFloat(float32(d.F))
	case eDouble:
		w.writeDouble(d.F)
	case eIntToDouble:
		w.writeDouble(float64(d.I))
	case eString, eBytes:
		w.writeBytes(d.B)
	case eEnum:
		i, ok := n.symbols[string(d.B)]
		if !ok {
			return fmt.Errorf("%q is not a symbol of the enum", d.B)
		}
		w.writeLong(int64(i))
	case eFixed:
		if len(d.B) != n.size {
			return fmt.Errorf("%d bytes for a fixed of %d", len(d.B), n.size)
		}
		w.buf = append(w.buf, d.B...)
	case eDecimal:
		if n.wide {
			w.writeBytes(d.B)
			break
		}
		c.scratch = appendTwosComplement(c.scratch[:0], d.I)
		w.writeBytes(c.scratch)
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
			w.buf = append(w.buf, pad)
		}
		w.buf = append(w.buf, c.scratch...)
	case eArray:
		if len(d.L) > 0 {
			w.writeLong(int64(len(d.L)))
			for i, e := range d.L {
				if err := c.encode(n.elem, e); err != nil {
					return inField(err, fmt.Sprintf("[%d]", i))
				}
			}
		}
		w.writeLong(0)
	case eMap:
		if len(d.L) > 0 {
			w.writeLong(int64(len(d.L) / 2))
			for i := 0; i+1 < len(d.L); i += 2 {
				if d.L[i].Null {
					return fmt.Errorf("a NULL map key")
				}
				w.writeBytes(d.L[i].B)
				if err := c.encode(n.elem, d.L[i+1]); err != nil {
					return inField(err, "['"+string(d.L[i].B)+"']")
				}
			}
		}
		w.writeLong(0)
	case eRecord:
		for _, f := range n.fields {
			if f.def != nil && (f.pos < 0 || d.L[f.pos].Null) {
				c.w.buf = append(c.w.buf, f.def...)
				continue
			}
			if f.pos < 0 {
				c.w.writeLong(int64(f.node.nullIdx))
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
