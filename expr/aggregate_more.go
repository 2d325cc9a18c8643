package expr

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// More aggregates: offsets, collections, statistics. Their states hold
// scalar values in a small binary form: a non-NULL value is its 8 bytes
// (integers, DOUBLE bits, DATE/TIME/TIMESTAMP, unscaled DECIMAL) or, for
// STRING and BYTES, a uvarint length and the bytes.

// CollectLimit caps COLLECT_LIST, COLLECT_SET and TOPK state, as ksqlDB's
// ksql.functions.collect_list.limit does (default 1000).
const CollectLimit = 1000

// moreAggregates are added to the registry beside COUNT, SUM, AVG, MIN
// and MAX.
func moreAggregates() []*AggregateFunction {
	return []*AggregateFunction{
		offsetAgg("LATEST_BY_OFFSET", true),
		offsetAgg("EARLIEST_BY_OFFSET", false),
		collectAgg("COLLECT_LIST", false),
		collectAgg("COLLECT_SET", true),
		topkAgg("TOPK", false),
		topkAgg("TOPKDISTINCT", true),
		{
			Name:        "COUNT_DISTINCT",
			Description: "Counts the distinct non-NULL values, exactly (up to 1,000,000 per group in a windowed aggregation).",
			Signatures:  []string{"COUNT_DISTINCT(T) -> BIGINT for scalar T"},
			Check: func(args []types.Type) (types.Type, error) {
				if len(args) != 1 || !scalarState(args[0]) {
					return types.Type{}, typeErrorf("function COUNT_DISTINCT does not accept %s", describeArgs(args))
				}
				return types.BigintType, nil
			},
			New: func(args []types.Type) Accumulator { return &setAcc{t: args[0], limit: 1_000_000, count: true} },
			NewRetracting: func(args []types.Type) Accumulator {
				return &countedAcc{attrAcc: attrAcc{t: args[0], limit: 1_000_000}, count: true}
			},
		},
		{
			Name:        "ATTR",
			Description: "The value all rows of the group share (NULL included), or NULL when they differ.",
			Signatures:  []string{"ATTR(T) -> T"},
			Check: func(args []types.Type) (types.Type, error) {
				if len(args) != 1 || !stateValue(args[0]) {
					return types.Type{}, typeErrorf("function ATTR does not accept %s", describeArgs(args))
				}
				return args[0], nil
			},
			New: func(args []types.Type) Accumulator { return &attrAcc{t: args[0]} },
		},
		{
			Name:        "HISTOGRAM",
			Description: "Counts each distinct STRING value: a MAP from value to count.",
			Signatures:  []string{"HISTOGRAM(STRING) -> MAP<STRING, BIGINT>"},
			Check: func(args []types.Type) (types.Type, error) {
				if len(args) != 1 || args[0].Kind != types.String {
					return types.Type{}, typeErrorf("function HISTOGRAM does not accept %s", describeArgs(args))
				}
				s, b := types.StringType, types.BigintType
				return types.Type{Kind: types.Map, KeyType: &s, Elem: &b}, nil
			},
			New: func([]types.Type) Accumulator { return &histogramAcc{} },
		},
		youngsCramer("STDDEV_SAMP", "The sample variance of the non-NULL values (what ksqlDB's STDDEV_SAMP returns; STDDEV_SAMPLE is the standard deviation); 0.0 for fewer than two.", false),
		{
			Name:        "CORRELATION",
			Description: "The Pearson correlation of the pairs where both values are non-NULL (NaN when it is undefined, as in ksqlDB).",
			Signatures:  []string{"CORRELATION(numeric, numeric) -> DOUBLE"},
			Check: func(args []types.Type) (types.Type, error) {
				if len(args) != 2 || !args[0].IsNumeric() || !args[1].IsNumeric() {
					return types.Type{}, typeErrorf("function CORRELATION does not accept %s", describeArgs(args))
				}
				return types.DoubleType, nil
			},
			New: func(args []types.Type) Accumulator { return &correlationAcc{ts: args} },
		},
	}
}

func scalarState(t types.Type) bool {
	switch t.Kind {
	case types.Boolean, types.Int, types.Bigint, types.Double, types.Decimal, types.String, types.Bytes,
		types.Date, types.Time, types.Timestamp:
		return true
	}
	return false
}

// stateValue reports whether values of t can be kept in a state:
// scalars, and ARRAY, MAP and STRUCT of them.
func stateValue(t types.Type) bool {
	switch t.Kind {
	case types.Array, types.Map:
		return t.Elem != nil && stateValue(*t.Elem) && (t.Kind == types.Array || stateValue(*t.KeyType))
	case types.Struct:
		for _, f := range t.Fields {
			if !stateValue(f.Type) {
				return false
			}
		}
		return true
	}
	return scalarState(t)
}

