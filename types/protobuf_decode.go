package types

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ---- decoding ----

type pop uint8

const (
	pSkip pop = iota
	pBool
	pInt32 // int32, sint32, sfixed32 → I
	pUint32
	pInt64
	pUint64
	pInt32Double
	pInt64Double
	pFloat
	pDouble
	pBytes // string or bytes → B
	pEnum
	pMessage // nested message → STRUCT
	pWrapper // google.protobuf.*Value → its scalar
	pTimestamp
	pDate
	pTime
	pDecimal
	pMap
)

// pdec is the plan for reading a message into datums.
type pdec struct {
	byNum   []*pfield // indexed by field number when small
	byMap   map[protowire.Number]*pfield
	fields  []*pfield
	nfields int
	// absent: what a target not on the wire becomes.
	absent []pabsent
	seen   []bool
	err    error
}

type pabsent struct {
	pos   int
	d     Datum // the proto3 default; Null for messages and optional fields
	array bool  // repeated: an empty ARRAY or MAP
}

type pfield struct {
	pos      int // target position; -1 skips
	sub      int // oneof: the field's position inside the oneof STRUCT, else -1
	op       pop
	elemOp   pop // pWrapper: the wrapped scalar's op
	repeated bool
	msg      *pdec // pMessage, pMap (the entry: key pos 0, value pos 1), pWrapper (value at 0)
	scale    int64 // pDecimal: multiply by this
	subCount int   // oneof STRUCT size
	zig      bool  // sint32, sint64: zigzag varints
	t        Type
	symbols  map[int32][]byte // pEnum
}

func (m *pdec) field(num protowire.Number) *pfield {
	if int(num) < len(m.byNum) {
		return m.byNum[num]
	}
	return m.byMap[num]
}

var errProtoShape = errors.New("shape")

// decMessage plans reading md into the fields named names with types.
func decMessage(md protoreflect.MessageDescriptor, names []string, types []Type, depth int) (*pdec, error) {
	return decMessageNums(md, names, types, depth, nil)
}

// decMessageNums is decMessage where nums, when set, gives the column of
// a field number (from the schema the columns were inferred from), so a
// field renamed in the writer's schema still reads into its column.
func decMessageNums(md protoreflect.MessageDescriptor, names []string, types []Type, depth int, nums map[protoreflect.FieldNumber]int) (*pdec, error) {
	if depth > 32 {
		return nil, fmt.Errorf("messages nest too deeply (a recursive message?)")
	}
	m := &pdec{nfields: len(names), byMap: map[protowire.Number]*pfield{}, seen: make([]bool, len(names))}
	maxNum := 0
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		maxNum = max(maxNum, int(fields.Get(i).Number()))
	}
	if maxNum < 1024 {
		m.byNum = make([]*pfield, maxNum+1)
	}
	matched := make([]bool, len(names))
	add := func(fd protoreflect.FieldDescriptor, f *pfield) {
		m.fields = append(m.fields, f)
		if int(fd.Number()) < len(m.byNum) {
			m.byNum[fd.Number()] = f
		} else {
			m.byMap[fd.Number()] = f
		}
	}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if oo := fd.ContainingOneof(); oo != nil && !oo.IsSynthetic() {
			// A oneof case: a field of the STRUCT column <oneof>_0.
			pos := matchName(string(oo.Name())+"_0", nil, names)
			if pos < 0 || types[pos].Kind != Struct {
				add(fd, &pfield{pos: -1, sub: -1})
				continue
			}
			st := types[pos]
			fnames := make([]string, len(st.Fields))
			for j, sf := range st.Fields {
				fnames[j] = sf.Name
			}
			sub := matchName(string(fd.Name()), nil, fnames)
			if sub < 0 {
				add(fd, &pfield{pos: -1, sub: -1})
				continue
			}
			f, err := decField(fd, st.Fields[sub].Type, depth)
			if err != nil {
				return nil, fmt.Errorf("field %s: %v", fd.Name(), err)
			}
			f.pos, f.sub, f.subCount = pos, sub, len(st.Fields)
			matched[pos] = true
			add(fd, f)
			continue
		}
		pos := -1
		if p, ok := nums[fd.Number()]; ok {
			pos = p
		} else {
			pos = matchName(string(fd.Name()), nil, names)
		}
		if pos < 0 || matched[pos] {
			add(fd, &pfield{pos: -1, sub: -1})
			continue
		}
		matched[pos] = true
		f, err := decField(fd, types[pos], depth)
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", fd.Name(), err)
		}
		f.pos = pos
		add(fd, f)
		a := pabsent{pos: pos, d: NullDatum}
		switch {
		case f.repeated || f.op == pMap:
			a.array, a.d = true, Datum{}
		case fd.HasPresence() || f.op == pMessage || f.op >= pWrapper:
			// proto3 optional, messages: NULL
		case f.op == pEnum:
			a.d = Datum{B: []byte(fd.Enum().Values().Get(0).Name())}
		case f.op == pBytes:
			a.d = Datum{B: []byte{}}
		default:
			a.d = Datum{} // 0, 0.0, false
		}
		m.absent = append(m.absent, a)
	}
	for i, ok := range matched {
		if !ok {
			m.absent = append(m.absent, pabsent{pos: i, d: NullDatum})
		}
	}
	// oneof STRUCTs not on the wire are NULL: their absent entries were
	// not added above (they have no single field).
	for i, ok := range matched {
		if ok && types[i].Kind == Struct {
			isOneof := false
			for _, f := range m.fields {
				if f.pos == i && f.sub >= 0 {
					isOneof = true
				}
			}
			if isOneof {
				m.absent = append(m.absent, pabsent{pos: i, d: NullDatum})
			}
		}
	}
	return m, nil
}

