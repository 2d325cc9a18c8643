package datagen

import "strconv"

// Append-style JSON helpers: no reflection, no allocation once the
// destination buffer has grown.

func appendKey(b []byte, first bool, k string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

func appendInt(b []byte, first bool, k string, v int64) []byte {
	return strconv.AppendInt(appendKey(b, first, k), v, 10)
}

func appendFloat(b []byte, first bool, k string, v float64) []byte {
	return strconv.AppendFloat(appendKey(b, first, k), v, 'f', -1, 64)
}

// appendStr appends "k":"v"; v must not need escaping (generated strings
// only use letters, digits, spaces and URL punctuation).
func appendStr(b []byte, first bool, k, v string) []byte {
	b = append(appendKey(b, first, k), '"')
	b = append(b, v...)
	return append(b, '"')
}

// appendStrB is appendStr for a byte-slice value.
func appendStrB(b []byte, first bool, k string, v []byte) []byte {
	b = append(appendKey(b, first, k), '"')
	b = append(b, v...)
	return append(b, '"')
}

// appendPrefixed appends "k":"<prefix><n>".
func appendPrefixed(b []byte, first bool, k, prefix string, n int64) []byte {
	b = append(appendKey(b, first, k), '"')
	b = append(b, prefix...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, '"')
}
