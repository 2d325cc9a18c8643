package expr

import (
	"bytes"
	"crypto/rand"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/types"
)

// String functions. Positions and lengths count characters (Unicode code
// points), 1-based, as ksqlDB's do. Results that are a part of an input
// (SUBSTRING, TRIM, SPLIT elements) alias the input instead of copying.

var stringFunctions = []*Function{
	caseMapper("UCASE", "Converts a string to upper case.", true),
	caseMapper("LCASE", "Converts a string to lower case.", false),
	{
		Name:        "LEN",
		Description: "Returns the number of characters in a string, or of bytes in a BYTES value.",
		Signatures:  []string{"LEN(STRING) -> INTEGER", "LEN(BYTES) -> INTEGER"},
		Check:       overloads("LEN", ov{in: ps(pString), out: ret(types.IntType)}, ov{in: ps(pBytes), out: ret(types.IntType)}),
		New: func(ts []types.Type) Impl {
			if ts[0].Kind == types.Bytes {
				return strict(func(a []types.Datum) (types.Datum, error) { return types.IntDatum(int64(len(a[0].B))), nil })
			}
			return runeCount()
		},
	},
	{
		Name:        "CONCAT",
		Description: "Concatenates strings or BYTES values; NULL arguments count as empty.",
		Signatures:  []string{"CONCAT(STRING, ...) -> STRING", "CONCAT(BYTES, ...) -> BYTES"},
		Check: overloads("CONCAT",
			ov{in: ps(pString), rest: pString, out: argOr(0, types.StringType)},
			ov{in: ps(pBytes), rest: pBytes, out: ret(types.BytesType)}),
		New: func([]types.Type) Impl {
			var buf []byte
			return func(a []types.Datum) (types.Datum, error) {
				buf = buf[:0]
				for _, d := range a {
					if !d.Null {
						buf = append(buf, d.B...)
					}
				}
				return types.Datum{B: buf}, nil
			}
		},
	},
	{
		Name:        "CONCAT_WS",
		Description: "Concatenates strings or BYTES values with a separator between them, skipping NULLs; NULL when the separator is NULL.",
		Signatures:  []string{"CONCAT_WS(STRING separator, STRING, ...) -> STRING", "CONCAT_WS(BYTES separator, BYTES, ...) -> BYTES"},
		Check: overloads("CONCAT_WS",
			ov{in: ps(pString, pString), rest: pString, out: ret(types.StringType)},
			ov{in: ps(pBytes, pBytes), rest: pBytes, out: ret(types.BytesType)}),
		New: func([]types.Type) Impl {
			var buf []byte
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return null()
				}
				buf = buf[:0]
				first := true
				for _, d := range a[1:] {
					if d.Null {
						continue
					}
					if !first {
						buf = append(buf, a[0].B...)
					}
					first = false
					buf = append(buf, d.B...)
				}
				return types.Datum{B: buf}, nil
			}
		},
	},
	trimmer("TRIM", "Removes white space (characters up to U+0020) from both ends of a string.", true, true),
	trimmer("LTRIM", "Removes white space from the start of a string.", true, false),
	trimmer("RTRIM", "Removes white space from the end of a string.", false, true),
	{
		Name:        "SUBSTRING",
		Description: "Returns the part of a string or BYTES value from a 1-based position (negative counts from the end), optionally of a given length.",
		Signatures: []string{"SUBSTRING(STRING, INTEGER pos) -> STRING", "SUBSTRING(STRING, INTEGER pos, INTEGER len) -> STRING",
			"SUBSTRING(BYTES, INTEGER pos) -> BYTES", "SUBSTRING(BYTES, INTEGER pos, INTEGER len) -> BYTES"},
		Check: overloads("SUBSTRING",
			ov{in: ps(pString, pInt, pInt), opt: 1, out: argOr(0, types.StringType)},
			ov{in: ps(pBytes, pInt, pInt), opt: 1, out: ret(types.BytesType)}),
		New: func(ts []types.Type) Impl {
			isBytes := ts[0].Kind == types.Bytes
			return strict(func(a []types.Datum) (types.Datum, error) {
				s := a[0].B
				n := int64(len(s))
				if !isBytes && !isASCII(s) {
					n = int64(utf8.RuneCount(s))
				}
				pos := a[1].I
				var start int64
				if pos < 0 {
					start = max(n+pos, 0)
				} else {
					start = max(min(pos-1, n), 0)
				}
				end := n
				if len(a) > 2 {
					end = max(min(start+a[2].I, n), start)
				}
				if isBytes || n == int64(len(s)) {
					return types.Datum{B: s[start:end:end]}, nil
				}
				bs, be := runeOffset(s, start), runeOffset(s, end)
				return types.Datum{B: s[bs:be:be]}, nil
			})
		},
	},
	{
		Name:        "REPLACE",
		Description: "Replaces every occurrence of a substring with another string.",
		Signatures:  []string{"REPLACE(STRING, STRING old, STRING new) -> STRING"},
		Check:       exactly("REPLACE", types.StringType, types.StringType, types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			var buf []byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				buf = appendReplace(buf[:0], a[0].B, a[1].B, a[2].B)
				return types.Datum{B: buf}, nil
			})
		},
	},
	{
		Name:        "REGEXP_REPLACE",
		Description: "Replaces every match of a regular expression with a replacement ($1 refers to a group).",
		Signatures:  []string{"REGEXP_REPLACE(STRING, STRING regex, STRING replacement) -> STRING"},
		Check:       exactly("REGEXP_REPLACE", types.StringType, types.StringType, types.StringType, types.StringType),
		validate:    validateConst(1, checkRegexp("REGEXP_REPLACE")),
		New: func([]types.Type) Impl {
			re := regexpCache("REGEXP_REPLACE")
			repl := cache[[]byte]{compile: func(s string) ([]byte, error) { return javaReplacement(s), nil }}
			return strict(func(a []types.Datum) (types.Datum, error) {
				r, err := re.get(a[1].B)
				if err != nil {
					return types.NullDatum, err
				}
				t, _ := repl.get(a[2].B)
				if !r.matchPossible(a[0].B) {
					return types.Datum{B: a[0].B}, nil // no match: the string unchanged
				}
				return types.Datum{B: r.re.ReplaceAll(a[0].B, t)}, nil
			})
		},
	},
	{
		Name:        "REGEXP_EXTRACT",
		Description: "Returns the first match of a regular expression in a string, or the given capturing group of it; NULL when nothing matches.",
		Signatures:  []string{"REGEXP_EXTRACT(STRING regex, STRING) -> STRING", "REGEXP_EXTRACT(STRING regex, STRING, INTEGER group) -> STRING"},
		Check:       overloads("REGEXP_EXTRACT", ov{in: ps(pString, pString, pInt), opt: 1, out: ret(types.StringType)}),
		validate:    validateConst(0, checkRegexp("REGEXP_EXTRACT")),
		New: func([]types.Type) Impl {
			re := regexpCache("REGEXP_EXTRACT")
			return strict(func(a []types.Datum) (types.Datum, error) {
				r, err := re.get(a[0].B)
				if err != nil {
					return types.NullDatum, err
				}
				g := 0
				if len(a) > 2 {
					g = int(a[2].I)
				}
				m, ok := submatch(r, a[1].B, g)
				if !ok {
					return null()
				}
				return types.Datum{B: m}, nil
			})
		},
	},
	{
		Name:        "REGEXP_EXTRACT_ALL",
		Description: "Returns every match of a regular expression in a string, or the given capturing group of each.",
		Signatures:  []string{"REGEXP_EXTRACT_ALL(STRING regex, STRING) -> ARRAY<STRING>", "REGEXP_EXTRACT_ALL(STRING regex, STRING, INTEGER group) -> ARRAY<STRING>"},
		Check:       overloads("REGEXP_EXTRACT_ALL", ov{in: ps(pString, pString, pInt), opt: 1, out: ret(arrayOf(types.StringType))}),
		validate:    validateConst(0, checkRegexp("REGEXP_EXTRACT_ALL")),
		New: func([]types.Type) Impl {
			re := regexpCache("REGEXP_EXTRACT_ALL")
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				r, err := re.get(a[0].B)
				if err != nil {
					return types.NullDatum, err
				}
				g := 0
				if len(a) > 2 {
					g = int(a[2].I)
				}
				if g < 0 || g > r.NumSubexp() {
					return null()
				}
				out = out[:0]
				if !r.matchPossible(a[1].B) {
					return types.Datum{L: out}, nil
				}
				for _, m := range r.re.FindAllSubmatchIndex(a[1].B, -1) {
					if m[2*g] < 0 {
						out = append(out, types.NullDatum)
					} else {
						out = append(out, types.Datum{B: a[1].B[m[2*g]:m[2*g+1]]})
					}
				}
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "REGEXP_SPLIT_TO_ARRAY",
		Description: "Splits a string around matches of a regular expression; an empty expression splits every character.",
		Signatures:  []string{"REGEXP_SPLIT_TO_ARRAY(STRING, STRING regex) -> ARRAY<STRING>"},
		Check:       exactly("REGEXP_SPLIT_TO_ARRAY", arrayOf(types.StringType), types.StringType, types.StringType),
		validate:    validateConst(1, checkRegexp("REGEXP_SPLIT_TO_ARRAY")),
		New: func([]types.Type) Impl {
			re := regexpCache("REGEXP_SPLIT_TO_ARRAY")
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				s := a[0].B
				out = out[:0]
				if len(a[1].B) == 0 {
					return types.Datum{L: splitChars(out, s, false)}, nil
				}
				r, err := re.get(a[1].B)
				if err != nil {
					return types.NullDatum, err
				}
				if !r.matchPossible(s) {
					return types.Datum{L: append(out, types.Datum{B: s[:len(s):len(s)]})}, nil
				}
				prev := 0
				for _, m := range r.re.FindAllIndex(s, -1) {
					if m[1] == 0 && m[0] == 0 {
						continue // a zero-width match at the start makes no empty first element
					}
					out = append(out, types.Datum{B: s[prev:m[0]:m[0]]})
					prev = m[1]
				}
				out = append(out, types.Datum{B: s[prev:len(s):len(s)]})
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "SPLIT",
		Description: "Splits a string or BYTES value around a delimiter; an empty delimiter splits every character (byte).",
		Signatures:  []string{"SPLIT(STRING, STRING delimiter) -> ARRAY<STRING>", "SPLIT(BYTES, BYTES delimiter) -> ARRAY<BYTES>"},
		Check: overloads("SPLIT",
			ov{in: ps(pString, pString), out: ret(arrayOf(types.StringType))},
			ov{in: ps(pBytes, pBytes), out: ret(arrayOf(types.BytesType))}),
		New: func(ts []types.Type) Impl {
			isBytes := ts[0].Kind == types.Bytes || ts[1].Kind == types.Bytes
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				s, sep := a[0].B, a[1].B
				out = out[:0]
				if len(sep) == 0 && len(s) > 0 {
					return types.Datum{L: splitChars(out, s, isBytes)}, nil
				}
				if len(sep) == 0 {
					// An empty value splits into one empty piece, as in
					// ksqlDB.
					return types.Datum{L: append(out, types.Datum{B: s})}, nil
				}
				for {
					i := bytes.Index(s, sep)
					if i < 0 {
						break
					}
					out = append(out, types.Datum{B: s[:i:i]})
					s = s[i+len(sep):]
				}
				out = append(out, types.Datum{B: s})
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "SPLIT_TO_MAP",
		Description: "Splits a string into key-value pairs around an entry delimiter and a key-value delimiter; the last value of a repeated key wins.",
		Signatures:  []string{"SPLIT_TO_MAP(STRING, STRING entryDelimiter, STRING kvDelimiter) -> MAP<STRING, STRING>"},
		Check:       exactly("SPLIT_TO_MAP", mapOf(types.StringType, types.StringType), types.StringType, types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				s, ed, kd := a[0].B, a[1].B, a[2].B
				if len(ed) == 0 || len(kd) == 0 {
					return null()
				}
				out = out[:0]
				for len(s) > 0 {
					var entry []byte
					if i := bytes.Index(s, ed); i >= 0 {
						entry, s = s[:i:i], s[i+len(ed):]
					} else {
						entry, s = s, nil
					}
					j := bytes.Index(entry, kd)
					if len(entry) == 0 || j < 0 {
						continue
					}
					k, v := types.Datum{B: entry[:j:j]}, types.Datum{B: entry[j+len(kd):]}
					if n := bytes.Index(v.B, kd); n >= 0 {
						// More than one key-value delimiter: the key and
						// the part after it, as ksqlDB's Splitter takes
						// them; the rest is dropped.
						v.B = v.B[:n:n]
					}
					if at := mapFind(out, k, types.StringType); at >= 0 {
						out[at+1] = v
						continue
					}
					out = append(out, k, v)
				}
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "INSTR",
		Description: "Returns the 1-based position of a substring, searching from a position (negative searches backwards from the end) for its n-th occurrence; 0 when not found.",
		Signatures: []string{"INSTR(STRING, STRING substring) -> INTEGER", "INSTR(STRING, STRING substring, INTEGER position) -> INTEGER",
			"INSTR(STRING, STRING substring, INTEGER position, INTEGER occurrence) -> INTEGER"},
		Check: overloads("INSTR", ov{in: ps(pString, pString, pInt, pInt), opt: 2, out: ret(types.IntType)}),
		New: func([]types.Type) Impl {
			var s, sub []rune
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null || a[1].Null {
					return types.IntDatum(0), nil
				}
				pos, occ := int64(1), int64(1)
				if len(a) > 2 {
					if a[2].Null {
						return null()
					}
					pos = a[2].I
				}
				if len(a) > 3 {
					if a[3].Null {
						return null()
					}
					occ = a[3].I
				}
				s, sub = appendRunes(s[:0], a[0].B), appendRunes(sub[:0], a[1].B)
				return types.IntDatum(instr(s, sub, pos, occ)), nil
			}
		},
	},
	padder("LPAD", "Pads a string or BYTES value on the left with a padding to a length, or truncates it to that length.", true),
	padder("RPAD", "Pads a string or BYTES value on the right with a padding to a length, or truncates it to that length.", false),
	{
		Name:        "INITCAP",
		Description: "Capitalizes the first letter of each word and lower-cases the rest; words are separated by white space.",
		Signatures:  []string{"INITCAP(STRING) -> STRING"},
		Check:       exactly("INITCAP", types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			var buf []byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				buf = buf[:0]
				start := true
				for _, r := range string(a[0].B) {
					switch {
					case unicode.IsSpace(r):
						start = true
					case start:
						r = unicode.ToTitle(r)
						start = false
					default:
						r = unicode.ToLower(r)
					}
					buf = utf8.AppendRune(buf, r)
				}
				return types.Datum{B: buf}, nil
			})
		},
	},
	{
		Name:        "CHR",
		Description: "Returns the character with a decimal code point, or given as a '\\uXXXX' string; NULL when it is not a valid code point.",
		Signatures:  []string{"CHR(INTEGER) -> STRING", "CHR(STRING) -> STRING"},
		Check: overloads("CHR",
			ov{in: ps(kinds(types.Int, types.Bigint)), out: ret(types.StringType)},
			ov{in: ps(pString), out: ret(types.StringType)}),
		New: func(ts []types.Type) Impl {
			fromString := ts[0].Kind == types.String
			var buf []byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				cp := a[0].I
				if fromString {
					s := a[0].B
					if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
						return null()
					}
					out, ok := unescapeUnicode(buf[:0], s)
					if !ok {
						return null()
					}
					buf = out
					return types.Datum{B: buf}, nil
				}
				if cp < 0 || cp > unicode.MaxRune || cp >= 0xD800 && cp <= 0xDFFF {
					return null()
				}
				buf = utf8.AppendRune(buf[:0], rune(cp))
				return types.Datum{B: buf}, nil
			})
		},
	},
	masker("MASK", "Masks a string: upper-case letters become X, lower-case x, digits n, anything else -; optional arguments replace those characters (NULL keeps that class unmasked).", maskAll),
	masker("MASK_LEFT", "Masks the first n characters of a string, as MASK does.", maskLeft),
	masker("MASK_RIGHT", "Masks the last n characters of a string, as MASK does.", maskRight),
	masker("MASK_KEEP_LEFT", "Masks all but the first n characters of a string, as MASK does.", maskKeepLeft),
	masker("MASK_KEEP_RIGHT", "Masks all but the last n characters of a string, as MASK does.", maskKeepRight),
	{
		Name:        "UUID",
		Description: "Returns a random (version 4) UUID as a string.",
		Signatures:  []string{"UUID() -> STRING"},
		Check:       exactly("UUID", types.StringType),
		New: func([]types.Type) Impl {
			var buf [36]byte
			return func([]types.Datum) (types.Datum, error) {
				var u [16]byte
				_, _ = rand.Read(u[:])
				u[6] = u[6]&0x0f | 0x40
				u[8] = u[8]&0x3f | 0x80
				b := buf[:0]
				for i, c := range u {
					if i == 4 || i == 6 || i == 8 || i == 10 {
						b = append(b, '-')
					}
					b = append(b, hexLower[c>>4], hexLower[c&15])
				}
				return types.Datum{B: b}, nil
			}
		},
	},
	{
		Name:        "ELT",
		Description: "Returns the n-th (1-based) of the string arguments after n, or NULL when n is out of range.",
		Signatures:  []string{"ELT(INTEGER n, STRING, ...) -> STRING"},
		Check:       overloads("ELT", ov{in: ps(pInt), rest: pString, out: ret(types.StringType)}),
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null || a[0].I < 1 || a[0].I >= int64(len(a)) {
					return null()
				}
				return a[a[0].I], nil
			}
		},
	},
	{
		Name:        "FIELD",
		Description: "Returns the 1-based position of a string among the following arguments, or 0 when it is not there (or is NULL).",
		Signatures:  []string{"FIELD(STRING, STRING, ...) -> INTEGER"},
		Check:       overloads("FIELD", ov{in: ps(pString), rest: pString, out: ret(types.IntType)}),
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return types.IntDatum(0), nil
				}
				for i, d := range a[1:] {
					if !d.Null && bytes.Equal(d.B, a[0].B) {
						return types.IntDatum(int64(i + 1)), nil
					}
				}
				return types.IntDatum(0), nil
			}
		},
	},
}