func isWrapper(name protoreflect.FullName) bool {
	switch name {
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return true
	}
	return false
}

// decField plans reading one field as type t.
func decField(fd protoreflect.FieldDescriptor, t Type, depth int) (*pfield, error) {
	f := &pfield{pos: -1, sub: -1, t: t}
	if fd.IsMap() {
		if t.Kind != Map {
			return nil, fmt.Errorf("cannot read a map as %s", t)
		}
		if fd.MapKey().Kind() != protoreflect.StringKind {
			return nil, fmt.Errorf("cannot read map keys of %s as STRING", fd.MapKey().Kind())
		}
		entry, err := decMessage(fd.Message(), []string{"key", "value"}, []Type{StringType, *t.Elem}, depth+1)
		if err != nil {
			return nil, err
		}
		f.op, f.msg = pMap, entry
		return f, nil
	}
	if fd.IsList() {
		if t.Kind != Array {
			return nil, fmt.Errorf("cannot read a repeated field as %s", t)
		}
		f.repeated = true
		t = *t.Elem
		f.t = t
	}
	op, err := scalarOp(fd.Kind(), t)
	if err == nil {
		f.op = op
		f.zig = fd.Kind() == protoreflect.Sint32Kind || fd.Kind() == protoreflect.Sint64Kind
		if op == pEnum {
			f.symbols = map[int32][]byte{}
			vals := fd.Enum().Values()
			for i := 0; i < vals.Len(); i++ {
				f.symbols[int32(vals.Get(i).Number())] = []byte(vals.Get(i).Name())
			}
		}
		return f, nil
	}
	if err != errProtoShape {
		return nil, err
	}
	md := fd.Message()
	name := md.FullName()
	switch {
	case isWrapper(name):
		op, err := scalarOp(md.Fields().ByNumber(1).Kind(), t)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s as %s", name, t)
		}
		f.op, f.elemOp = pWrapper, op
	case name == "google.protobuf.Timestamp" && t.Kind == Timestamp:
		f.op = pTimestamp
	case name == "google.type.Date" && t.Kind == Date:
		f.op = pDate
	case name == "google.type.TimeOfDay" && t.Kind == Time:
		f.op = pTime
	case name == "confluent.type.Decimal" && t.Kind == Decimal:
		f.op, f.scale = pDecimal, int64(t.Scale) // the writer's scale is in each value
	case t.Kind == Struct:
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, sf := range t.Fields {
			names[i], types[i] = sf.Name, sf.Type
		}
		m, err := decMessage(md, names, types, depth+1)
		if err != nil {
			return nil, err
		}
		f.op, f.msg = pMessage, m
	default:
		return nil, fmt.Errorf("cannot read message %s as %s", name, t)
	}
	return f, nil
}

