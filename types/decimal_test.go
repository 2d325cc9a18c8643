package types

import (
	"bytes"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
)

// javaToByteArray is Java's BigInteger.toByteArray, written with
// math/big independently of the code under test.
func javaToByteArray(v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	n := (new(big.Int).Sub(new(big.Int).Neg(v), big.NewInt(1)).BitLen())/8 + 1
	m := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(8*n)), v)
	return m.FillBytes(make([]byte, n))
}

// TestWideDecimalBytesAreJavas: the wide form's bytes are the shortest
// two's complement, as Java's BigInteger writes them, and read back.
func TestWideDecimalBytesAreJavas(t *testing.T) {
	typ := decType(38, 0)
	r := rand.New(rand.NewSource(1))
	vals := []string{"0", "1", "-1", "127", "128", "-128", "-129", "255", "256", "-256", "-257",
		"99999999999999999999999999999999999999", "-99999999999999999999999999999999999999",
		"9223372036854775808", "-9223372036854775809"}
	for range 300 {
		v := new(big.Int).Rand(r, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(1+r.Intn(38))), nil))
		if r.Intn(2) == 0 {
			v.Neg(v)
		}
		vals = append(vals, v.String())
	}
	for _, s := range vals {
		d, _, err := ParseDecimalDatum([]byte(s), typ, nil)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		v, _ := new(big.Int).SetString(s, 10)
		if want := javaToByteArray(v); !bytes.Equal(d.B, want) {
			t.Errorf("%s: bytes %x, Java's %x", s, d.B, want)
		}
		if got := Text(d, typ); got != s {
			t.Errorf("%s reads back as %s", s, got)
		}
		if got := AppendUnscaled(nil, d, typ); !bytes.Equal(got, d.B) {
			t.Errorf("%s: unscaled %x", s, got)
		}
	}
	// The short form's unscaled bytes are Java's too.
	for _, v := range []int64{0, 1, -1, 128, -129, 1 << 62, -(1 << 63)} {
		if got, want := AppendUnscaled(nil, IntDatum(v), decType(18, 2)), javaToByteArray(big.NewInt(v)); !bytes.Equal(got, want) {
			t.Errorf("%d: %x, want %x", v, got, want)
		}
	}
}

func TestWideDecimalParseRoundsAndOverflows(t *testing.T) {
	typ := decType(21, 19)
	for in, want := range map[string]string{
		"10.1234512345123451234":   "10.1234512345123451234",
		"1":                        "1.0000000000000000000",
		".5":                       "0.5000000000000000000",
		"-0.00000000000000000005":  "-0.0000000000000000001", // HALF_UP: away from zero
		"0.00000000000000000004":   "0.0000000000000000000",
		"-0.00000000000000000004":  "0.0000000000000000000", // no negative zero
		"1.5e1":                    "15.0000000000000000000",
		"99.99999999999999999994":  "99.9999999999999999999",
		"-99.99999999999999999994": "-99.9999999999999999999",
		"1e-99999":                 "0.0000000000000000000", // at once, not after writing its digits
		"-5e-20":                   "-0.0000000000000000001",
		"4.9e-20":                  "0.0000000000000000000",
	} {
		d, _, err := ParseDecimalDatum([]byte(in), typ, nil)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := Text(d, typ); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"100", "99.99999999999999999995", "-100.5", "abc", "", "NaN", "Infinity", "1e", "1e999999999", "1e99999"} {
		if d, _, err := ParseDecimalDatum([]byte(in), typ, nil); err == nil {
			t.Errorf("%q accepted as %s", in, Text(d, typ))
		}
	}
	if _, _, err := ParseDecimalDatum([]byte("100"), typ, nil); err == nil || !strings.Contains(err.Error(), "numeric field overflow") {
		t.Errorf("overflow: %v", err)
	}
	// Into a short type the value lands in I.
	d, _, err := ParseDecimalDatum([]byte("-12.345"), decType(5, 2), nil)
	if err != nil || d.I != -1235 || d.B != nil {
		t.Errorf("short: %+v %v", d, err)
	}
}

func TestDecimalDatumFromApd(t *testing.T) {
	var x apd.Decimal
	x.SetString("123456789012345678901234567890.125")
	d, buf, ok := DecimalDatum(&x, decType(32, 2), []byte("prefix"))
	if !ok || Text(d, decType(32, 2)) != "123456789012345678901234567890.13" || string(buf[:6]) != "prefix" {
		t.Errorf("got %s %v", Text(d, decType(32, 2)), ok)
	}
	if _, _, ok := DecimalDatum(&x, decType(31, 2), nil); ok {
		t.Error("31 digits held 32")
	}
	var z apd.Decimal
	if got := Text(Datum{B: AppendUnscaled(nil, IntDatum(-5), decType(2, 1))}, decType(20, 1)); got != "-0.5" {
		t.Errorf("short to wide bytes: %s", got)
	}
	if DecimalValue(&z, IntDatum(-1234), decType(6, 2)).String() != "-12.34" {
		t.Errorf("DecimalValue of a short datum: %s", z.String())
	}
}

// FuzzWideDecimal: any text that parses into a wide DECIMAL reads back
// from its text and from its unscaled bytes to the same canonical bytes;
// arbitrary unscaled bytes never panic.
func FuzzWideDecimal(f *testing.F) {
	for _, s := range []string{"0", "-1", "10.1234512345123451234", "1e18", "-99999999999999999999.9999999999", "0.00000000005", "x", ""} {
		f.Add(s, []byte{0x80, 0, 0})
	}
	typ := decType(30, 10)
	f.Fuzz(func(t *testing.T, s string, raw []byte) {
		if d, _, ok := WideDecimalFromUnscaled(raw, 12, typ, nil); ok {
			if again, _, err := ParseDecimalDatum([]byte(Text(d, typ)), typ, nil); err != nil || !bytes.Equal(again.B, d.B) {
				t.Fatalf("%x: %s reads back as %x, %v", raw, Text(d, typ), again.B, err)
			}
		}
		d, _, err := ParseDecimalDatum([]byte(s), typ, nil)
		if err != nil {
			return
		}
		text := Text(d, typ)
		again, _, err := ParseDecimalDatum([]byte(text), typ, nil)
		if err != nil || !bytes.Equal(again.B, d.B) {
			t.Fatalf("%q → %s → %x, %v (first %x)", s, text, again.B, err, d.B)
		}
		back, _, ok := WideDecimalFromUnscaled(AppendUnscaled(nil, d, typ), typ.Scale, typ, nil)
		if !ok || !bytes.Equal(back.B, d.B) {
			t.Fatalf("%q: unscaled bytes read back as %x", s, back.B)
		}
	})
}