const hexLower = "0123456789abcdef"

func caseMapper(name, desc string, upper bool) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING) -> STRING"},
		Check:       exactly(name, types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			var buf []byte
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return types.NullDatum, nil
				}
				s := a[0].B
				if isASCII(s) {
					buf = append(buf[:0], s...)
					asciiMap(buf, upper)
					return types.Datum{B: buf}, nil
				}
				buf = buf[:0]
				for _, r := range string(s) {
					if upper {
						r = unicode.ToUpper(r)
					} else {
						r = unicode.ToLower(r)
					}
					buf = utf8.AppendRune(buf, r)
				}
				return types.Datum{B: buf}, nil
			}
		},
	}
}

func trimmer(name, desc string, left, right bool) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING) -> STRING"},
		Check:       exactly(name, types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			return strict(func(a []types.Datum) (types.Datum, error) {
				b := a[0].B
				i, j := 0, len(b)
				for left && i < j && b[i] <= ' ' {
					i++
				}
				for right && j > i && b[j-1] <= ' ' {
					j--
				}
				return types.Datum{B: b[i:j:j]}, nil
			})
		},
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiMap(b []byte, upper bool) {
	for i, c := range b {
		if upper && c >= 'a' && c <= 'z' {
			b[i] = c - 32
		} else if !upper && c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
}

// runeOffset is the byte offset of the n-th character of s.
func runeOffset(s []byte, n int64) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRune(s[i:])
		i += size
	}
	return i
}