// scalarOp is the op reading a scalar kind as t; errProtoShape for
// messages.
func scalarOp(k protoreflect.Kind, t Type) (pop, error) {
	bad := fmt.Errorf("cannot read protobuf %s as %s", k, t)
	switch k {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return 0, errProtoShape
	case protoreflect.BoolKind:
		if t.Kind == Boolean {
			return pBool, nil
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		switch t.Kind {
		case Int, Bigint:
			return pInt32, nil
		case Double:
			return pInt32Double, nil
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		switch t.Kind {
		case Bigint:
			return pUint32, nil
		case Double:
			return pInt64Double, nil
		}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		switch t.Kind {
		case Bigint:
			return pInt64, nil
		case Double:
			return pInt64Double, nil
		}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if t.Kind == Bigint {
			return pUint64, nil
		}
	case protoreflect.FloatKind:
		if t.Kind == Double {
			return pFloat, nil
		}
	case protoreflect.DoubleKind:
		if t.Kind == Double {
			return pDouble, nil
		}
	case protoreflect.StringKind, protoreflect.BytesKind:
		if t.Kind == String || t.Kind == Bytes {
			return pBytes, nil
		}
	case protoreflect.EnumKind:
		if t.Kind == String {
			return pEnum, nil
		}
	}
	return 0, bad
}

// Decode reads the header (PROTOBUF), then the message into the columns.
func (c *protoCodec) Decode(data []byte, row Row) error {
	c.dbuf = c.dbuf[:0]
	if data == nil {
		for _, col := range c.cols {
			setNull(&row[col])
		}
		return nil
	}
	p := c.own1
	id := 0
	if c.format == FormatProtobuf {
		var err error
		var rest []byte
		id, rest, err = c.hdr.DecodeID(data)
		if err != nil {
			return badRecord("not in the schema registry's wire format: %d bytes, first %s", len(data), firstByte(data))
		}
		// The message indexes: a count, then the indexes (zigzag
		// varints); a single 0 byte is [0].
		key := pkey{id: id}
		n, k := binary.Varint(rest)
		if k <= 0 || n < 0 || n > int64(len(key.idx)) {
			return badRecord("schema ID %d: bad message indexes", id)
		}
		rest = rest[k:]
		if n == 0 {
			key.n = 1
		}
		for i := int64(0); i < n; i++ {
			v, k := binary.Varint(rest)
			if k <= 0 || v < 0 {
				return badRecord("schema ID %d: bad message indexes", id)
			}
			key.idx[key.n] = int(v)
			key.n++
			rest = rest[k:]
		}
		data = rest
		if c.opts.Schemas == nil {
			return errNoRegistry
		}
		if p = c.plan(key); p == nil {
			_, err := c.opts.Schemas.SchemaByID(id)
			return fmt.Errorf("%w: fetching protobuf schema ID %d: %w", ErrRegistry, id, err)
		}
		if p.err != nil {
			return badRecord("%v", p.err)
		}
	}
	if err := c.decodeTop(p, data, row); err != nil {
		if id != 0 {
			return badRecord("schema ID %d: %v", id, err)
		}
		return badRecord("%v", err)
	}
	return nil
}

// pkey names a message of a registered schema: its ID and indexes.
type pkey struct {
	id  int
	n   int
	idx [8]int
}

// plan returns the plan for a writer schema's message; nil when the
// registry could not be asked.
func (c *protoCodec) plan(key pkey) *pdec {
	id := key.id
	if key == c.lastKey && c.last != nil {
		return c.last
	}
	p, ok := c.plans[key]
	if !ok {
		rs, err := c.opts.Schemas.SchemaByID(id)
		switch {
		case errors.Is(err, ErrSchemaNotFound):
			p = &pdec{err: fmt.Errorf("schema ID %d: %v", id, err)}
		case err != nil:
			return nil
		case rs.Type != SchemaTypeProtobuf:
			p = &pdec{err: fmt.Errorf("schema ID %d is %s, not PROTOBUF", id, rs.Type)}
		default:
			md, err := compileProto(c.opts.Schemas, rs, append([]int(nil), key.idx[:key.n]...))
			var nums map[protoreflect.FieldNumber]int
			if err == nil {
				nums, err = c.readerNums()
			}
			if registryDown(err) {
				return nil
			}
			if err == nil {
				p, err = decMessageNums(md, c.names, c.types, 0, nums)
			}
			if err != nil {
				p = &pdec{err: fmt.Errorf("schema ID %d cannot be read as the columns: %v", id, err)}
			}
		}
		if p.err == nil || len(c.plans) < maxBadPlans {
			c.plans[key] = p
		}
	}
	c.lastKey, c.last = key, p
	return p
}

// readerNums maps the field numbers of the schema the columns were
// inferred from (FormatOptions.ReaderSchemaID) to the columns, once; nil
// without one.
func (c *protoCodec) readerNums() (map[protoreflect.FieldNumber]int, error) {
	if c.opts.ReaderSchemaID == 0 || c.nums != nil {
		return c.nums, nil
	}
	rs, err := c.opts.Schemas.SchemaByID(c.opts.ReaderSchemaID)
	if err != nil {
		return nil, err
	}
	idx, err := protoIndex(c.opts.Schemas, rs, c.opts.FullName)
	if err != nil {
		return nil, err
	}
	md, err := compileProto(c.opts.Schemas, rs, idx)
	if err != nil {
		return nil, err
	}
	nums := map[protoreflect.FieldNumber]int{}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if oo := fd.ContainingOneof(); oo != nil && !oo.IsSynthetic() {
			continue
		}
		if pos := matchName(string(fd.Name()), nil, c.names); pos >= 0 {
			nums[fd.Number()] = pos
		}
	}
	c.nums = nums
	return nums, nil
}

func (c *protoCodec) decodeTop(m *pdec, data []byte, row Row) error {
	for i := range m.seen {
		m.seen[i] = false
	}
	for _, col := range c.cols {
		d := &row[col]
		*d = Datum{L: d.L[:0]}
	}
	if err := c.decodeFields(m, data, row, c.cols); err != nil {
		return err
	}
	c.fillAbsent(m, row, c.cols)
	return nil
}

// target is the datum of position pos: l[cols[pos]], or l[pos] when cols
// is nil.
func target(l []Datum, cols []int, pos int) *Datum {
	if cols != nil {
		return &l[cols[pos]]
	}
	return &l[pos]
}

func (c *protoCodec) fillAbsent(m *pdec, l []Datum, cols []int) {
	for _, a := range m.absent {
		if m.seen[a.pos] {
			continue
		}
		d := target(l, cols, a.pos)
		switch {
		case a.array:
			*d = Datum{L: d.L[:0]}
		case a.d.Null:
			setNull(d)
		default:
			*d = Datum{I: a.d.I, F: a.d.F, B: a.d.B, L: d.L[:0]}
		}
	}
}

// decodeFields reads a message's fields into the targets (see target).
func (c *protoCodec) decodeFields(m *pdec, b []byte, l []Datum, cols []int) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		f := m.field(num)
		if f == nil || f.pos < 0 {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		d := target(l, cols, f.pos)
		if f.sub >= 0 {
			// A oneof case: the last one on the wire wins.
			if !m.seen[f.pos] {
				*d = Datum{L: growDatums(d.L, f.subCount)}
				for i := range d.L {
					setNull(&d.L[i])
				}
			}
			d = &d.L[f.sub]
		}
		m.seen[f.pos] = true
		var err error
		if n, err = c.value(f, typ, b, d); err != nil {
			return inField(err, fmt.Sprintf("#%d", num))
		}
		b = b[n:]
	}
	return nil
}