// elemType is the type of element i of a composite value of type t.
func elemType(t types.Type, i int) types.Type {
	switch t.Kind {
	case types.Array:
		return *t.Elem
	case types.Map:
		if i%2 == 0 {
			return *t.KeyType
		}
		return *t.Elem
	}
	return t.Fields[i].Type
}

func appendValue(dst []byte, d types.Datum, t types.Type) []byte {
	switch t.Kind {
	case types.Array, types.Map, types.Struct:
		// A count, then each element: 0 for NULL, or 1 and the value.
		dst = binary.AppendUvarint(dst, uint64(len(d.L)))
		for i, e := range d.L {
			if e.Null {
				dst = append(dst, 0)
				continue
			}
			dst = appendValue(append(dst, 1), e, elemType(t, i))
		}
		return dst
	case types.String, types.Bytes:
		dst = binary.AppendUvarint(dst, uint64(len(d.B)))
		return append(dst, d.B...)
	case types.Double:
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(d.F))
	case types.Decimal:
		if isWide(t) {
			dst = binary.AppendUvarint(dst, uint64(len(d.B)))
			return append(dst, d.B...)
		}
	}
	return binary.BigEndian.AppendUint64(dst, uint64(d.I))
}

// readValue decodes one value at the start of b and returns the rest.
func readValue(b []byte, t types.Type) (types.Datum, []byte) {
	switch t.Kind {
	case types.Array, types.Map, types.Struct:
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)) {
			return types.NullDatum, nil
		}
		b = b[w:]
		d := types.Datum{L: make([]types.Datum, 0, n)}
		for i := 0; i < int(n); i++ {
			if len(b) == 0 {
				return types.NullDatum, nil
			}
			if b[0] == 0 {
				d.L, b = append(d.L, types.NullDatum), b[1:]
				continue
			}
			var e types.Datum
			if e, b = readValue(b[1:], elemType(t, i)); b == nil {
				return types.NullDatum, nil
			}
			d.L = append(d.L, e)
		}
		return d, b
	case types.String, types.Bytes, types.Decimal:
		if t.Kind == types.Decimal && !isWide(t) {
			break
		}
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return types.NullDatum, nil
		}
		return types.Datum{B: b[w : w+int(n)]}, b[w+int(n):]
	}
	if len(b) < 8 {
		return types.NullDatum, nil
	}
	v := binary.BigEndian.Uint64(b)
	if t.Kind == types.Double {
		return types.DoubleDatum(math.Float64frombits(v)), b[8:]
	}
	return types.IntDatum(int64(v)), b[8:]
}

func offsetAgg(name string, latest bool) *AggregateFunction {
	which := map[bool]string{true: "latest", false: "earliest"}[latest]
	return &AggregateFunction{
		Name: name,
		Description: "The value of the " + which + " record by offset, ignoring NULLs unless ignoreNulls is false; " +
			"with n, an ARRAY of the " + which + " n values in offset order.",
		Signatures: []string{
			name + "(T) -> T", name + "(T, BOOLEAN ignoreNulls) -> T",
			name + "(T, INTEGER n) -> ARRAY<T>", name + "(T, INTEGER n, BOOLEAN ignoreNulls) -> ARRAY<T>",
		},
		Check: func(args []types.Type) (types.Type, error) {
			bad := func() (types.Type, error) {
				return types.Type{}, typeErrorf("Function '%s' does not accept parameters %s.", name, describeArgs(args))
			}
			if len(args) == 0 || len(args) > 3 || !stateValue(args[0]) {
				return bad()
			}
			switch {
			case len(args) == 1:
				return args[0], nil
			case len(args) == 2 && args[1].Kind == types.Boolean:
				return args[0], nil
			case args[1].IsIntegral() && (len(args) == 2 || args[2].Kind == types.Boolean):
				t := args[0]
				return types.Type{Kind: types.Array, Elem: &t}, nil
			}
			return bad()
		},
		New: func(args []types.Type) Accumulator {
			o := &offsetAcc{t: args[0], latest: latest}
			switch {
			case len(args) == 2 && args[1].Kind == types.Boolean:
				o.flagged = true
			case len(args) >= 2:
				o.list = true
			}
			return o
		},
	}
}

// offsetAcc keeps the earliest or latest value by offset.
//
// With one argument the state is the kept value, or empty (NULLs are
// ignored). With ignoreNulls (a BOOLEAN second argument) it is empty, or
// 0 for a kept NULL, or 1 and the value. With n (an INTEGER second
// argument, and an optional ignoreNulls third) it is a count, then each
// value as 0 (NULL) or 1 and the value, oldest first.
type offsetAcc struct {
	t             types.Type
	latest        bool
	flagged, list bool
	vals          [][]byte
	out           []types.Datum
}

