package exec

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/sqlstreams/sqlstreams/types"
)

// topNRows encodes a Top-N's stored rows in the binary layout
// (physical.TopN.Binary): of each row, only the kept columns, as
//
//	a bitmap of the kept columns that are NULL (a byte per eight, the
//	first kept column in the low bit of the first byte), then the value
//	of each other kept column, in order:
//	BOOLEAN, INT, BIGINT, DATE, TIME,
//	TIMESTAMP, DECIMAL up to 18 digits  the value (Datum.I) as a zigzag varint
//	DOUBLE                              its IEEE 754 bits, 8 bytes little-endian
//	STRING, BYTES, wider DECIMAL        uvarint length, then the bytes (Datum.B)
//	ARRAY                               uvarint count, then each element
//	MAP                                 uvarint count of keys and values, then each
//	STRUCT                              each field, in the type's order
//
// where an element, MAP key or value, or STRUCT field is a byte, 1 for
// NULL (nothing follows) or 0, then its value as above. A column of
// unknown type is always NULL (JSON writes such a value as null too).
// Every value comes back as it was (a STRING's invalid UTF-8 too, which
// JSON would replace), so the row being added can be emitted as it is.
// A column that is not kept is NULL in the decoded rows: the nodes after
// the Top-N do not read it.
type topNRows struct {
	kept  []int // the kept columns' indexes, in order
	other []int // the others'
	types []types.Type
	width int // the row's column count
	// key encodes partition keys: values that compare equal encode
	// alike (-0 as 0, every NaN as one).
	key bool
}

func newTopNRows(cols []types.Column, kept []int) *topNRows {
	r := &topNRows{width: len(cols)}
	if kept == nil {
		kept = make([]int, len(cols))
		for i := range kept {
			kept[i] = i
		}
	}
	r.kept = kept
	for _, k := range kept {
		r.types = append(r.types, cols[k].Type)
	}
	for i := range cols {
		if !slices.Contains(kept, i) {
			r.other = append(r.other, i)
		}
	}
	return r
}

var errTopNRow = errors.New("corrupt stored row")

// encode appends row's kept columns to dst.
func (r *topNRows) encode(dst []byte, row types.Row) []byte {
	at := len(dst)
	for range (len(r.kept) + 7) / 8 {
		dst = append(dst, 0)
	}
	for i, k := range r.kept {
		d := &row[k]
		if d.Null || r.types[i].Kind == types.Unknown {
			dst[at+i/8] |= 1 << (i % 8)
			continue
		}
		dst = appendTopNValue(dst, d, &r.types[i], r.key)
	}
	return dst
}

// appendTopNValue appends the non-NULL d of type t; key: as a partition
// key's.
func appendTopNValue(dst []byte, d *types.Datum, t *types.Type, key bool) []byte {
	switch t.Kind {
	case types.Double:
		f := d.F
		if key && f == 0 {
			f = 0
		} else if key && math.IsNaN(f) {
			f = math.NaN()
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	case types.String, types.Bytes:
		dst = binary.AppendUvarint(dst, uint64(len(d.B)))
		return append(dst, d.B...)
	case types.Decimal:
		if t.IsWideDecimal() {
			dst = binary.AppendUvarint(dst, uint64(len(d.B)))
			return append(dst, d.B...)
		}
		return binary.AppendVarint(dst, d.I)
	case types.Array, types.Map, types.Struct:
		if t.Kind != types.Struct {
			dst = binary.AppendUvarint(dst, uint64(len(d.L)))
		}
		for i := range d.L {
			e := &d.L[i]
			et := elemType(t, i)
			if e.Null || et.Kind == types.Unknown {
				dst = append(dst, 1)
				continue
			}
			dst = appendTopNValue(append(dst, 0), e, et, key)
		}
		return dst
	}
	// BOOLEAN, integers, DATE, TIME, TIMESTAMP
	return binary.AppendVarint(dst, d.I)
}

// elemType is the type of the ith datum of a composite of type t.
func elemType(t *types.Type, i int) *types.Type {
	switch t.Kind {
	case types.Array:
		return t.Elem
	case types.Map:
		if i%2 == 0 {
			return t.KeyType
		}
		return t.Elem
	}
	if i < len(t.Fields) {
		return &t.Fields[i].Type
	}
	return &types.UnknownType
}

// decode sets row (of r.width columns) from b, the encoding of a row:
// the columns not kept are NULL. Strings and bytes alias b.
func (r *topNRows) decode(b []byte, row types.Row) error {
	nb := (len(r.kept) + 7) / 8
	if len(b) < nb || len(row) < r.width {
		return errTopNRow
	}
	nulls, b := b[:nb], b[nb:]
	for _, i := range r.other {
		row[i] = types.NullDatum
	}
	for i, k := range r.kept {
		if nulls[i/8]&(1<<(i%8)) != 0 {
			row[k] = types.NullDatum
			continue
		}
		var err error
		if row[k], b, err = topNValue(b, &r.types[i]); err != nil {
			return err
		}
	}
	if len(b) != 0 {
		return errTopNRow
	}
	return nil
}

// topNValue reads a non-NULL value of type t off b.
func topNValue(b []byte, t *types.Type) (types.Datum, []byte, error) {
	switch t.Kind {
	case types.Double:
		if len(b) < 8 {
			return types.Datum{}, nil, errTopNRow
		}
		return types.Datum{F: math.Float64frombits(binary.LittleEndian.Uint64(b))}, b[8:], nil
	case types.String, types.Bytes:
		return topNBytes(b)
	case types.Decimal:
		if t.IsWideDecimal() {
			return topNBytes(b)
		}
	case types.Array, types.Map, types.Struct:
		n := uint64(len(t.Fields))
		if t.Kind != types.Struct {
			var w int
			if n, w = binary.Uvarint(b); w <= 0 || n > uint64(len(b)) {
				return types.Datum{}, nil, errTopNRow
			}
			b = b[w:]
		}
		l := make([]types.Datum, n)
		for i := range l {
			if len(b) == 0 {
				return types.Datum{}, nil, errTopNRow
			}
			null := b[0]
			b = b[1:]
			if null != 0 {
				l[i] = types.NullDatum
				continue
			}
			var err error
			if l[i], b, err = topNValue(b, elemType(t, i)); err != nil {
				return types.Datum{}, nil, err
			}
		}
		return types.Datum{L: l}, b, nil
	}
	v, w := binary.Varint(b)
	if w <= 0 {
		return types.Datum{}, nil, errTopNRow
	}
	return types.Datum{I: v}, b[w:], nil
}

func topNBytes(b []byte) (types.Datum, []byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return types.Datum{}, nil, errTopNRow
	}
	end := w + int(n)
	return types.Datum{B: b[w:end:end]}, b[end:], nil
}