// value reads one field value (or a packed run) at b into d and returns
// the bytes used.
func (c *protoCodec) value(f *pfield, typ protowire.Type, b []byte, d *Datum) (int, error) {
	if f.repeated {
		if typ == protowire.BytesType && f.op != pBytes && f.op != pMessage && f.op < pWrapper {
			// Packed scalars.
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			for len(v) > 0 {
				d.L = growDatums(d.L, len(d.L)+1)
				k, err := c.scalar(f, wireOf(f.op), v, &d.L[len(d.L)-1])
				if err != nil {
					return 0, err
				}
				v = v[k:]
			}
			return n, nil
		}
		d.L = growDatums(d.L, len(d.L)+1)
		return c.one(f, typ, b, &d.L[len(d.L)-1])
	}
	return c.one(f, typ, b, d)
}

func wireOf(op pop) protowire.Type {
	switch op {
	case pFloat:
		return protowire.Fixed32Type
	case pDouble:
		return protowire.Fixed64Type
	}
	return protowire.VarintType
}

// one reads a single value.
func (c *protoCodec) one(f *pfield, typ protowire.Type, b []byte, d *Datum) (int, error) {
	switch f.op {
	case pMessage, pMap, pWrapper, pTimestamp, pDate, pTime, pDecimal:
	default:
		return c.scalar(f, typ, b, d)
	}
	if typ != protowire.BytesType {
		return 0, fmt.Errorf("wire type %d for a message", typ)
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return 0, protowire.ParseError(n)
	}
	switch f.op {
	case pMessage:
		// Each nested message has a plan of its own (decMessage makes
		// one per field, recursive messages included), so its seen flags
		// are not in use further up.
		m := f.msg
		l := growDatums(d.L, m.nfields)
		for i := range l {
			l[i] = Datum{L: l[i].L[:0]}
		}
		for i := range m.seen {
			m.seen[i] = false
		}
		if err := c.decodeFields(m, v, l, nil); err != nil {
			return 0, err
		}
		c.fillAbsent(m, l, nil)
		*d = Datum{L: l}
	case pMap:
		// An entry: key 1, value 2.
		d.L = growDatums(d.L, len(d.L)+2)
		kv := d.L[len(d.L)-2:]
		m := f.msg
		for i := range m.seen {
			m.seen[i] = false
		}
		kv[0], kv[1] = Datum{L: kv[0].L[:0]}, Datum{L: kv[1].L[:0]}
		if err := c.decodeFields(m, v, kv, nil); err != nil {
			return 0, err
		}
		c.fillAbsent(m, kv, nil)
		if kv[0].Null {
			kv[0] = Datum{B: []byte{}}
		}
	case pWrapper:
		// field 1 holds the value; absent is the default.
		*d = Datum{L: d.L[:0]}
		switch f.elemOp {
		case pBytes:
			d.B = []byte{}
		case pEnum:
		}
		for len(v) > 0 {
			num, typ, k := protowire.ConsumeTag(v)
			if k < 0 {
				return 0, protowire.ParseError(k)
			}
			v = v[k:]
			if num == 1 {
				k, err := c.scalar(&pfield{op: f.elemOp}, typ, v, d)
				if err != nil {
					return 0, err
				}
				v = v[k:]
				continue
			}
			if k = protowire.ConsumeFieldValue(num, typ, v); k < 0 {
				return 0, protowire.ParseError(k)
			}
			v = v[k:]
		}
	case pTimestamp, pDate, pTime, pDecimal:
		var ints [4]int64
		var raw []byte
		for len(v) > 0 {
			num, typ, k := protowire.ConsumeTag(v)
			if k < 0 {
				return 0, protowire.ParseError(k)
			}
			v = v[k:]
			switch {
			case f.op == pDecimal && num == 1 && typ == protowire.BytesType:
				raw, k = protowire.ConsumeBytes(v)
			case num >= 1 && num <= 4 && typ == protowire.VarintType:
				var x uint64
				x, k = protowire.ConsumeVarint(v)
				ints[num-1] = int64(x)
				if f.op != pTimestamp || num != 1 {
					ints[num-1] = int64(int32(x))
				}
			default:
				k = protowire.ConsumeFieldValue(num, typ, v)
			}
			if k < 0 {
				return 0, protowire.ParseError(k)
			}
			v = v[k:]
		}
		*d = Datum{L: d.L[:0]}
		switch f.op {
		case pTimestamp:
			d.I = ints[0]*1000 + ints[1]/1_000_000
		case pDate:
			d.I = daysFromCivil(ints[0], ints[1], ints[2])
		case pTime:
			d.I = ((ints[0]*60+ints[1])*60+ints[2])*1000 + ints[3]/1_000_000
		case pDecimal:
			scale := ints[2]
			if f.t.IsWideDecimal() {
				if scale > f.scale || scale < 0 {
					return 0, fmt.Errorf("decimal of scale %d does not fit %s", scale, f.t)
				}
				v, buf, ok := WideDecimalFromUnscaled(raw, int(scale), f.t, c.dbuf)
				c.dbuf = buf
				if !ok {
					return 0, fmt.Errorf("decimal out of range for %s", f.t)
				}
				d.B = v.B
				break
			}
			u, ok := fromTwosComplement(raw)
			if !ok || scale > f.scale || scale < 0 {
				return 0, fmt.Errorf("decimal of scale %d does not fit %s", scale, f.t)
			}
			mul := pow10[f.scale-scale]
			if u > math.MaxInt64/mul || u < math.MinInt64/mul {
				return 0, fmt.Errorf("decimal out of range")
			}
			u *= mul
			if u >= pow10[f.t.Precision] || u <= -pow10[f.t.Precision] {
				return 0, fmt.Errorf("decimal out of range for %s", f.t)
			}
			d.I = u
		}
	}
	return n, nil
}

