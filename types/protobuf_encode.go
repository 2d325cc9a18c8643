package types

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ---- encoding ----

// penc is the plan for writing datums as a message.
type penc struct {
	fields []pencField
}

type pencField struct {
	pos   int
	num   protowire.Number
	kind  protoreflect.Kind
	t     Type
	list  bool
	msg   *penc // STRUCT, map entry
	wk    pop   // pTimestamp, pDate, pTime, pDecimal, pWrapper, pMap, or 0
	inner protoreflect.Kind
	enum  protoreflect.EnumValueDescriptors // enum fields: written by name
}

func encMessage(md protoreflect.MessageDescriptor, names []string, types []Type) (*penc, error) {
	p := &penc{}
	fields := md.Fields()
	used := make([]bool, len(names))
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		pos := matchName(string(fd.Name()), nil, names)
		if pos < 0 || used[pos] {
			continue // written as absent
		}
		used[pos] = true
		f, err := encField(fd, types[pos])
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", fd.Name(), err)
		}
		f.pos = pos
		p.fields = append(p.fields, f)
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("the message has no field for column %s", names[i])
		}
	}
	return p, nil
}

func encField(fd protoreflect.FieldDescriptor, t Type) (pencField, error) {
	f := pencField{num: fd.Number(), kind: fd.Kind(), t: t}
	if fd.IsMap() {
		if t.Kind != Map || fd.MapKey().Kind() != protoreflect.StringKind {
			return f, fmt.Errorf("cannot write %s as a map", t)
		}
		m, err := encMessage(fd.Message(), []string{"key", "value"}, []Type{StringType, *t.Elem})
		if err != nil {
			return f, err
		}
		f.wk, f.msg = pMap, m
		return f, nil
	}
	if fd.IsList() {
		if t.Kind != Array {
			return f, fmt.Errorf("cannot write %s as a repeated field", t)
		}
		f.list, t = true, *t.Elem
		f.t = t
	}
	if fd.Kind() != protoreflect.MessageKind {
		if _, err := scalarOp(fd.Kind(), t); err != nil || !encodable(fd.Kind(), t) {
			return f, fmt.Errorf("cannot write %s as protobuf %s", t, fd.Kind())
		}
		if fd.Kind() == protoreflect.EnumKind {
			f.enum = fd.Enum().Values()
		}
		return f, nil
	}
	md := fd.Message()
	switch name := md.FullName(); {
	case name == "google.protobuf.Timestamp" && t.Kind == Timestamp:
		f.wk = pTimestamp
	case name == "google.type.Date" && t.Kind == Date:
		f.wk = pDate
	case name == "google.type.TimeOfDay" && t.Kind == Time:
		f.wk = pTime
	case name == "confluent.type.Decimal" && t.Kind == Decimal:
		f.wk = pDecimal
	case isWrapper(name):
		k := md.Fields().ByNumber(1).Kind()
		if !encodable(k, t) {
			return f, fmt.Errorf("cannot write %s as %s", t, name)
		}
		f.wk, f.inner = pWrapper, k
	case t.Kind == Struct:
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, sf := range t.Fields {
			names[i], types[i] = sf.Name, sf.Type
		}
		m, err := encMessage(md, names, types)
		if err != nil {
			return f, err
		}
		f.msg = m
	default:
		return f, fmt.Errorf("cannot write %s as message %s", t, name)
	}
	return f, nil
}

// encodable: the scalar kinds a type is written as without loss.
func encodable(k protoreflect.Kind, t Type) bool {
	switch t.Kind {
	case Boolean:
		return k == protoreflect.BoolKind
	case Int:
		switch k {
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
			protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			return true
		}
	case Bigint:
		// uint32, fixed32 and the unsigned 64-bit kinds read as BIGINT;
		// they are written back from it (a value out of range is an
		// error of the record).
		switch k {
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
			protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			return true
		}
	case Double:
		// float reads as DOUBLE and is written back rounded to float.
		return k == protoreflect.DoubleKind || k == protoreflect.FloatKind
	case String:
		return k == protoreflect.StringKind || k == protoreflect.EnumKind
	case Bytes:
		return k == protoreflect.BytesKind
	}
	return false
}

