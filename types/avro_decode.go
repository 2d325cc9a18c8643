package types

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/avro"
)

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
	dIntString // int or long into a STRING column: its decimal text, as ksqlDB coerces
	dLongString
)

// adec is the plan for reading one writer schema into a type.
type adec struct {
	op       adop
	skip     avroSkip // dSkip: the kind of value stepped over
	branches []*adec  // dUnion: per writer branch
	elem     *adec    // dArray, dMap
	fields   []adecField
	nfields  int     // dRecord: fields of the struct read into
	missing  []int   // dRecord: reader fields the writer lacks
	defaults []Datum // top-level dRecord: per missing field, the reader schema's default (Null: none)
	size     int     // dFixed, dDecimalFixed
	scale    int64   // dDecimal*: multiply the unscaled value by this
	// wide, for dDecimal* into a wide DECIMAL: the column's type, and
	// wscale the writer's scale.
	wide    *Type
	wscale  int
	symbols [][]byte
	err     error // a plan that did not resolve: each record is bad
}

type adecField struct {
	pos  int // the reader field; -1 skips the writer field
	node *adec
	name string // the reader field's name, for errors
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
		aliases, aerr := c.readerAliases()
		if registryDown(aerr) {
			return nil
		}
		p, err = newDecPlanner(sch).decRecordTop(sch.root, c.names, c.types, aliases)
	} else {
		p, err = newDecPlanner(sch).decNode(sch.root, c.types[0])
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

// readerAliases returns, once, per column the aliases its field has in
// the schema the columns were inferred from (FormatOptions.ReaderSchemaID):
// a writer that still uses an old name of a renamed field fills the
// column, as Avro schema resolution reads reader aliases.
func (c *avroCodec) readerAliases() ([][]string, error) {
	if c.opts.ReaderSchemaID == 0 || c.aliases != nil {
		return c.aliases, nil
	}
	rs, err := c.opts.Schemas.SchemaByID(c.opts.ReaderSchemaID)
	if err != nil {
		return nil, err
	}
	sch, err := parseAvroCached(c.opts.Schemas, rs)
	if err != nil {
		return nil, err
	}
	rec := sch.node(sch.root)
	if rec.Type == "union" {
		if v := unionValue(rec); v != nil {
			rec = sch.node(v)
		}
	}
	aliases := make([][]string, len(c.names))
	if rec.Type == "record" || rec.Type == "error" {
		for _, f := range rec.Fields {
			if pos := matchName(f.Name, nil, c.names); pos >= 0 {
				aliases[pos] = f.Aliases
			}
		}
	}
	c.aliases = aliases
	return aliases, nil
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
	rec := sch.node(sch.root)
	if rec.Type == "union" {
		if v := unionValue(rec); v != nil {
			rec = sch.node(v)
		}
	}
	if rec.Type != "record" && rec.Type != "error" {
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
			for _, f := range rec.Fields {
				if matchName(f.Name, nil, c.names[m:m+1]) == 0 && f.HasDefault {
					p.defaults[i] = avroDefault(f.Default, c.types[m])
					break
				}
			}
		}
	}
	fill(p)
	return nil
}

// avroDefault converts a field default as twmb/avro gives it to a datum
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

var avroParsed sync.Map // depsKey → *avroTree, shared by codecs

// errParse marks a schema that does not parse (as opposed to a registry
// that did not answer).
var errParse = errors.New("invalid schema")

// registryDown reports whether err is the registry failing to answer, not
// a schema that is missing or does not parse.
func registryDown(err error) bool {
	return err != nil && !errors.Is(err, ErrSchemaNotFound) && !errors.Is(err, errParse) && !errors.Is(err, errNoRegistry)
}

// parseAvroCached parses rs with its references fetched from src.
func parseAvroCached(src SchemaSource, rs RegisteredSchema) (*avroTree, error) {
	deps, err := resolveRefs(src, rs)
	if err != nil {
		return nil, err
	}
	key := depsKey(rs.Text, deps)
	if s, ok := avroParsed.Load(key); ok {
		return s.(*avroTree), nil
	}
	s, err := parseAvro(rs, deps)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errParse, err)
	}
	avroParsed.Store(key, s)
	return s, nil
}

// adecPlanner plans reading one writer schema. skips holds the skip plans
// of the named records met so far, so that a recursive record's skip plan
// refers to itself instead of growing without end.
type adecPlanner struct {
	tree  *avroTree
	skips map[*avro.SchemaNode]*adec
}