var _ Merger = (*offsetAcc)(nil)

func (o *offsetAcc) Add(dst, st []byte, args []types.Datum) []byte {
	switch {
	case o.list:
		return o.addList(dst, st, args)
	case o.flagged:
		if (args[0].Null && args[1].Bool()) || (!o.latest && len(st) > 0) {
			return append(dst, st...)
		}
		if args[0].Null {
			return append(dst, 0)
		}
		return appendValue(append(dst, 1), args[0], o.t)
	}
	if args[0].Null || (!o.latest && len(st) > 0) {
		return append(dst, st...)
	}
	return appendValue(dst, args[0], o.t)
}

// split reads a list state's entries.
func (o *offsetAcc) split(st []byte) {
	o.vals = o.vals[:0]
	n, w := binary.Uvarint(st)
	if w <= 0 {
		return
	}
	b := st[w:]
	for i := uint64(0); i < n && len(b) > 0; i++ {
		if b[0] == 0 {
			o.vals, b = append(o.vals, b[:1]), b[1:]
			continue
		}
		_, rest := readValue(b[1:], o.t)
		if rest == nil {
			return
		}
		o.vals = append(o.vals, b[:len(b)-len(rest)])
		b = rest
	}
}

func (o *offsetAcc) join(dst []byte, vals [][]byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	for _, v := range vals {
		dst = append(dst, v...)
	}
	return dst
}

func (o *offsetAcc) addList(dst, st []byte, args []types.Datum) []byte {
	n := int(min(args[1].I, CollectLimit))
	ignore := len(args) < 3 || args[2].Bool()
	if args[1].Null || n <= 0 || (args[0].Null && ignore) {
		return append(dst, st...)
	}
	o.split(st)
	if !o.latest && len(o.vals) >= n {
		return append(dst, st...)
	}
	var v []byte
	if args[0].Null {
		v = []byte{0}
	} else {
		v = appendValue([]byte{1}, args[0], o.t)
	}
	vals := append(o.vals, v)
	if len(vals) > n {
		vals = vals[len(vals)-n:]
	}
	return o.join(dst, vals)
}

func (o *offsetAcc) Result(st []byte) types.Datum {
	if o.list {
		o.split(st)
		o.out = o.out[:0]
		for _, v := range o.vals {
			if v[0] == 0 {
				o.out = append(o.out, types.NullDatum)
				continue
			}
			d, _ := readValue(v[1:], o.t)
			o.out = append(o.out, d)
		}
		return types.Datum{L: o.out}
	}
	if o.flagged {
		if len(st) == 0 || st[0] == 0 {
			return types.NullDatum
		}
		st = st[1:]
	}
	if len(st) == 0 {
		return types.NullDatum
	}
	d, _ := readValue(st, o.t)
	return d
}

// Merge joins two sessions' states: a holds the earlier rows.
func (o *offsetAcc) Merge(dst, a, b []byte) []byte {
	if !o.list {
		keep := a
		if (o.latest && len(b) > 0) || len(a) == 0 {
			keep = b
		}
		return append(dst, keep...)
	}
	o.split(a)
	vals := append([][]byte{}, o.vals...)
	o.split(b)
	vals = append(vals, o.vals...)
	return o.join(dst, vals)
}

// CollectWithLimit returns COLLECT_LIST or COLLECT_SET (name) keeping at
// most limit values, as ksqlDB's ksql.functions.collect_list.limit and
// ksql.functions.collect_set.limit configure them; false for another name
// or a limit below 1.
func CollectWithLimit(name string, limit int) (*AggregateFunction, bool) {
	switch name {
	case "COLLECT_LIST", "COLLECT_SET":
		if limit < 1 {
			return nil, false
		}
		f := collectAggLimit(name, name == "COLLECT_SET", limit)
		f.Variant = "limit=" + strconv.Itoa(limit)
		return f, true
	}
	return nil, false
}

func collectAgg(name string, distinct bool) *AggregateFunction {
	return collectAggLimit(name, distinct, CollectLimit)
}