func appendRunes(dst []rune, s []byte) []rune {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		dst = append(dst, r)
		s = s[n:]
	}
	return dst
}

// splitChars appends one element per character of s (per byte when
// isBytes), aliasing s.
func splitChars(out []types.Datum, s []byte, isBytes bool) []types.Datum {
	for i := 0; i < len(s); {
		n := 1
		if !isBytes {
			_, n = utf8.DecodeRune(s[i:])
		}
		out = append(out, types.Datum{B: s[i : i+n : i+n]})
		i += n
	}
	return out
}

// appendReplace appends s with every old replaced by new; an empty old
// inserts new around every character, as Java's String.replace does.
func appendReplace(dst, s, old, new []byte) []byte {
	if len(old) == 0 {
		dst = append(dst, new...)
		for i := 0; i < len(s); {
			_, n := utf8.DecodeRune(s[i:])
			dst = append(dst, s[i:i+n]...)
			dst = append(dst, new...)
			i += n
		}
		return dst
	}
	for {
		i := bytes.Index(s, old)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, new...)
		s = s[i+len(old):]
	}
}

// instr is ksqlDB's INSTR over characters.
func instr(s, sub []rune, pos, occ int64) int64 {
	n := int64(len(s))
	if pos == 0 || pos > n || -pos > n || occ < 1 {
		return 0
	}
	if pos > 0 {
		i := ordinalIndex(s[pos-1:], sub, occ)
		if i < 0 {
			return 0
		}
		return i + pos
	}
	// search backwards: the occ-th match starting at or before n+pos+1
	from := n + pos // 0-based index of the starting character
	count := int64(0)
	for i := min(from, n-int64(len(sub))); i >= 0; i-- {
		if runesHasPrefix(s[i:], sub) {
			count++
			if count == occ {
				return i + 1
			}
		}
	}
	return 0
}

