package types

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The PROTOBUF and PROTOBUF_NOSR formats, as ksqlDB reads and writes them.
// PROTOBUF is the Confluent wire format (a zero byte, the 4-byte schema
// ID, the message indexes that pick the message in the .proto file, the
// protobuf binary encoding) with the .proto registered in a schema
// registry; PROTOBUF_NOSR is the bare protobuf encoding of the schema the
// columns give.
//
// Schemas are compiled with bufbuild/protocompile into Google's protobuf
// descriptors; records are read and written by plans made from those
// descriptors with the protobuf runtime's wire primitives (protowire),
// filling rows in place without allocating. The schema sqlstreams writes
// (ProtobufSchema) maps SQL types as ksqlDB does (through Kafka Connect's
// converter):
//
//	BOOLEAN bool      INT int32      BIGINT int64    DOUBLE double
//	STRING string     BYTES bytes    ARRAY repeated  MAP map<string, V>
//	STRUCT a nested message          DECIMAL confluent.type.Decimal
//	DATE google.type.Date            TIME google.type.TimeOfDay
//	TIMESTAMP google.protobuf.Timestamp
//
// Reading resolves the writer's message against the columns by field name
// (exactly, then ignoring case); proto3 scalars that are absent read as
// their defaults (0, "", false), absent messages as NULL, as ksqlDB does.
// google.protobuf wrapper messages (StringValue, Int64Value, …) read as
// their scalar, NULL when absent; proto3 optional fields read NULL when
// absent; an enum reads as its value's name (STRING); a oneof reads as a
// STRUCT column named <oneof>_0 with a field per case (Connect's
// mapping). int32 kinds widen to BIGINT and DOUBLE, int64 kinds and float
// to DOUBLE. A writer whose fields cannot be read as the columns makes its
// records bad records naming the schema ID. SQL NULLs of proto3 scalars
// cannot be written: they are written as absent (read back as defaults),
// as ksqlDB does; a NULL array element or map value is an error.
type protoCodec struct {
	format string
	cols   []int
	names  []string
	types  []Type
	opts   FormatOptions

	own     string
	ownDesc protoreflect.MessageDescriptor
	enc     *penc
	encID   int
	encIdx  []int
	encErr  error
	bufs    [][]byte // per nesting depth: a message being written

	plans   map[pkey]*pdec
	lastKey pkey
	last    *pdec
	own1    *pdec // PROTOBUF_NOSR: the plan for the own schema
	hdr     sr.ConfluentHeader
}

// Protobuf format names.
const (
	FormatProtobuf     = "PROTOBUF"
	FormatProtobufNoSR = "PROTOBUF_NOSR"
)

const protoDefaultName = "ConnectDefault1"

