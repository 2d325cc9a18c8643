package pgwire

import (
	"bytes"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sqlstreams/sqlstreams/types"
)

func TestAppendNumeric(t *testing.T) {
	m := pgtype.NewMap()
	for _, s := range []string{
		"0", "-0", "0.000", "1", "-1", "12345.678", "-0.5", "0.00001", "100000000", "9999", "10000",
		"007.50", "123456789012345678901234567890.123456789", "1.5e3", "1.5E-7", "-2e+10", ".5", "5.",
	} {
		b, err := appendNumeric(nil, []byte(s))
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		var n pgtype.Numeric
		if err := m.Scan(pgtype.NumericOID, pgtype.BinaryFormatCode, b, &n); err != nil {
			t.Errorf("%s: pgx cannot decode %x: %v", s, b, err)
			continue
		}
		want, _ := new(big.Rat).SetString(s)
		if got := numericRat(t, n); got.Cmp(want) != 0 {
			t.Errorf("%s: decoded %s", s, got.FloatString(12))
		}
		// dscale is the number of fraction digits written.
		wantScale := 0
		if i := strings.IndexByte(s, '.'); i >= 0 && !strings.ContainsAny(s, "eE") {
			wantScale = len(s) - i - 1
		}
		if !strings.ContainsAny(s, "eE") {
			if got := int(int16(uint16(b[6])<<8 | uint16(b[7]))); got != wantScale {
				t.Errorf("%s: dscale %d, want %d", s, got, wantScale)
			}
		}
	}
	for s, sign := range map[string]uint16{"NaN": numericNaN, "Infinity": numericPosInf, "-Infinity": numericNegInf} {
		b, err := appendNumeric(nil, []byte(s))
		if err != nil || len(b) != 8 || uint16(b[4])<<8|uint16(b[5]) != sign {
			t.Errorf("%s: %x %v", s, b, err)
		}
	}
	for _, s := range []string{"", "-", ".", "1.2.3", "abc", "1e", "1e99999999", "--1", "1 "} {
		if _, err := appendNumeric(nil, []byte(s)); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

func TestAppendText(t *testing.T) {
	for _, c := range []struct {
		d    types.Datum
		t    types.Type
		want string
	}{
		{types.BoolDatum(true), types.BooleanType, "t"},
		{types.BoolDatum(false), types.BooleanType, "f"},
		{types.DoubleDatum(math.Inf(1)), types.DoubleType, "Infinity"},
		{types.DoubleDatum(math.Inf(-1)), types.DoubleType, "-Infinity"},
		{types.DoubleDatum(math.NaN()), types.DoubleType, "NaN"},
		{types.DoubleDatum(1e21), types.DoubleType, "1e+21"},
		{types.IntDatum(1709212455123), types.TimestampType, "2024-02-29 13:14:15.123"},
		{types.IntDatum(-1), types.DateType, "1969-12-31"},
		{types.Datum{B: []byte{0xde, 0xad}}, types.BytesType, `\xdead`},
		{types.IntDatum(1500), dec103, "1.500"},
		{types.IntDatum(-1), dec103, "-0.001"},
		{types.Datum{L: []types.Datum{types.IntDatum(1)}}, types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "A", Type: types.IntType}}}, `{"A":1}`},
	} {
		if got := string(appendText(nil, c.d, c.t)); got != c.want {
			t.Errorf("%v %v: %q, want %q", c.t, c.d, got, c.want)
		}
	}
}

func TestAppendBinary(t *testing.T) {
	for _, c := range []struct {
		d    types.Datum
		t    types.Type
		want []byte
	}{
		{types.BoolDatum(true), types.BooleanType, []byte{1}},
		{types.IntDatum(-2), types.IntType, []byte{0xff, 0xff, 0xff, 0xfe}},
		{types.IntDatum(258), types.BigintType, []byte{0, 0, 0, 0, 0, 0, 1, 2}},
		{types.DoubleDatum(1), types.DoubleType, []byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}},
		{types.IntDatum(unixToPGDays + 1), types.DateType, []byte{0, 0, 0, 1}},
		{types.IntDatum(1), types.TimeType, []byte{0, 0, 0, 0, 0, 0, 0x03, 0xe8}},
		{types.IntDatum(unixToPGMillis), types.TimestampType, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{types.Datum{L: []types.Datum{types.IntDatum(1)}}, arrInt, []byte("[1]")},
	} {
		got, err := appendBinary(nil, c.d, c.t)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%v %v: %x %v, want %x", c.t, c.d, got, err, c.want)
		}
	}
}

// newBenchConn returns a connection whose writes go nowhere, with its
// result writer ready for SELECT TYPES rows in the given formats.
func newBenchConn(tb testing.TB, codes []int16) *conn {
	s := New(newFake(), WithLogger(testLogger()), WithFlushDelay(0))
	c := newConn(s, &memConn{r: bytes.NewReader(nil)})
	c.rw.reset(false, codes, nil, false)
	if err := c.rw.Columns(typesCols); err != nil {
		tb.Fatal(err)
	}
	return c
}

// Encoding and writing a row allocates nothing in steady state.
func TestRowAllocs(t *testing.T) {
	for _, codes := range [][]int16{nil, {1}} {
		c := newBenchConn(t, codes)
		allocs := testing.AllocsPerRun(200, func() {
			for _, r := range typesRows {
				if err := c.rw.Row(r); err != nil {
					t.Fatal(err)
				}
			}
		})
		if allocs != 0 {
			t.Errorf("formats %v: %.1f allocations per run", codes, allocs)
		}
	}
}

func BenchmarkRow(b *testing.B) {
	for _, bc := range []struct {
		name  string
		codes []int16
	}{{"text", nil}, {"binary", []int16{1}}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newBenchConn(b, bc.codes)
			row := typesRows[0]
			b.ReportAllocs()
			for b.Loop() {
				if err := c.rw.Row(row); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWideDecimalNumeric: a DECIMAL wider than 18 digits goes out as
// NUMERIC, in text and in binary, with its type's scale.
func TestWideDecimalNumeric(t *testing.T) {
	typ := types.Type{Kind: types.Decimal, Precision: 38, Scale: 10}
	d, _, err := types.ParseDecimalDatum([]byte("-1234567890123456789012345678.5"), typ, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(appendText(nil, d, typ)); got != "-1234567890123456789012345678.5000000000" {
		t.Errorf("text %s", got)
	}
	b, err := appendBinary(nil, d, typ)
	if err != nil {
		t.Fatal(err)
	}
	var n pgtype.Numeric
	if err := pgtype.NewMap().Scan(pgtype.NumericOID, pgtype.BinaryFormatCode, b, &n); err != nil {
		t.Fatal(err)
	}
	want, _ := new(big.Rat).SetString("-1234567890123456789012345678.5")
	if got := numericRat(t, n); got.Cmp(want) != 0 || typeMod(typ) != int32(38<<16|10)+4 {
		t.Errorf("binary %s", got.FloatString(10))
	}
}