func ordinalIndex(s, sub []rune, occ int64) int64 {
	count := int64(0)
	for i := 0; i+len(sub) <= len(s); i++ {
		if runesHasPrefix(s[i:], sub) {
			count++
			if count == occ {
				return int64(i)
			}
			if len(sub) > 0 {
				i += len(sub) - 1
			}
		}
	}
	return -1
}

func runesHasPrefix(s, p []rune) bool {
	if len(p) > len(s) {
		return false
	}
	for i := range p {
		if s[i] != p[i] {
			return false
		}
	}
	return true
}

func padder(name, desc string, left bool) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING, INTEGER length, STRING padding) -> STRING", name + "(BYTES, INTEGER length, BYTES padding) -> BYTES"},
		Check: overloads(name,
			ov{in: ps(pString, pInt, pString), out: argOr(0, types.StringType)},
			ov{in: ps(pBytes, pInt, pBytes), out: ret(types.BytesType)}),
		New: func(ts []types.Type) Impl {
			isBytes := ts[0].Kind == types.Bytes || ts[2].Kind == types.Bytes
			var buf []byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				s, length, pad := a[0].B, a[1].I, a[2].B
				if length < 0 || len(pad) == 0 {
					return null()
				}
				if length > maxPad {
					return types.NullDatum, funcErrorf(name, "length %d is above the limit of %d", length, maxPad)
				}
				size := func(b []byte) int64 {
					if isBytes {
						return int64(len(b))
					}
					return int64(utf8.RuneCount(b))
				}
				cut := func(b []byte, n int64) []byte {
					if isBytes {
						return b[:n]
					}
					return b[:runeOffset(b, n)]
				}
				n := size(s)
				if n >= length {
					return types.Datum{B: cut(s, length)}, nil
				}
				buf = buf[:0]
				if !left {
					buf = append(buf, s...)
				}
				need := length - n
				pn := size(pad)
				for need >= pn {
					buf = append(buf, pad...)
					need -= pn
				}
				buf = append(buf, cut(pad, need)...)
				if left {
					buf = append(buf, s...)
				}
				return types.Datum{B: buf}, nil
			})
		},
	}
}