func collectAggLimit(name string, distinct bool, limit int) *AggregateFunction {
	f := &AggregateFunction{
		CompositeState: true,
		Name:           name,
		Description:    "Collects the values into an ARRAY (" + map[bool]string{true: "distinct", false: "in order"}[distinct] + ", at most 1,000 unless ksql.functions." + strings.ToLower(name) + ".limit says otherwise).",
		Signatures:     []string{name + "(T) -> ARRAY<T> for scalar T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || !stateValue(args[0]) {
				return types.Type{}, typeErrorf("Function '%s' does not accept parameters %s.", name, describeArgs(args))
			}
			t := args[0]
			return types.Type{Kind: types.Array, Elem: &t}, nil
		},
		New: func(args []types.Type) Accumulator {
			return &listAcc{t: args[0], limit: limit, distinct: distinct}
		},
	}
	if distinct {
		f.NewRetracting = func(args []types.Type) Accumulator {
			return &countedAcc{attrAcc: attrAcc{t: args[0], limit: limit}}
		}
	}
	return f
}

// listAcc: state is a count (uvarint) then the values in order; NULLs are
// kept as ksqlDB's COLLECT_LIST keeps them, marked by a 0 byte (values
// by a 1). With distinct (COLLECT_SET) a value already there, NULL
// included, is not added again, as in ksqlDB's.
type listAcc struct {
	t        types.Type
	limit    int
	distinct bool
	enc      []byte
	out      []types.Datum
}

// has reports whether the list state st holds the encoded entry e.
func (l *listAcc) has(st, e []byte) bool {
	for _, x := range l.entries(st) {
		if bytes.Equal(x, e) {
			return true
		}
	}
	return false
}

func (l *listAcc) Add(dst, st []byte, args []types.Datum) []byte {
	n, w := binary.Uvarint(st)
	if w <= 0 {
		n, w = 0, len(st)
	}
	if n >= uint64(l.limit) {
		return append(dst, st...)
	}
	if args[0].Null {
		l.enc = append(l.enc[:0], 0)
	} else {
		l.enc = appendValue(append(l.enc[:0], 1), args[0], l.t)
	}
	if l.distinct && l.has(st, l.enc) {
		return append(dst, st...)
	}
	dst = binary.AppendUvarint(dst, n+1)
	dst = append(dst, st[w:]...)
	return append(dst, l.enc...)
}

// entries splits a list state into its count and encoded entries.
func (l *listAcc) entries(st []byte) [][]byte {
	n, w := binary.Uvarint(st)
	if w <= 0 {
		return nil
	}
	var out [][]byte
	b := st[w:]
	for i := uint64(0); i < n && len(b) > 0; i++ {
		if b[0] == 0 {
			out, b = append(out, b[:1]), b[1:]
			continue
		}
		_, rest := readValue(b[1:], l.t)
		if rest == nil {
			break
		}
		out = append(out, b[:len(b)-len(rest)])
		b = rest
	}
	return out
}

// Undo takes the first occurrence of a value out of the list, as
// ksqlDB's List.remove does.
func (l *listAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	var enc []byte
	if args[0].Null {
		enc = []byte{0}
	} else {
		enc = appendValue([]byte{1}, args[0], l.t)
	}
	es := l.entries(st)
	for i, e := range es {
		if bytes.Equal(e, enc) {
			es = append(es[:i:i], es[i+1:]...)
			dst = binary.AppendUvarint(dst, uint64(len(es)))
			for _, e := range es {
				dst = append(dst, e...)
			}
			return dst
		}
	}
	return append(dst, st...)
}

// Merge appends b's values to a's (those a lacks, with distinct), up to
// the limit.
func (l *listAcc) Merge(dst, a, b []byte) []byte {
	es := l.entries(a)
	for _, e := range l.entries(b) {
		if !l.distinct || !l.has(a, e) {
			es = append(es, e)
		}
	}
	if len(es) > l.limit {
		es = es[:l.limit]
	}
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	for _, e := range es {
		dst = append(dst, e...)
	}
	return dst
}

func (l *listAcc) Result(st []byte) types.Datum {
	n, w := binary.Uvarint(st)
	l.out = l.out[:0]
	if w <= 0 {
		return types.Datum{L: l.out}
	}
	b := st[w:]
	for i := uint64(0); i < n && len(b) > 0; i++ {
		if b[0] == 0 {
			l.out = append(l.out, types.NullDatum)
			b = b[1:]
			continue
		}
		var d types.Datum
		d, b = readValue(b[1:], l.t)
		l.out = append(l.out, d)
	}
	return types.Datum{L: l.out}
}

// setAcc: state is the distinct non-NULL values, encoded, sorted by their
// encoding; it counts them (COUNT_DISTINCT) or returns them (COLLECT_SET).
//
// COLLECT_SET keeps them in the order they came instead (ordered), as
// ksqlDB's does; both are a concatenation of encoded values.
type setAcc struct {
	t       types.Type
	limit   int
	count   bool
	ordered bool
	vals    [][]byte
	enc     []byte
	out     []types.Datum
}