// Encode appends the header (PROTOBUF) and the message of the columns.
func (c *protoCodec) Encode(dst []byte, row Row) ([]byte, error) {
	if c.format == FormatProtobuf {
		if c.encID == 0 {
			if err := c.prepareEncode(); err != nil {
				return dst, registryErr(err)
			}
		}
		dst, _ = c.hdr.AppendEncode(dst, c.encID, c.encIdx)
	}
	return c.encodeMessage(dst, c.enc, 0, row, c.cols)
}

func (c *protoCodec) prepareEncode() error {
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
		if rs.Type != SchemaTypeProtobuf {
			c.encErr = fmt.Errorf("schema ID %d is %s, not PROTOBUF", c.opts.writeSchemaID(), rs.Type)
			return c.encErr
		}
		idx, err := protoIndex(c.opts.Schemas, rs, c.opts.FullName)
		var md protoreflect.MessageDescriptor
		if err == nil {
			md, err = compileProto(c.opts.Schemas, rs, idx)
		}
		if err == nil {
			c.enc, err = encMessage(md, c.names, c.types)
		}
		if err != nil {
			c.encErr = fmt.Errorf("cannot write the columns with schema ID %d: %v", c.opts.writeSchemaID(), err)
			return c.encErr
		}
		c.encID, c.encIdx = c.opts.writeSchemaID(), idx
		return nil
	}
	if c.opts.Subject == "" {
		return fmt.Errorf("the PROTOBUF encoder has no registry subject")
	}
	id, err := c.opts.Schemas.Register(c.opts.Subject, RegisteredSchema{Type: SchemaTypeProtobuf, Text: c.own})
	if err != nil {
		return fmt.Errorf("registering the schema under %s: %w", c.opts.Subject, err)
	}
	c.encID, c.encIdx = id, []int{0}
	return nil
}