// maxPad bounds LPAD and RPAD so that one bad record cannot take the
// process's memory.
const maxPad = 1 << 24

type maskMode uint8

const (
	maskAll maskMode = iota
	maskLeft
	maskRight
	maskKeepLeft
	maskKeepRight
)

// noMask marks a character class left as it is.
const noMask = rune(-1)

func masker(name, desc string, mode maskMode) *Function {
	var check func([]types.Type) (types.Type, error)
	var sigs []string
	if mode == maskAll {
		check = overloads(name,
			ov{in: ps(pString), out: ret(types.StringType)},
			ov{in: ps(pString, pString, pString, pString, pString), out: ret(types.StringType)})
		sigs = []string{name + "(STRING) -> STRING", name + "(STRING, STRING upper, STRING lower, STRING digit, STRING other) -> STRING"}
	} else {
		check = overloads(name,
			ov{in: ps(pString, pInt), out: ret(types.StringType)},
			ov{in: ps(pString, pInt, pString, pString, pString, pString), out: ret(types.StringType)})
		sigs = []string{name + "(STRING, INTEGER n) -> STRING", name + "(STRING, INTEGER n, STRING upper, STRING lower, STRING digit, STRING other) -> STRING"}
	}
	first := 1
	if mode != maskAll {
		first = 2
	}
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  sigs,
		Check:       check,
		validate: func(args []Expr) error {
			for i := first; i < len(args); i++ {
				if b, ok := constArg(args, i); ok && utf8.RuneCount(b) != 1 {
					return typeErrorf("function %s: a mask must be one character, got '%s'", name, b)
				}
			}
			return nil
		},
		New: func([]types.Type) Impl {
			var buf []byte
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return null()
				}
				n := int64(0)
				if mode != maskAll {
					if a[1].Null {
						return null()
					}
					if n = a[1].I; n < 0 {
						return types.NullDatum, funcErrorf(name, "the number of characters must not be negative, got %d", n)
					}
				}
				masks := [4]rune{'X', 'x', 'n', '-'}
				if len(a) > first {
					for i := range masks {
						d := a[first+i]
						if d.Null {
							masks[i] = noMask
							continue
						}
						r, size := utf8.DecodeRune(d.B)
						if size != len(d.B) || size == 0 {
							return types.NullDatum, funcErrorf(name, "a mask must be one character, got '%s'", d.B)
						}
						masks[i] = r
					}
				}
				s := a[0].B
				total := int64(utf8.RuneCount(s))
				buf = buf[:0]
				i := int64(0)
				for _, r := range string(s) {
					var masked bool
					switch mode {
					case maskAll:
						masked = true
					case maskLeft:
						masked = i < n
					case maskRight:
						masked = i >= total-n
					case maskKeepLeft:
						masked = i >= n
					case maskKeepRight:
						masked = i < total-n
					}
					if masked {
						r = maskRune(r, &masks)
					}
					buf = utf8.AppendRune(buf, r)
					i++
				}
				return types.Datum{B: buf}, nil
			}
		},
	}
}