var (
	_ Undoer = (*setAcc)(nil)
	_ Merger = (*setAcc)(nil)
	_ Undoer = (*listAcc)(nil)
	_ Merger = (*listAcc)(nil)
)

// Undo takes a value out of the set.
func (s *setAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	if args[0].Null {
		return append(dst, st...)
	}
	s.split(st)
	s.enc = appendValue(s.enc[:0], args[0], s.t)
	for _, v := range s.vals {
		if !bytes.Equal(v, s.enc) {
			dst = append(dst, v...)
		}
	}
	return dst
}

// Merge is the union of two sets.
func (s *setAcc) Merge(dst, a, b []byte) []byte {
	dst = append(dst, a...)
	s.split(b)
	for _, v := range append([][]byte{}, s.vals...) {
		d, _ := readValue(v, s.t)
		cur := append([]byte{}, dst...)
		dst = s.Add(dst[:0], cur, []types.Datum{d})
	}
	return dst
}

func (s *setAcc) split(st []byte) {
	s.vals = s.vals[:0]
	for b := st; len(b) > 0; {
		_, rest := readValue(b, s.t)
		if rest == nil {
			break // malformed
		}
		s.vals = append(s.vals, b[:len(b)-len(rest)])
		b = rest
	}
}

func (s *setAcc) Add(dst, st []byte, args []types.Datum) []byte {
	if args[0].Null {
		return append(dst, st...)
	}
	s.split(st)
	s.enc = appendValue(s.enc[:0], args[0], s.t)
	if s.ordered {
		for _, v := range s.vals {
			if bytes.Equal(v, s.enc) {
				return append(dst, st...)
			}
		}
		if len(s.vals) >= s.limit {
			return append(dst, st...)
		}
		return append(append(dst, st...), s.enc...)
	}
	i := sort.Search(len(s.vals), func(i int) bool { return bytes.Compare(s.vals[i], s.enc) >= 0 })
	if (i < len(s.vals) && bytes.Equal(s.vals[i], s.enc)) || len(s.vals) >= s.limit {
		return append(dst, st...)
	}
	for _, v := range s.vals[:i] {
		dst = append(dst, v...)
	}
	dst = append(dst, s.enc...)
	for _, v := range s.vals[i:] {
		dst = append(dst, v...)
	}
	return dst
}

func (s *setAcc) Result(st []byte) types.Datum {
	s.split(st)
	if s.count {
		return types.IntDatum(int64(len(s.vals)))
	}
	s.out = s.out[:0]
	for _, v := range s.vals {
		d, _ := readValue(v, s.t)
		s.out = append(s.out, d)
	}
	return types.Datum{L: s.out}
}

func topkAgg(name string, distinct bool) *AggregateFunction {
	return &AggregateFunction{
		Name:        name,
		Description: "The k greatest " + map[bool]string{true: "distinct ", false: ""}[distinct] + "values, greatest first.",
		Signatures:  []string{name + "(T, INTEGER k) -> ARRAY<T> for numeric, STRING, BYTES, DATE, TIME or TIMESTAMP T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) < 2 || !args[len(args)-1].IsIntegral() || (distinct && len(args) != 2) {
				return types.Type{}, typeErrorf("Function '%s' does not accept parameters %s.", name, describeArgs(args))
			}
			switch args[0].Kind {
			case types.Int, types.Bigint, types.Double, types.Decimal, types.String, types.Bytes,
				types.Date, types.Time, types.Timestamp:
			default:
				return types.Type{}, typeErrorf("Function '%s' does not accept parameters %s.", name, describeArgs(args))
			}
			if len(args) > 2 {
				for _, a := range args[1 : len(args)-1] {
					if !stateValue(a) {
						return types.Type{}, typeErrorf("Function '%s' does not accept parameters %s.", name, describeArgs(args))
					}
				}
				t := topkEntry(args)
				return types.Type{Kind: types.Array, Elem: &t}, nil
			}
			t := args[0]
			return types.Type{Kind: types.Array, Elem: &t}, nil
		},
		New: func(args []types.Type) Accumulator {
			if len(args) > 2 {
				return &topkStructAcc{sort: args[0], entry: topkEntry(args)}
			}
			return &topkAcc{t: args[0], distinct: distinct}
		},
	}
}

// topkEntry is the element type of TOPK(sort, col0, …, k): a STRUCT of
// sort_col and the other columns, named as ksqlDB names them.
func topkEntry(args []types.Type) types.Type {
	fields := []types.Field{{Name: "sort_col", Type: args[0]}}
	for i, a := range args[1 : len(args)-1] {
		fields = append(fields, types.Field{Name: "col" + strconv.Itoa(i), Type: a})
	}
	return types.Type{Kind: types.Struct, Fields: fields}
}