func newDecPlanner(t *avroTree) *adecPlanner {
	return &adecPlanner{tree: t, skips: map[*avro.SchemaNode]*adec{}}
}

// decRecordTop plans reading a top-level record into the columns; aliases,
// when set, are per column the reader schema's aliases of its field.
func (p *adecPlanner) decRecordTop(sch *avro.SchemaNode, names []string, types []Type, aliases [][]string) (*adec, error) {
	sch = p.tree.node(sch)
	if sch.Type == "union" {
		return p.decUnion(sch, func(b *avro.SchemaNode) (*adec, error) {
			if b.Type == "null" {
				return &adec{op: dNull}, nil
			}
			return p.decRecordTop(b, names, types, aliases)
		})
	}
	if sch.Type != "record" && sch.Type != "error" {
		return nil, fmt.Errorf("the writer schema is %s, not a record", sch.Type)
	}
	return p.decRecordAliases(sch, names, types, aliases)
}

func (p *adecPlanner) decRecord(rs *avro.SchemaNode, names []string, types []Type) (*adec, error) {
	return p.decRecordAliases(rs, names, types, nil)
}

// decRecordAliases plans reading rs into fields names; a writer field
// matches a field by name, then by one of the writer field's aliases, then
// by one of the reader's (aliases, per field).
func (p *adecPlanner) decRecordAliases(rs *avro.SchemaNode, names []string, types []Type, aliases [][]string) (*adec, error) {
	n := &adec{op: dRecord, nfields: len(names)}
	seen := make([]bool, len(names))
	for i := range rs.Fields {
		f := &rs.Fields[i]
		pos := matchName(f.Name, f.Aliases, names)
		for i := 0; pos < 0 && i < len(aliases); i++ {
			for _, a := range aliases[i] {
				if strings.EqualFold(a, f.Name) && !seen[i] {
					pos = i
					break
				}
			}
		}
		if pos < 0 || seen[pos] {
			n.fields = append(n.fields, adecField{pos: -1, node: p.skipNode(&f.Type)})
			continue
		}
		seen[pos] = true
		fn, err := p.decNode(&f.Type, types[pos])
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", f.Name, err)
		}
		n.fields = append(n.fields, adecField{pos: pos, node: fn, name: names[pos]})
	}
	for i, s := range seen {
		if !s {
			n.missing = append(n.missing, i)
		}
	}
	return n, nil
}