func maskRune(r rune, masks *[4]rune) rune {
	var m rune
	switch {
	case unicode.IsUpper(r):
		m = masks[0]
	case unicode.IsLower(r):
		m = masks[1]
	case unicode.Is(unicode.Nd, r):
		m = masks[2]
	default:
		m = masks[3]
	}
	if m == noMask {
		return r
	}
	return m
}

// Regular expressions use Go's RE2 syntax, which covers Java's except
// backreferences and lookaround: such patterns are rejected.

func regexpCache(name string) *cache[*pattern] {
	return &cache[*pattern]{compile: func(s string) (*pattern, error) {
		r, err := compilePattern(s)
		if err != nil {
			return nil, funcErrorf(name, "bad regular expression %q: %v", s, err)
		}
		return r, nil
	}}
}

func checkRegexp(name string) func([]byte) error {
	return func(b []byte) error {
		if _, err := regexp.Compile(string(b)); err != nil {
			return typeErrorf("function %s: bad regular expression %q: %v", name, b, err)
		}
		return nil
	}
}

// javaReplacement turns a Java replacement string ($1, ${name}, \$) into
// Go's template syntax (${1}, ${name}, $$).
func javaReplacement(s string) []byte {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$' && i+1 < len(s) && s[i+1] == '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				b.WriteString("$$")
				continue
			}
			b.WriteString(s[i : i+j+1])
			i += j
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			b.WriteString("${" + s[i+1:j] + "}")
			i = j - 1
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	return []byte(b.String())
}

