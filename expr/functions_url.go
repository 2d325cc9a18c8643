package expr

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// URL functions, reading URLs as java.net.URI does (RFC 3986): a string
// that is not a valid URI gives NULL, as does a missing part. Extracted
// parts are percent-decoded. The parameter functions use the
// application/x-www-form-urlencoded convention.

var urlFunctions = []*Function{
	urlString("URL_DECODE_PARAM", "Decodes an application/x-www-form-urlencoded value ('+' and %XX); NULL when it is malformed.", func(s string) (string, bool) {
		v, err := url.QueryUnescape(s)
		return v, err == nil
	}),
	urlString("URL_ENCODE_PARAM", "Percent-encodes a value for a URL query parameter (application/x-www-form-urlencoded: space becomes +).", func(s string) (string, bool) {
		return encodeParam(s), true
	}),
	urlPart("URL_EXTRACT_FRAGMENT", "Returns the decoded fragment of a URL.", func(u *url.URL) (string, bool) {
		return u.Fragment, u.Fragment != "" || u.RawFragment != "" || strings.HasSuffix(u.String(), "#")
	}),
	urlPart("URL_EXTRACT_HOST", "Returns the host name of a URL.", func(u *url.URL) (string, bool) {
		h := u.Hostname()
		return h, h != ""
	}),
	urlPart("URL_EXTRACT_PATH", "Returns the decoded path of a URL; empty when it has none.", func(u *url.URL) (string, bool) {
		if u.Opaque != "" {
			return "", false
		}
		return u.Path, true
	}),
	urlPart("URL_EXTRACT_PROTOCOL", "Returns the scheme (protocol) of a URL.", func(u *url.URL) (string, bool) {
		return u.Scheme, u.Scheme != ""
	}),
	urlPart("URL_EXTRACT_QUERY", "Returns the decoded query string of a URL.", func(u *url.URL) (string, bool) {
		if u.RawQuery == "" && !u.ForceQuery {
			return "", false
		}
		q, err := url.PathUnescape(u.RawQuery)
		return q, err == nil
	}),
	{
		Name:        "URL_EXTRACT_PORT",
		Description: "Returns the explicit port of a URL; NULL when it has none.",
		Signatures:  []string{"URL_EXTRACT_PORT(STRING) -> INTEGER"},
		Check:       exactly("URL_EXTRACT_PORT", types.IntType, types.StringType),
		New: func([]types.Type) Impl {
			return strict(func(a []types.Datum) (types.Datum, error) {
				u, ok := parseURI(a[0].B)
				if !ok || u.Port() == "" {
					return null()
				}
				p, err := strconv.Atoi(u.Port())
				if err != nil {
					return null()
				}
				return types.IntDatum(int64(p)), nil
			})
		},
	},
	{
		Name:        "URL_EXTRACT_PARAMETER",
		Description: "Returns the decoded value of a query parameter of a URL; NULL when it is absent or has no value.",
		Signatures:  []string{"URL_EXTRACT_PARAMETER(STRING url, STRING name) -> STRING"},
		Check:       exactly("URL_EXTRACT_PARAMETER", types.StringType, types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			return strict(func(a []types.Datum) (types.Datum, error) {
				u, ok := parseURI(a[0].B)
				if !ok || u.RawQuery == "" {
					return null()
				}
				name := string(a[1].B)
				for _, part := range strings.Split(u.RawQuery, "&") {
					k, v, hasValue := strings.Cut(part, "=")
					dk, err := url.QueryUnescape(k)
					if err != nil || dk != name {
						continue
					}
					if !hasValue {
						return null()
					}
					dv, err := url.QueryUnescape(v)
					if err != nil {
						return null()
					}
					return types.StringDatum(dv), nil
				}
				return null()
			})
		},
	},
}

// parseURI parses s as java.net.URI would accept it.
func parseURI(b []byte) (*url.URL, bool) {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			return nil, false
		}
	}
	u, err := url.Parse(string(b))
	return u, err == nil
}

func urlString(name, desc string, f func(string) (string, bool)) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING) -> STRING"},
		Check:       exactly(name, types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			return strict(func(a []types.Datum) (types.Datum, error) {
				v, ok := f(string(a[0].B))
				if !ok {
					return null()
				}
				return types.StringDatum(v), nil
			})
		},
	}
}

func urlPart(name, desc string, f func(*url.URL) (string, bool)) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING) -> STRING"},
		Check:       exactly(name, types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			return strict(func(a []types.Datum) (types.Datum, error) {
				u, ok := parseURI(a[0].B)
				if !ok {
					return null()
				}
				v, ok := f(u)
				if !ok {
					return null()
				}
				return types.StringDatum(v), nil
			})
		},
	}
}

// encodeParam percent-encodes everything but letters, digits and -_.*,
// and writes a space as +, as Guava's urlFormParameterEscaper (ksqlDB's)
// does.
func encodeParam(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.*", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		if c == ' ' {
			b.WriteByte('+')
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	return b.String()
}