// topkStructAcc is TOPK(sort, col0, …, k): the k rows with the greatest
// sort values, greatest first (ties in arrival order), each a STRUCT of
// sort_col and the other columns. State: the entries, encoded.
type topkStructAcc struct {
	sort, entry types.Type
	less        topkAcc
	vals        []types.Datum
	out         []types.Datum
}

func (k *topkStructAcc) read(st []byte) {
	k.vals = k.vals[:0]
	for b := st; len(b) > 0; {
		var d types.Datum
		if d, b = readValue(b, k.entry); b == nil {
			return
		}
		k.vals = append(k.vals, d)
	}
}

func (k *topkStructAcc) Add(dst, st []byte, args []types.Datum) []byte {
	kd := args[len(args)-1]
	n := int(min(kd.I, CollectLimit))
	if args[0].Null || kd.Null || n <= 0 {
		return append(dst, st...)
	}
	k.less.t = k.sort
	k.read(st)
	// After the entries whose sort value is greater or equal.
	i := sort.Search(len(k.vals), func(i int) bool { return k.less.less(k.vals[i].L[0], args[0]) })
	entry := types.Datum{L: append([]types.Datum{}, args[:len(args)-1]...)}
	k.vals = append(k.vals, types.Datum{})
	copy(k.vals[i+1:], k.vals[i:])
	k.vals[i] = entry
	if len(k.vals) > n {
		k.vals = k.vals[:n]
	}
	for _, d := range k.vals {
		dst = appendValue(dst, d, k.entry)
	}
	return dst
}

func (k *topkStructAcc) Result(st []byte) types.Datum {
	k.read(st)
	k.out = append(k.out[:0], k.vals...)
	return types.Datum{L: k.out}
}

// topkAcc: state is up to k values, greatest first.
type topkAcc struct {
	t        types.Type
	distinct bool
	vals     []types.Datum
	out      []types.Datum
}

func (k *topkAcc) less(a, b types.Datum) bool {
	switch k.t.Kind {
	case types.Double:
		return a.F < b.F
	case types.String, types.Bytes:
		return bytes.Compare(a.B, b.B) < 0
	}
	return a.I < b.I
}

func (k *topkAcc) read(st []byte) {
	k.vals = k.vals[:0]
	for b := st; len(b) > 0; {
		var d types.Datum
		d, b = readValue(b, k.t)
		if d.Null {
			break
		}
		k.vals = append(k.vals, d)
	}
}

func (k *topkAcc) Add(dst, st []byte, args []types.Datum) []byte {
	n := int(args[1].I)
	if args[0].Null || args[1].Null || n <= 0 {
		return append(dst, st...)
	}
	k.read(st)
	v := args[0]
	i := sort.Search(len(k.vals), func(i int) bool { return k.less(k.vals[i], v) || !k.less(v, k.vals[i]) })
	if k.distinct && i < len(k.vals) && !k.less(k.vals[i], v) && !k.less(v, k.vals[i]) {
		return append(dst, st...)
	}
	k.vals = append(k.vals, types.Datum{})
	copy(k.vals[i+1:], k.vals[i:])
	k.vals[i] = v
	if len(k.vals) > min(n, CollectLimit) {
		k.vals = k.vals[:min(n, CollectLimit)]
	}
	for _, d := range k.vals {
		dst = appendValue(dst, d, k.t)
	}
	return dst
}

func (k *topkAcc) Result(st []byte) types.Datum {
	k.read(st)
	k.out = append(k.out[:0], k.vals...)
	return types.Datum{L: k.out}
}

// histogramAcc: state is (uvarint length, string, 8-byte count) entries
// sorted by string.
type histogramAcc struct {
	out []types.Datum
}

func (h *histogramAcc) Add(dst, st []byte, args []types.Datum) []byte {
	if args[0].Null {
		return append(dst, st...)
	}
	v := args[0].B
	done := false
	for b := st; len(b) > 0; {
		s, rest := readValue(b, types.StringType)
		if len(rest) < 8 {
			break
		}
		c := binary.BigEndian.Uint64(rest)
		if !done && bytes.Compare(v, s.B) < 0 {
			dst = appendValue(dst, args[0], types.StringType)
			dst = binary.BigEndian.AppendUint64(dst, 1)
			done = true
		}
		if !done && bytes.Equal(v, s.B) {
			c++
			done = true
		}
		dst = appendValue(dst, s, types.StringType)
		dst = binary.BigEndian.AppendUint64(dst, c)
		b = rest[8:]
	}
	if !done {
		dst = appendValue(dst, args[0], types.StringType)
		dst = binary.BigEndian.AppendUint64(dst, 1)
	}
	return dst
}

