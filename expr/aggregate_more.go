package expr

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"

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
			Description: "Counts the distinct non-NULL values (exactly, up to 1,000,000 per group).",
			Signatures:  []string{"COUNT_DISTINCT(T) -> BIGINT for scalar T"},
			Check: func(args []types.Type) (types.Type, error) {
				if len(args) != 1 || !scalarState(args[0]) {
					return types.Type{}, typeErrorf("function COUNT_DISTINCT does not accept %s", describeArgs(args))
				}
				return types.BigintType, nil
			},
			New: func(args []types.Type) Accumulator { return &setAcc{t: args[0], limit: 1_000_000, count: true} },
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
		{
			Name:        "STDDEV_SAMP",
			Description: "The sample standard deviation of the non-NULL values.",
			Signatures:  []string{"STDDEV_SAMP(INTEGER | BIGINT | DOUBLE | DECIMAL) -> DOUBLE"},
			Check: func(args []types.Type) (types.Type, error) {
				if len(args) != 1 || !args[0].IsNumeric() {
					return types.Type{}, typeErrorf("function STDDEV_SAMP does not accept %s", describeArgs(args))
				}
				return types.DoubleType, nil
			},
			New: func(args []types.Type) Accumulator { return &momentsAcc{ts: args} },
		},
		{
			Name:        "CORRELATION",
			Description: "The Pearson correlation of the pairs where both values are non-NULL.",
			Signatures:  []string{"CORRELATION(numeric, numeric) -> DOUBLE"},
			Check: func(args []types.Type) (types.Type, error) {
				if len(args) != 2 || !args[0].IsNumeric() || !args[1].IsNumeric() {
					return types.Type{}, typeErrorf("function CORRELATION does not accept %s", describeArgs(args))
				}
				return types.DoubleType, nil
			},
			New: func(args []types.Type) Accumulator { return &momentsAcc{ts: args} },
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

func appendValue(dst []byte, d types.Datum, t types.Type) []byte {
	switch t.Kind {
	case types.String, types.Bytes:
		dst = binary.AppendUvarint(dst, uint64(len(d.B)))
		return append(dst, d.B...)
	case types.Double:
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(d.F))
	}
	return binary.BigEndian.AppendUint64(dst, uint64(d.I))
}

// readValue decodes one value at the start of b and returns the rest.
func readValue(b []byte, t types.Type) (types.Datum, []byte) {
	switch t.Kind {
	case types.String, types.Bytes:
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
	return &AggregateFunction{
		Name:        name,
		Description: "The value of the " + map[bool]string{true: "latest", false: "earliest"}[latest] + " record by offset, ignoring NULLs.",
		Signatures:  []string{name + "(T) -> T for scalar T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || !scalarState(args[0]) {
				return types.Type{}, typeErrorf("function %s does not accept %s", name, describeArgs(args))
			}
			return args[0], nil
		},
		New: func(args []types.Type) Accumulator { return &offsetAcc{t: args[0], latest: latest} },
	}
}

// offsetAcc: state is the kept value, or empty.
type offsetAcc struct {
	t      types.Type
	latest bool
}

func (o *offsetAcc) Add(dst, st []byte, args []types.Datum) []byte {
	if args[0].Null || (!o.latest && len(st) > 0) {
		return append(dst, st...)
	}
	return appendValue(dst, args[0], o.t)
}

func (o *offsetAcc) Result(st []byte) types.Datum {
	if len(st) == 0 {
		return types.NullDatum
	}
	d, _ := readValue(st, o.t)
	return d
}

func collectAgg(name string, distinct bool) *AggregateFunction {
	return &AggregateFunction{
		Name:        name,
		Description: "Collects the values into an ARRAY (" + map[bool]string{true: "distinct", false: "in order"}[distinct] + ", at most 1,000).",
		Signatures:  []string{name + "(T) -> ARRAY<T> for scalar T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || !scalarState(args[0]) {
				return types.Type{}, typeErrorf("function %s does not accept %s", name, describeArgs(args))
			}
			t := args[0]
			return types.Type{Kind: types.Array, Elem: &t}, nil
		},
		New: func(args []types.Type) Accumulator {
			if distinct {
				return &setAcc{t: args[0], limit: CollectLimit}
			}
			return &listAcc{t: args[0]}
		},
	}
}

// listAcc: state is a count (uvarint) then the values in order; NULLs are
// kept as ksqlDB's COLLECT_LIST keeps them, marked by a 0 byte (values
// by a 1).
type listAcc struct {
	t   types.Type
	out []types.Datum
}

func (l *listAcc) Add(dst, st []byte, args []types.Datum) []byte {
	n, w := binary.Uvarint(st)
	if w <= 0 {
		n, w = 0, len(st)
	}
	if n >= CollectLimit {
		return append(dst, st...)
	}
	dst = binary.AppendUvarint(dst, n+1)
	dst = append(dst, st[w:]...)
	if args[0].Null {
		return append(dst, 0)
	}
	return appendValue(append(dst, 1), args[0], l.t)
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
type setAcc struct {
	t     types.Type
	limit int
	count bool
	vals  [][]byte
	enc   []byte
	out   []types.Datum
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
		Signatures:  []string{name + "(T, INTEGER k) -> ARRAY<T> for numeric or STRING T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 2 || !args[1].IsIntegral() {
				return types.Type{}, typeErrorf("function %s does not accept %s", name, describeArgs(args))
			}
			switch args[0].Kind {
			case types.Int, types.Bigint, types.Double, types.Decimal, types.String:
			default:
				return types.Type{}, typeErrorf("function %s does not accept %s", name, describeArgs(args))
			}
			t := args[0]
			return types.Type{Kind: types.Array, Elem: &t}, nil
		},
		New: func(args []types.Type) Accumulator { return &topkAcc{t: args[0], distinct: distinct} },
	}
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
	case types.String:
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
		if f[0] < 2 {
			return types.NullDatum
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