// encodeMessage appends the fields of one message (not its length).
func (c *protoCodec) encodeMessage(dst []byte, p *penc, depth int, l []Datum, cols []int) ([]byte, error) {
	for _, f := range p.fields {
		d := *target(l, cols, f.pos)
		if d.Null {
			continue // absent
		}
		var err error
		switch {
		case f.wk == pMap:
			for i := 0; i+1 < len(d.L); i += 2 {
				if d.L[i].Null || d.L[i+1].Null {
					return dst, fmt.Errorf("%s: a NULL map key or value cannot be written as PROTOBUF", f.t)
				}
				if dst, err = c.encodeNested(dst, f.num, f.msg, depth, d.L[i:i+2]); err != nil {
					return dst, err
				}
			}
		case f.list:
			for _, e := range d.L {
				if e.Null {
					return dst, fmt.Errorf("a NULL array element cannot be written as PROTOBUF")
				}
				if dst, err = c.encodeOne(dst, f, e, depth); err != nil {
					return dst, err
				}
			}
		default:
			if dst, err = c.encodeOne(dst, f, d, depth); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

func (c *protoCodec) scratch(depth int) []byte {
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, nil)
	}
	return c.bufs[depth][:0]
}

func (c *protoCodec) encodeNested(dst []byte, num protowire.Number, p *penc, depth int, l []Datum) ([]byte, error) {
	body, err := c.encodeMessage(c.scratch(depth), p, depth+1, l, nil)
	c.bufs[depth] = body
	if err != nil {
		return dst, err
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, body), nil
}

func (c *protoCodec) encodeOne(dst []byte, f pencField, d Datum, depth int) ([]byte, error) {
	switch f.wk {
	case 0:
		if f.msg != nil {
			return c.encodeNested(dst, f.num, f.msg, depth, d.L)
		}
		return appendProtoScalar(dst, f.num, f.kind, f.enum, d)
	case pWrapper:
		body := c.scratch(depth)
		var err error
		if body, err = appendProtoScalar(body, 1, f.inner, nil, d); err != nil {
			return dst, err
		}
		c.bufs[depth] = body
		dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
		return protowire.AppendBytes(dst, body), nil
	}
	body := c.scratch(depth)
	switch f.wk {
	case pTimestamp:
		secs, ms := floorDiv(d.I, 1000), d.I-floorDiv(d.I, 1000)*1000
		body = appendVarintField(body, 1, uint64(secs))
		body = appendVarintField(body, 2, uint64(ms*1_000_000))
	case pDate:
		y, m, dd := civilFromDays(d.I)
		body = appendVarintField(body, 1, uint64(y))
		body = appendVarintField(body, 2, uint64(m))
		body = appendVarintField(body, 3, uint64(dd))
	case pTime:
		ms := d.I
		body = appendVarintField(body, 1, uint64(ms/3_600_000))
		body = appendVarintField(body, 2, uint64(ms/60_000%60))
		body = appendVarintField(body, 3, uint64(ms/1000%60))
		body = appendVarintField(body, 4, uint64(ms%1000*1_000_000))
	case pDecimal:
		body = protowire.AppendTag(body, 1, protowire.BytesType)
		if f.t.IsWideDecimal() {
			body = protowire.AppendBytes(body, d.B)
		} else {
			var tmp [8]byte
			body = protowire.AppendBytes(body, appendTwosComplement(tmp[:0], d.I))
		}
		body = appendVarintField(body, 2, uint64(f.t.Precision))
		body = appendVarintField(body, 3, uint64(f.t.Scale))
	}
	c.bufs[depth] = body
	dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
	return protowire.AppendBytes(dst, body), nil
}

// appendVarintField appends a varint field unless it is 0 (proto3's
// default is not written).
func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendProtoScalar(b []byte, num protowire.Number, k protoreflect.Kind, enum protoreflect.EnumValueDescriptors, d Datum) ([]byte, error) {
	switch k {
	case protoreflect.BoolKind:
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(d.I != 0)), nil
	case protoreflect.Int32Kind:
		if d.I < math.MinInt32 || d.I > math.MaxInt32 {
			return b, fmt.Errorf("%d does not fit int32", d.I)
		}
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(d.I)), nil
	case protoreflect.Int64Kind:
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(d.I)), nil
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeZigZag(d.I)), nil
	case protoreflect.Sfixed32Kind:
		b = protowire.AppendTag(b, num, protowire.Fixed32Type)
		return protowire.AppendFixed32(b, uint32(int32(d.I))), nil
	case protoreflect.Sfixed64Kind:
		b = protowire.AppendTag(b, num, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, uint64(d.I)), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if d.I < 0 || d.I > math.MaxUint32 {
			return b, fmt.Errorf("%d does not fit %s", d.I, k)
		}
		if k == protoreflect.Fixed32Kind {
			b = protowire.AppendTag(b, num, protowire.Fixed32Type)
			return protowire.AppendFixed32(b, uint32(d.I)), nil
		}
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(d.I)), nil
	case protoreflect.Uint64Kind:
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(d.I)), nil
	case protoreflect.Fixed64Kind:
		b = protowire.AppendTag(b, num, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, uint64(d.I)), nil
	case protoreflect.FloatKind:
		b = protowire.AppendTag(b, num, protowire.Fixed32Type)
		return protowire.AppendFixed32(b, math.Float32bits(float32(d.F))), nil
	case protoreflect.DoubleKind:
		b = protowire.AppendTag(b, num, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(d.F)), nil
	case protoreflect.StringKind, protoreflect.BytesKind:
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, d.B), nil
	case protoreflect.EnumKind:
		ev := enum.ByName(protoreflect.Name(d.B))
		if ev == nil {
			return b, fmt.Errorf("%q is not a value of the enum", d.B)
		}
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(int64(ev.Number()))), nil
	}
	return b, fmt.Errorf("cannot write protobuf %s", k)
}

// civilFromDays is the proleptic Gregorian date of a day number.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