func newProtoCodec(format string, s Schema, cols []int, o FormatOptions) (*protoCodec, error) {
	c := &protoCodec{format: format, cols: cols, opts: o, plans: map[pkey]*pdec{}}
	for _, col := range cols {
		sc := s.Columns[col]
		if err := protoCheck(sc.Type, false); err != nil {
			return nil, fmt.Errorf("%s column %s: %v", format, sc.Name, err)
		}
		c.names = append(c.names, sc.Name)
		c.types = append(c.types, sc.Type)
	}
	c.own = ProtobufSchema(c.names, c.types)
	md, err := compileProto(nil, RegisteredSchema{Type: SchemaTypeProtobuf, Text: c.own}, []int{0})
	if err != nil {
		return nil, fmt.Errorf("%s schema of the columns: %v", format, err)
	}
	c.ownDesc = md
	if c.enc, err = encMessage(md, c.names, c.types); err != nil {
		return nil, err
	}
	if format == FormatProtobufNoSR {
		if c.own1, err = decMessage(md, c.names, c.types, 0); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// protoCheck refuses what a protobuf message cannot hold: arrays of arrays
// or maps, maps in arrays or maps, non-STRING map keys.
func protoCheck(t Type, inRepeated bool) error {
	switch t.Kind {
	case Array:
		if inRepeated {
			return fmt.Errorf("PROTOBUF cannot hold an ARRAY or MAP directly inside an ARRAY or MAP")
		}
		return protoCheck(*t.Elem, true)
	case Map:
		if inRepeated {
			return fmt.Errorf("PROTOBUF cannot hold an ARRAY or MAP directly inside an ARRAY or MAP")
		}
		if t.KeyType.Kind != String {
			return fmt.Errorf("PROTOBUF maps here have STRING keys, not %s", t.KeyType)
		}
		return protoCheck(*t.Elem, true)
	case Struct:
		for _, f := range t.Fields {
			if err := protoCheck(f.Type, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---- schemas ----

// Sources of the non-standard imports ksqlDB's schemas use; Confluent's
// registry knows them without references.
var protoBuiltins = map[string]string{
	"google/type/date.proto":       "syntax = \"proto3\";\npackage google.type;\nmessage Date {\n  int32 year = 1;\n  int32 month = 2;\n  int32 day = 3;\n}\n",
	"google/type/timeofday.proto":  "syntax = \"proto3\";\npackage google.type;\nmessage TimeOfDay {\n  int32 hours = 1;\n  int32 minutes = 2;\n  int32 seconds = 3;\n  int32 nanos = 4;\n}\n",
	"confluent/type/decimal.proto": "syntax = \"proto3\";\npackage confluent.type;\nmessage Decimal {\n  bytes value = 1;\n  uint32 precision = 2;\n  int32 scale = 3;\n}\n",
}

// ProtobufSchema returns the .proto ksqlDB would register for columns with
// these names and types: one proto3 message ConnectDefault1 whose fields
// are the columns, numbered from 1, structs as nested messages
// ConnectDefault2, 3, ….
func ProtobufSchema(names []string, types []Type) string {
	var body strings.Builder
	imports := map[string]bool{}
	n := 1
	writeProtoMessage(&body, "", protoDefaultName, names, types, &n, imports)
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n\n")
	for _, imp := range []string{"confluent/type/decimal.proto", "google/protobuf/timestamp.proto", "google/type/date.proto", "google/type/timeofday.proto"} {
		if imports[imp] {
			fmt.Fprintf(&b, "import %q;\n", imp)
		}
	}
	if len(imports) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(body.String())
	return b.String()
}

func writeProtoMessage(b *strings.Builder, indent, name string, names []string, types []Type, n *int, imports map[string]bool) {
	fmt.Fprintf(b, "%smessage %s {\n", indent, name)
	for i, fn := range names {
		t := types[i]
		label := ""
		if t.Kind == Array {
			label, t = "repeated ", *t.Elem
		}
		var typ string
		switch t.Kind {
		case Map:
			typ = "map<string, " + protoScalar(*t.Elem, b, indent+"  ", n, imports) + ">"
		default:
			typ = protoScalar(t, b, indent+"  ", n, imports)
		}
		fmt.Fprintf(b, "%s  %s%s %s = %d;\n", indent, label, typ, fn, i+1)
	}
	fmt.Fprintf(b, "%s}\n", indent)
}

// protoScalar returns the proto type of a non-repeated t, writing a nested
// message definition for a STRUCT.
func protoScalar(t Type, b *strings.Builder, indent string, n *int, imports map[string]bool) string {
	switch t.Kind {
	case Boolean:
		return "bool"
	case Int:
		return "int32"
	case Bigint:
		return "int64"
	case Double:
		return "double"
	case String:
		return "string"
	case Bytes:
		return "bytes"
	case Decimal:
		imports["confluent/type/decimal.proto"] = true
		return "confluent.type.Decimal"
	case Date:
		imports["google/type/date.proto"] = true
		return "google.type.Date"
	case Time:
		imports["google/type/timeofday.proto"] = true
		return "google.type.TimeOfDay"
	case Timestamp:
		imports["google/protobuf/timestamp.proto"] = true
		return "google.protobuf.Timestamp"
	case Struct:
		*n++
		name := fmt.Sprintf("ConnectDefault%d", *n)
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		writeProtoMessage(b, indent, name, names, types, n, imports)
		return name
	}
	return "bytes"
}

var protoCompiled sync.Map // depsKey → protoreflect.FileDescriptor

// compileProto compiles a registered .proto, its imports being the
// schemas it references (fetched from src), Google's well-known files and
// protoBuiltins, and returns the message the indexes pick ([0]: the first
// top-level message; [1, 0]: the first message nested in the second).
func compileProto(src SchemaSource, rs RegisteredSchema, index []int) (protoreflect.MessageDescriptor, error) {
	var refs []SchemaRef
	for _, r := range rs.References {
		if _, ok := protoBuiltins[r.Name]; !ok && !strings.HasPrefix(r.Name, "google/protobuf/") {
			refs = append(refs, r)
		}
	}
	deps, err := resolveRefs(src, RegisteredSchema{References: refs})
	if err != nil {
		return nil, err
	}
	key := depsKey(rs.Text, deps)
	var fd protoreflect.FileDescriptor
	if v, ok := protoCompiled.Load(key); ok {
		fd = v.(protoreflect.FileDescriptor)
	} else {
		srcs := map[string]string{"registered.proto": rs.Text}
		for k, v := range protoBuiltins {
			srcs[k] = v
		}
		for _, d := range deps {
			srcs[d.name] = d.text
		}
		comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(srcs)})}
		files, err := comp.Compile(context.Background(), "registered.proto")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errParse, err)
		}
		fd = files[0]
		protoCompiled.Store(key, fd)
	}
	if len(index) == 0 {
		index = []int{0}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range index {
		if i < 0 || i >= msgs.Len() {
			return nil, fmt.Errorf("%w: message index %v is not in the schema", errParse, index)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

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
		pos := matchName(string(fd.Name()), nil, names)
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
			if registryDown(err) {
				return nil
			}
			if err == nil {
				p, err = decMessage(md, c.names, c.types, 0)
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
			u, ok := fromTwosComplement(raw)
			scale := ints[2]
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
		switch k {
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			return true
		}
	case Double:
		return k == protoreflect.DoubleKind
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
	if c.opts.SchemaID != 0 {
		rs, err := c.opts.Schemas.SchemaByID(c.opts.SchemaID)
		if err != nil {
			return fmt.Errorf("schema ID %d: %w", c.opts.SchemaID, err)
		}
		if rs.Type != SchemaTypeProtobuf {
			c.encErr = fmt.Errorf("schema ID %d is %s, not PROTOBUF", c.opts.SchemaID, rs.Type)
			return c.encErr
		}
		md, err := compileProto(c.opts.Schemas, rs, []int{0})
		if err == nil {
			c.enc, err = encMessage(md, c.names, c.types)
		}
		if err != nil {
			c.encErr = fmt.Errorf("cannot write the columns with schema ID %d: %v", c.opts.SchemaID, err)
			return c.encErr
		}
		c.encID, c.encIdx = c.opts.SchemaID, []int{0}
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
		var tmp [8]byte
		body = protowire.AppendBytes(body, appendTwosComplement(tmp[:0], d.I))
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

// ProtobufColumns returns the columns ksqlDB infers from a registered
// .proto (its first message, or the one index picks): a field each, a
// oneof as a STRUCT column <oneof>_0, with the types the format reads
// (int32, sint32, sfixed32 INT; uint32 and the 64-bit integers BIGINT;
// float, double DOUBLE; enum STRING; repeated ARRAY; map<string, V> MAP;
// wrappers their scalar; Timestamp, Date, TimeOfDay; messages STRUCT).
func ProtobufColumns(rs RegisteredSchema) ([]Column, error) {
	return protobufColumns(nil, rs)
}

// protobufColumns is ProtobufColumns with imports fetched from src.
func protobufColumns(src SchemaSource, rs RegisteredSchema) ([]Column, error) {
	md, err := compileProto(src, rs, []int{0})
	if err != nil {
		return nil, err
	}
	fs, err := protoFields(md, 0)
	if err != nil {
		return nil, err
	}
	cols := make([]Column, len(fs))
	for i, f := range fs {
		cols[i] = Column{Name: f.Name, Type: f.Type}
	}
	return cols, nil
}

func protoFields(md protoreflect.MessageDescriptor, depth int) ([]Field, error) {
	if depth > 32 {
		return nil, fmt.Errorf("messages nest too deeply (a recursive message?)")
	}
	var out []Field
	oneofs := map[protoreflect.FullName]int{}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		t, err := protoFieldType(fd, depth)
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", fd.Name(), err)
		}
		if oo := fd.ContainingOneof(); oo != nil && !oo.IsSynthetic() {
			at, ok := oneofs[oo.FullName()]
			if !ok {
				at = len(out)
				oneofs[oo.FullName()] = at
				out = append(out, Field{Name: string(oo.Name()) + "_0", Type: Type{Kind: Struct}})
			}
			out[at].Type.Fields = append(out[at].Type.Fields, Field{Name: string(fd.Name()), Type: t})
			continue
		}
		out = append(out, Field{Name: string(fd.Name()), Type: t})
	}
	return out, nil
}

func protoFieldType(fd protoreflect.FieldDescriptor, depth int) (Type, error) {
	if fd.IsMap() {
		if fd.MapKey().Kind() != protoreflect.StringKind {
			return Type{}, fmt.Errorf("map keys of %s have no SQL type here (STRING only)", fd.MapKey().Kind())
		}
		v, err := protoFieldType(fd.MapValue(), depth+1)
		if err != nil {
			return Type{}, err
		}
		k := StringType
		return Type{Kind: Map, KeyType: &k, Elem: &v}, nil
	}
	var t Type
	switch fd.Kind() {
	case protoreflect.BoolKind:
		t = BooleanType
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		t = IntType
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		t = BigintType
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		t = DoubleType
	case protoreflect.StringKind, protoreflect.EnumKind:
		t = StringType
	case protoreflect.BytesKind:
		t = BytesType
	case protoreflect.MessageKind:
		md := fd.Message()
		switch name := md.FullName(); {
		case name == "google.protobuf.Timestamp":
			t = TimestampType
		case name == "google.type.Date":
			t = DateType
		case name == "google.type.TimeOfDay":
			t = TimeType
		case name == "confluent.type.Decimal":
			return Type{}, fmt.Errorf("inferring DECIMAL from confluent.type.Decimal is not supported yet: declare the columns")
		case isWrapper(name):
			inner, err := protoFieldType(md.Fields().ByNumber(1), depth+1)
			if err != nil {
				return Type{}, err
			}
			t = inner
		default:
			fs, err := protoFields(md, depth+1)
			if err != nil {
				return Type{}, err
			}
			t = Type{Kind: Struct, Fields: fs}
		}
	default:
		return Type{}, fmt.Errorf("protobuf %s has no SQL type", fd.Kind())
	}
	if fd.IsList() {
		return Type{Kind: Array, Elem: &t}, nil
	}
	return t, nil
}