// scalar reads one scalar of wire type typ.
func (c *protoCodec) scalar(f *pfield, typ protowire.Type, b []byte, d *Datum) (int, error) {
	var x uint64
	var n int
	switch typ {
	case protowire.VarintType:
		x, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		x = uint64(v)
	case protowire.Fixed64Type:
		x, n = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		if f.op != pBytes {
			return 0, fmt.Errorf("length-delimited value for a number")
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		*d = Datum{B: v, L: d.L[:0]}
		return n, nil
	default:
		return 0, fmt.Errorf("wire type %d", typ)
	}
	if n < 0 {
		return 0, protowire.ParseError(n)
	}
	if f.zig && typ == protowire.VarintType {
		x = uint64(protowire.DecodeZigZag(x))
	}
	nd := Datum{L: d.L[:0]}
	switch f.op {
	case pBool:
		if x != 0 {
			nd.I = 1
		}
	case pInt32:
		nd.I = int64(int32(x))
	case pUint32:
		nd.I = int64(uint32(x))
	case pInt64:
		nd.I = int64(x)
	case pUint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d does not fit BIGINT", x)
		}
		nd.I = int64(x)
	case pInt32Double:
		nd.F = float64(int32(x))
	case pInt64Double:
		nd.F = float64(int64(x))
	case pFloat:
		nd.F = float64(math.Float32frombits(uint32(x)))
	case pDouble:
		nd.F = math.Float64frombits(x)
	case pEnum:
		name, ok := f.symbols[int32(x)]
		if !ok {
			return 0, fmt.Errorf("enum value %d is not in the schema", int32(x))
		}
		nd.B = name
	default:
		return 0, fmt.Errorf("wire type %d for %s", typ, f.t)
	}
	*d = nd
	return n, nil
}

// daysFromCivil is the day number of a proleptic Gregorian date.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
