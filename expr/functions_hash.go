package expr

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"math"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/types"
)

// Hashing and encoding functions. ksqlDB has MD5 and no other hash
// function. Encodings are hex, utf8, ascii and base64 (any case); text
// that does not decode in its encoding gives NULL.

var hashFunctions = []*Function{
	{
		Name:        "MD5",
		Description: "Returns the hex-encoded MD5 hash of a string's UTF-8 bytes.",
		Signatures:  []string{"MD5(STRING) -> STRING"},
		Check:       exactly("MD5", types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			var buf [32]byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				sum := md5.Sum(a[0].B)
				hex.Encode(buf[:], sum[:])
				return types.Datum{B: buf[:]}, nil
			})
		},
	},
	{
		Name:        "ENCODE",
		Description: "Re-encodes a string from one encoding to another (hex, utf8, ascii, base64).",
		Signatures:  []string{"ENCODE(STRING, STRING inputEncoding, STRING outputEncoding) -> STRING"},
		Check:       exactly("ENCODE", types.StringType, types.StringType, types.StringType, types.StringType),
		// An unknown encoding gives NULL, as ksqlDB's ENCODE does (its
		// failure on every row nulls the result), rather than refusing the
		// statement.
		New: func([]types.Type) Impl {
			var raw, out, pad []byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				in, ok1 := encodingOf(a[1].B)
				to, ok2 := encodingOf(a[2].B)
				if !ok1 || !ok2 {
					return types.NullDatum, nil
				}
				text := a[0].B
				if in == encHex {
					// ksqlDB's ENCODE strips 0x or X'…' and then
					// takes only an even count of digits (after 0x an
					// odd count reads as if led by 0).
					switch {
					case len(text) >= 2 && text[0] == '0' && text[1] == 'x':
						text = text[2:]
						if len(text)%2 == 1 {
							pad = append(append(pad[:0], '0'), text...)
							text = pad
						}
					case len(text) >= 3 && (text[0] == 'x' || text[0] == 'X') && text[1] == '\'' && text[len(text)-1] == '\'':
						text = text[2 : len(text)-1]
					}
					if len(text)%2 == 1 {
						return null()
					}
				}
				var ok bool
				if raw, ok = decodeText(raw[:0], text, in); !ok {
					return null()
				}
				out = encodeText(out[:0], raw, to)
				return types.Datum{B: out}, nil
			})
		},
	},
	{
		Name:        "TO_BYTES",
		Description: "Converts a string in an encoding (hex, utf8, ascii, base64) to BYTES.",
		Signatures:  []string{"TO_BYTES(STRING, STRING encoding) -> BYTES"},
		Check:       exactly("TO_BYTES", types.BytesType, types.StringType, types.StringType),
		validate:    validateEncoding("TO_BYTES", 1),
		New: func([]types.Type) Impl {
			var raw []byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				enc, ok := encodingOf(a[1].B)
				if !ok {
					return types.NullDatum, funcErrorf("TO_BYTES", "unsupported encoding '%s'", a[1].B)
				}
				if raw, ok = decodeText(raw[:0], a[0].B, enc); !ok {
					return null()
				}
				return types.Datum{B: raw}, nil
			})
		},
	},
	{
		Name:        "FROM_BYTES",
		Description: "Converts BYTES to a string in an encoding (hex, utf8, ascii, base64).",
		Signatures:  []string{"FROM_BYTES(BYTES, STRING encoding) -> STRING"},
		Check:       exactly("FROM_BYTES", types.StringType, types.BytesType, types.StringType),
		validate:    validateEncoding("FROM_BYTES", 1),
		New: func([]types.Type) Impl {
			var out []byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				enc, ok := encodingOf(a[1].B)
				if !ok {
					return types.NullDatum, funcErrorf("FROM_BYTES", "unsupported encoding '%s'", a[1].B)
				}
				out = encodeText(out[:0], a[0].B, enc)
				if enc == encHex {
					// ksqlDB's FROM_BYTES writes hex digits upper-case
					// (ENCODE writes them lower-case).
					for i, c := range out {
						if c >= 'a' && c <= 'f' {
							out[i] = c - 'a' + 'A'
						}
					}
				}
				return types.Datum{B: out}, nil
			})
		},
	},
	fromBytes("INT_FROM_BYTES", "Reads a 4-byte BYTES value as an INTEGER in a byte order (BIG_ENDIAN by default); NULL for another length.", types.IntType, 4),
	fromBytes("BIGINT_FROM_BYTES", "Reads an 8-byte BYTES value as a BIGINT in a byte order (BIG_ENDIAN by default); NULL for another length.", types.BigintType, 8),
	fromBytes("DOUBLE_FROM_BYTES", "Reads an 8-byte BYTES value as a DOUBLE in a byte order (BIG_ENDIAN by default); NULL for another length.", types.DoubleType, 8),
}