var (
	_ Undoer = (*histogramAcc)(nil)
	_ Merger = (*histogramAcc)(nil)
)

// Undo takes one occurrence of a value out: its count drops, and the
// value goes when it reaches 0.
func (h *histogramAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	if args[0].Null {
		return append(dst, st...)
	}
	for b := st; len(b) > 0; {
		s, rest := readValue(b, types.StringType)
		if len(rest) < 8 {
			break
		}
		c := binary.BigEndian.Uint64(rest)
		if bytes.Equal(s.B, args[0].B) {
			c--
		}
		if c > 0 {
			dst = appendValue(dst, s, types.StringType)
			dst = binary.BigEndian.AppendUint64(dst, c)
		}
		b = rest[8:]
	}
	return dst
}

// Merge adds two histograms' counts: both are sorted by value.
func (h *histogramAcc) Merge(dst, a, b []byte) []byte {
	next := func(st []byte) (types.Datum, uint64, []byte, bool) {
		s, rest := readValue(st, types.StringType)
		if len(st) == 0 || len(rest) < 8 {
			return s, 0, nil, false
		}
		return s, binary.BigEndian.Uint64(rest), rest[8:], true
	}
	put := func(s types.Datum, c uint64) {
		dst = appendValue(dst, s, types.StringType)
		dst = binary.BigEndian.AppendUint64(dst, c)
	}
	sa, ca, ra, oka := next(a)
	sb, cb, rb, okb := next(b)
	for oka || okb {
		switch cmp := bytes.Compare(sa.B, sb.B); {
		case oka && (!okb || cmp < 0):
			put(sa, ca)
			sa, ca, ra, oka = next(ra)
		case okb && (!oka || cmp > 0):
			put(sb, cb)
			sb, cb, rb, okb = next(rb)
		default:
			put(sa, ca+cb)
			sa, ca, ra, oka = next(ra)
			sb, cb, rb, okb = next(rb)
		}
	}
	return dst
}

func (h *histogramAcc) Result(st []byte) types.Datum {
	h.out = h.out[:0]
	for b := st; len(b) > 0; {
		s, rest := readValue(b, types.StringType)
		if len(rest) < 8 {
			break
		}
		h.out = append(h.out, s, types.IntDatum(int64(binary.BigEndian.Uint64(rest))))
		b = rest[8:]
	}
	return types.Datum{L: h.out}
}

// momentsAcc keeps count and sums for STDDEV_SAMP (one argument: n, mean,
// m2, by Welford's method) and CORRELATION (two: n, sx, sy, sxx, syy,
// sxy), as float64s.
type momentsAcc struct {
	ts []types.Type
	f  [6]float64
}

func (m *momentsAcc) num(d types.Datum, t types.Type) float64 {
	switch t.Kind {
	case types.Double:
		return d.F
	case types.Decimal:
		return float64(d.I) / pow10f[t.Scale]
	}
	return float64(d.I)
}

func (m *momentsAcc) load(st []byte) {
	m.f = [6]float64{}
	for i := 0; i < 6 && len(st) >= 8*(i+1); i++ {
		m.f[i] = math.Float64frombits(binary.BigEndian.Uint64(st[8*i:]))
	}
}