func (p *adecPlanner) decUnion(u *avro.SchemaNode, branch func(*avro.SchemaNode) (*adec, error)) (*adec, error) {
	n := &adec{op: dUnion}
	ok := false
	var firstErr error
	for i := range u.Branches {
		b := p.tree.node(&u.Branches[i])
		bn, err := branch(b)
		if err != nil {
			// A branch the column cannot take makes only the records
			// that use it bad.
			if firstErr == nil {
				firstErr = err
			}
			bn = &adec{err: err}
		} else if b.Type != "null" {
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
func (p *adecPlanner) skipNode(s *avro.SchemaNode) *adec {
	s = p.tree.node(s)
	switch s.Type {
	case "union":
		n := &adec{op: dUnion}
		for i := range s.Branches {
			n.branches = append(n.branches, p.skipNode(&s.Branches[i]))
		}
		return n
	case "array":
		return &adec{op: dArray, elem: p.skipNode(s.Items)}
	case "map":
		return &adec{op: dMap, elem: p.skipNode(s.Values)}
	case "record", "error":
		if n, ok := p.skips[s]; ok {
			return n
		}
		n := &adec{op: dRecord}
		p.skips[s] = n
		for i := range s.Fields {
			n.fields = append(n.fields, adecField{pos: -1, node: p.skipNode(&s.Fields[i].Type)})
		}
		return n
	case "fixed":
		return &adec{op: dSkip, skip: skipFixed, size: s.Size}
	}
	return &adec{op: dSkip, skip: avroSkipKind(s.Type)}
}

func (p *adecPlanner) decNode(s *avro.SchemaNode, t Type) (*adec, error) {
	s = p.tree.node(s)
	if s.Type == "union" {
		return p.decUnion(s, func(b *avro.SchemaNode) (*adec, error) {
			if b.Type == "null" {
				return &adec{op: dNull}, nil
			}
			return p.decNode(b, t)
		})
	}
	bad := func() (*adec, error) {
		return nil, fmt.Errorf("cannot read Avro %s as %s", avroTypeName(s), t)
	}
	lt := avroLogical(s)
	n := &adec{}
	switch s.Type {
	case "null":
		n.op = dNull
	case "boolean":
		if t.Kind != Boolean {
			return bad()
		}
		n.op = dBool
	case "int":
		switch {
		case t.Kind == Int && lt == "", t.Kind == Bigint && lt == "",
			t.Kind == Date && lt == "date", t.Kind == Time && lt == "time-millis":
			n.op = dInt
		case t.Kind == Double && lt == "":
			n.op = dIntDouble
		case t.Kind == String && lt == "":
			n.op = dIntString
		default:
			return bad()
		}
	case "long":
		switch {
		case t.Kind == Bigint && lt == "",
			t.Kind == Timestamp && (lt == "timestamp-millis" || lt == "local-timestamp-millis"):
			n.op = dLong
		case t.Kind == Double && lt == "":
			n.op = dLongDouble
		case t.Kind == String && lt == "":
			n.op = dLongString
		case t.Kind == Time && lt == "time-micros",
			t.Kind == Timestamp && (lt == "timestamp-micros" || lt == "local-timestamp-micros"):
			n.op = dMicros
		default:
			return bad()
		}
	case "float":
		if t.Kind != Double {
			return bad()
		}
		n.op = dFloat
	case "double":
		if t.Kind != Double {
			return bad()
		}
		n.op = dDouble
	case "string":
		if t.Kind != String && t.Kind != Bytes {
			return bad()
		}
		n.op = dString
	case "bytes", "fixed":
		fixed := s.Type == "fixed"
		if fixed {
			n.size = s.Size
		}
		switch {
		case (t.Kind == Bytes || t.Kind == String && !fixed) && lt == "":
			n.op = dString
			if fixed {
				n.op = dFixed
			}
		case t.Kind == Decimal && lt == "decimal":
			if s.Scale > t.Scale || s.Precision-s.Scale > t.Precision-t.Scale {
				return nil, fmt.Errorf("cannot read Avro decimal(%d, %d) as %s", s.Precision, s.Scale, t)
			}
			if t.IsWideDecimal() {
				wt := t
				n.op, n.wide, n.wscale = dDecimal, &wt, s.Scale
			} else {
				n.op, n.scale = dDecimal, pow10[t.Scale-s.Scale]
			}
			if fixed {
				n.op = dDecimalFixed
			}
		default:
			return bad()
		}
	case "enum":
		if t.Kind != String {
			return bad()
		}
		n.op = dEnum
		for _, sym := range s.Symbols {
			n.symbols = append(n.symbols, []byte(sym))
		}
	case "array":
		if t.Kind != Array {
			return bad()
		}
		e, err := p.decNode(s.Items, *t.Elem)
		if err != nil {
			return nil, inField(err, "[]")
		}
		n.op, n.elem = dArray, e
	case "map":
		if t.Kind != Map {
			return bad()
		}
		e, err := p.decNode(s.Values, *t.Elem)
		if err != nil {
			return nil, err
		}
		n.op, n.elem = dMap, e
	case "record", "error":
		if t.Kind != Struct {
			return bad()
		}
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		return p.decRecord(s, names, types)
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
	c.r.reset(payload)
	c.buf = c.buf[:0]
	c.payload = len(payload)
	if c.wrap {
		err = c.decodeTop(p, row)
	} else {
		err = c.decode(p, &row[c.cols[0]])
	}
	if err == nil && c.r.err != nil {
		err = c.r.err
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
	i := c.r.readLong()
	if c.r.err != nil {
		return nil, c.r.err
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
	c.r.read(b)
	return b, c.r.err
}

// decode reads one value of plan n into d; a nil d steps over it.
func (c *avroCodec) decode(n *adec, d *Datum) error {
	r := &c.r
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
		if r.readBool() {
			d.I = 1
		}
	case dInt:
		*d = Datum{I: int64(r.readInt()), L: d.L[:0]}
	case dLong:
		*d = Datum{I: r.readLong(), L: d.L[:0]}
	case dMicros:
		*d = Datum{I: floorDiv(r.readLong(), 1000), L: d.L[:0]}
	case dIntDouble:
		*d = Datum{F: float64(r.readInt()), L: d.L[:0]}
	case dLongDouble:
		*d = Datum{F: float64(r.readLong()), L: d.L[:0]}
	case dIntString:
		*d = Datum{B: strconv.AppendInt(nil, int64(r.readInt()), 10), L: d.L[:0]}
	case dLongString:
		*d = Datum{B: strconv.AppendInt(nil, r.readLong(), 10), L: d.L[:0]}
	case dFloat:
		*d = Datum{F: float64(r.readFloat()), L: d.L[:0]}
	case dDouble:
		*d = Datum{F: r.readDouble(), L: d.L[:0]}
	case dString:
		b, err := c.readBytes(int(r.readLong()))
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
		i := r.readInt()
		if i < 0 || int(i) >= len(n.symbols) {
			return fmt.Errorf("enum symbol %d of %d", i, len(n.symbols))
		}
		*d = Datum{B: n.symbols[i], L: d.L[:0]}
	case dDecimal, dDecimalFixed:
		size := n.size
		if n.op == dDecimal {
			size = int(r.readLong())
		}
		b, err := c.readBytes(size)
		if err != nil {
			return err
		}
		if n.wide != nil {
			v, buf, ok := WideDecimalFromUnscaled(b, n.wscale, *n.wide, c.buf)
			c.buf = buf
			if !ok {
				return fmt.Errorf("decimal out of range")
			}
			*d = Datum{B: v.B, L: d.L[:0]}
			return nil
		}
		v, ok := fromTwosComplement(b)
		if ok && n.scale != 1 {
			if v > math.MaxInt64/n.scale || v < math.MinInt64/n.scale {
				ok = false
			}
			v *= n.scale
		}
		if !ok || v >= pow10[ShortDecimalPrecision] || v <= -pow10[ShortDecimalPrecision] {
			return fmt.Errorf("decimal out of range")
		}
		*d = Datum{I: v, L: d.L[:0]}
	case dArray:
		l := d.L[:0]
		for {
			count, _ := r.readBlockHeader()
			if r.err != nil {
				return r.err
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
			count, _ := r.readBlockHeader()
			if r.err != nil {
				return r.err
			}
			if count == 0 {
				break
			}
			if count < 0 || count > int64(c.payload) {
				return fmt.Errorf("invalid map block of %d", count)
			}
			for i := int64(0); i < count; i++ {
				l = growDatums(l, len(l)+2)
				k, err := c.readBytes(int(r.readLong()))
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
				if f.pos >= 0 {
					return inField(err, f.name)
				}
				return err
			}
		}
		for _, m := range n.missing {
			setNull(&l[m])
		}
		*d = Datum{L: l}
	}
	return r.err
}

// avroSkip is the kind of primitive a dSkip plan steps over.
type avroSkip uint8

const (
	skipNothing avroSkip = iota // null
	skipBool
	skipVarint // int, long, enum
	skipFloat
	skipDouble
	skipBytes // string, bytes
	skipFixed // fixed, of size
)

// avroSkipKind is how a value of primitive or enum type typ is skipped.
func avroSkipKind(typ string) avroSkip {
	switch typ {
	case "boolean":
		return skipBool
	case "int", "long", "enum":
		return skipVarint
	case "float":
		return skipFloat
	case "double":
		return skipDouble
	case "string", "bytes":
		return skipBytes
	}
	return skipNothing
}

// skip steps over a value of plan n (a skip plan, or a reading one whose
// value nobody wants).
func (c *avroCodec) skip(n *adec) error {
	r := &c.r
	switch n.op {
	case dNull:
	case dUnion:
		b, err := c.branch(n)
		if err != nil {
			return err
		}
		return c.skip(b)
	case dBool:
		r.readBool()
	case dInt, dIntDouble, dIntString, dEnum, dLong, dLongDouble, dLongString, dMicros:
		r.readLong()
	case dFloat:
		r.skip(4)
	case dDouble:
		r.skip(8)
	case dString, dDecimal:
		r.skipBytes()
	case dFixed, dDecimalFixed:
		r.skip(int64(n.size))
	case dArray, dMap:
		for {
			count, size := r.readBlockHeader()
			if r.err != nil || count == 0 {
				break
			}
			if size > 0 {
				r.skip(size)
				continue
			}
			if count > int64(c.payload) {
				return fmt.Errorf("invalid block of %d", count)
			}
			for i := int64(0); i < count && r.err == nil; i++ {
				if n.op == dMap {
					r.skipBytes()
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
		switch n.skip {
		case skipBool:
			r.readBool()
		case skipVarint:
			r.readLong()
		case skipFloat:
			r.skip(4)
		case skipDouble:
			r.skip(8)
		case skipBytes:
			r.skipBytes()
		case skipFixed:
			r.skip(int64(n.size))
		}
	}
	return r.err
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