type encoding uint8

const (
	encHex encoding = iota
	encUTF8
	encASCII
	encBase64
)

func encodingOf(b []byte) (encoding, bool) {
	switch {
	case bytes.EqualFold(b, []byte("hex")):
		return encHex, true
	case bytes.EqualFold(b, []byte("utf8")), bytes.EqualFold(b, []byte("utf-8")):
		return encUTF8, true
	case bytes.EqualFold(b, []byte("ascii")):
		return encASCII, true
	case bytes.EqualFold(b, []byte("base64")):
		return encBase64, true
	}
	return 0, false
}

func validateEncoding(name string, i int) func([]Expr) error {
	return validateConst(i, func(b []byte) error {
		if _, ok := encodingOf(b); !ok {
			return typeErrorf("function %s: unsupported encoding '%s' (use hex, utf8, ascii or base64)", name, b)
		}
		return nil
	})
}

// decodeText turns text in encoding e into bytes.
func decodeText(dst, s []byte, e encoding) ([]byte, bool) {
	switch e {
	case encHex:
		if len(s)%2 == 1 {
			s = append([]byte{'0'}, s...) // an odd digit count reads as if led by 0
		}
		n := len(s) / 2
		start := len(dst)
		dst = append(dst, make([]byte, n)...)
		if _, err := hex.Decode(dst[start:], s); err != nil {
			return nil, false
		}
		return dst, true
	case encBase64:
		out, err := base64.StdEncoding.AppendDecode(dst, s)
		return out, err == nil
	case encASCII:
		// Java's getBytes(US_ASCII): one '?' for each character that is
		// not ASCII.
		for i := 0; i < len(s); {
			if s[i] < utf8.RuneSelf {
				dst = append(dst, s[i])
				i++
				continue
			}
			_, n := utf8.DecodeRune(s[i:])
			dst = append(dst, '?')
			i += n
		}
		return dst, true
	}
	return append(dst, s...), true
}

// encodeText turns bytes into text in encoding e.
func encodeText(dst, b []byte, e encoding) []byte {
	switch e {
	case encHex:
		return hex.AppendEncode(dst, b)
	case encBase64:
		return base64.StdEncoding.AppendEncode(dst, b)
	case encASCII:
		for _, c := range b {
			if c >= utf8.RuneSelf {
				dst = utf8.AppendRune(dst, utf8.RuneError)
				continue
			}
			dst = append(dst, c)
		}
		return dst
	}
	return append(dst, bytes.ToValidUTF8(b, []byte("\uFFFD"))...)
}

func fromBytes(name, desc string, t types.Type, size int) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(BYTES) -> " + t.String(), name + "(BYTES, STRING byteOrder) -> " + t.String()},
		Check:       overloads(name, ov{in: ps(pBytes, pString), opt: 1, out: ret(t)}),
		New: func([]types.Type) Impl {
			return strict(func(a []types.Datum) (types.Datum, error) {
				b := a[0].B
				if len(b) != size {
					return null()
				}
				var order binary.ByteOrder = binary.BigEndian
				if len(a) > 1 {
					switch {
					case bytes.EqualFold(a[1].B, []byte("BIG_ENDIAN")):
					case bytes.EqualFold(a[1].B, []byte("LITTLE_ENDIAN")):
						order = binary.LittleEndian
					default:
						return null()
					}
				}
				switch t.Kind {
				case types.Int:
					return types.IntDatum(int64(int32(order.Uint32(b)))), nil
				case types.Bigint:
					return types.IntDatum(int64(order.Uint64(b))), nil
				}
				return types.DoubleDatum(math.Float64frombits(order.Uint64(b))), nil
			})
		},
	}
}