// unescapeUnicode appends s with its \uXXXX escapes decoded, as
// StringEscapeUtils.unescapeJava does for CHR: a high and a low surrogate
// escaped one after the other make one character; other text is kept.
func unescapeUnicode(dst, s []byte) ([]byte, bool) {
	var pending rune = -1 // a high surrogate waiting for its low half
	flush := func() {
		if pending >= 0 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			pending = -1
		}
	}
	for i := 0; i < len(s); {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == 'u' {
			j := i + 1
			for j < len(s) && s[j] == 'u' {
				j++
			}
			if j+4 > len(s) {
				return nil, false
			}
			v, err := strconv.ParseUint(string(s[j:j+4]), 16, 16)
			if err != nil {
				return nil, false
			}
			r := rune(v)
			switch {
			case r >= 0xD800 && r < 0xDC00:
				flush()
				pending = r
			case r >= 0xDC00 && r < 0xE000 && pending >= 0:
				dst = utf8.AppendRune(dst, 0x10000+(pending-0xD800)<<10+(r-0xDC00))
				pending = -1
			default:
				flush()
				dst = utf8.AppendRune(dst, r)
			}
			i = j + 4
			continue
		}
		flush()
		dst = append(dst, s[i])
		i++
	}
	flush()
	return dst, true
}

// runeCount is LEN over strings: the number of characters.
func runeCount() Impl {
	return strict(func(a []types.Datum) (types.Datum, error) {
		return types.IntDatum(int64(utf8.RuneCount(a[0].B))), nil
	})
}

// submatch returns group g of r's first match in s (0: the whole
// match); false when nothing matches, the group took no part, or r has
// no such group.
func submatch(r *pattern, s []byte, g int) ([]byte, bool) {
	if g < 0 || g > r.NumSubexp() {
		return nil, false
	}
	idx := r.FindSubmatchIndex(s) // allocates on a match; regexp offers no reuse
	if idx == nil || idx[2*g] < 0 {
		return nil, false
	}
	return s[idx[2*g]:idx[2*g+1]], true
}