func (m *momentsAcc) Add(dst, st []byte, args []types.Datum) []byte {
	for _, a := range args {
		if a.Null {
			return append(dst, st...)
		}
	}
	m.load(st)
	f := &m.f
	if len(args) == 1 {
		x := m.num(args[0], m.ts[0])
		f[0]++
		delta := x - f[1]
		f[1] += delta / f[0]
		f[2] += delta * (x - f[1])
	} else {
		x, y := m.num(args[0], m.ts[0]), m.num(args[1], m.ts[1])
		f[0]++
		f[1] += x
		f[2] += y
		f[3] += x * x
		f[4] += y * y
		f[5] += x * y
	}
	for _, v := range f {
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}

func (m *momentsAcc) Result(st []byte) types.Datum {
	m.load(st)
	f := m.f
	if len(m.ts) == 1 {
		switch {
		case f[0] < 1:
			return types.NullDatum
		case f[0] < 2:
			return types.DoubleDatum(0) // one value: ksqlDB answers 0.0
		}
		return types.DoubleDatum(math.Sqrt(f[2] / (f[0] - 1)))
	}
	n := f[0]
	cov := f[5] - f[1]*f[2]/n
	vx, vy := f[3]-f[1]*f[1]/n, f[4]-f[2]*f[2]/n
	if n < 2 || vx <= 0 || vy <= 0 {
		return types.NullDatum
	}
	return types.DoubleDatum(cov / math.Sqrt(vx*vy))
}

// attrAcc is ATTR: state is the distinct values seen (NULL included), each
// as 0 (NULL) or 1 and the value, then an 8-byte count of the rows that
// hold it; the result is the value when there is one, else NULL.
type attrAcc struct {
	t   types.Type
	enc []byte
	// limit, when above 0, caps the distinct values kept: a new one is
	// left out when the state holds limit (countedAcc).
	limit int
}

var (
	_ Undoer = (*attrAcc)(nil)
	_ Merger = (*attrAcc)(nil)
)

func (a *attrAcc) encode(d types.Datum) []byte {
	if d.Null {
		return append(a.enc[:0], 0)
	}
	a.enc = appendValue(append(a.enc[:0], 1), d, a.t)
	return a.enc
}

// entry reads one entry: its encoded value, its count and the rest.
func (a *attrAcc) entry(b []byte) (v []byte, n uint64, rest []byte, ok bool) {
	if len(b) == 0 {
		return nil, 0, nil, false
	}
	end := 1
	if b[0] == 1 {
		_, r := readValue(b[1:], a.t)
		if r == nil {
			return nil, 0, nil, false
		}
		end = len(b) - len(r)
	}
	if len(b) < end+8 {
		return nil, 0, nil, false
	}
	return b[:end], binary.BigEndian.Uint64(b[end:]), b[end+8:], true
}

// adjust adds delta to the count of the encoded value v; a value whose
// count reaches 0 goes.
func (a *attrAcc) adjust(dst, st, v []byte, delta int64) []byte {
	found, held := false, 0
	for b := st; ; {
		e, n, rest, ok := a.entry(b)
		if !ok {
			break
		}
		held++
		if bytes.Equal(e, v) {
			found = true
			n = uint64(int64(n) + delta)
		}
		if int64(n) > 0 {
			dst = binary.BigEndian.AppendUint64(append(dst, e...), n)
		}
		b = rest
	}
	if !found && delta > 0 && (a.limit <= 0 || held < a.limit) {
		dst = binary.BigEndian.AppendUint64(append(dst, v...), uint64(delta))
	}
	return dst
}

func (a *attrAcc) Add(dst, st []byte, args []types.Datum) []byte {
	return a.adjust(dst, st, a.encode(args[0]), 1)
}

func (a *attrAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	return a.adjust(dst, st, a.encode(args[0]), -1)
}

func (a *attrAcc) Merge(dst, x, y []byte) []byte {
	out := append([]byte{}, x...)
	for b := y; ; {
		e, n, rest, ok := a.entry(b)
		if !ok {
			break
		}
		out = a.adjust(nil, out, append([]byte{}, e...), int64(n))
		b = rest
	}
	return append(dst, out...)
}

func (a *attrAcc) Result(st []byte) types.Datum {
	e, _, rest, ok := a.entry(st)
	if !ok || len(rest) > 0 || e[0] == 0 {
		return types.NullDatum
	}
	d, _ := readValue(e[1:], a.t)
	return d
}

// countedAcc is COUNT_DISTINCT and COLLECT_SET over a table
// (AggregateFunction.NewRetracting): the distinct values in the order
// first seen, each with the number of the group's rows that hold it, in
// ATTR's state layout, so that taking a row back out forgets its value
// only when no other row of the group holds it. COUNT_DISTINCT (count)
// leaves NULL out and counts the values; COLLECT_SET keeps NULL as a
// value, as its stream form does, and at most limit values: one left out
// at the limit does not come back when others go.
type countedAcc struct {
	attrAcc
	count bool
	out   []types.Datum
}

var (
	_ Undoer = (*countedAcc)(nil)
	_ Merger = (*countedAcc)(nil)
)

func (c *countedAcc) Add(dst, st []byte, args []types.Datum) []byte {
	if c.count && args[0].Null {
		return append(dst, st...)
	}
	return c.adjust(dst, st, c.encode(args[0]), 1)
}

func (c *countedAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	if c.count && args[0].Null {
		return append(dst, st...)
	}
	return c.adjust(dst, st, c.encode(args[0]), -1)
}

func (c *countedAcc) Result(st []byte) types.Datum {
	n := int64(0)
	c.out = c.out[:0]
	for b := st; ; {
		e, _, rest, ok := c.entry(b)
		if !ok {
			break
		}
		n++
		if !c.count {
			d := types.NullDatum
			if e[0] == 1 {
				d, _ = readValue(e[1:], c.t)
			}
			c.out = append(c.out, d)
		}
		b = rest
	}
	if c.count {
		return types.IntDatum(n)
	}
	return types.Datum{L: c.out}
}
