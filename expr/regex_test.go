package expr

import (
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// regexPatterns cover the window search (a literal after a bounded
// part), the prefilter alone (an unbounded part before the literal) and
// patterns with neither, with the context assertions the window search
// must read as the whole search does.
var regexPatterns = []string{
	`(&|^)channel_id=([^&]*)`,
	`(?:^|&)channel_id=([^&]*)`,
	`channel_id=(\d+)`,
	`(\w?)ab(c*)`,
	`\bab`, `\Bab`, `x\bab`, `(?m)^ab(.)`, `(?m)(^|\n)ab`, `(?i)ab`, `(?i:a)bc`, `a(?i)bc`,
	`.ab`, `..ab`, `(?s).ab`, `é?ab`, `[é-ü]{0,2}ab`, `(a|bc|^)ab`, `(a?)(b?)aab`,
	`aa`, `aab`, `a{2,3}b`, `(ab)+c`, `(?:ab){2}`, `(?U)(a*?)ab(.*)`, `x*ab`, `.*ab`, `[^a]+ab`,
	`ab$`, `(ab)?$`, `ab\z`, `^ab`, `\Aab`, `(^ab|cd)`, `ab|cd`, `(x)|ab`,
	"\ufffdab", `\x{fffd}?ab`, `(.)ab(.)`, `a.b`, `\Qa.b\E(.)`, `\Qab`, `(?P<n>.)ab`,
	`(a)?ab`, `(.?)(.?)(.?)(.?)ab`, `[^日]ab`, `[^é]{1,2}ab`, `(?s)[^日é\n]?ab`,
}

var regexInputs = []string{
	"", "ab", "xab", "aab", "aaab", "abab", "cab", " ab", "\nab", "a\nab", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
	"https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1&channel_id=1234",
	"channel_id=77&x=1", "&channel_id=&channel_id=5", "channel_id", "x&channel_id=9&channel_id=8",
	"éab", "ééab", "\xe9ab", "\xc3ab", "\x80ab", "\xe2\x82ab", "\xf0\x9f\x98ab", "\xef\xbf\xbdab", "日本ab語", "日ab", "é日ab", "日\xa5ab",
	"AB", "xAb", "abcabcabc", "ab\n", "aabaabaab", "a.bxa.b", "ccd", "xcd",
	"abababababababababababababababababababababab",           // more than maxTries
	strings.Repeat("x", maxWindowInput) + "&channel_id=1&ab", // longer than maxWindowInput
}

// TestPatternMatchesRegexp compares the window search with regexp's
// whole search: the same match and groups for every pattern and input,
// with the fast paths on where they should be.
func TestPatternMatchesRegexp(t *testing.T) {
	for _, src := range regexPatterns {
		p, err := compilePattern(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		p.analyze()
		re := regexp.MustCompile(src)
		for _, in := range regexInputs {
			checkPattern(t, p, re, []byte(in))
		}
	}
}

func checkPattern(t *testing.T, p *pattern, re *regexp.Regexp, in []byte) {
	t.Helper()
	got, want := p.FindSubmatchIndex(in), re.FindSubmatchIndex(in)
	if !slices.Equal(got, want) {
		t.Errorf("%q over %q: %v, regexp %v (lit %q before %d)", re, in, got, want, p.lit, p.before)
	}
	if want != nil && !p.matchPossible(in) {
		t.Errorf("%q over %q: no match possible, regexp %v", re, in, want)
	}
}

// TestPatternWindow pins which patterns get the window search (and so
// that q21's does).
func TestPatternWindow(t *testing.T) {
	for _, c := range []struct {
		src    string
		lit    string
		before int
	}{
		{`(&|^)channel_id=([^&]*)`, "channel_id=", 1},
		{`channel_id=(\d+)`, "channel_id=", 0},
		{`.ab`, "ab", 4},
		{`(\w?)ab(c*)`, "ab", 1},
		{`x*ab`, "ab", -1},               // prefilter only
		{`(?i)ab`, "", -1},               // case folded: no literal
		{`ab|cd`, "", -1},                // either: no literal
		{"\ufffdab", "", -1},             // U+FFFD also matches an invalid byte: no literal
		{`\Qab`, "ab", -1},               // does not compile wrapped
		{`(.?)(.?)(.?)(.?)ab`, "ab", -1}, // more than maxBefore: prefilter only
	} {
		p, err := compilePattern(c.src)
		if err != nil {
			t.Fatal(err)
		}
		p.analyze()
		if string(p.lit) != c.lit || p.before != c.before || (p.at != nil) != (c.before >= 0) {
			t.Errorf("%q: lit %q before %d window %v, want %q %d", c.src, p.lit, p.before, p.at != nil, c.lit, c.before)
		}
	}
}

// TestPatternAnalyzedAtSecondSearch: a pattern searched once (one read
// from a column, compiled per record) is not analyzed; the second
// search analyzes it, and both find regexp's match.
func TestPatternAnalyzedAtSecondSearch(t *testing.T) {
	src := `(&|^)channel_id=([^&]*)`
	in := []byte("https://x/item.htm?query=1&channel_id=42")
	p, _ := compilePattern(src)
	want := regexp.MustCompile(src).FindSubmatchIndex(in)
	if got := p.FindSubmatchIndex(in); !slices.Equal(got, want) || p.analyzed {
		t.Fatalf("first search: %v (analyzed %v), want %v", got, p.analyzed, want)
	}
	if got := p.FindSubmatchIndex(in); !slices.Equal(got, want) {
		t.Fatalf("second search: %v, want %v", got, want)
	}
	if !p.analyzed || p.at == nil {
		t.Fatal("not analyzed at the second search")
	}
}

// TestPatternRandom compares the window search with regexp's over
// random strings of a small alphabet (with multi-byte and invalid
// UTF-8, newlines, word and non-word characters).
func TestPatternRandom(t *testing.T) {
	alphabet := []string{"a", "b", "c", "d", "x", "&", "=", " ", "\n", "é", "\xe9", "\x80", "日", "channel_id=", "1"}
	rng := rand.New(rand.NewSource(1))
	for _, src := range regexPatterns {
		p, err := compilePattern(src)
		if err != nil {
			t.Fatal(err)
		}
		p.analyze()
		re := regexp.MustCompile(src)
		for i := 0; i < 300; i++ {
			var in []byte
			for n := rng.Intn(12); n > 0; n-- {
				in = append(in, alphabet[rng.Intn(len(alphabet))]...)
			}
			checkPattern(t, p, re, in)
		}
	}
}

// FuzzPattern: go test ./expr -run '^$' -fuzz FuzzPattern.
func FuzzPattern(f *testing.F) {
	for _, src := range regexPatterns {
		f.Add(src, "x&channel_id=9&ab")
	}
	f.Fuzz(func(t *testing.T, src, in string) {
		re, err := regexp.Compile(src)
		if err != nil {
			return
		}
		p, err := compilePattern(src)
		if err != nil {
			t.Fatal(err)
		}
		p.analyze()
		checkPattern(t, p, re, []byte(in))
	})
}

// BenchmarkRegexpExtract is q21's REGEXP_EXTRACT over a url with the
// channel id, one without (the hot channels') and the plain regexp's
// search for comparison: go test ./expr -run '^$' -bench RegexpExtract.
func BenchmarkRegexpExtract(b *testing.B) {
	const src = `(&|^)channel_id=([^&]*)`
	with := []byte("https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1&channel_id=1234567")
	without := []byte("https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1")
	p, _ := compilePattern(src)
	p.analyze()
	re := regexp.MustCompile(src)
	for _, c := range []struct {
		name string
		in   []byte
		f    func([]byte) []int
	}{
		{"window/channel_id", with, p.FindSubmatchIndex},
		{"window/none", without, p.FindSubmatchIndex},
		{"regexp/channel_id", with, re.FindSubmatchIndex},
		{"regexp/none", without, re.FindSubmatchIndex},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.f(c.in)
			}
		})
	}
}

// TestRegexpFunctionsWarm compares the regular expression functions once
// warm (the pattern analyzed: window search, no regexp run without the
// literal) with their first call (regexp's search) over every pattern and
// input above.
func TestRegexpFunctionsWarm(t *testing.T) {
	str, i64 := types.StringType, types.BigintType
	calls := []struct {
		name  string
		ts    []types.Type
		build func(re, in string) []types.Datum
	}{
		{"REGEXP_EXTRACT", []types.Type{str, str}, func(re, in string) []types.Datum { return sd(re, in) }},
		{"REGEXP_EXTRACT", []types.Type{str, str, i64}, func(re, in string) []types.Datum { return append(sd(re, in), types.IntDatum(1)) }},
		{"REGEXP_EXTRACT", []types.Type{str, str, i64}, func(re, in string) []types.Datum { return append(sd(re, in), types.IntDatum(2)) }},
		{"REGEXP_EXTRACT_ALL", []types.Type{str, str}, func(re, in string) []types.Datum { return sd(re, in) }},
		{"REGEXP_REPLACE", []types.Type{str, str, str}, func(re, in string) []types.Datum { return sd(in, re, "<$0>") }},
		{"REGEXP_SPLIT_TO_ARRAY", []types.Type{str, str}, func(re, in string) []types.Datum { return sd(in, re) }},
	}
	for _, c := range calls {
		fn, ok := Lookup(c.name)
		if !ok {
			t.Fatal(c.name)
		}
		for _, re := range regexPatterns {
			warm := fn.New(c.ts)
			if _, err := warm(c.build(re, "warm up")); err != nil {
				t.Fatal(err)
			}
			for _, in := range regexInputs {
				want, err := fn.New(c.ts)(c.build(re, in))
				if err != nil {
					t.Fatal(err)
				}
				got, err := warm(c.build(re, in))
				if err != nil {
					t.Fatal(err)
				}
				if !datumsEqual(got, want) {
					t.Errorf("%s(%q, %q): warm %v, first call %v", c.name, re, in, got, want)
				}
			}
		}
	}
}

func sd(s ...string) []types.Datum {
	out := make([]types.Datum, len(s))
	for i, x := range s {
		out[i] = types.Datum{B: []byte(x)}
	}
	return out
}

func datumsEqual(a, b types.Datum) bool {
	if a.Null != b.Null || string(a.B) != string(b.B) || len(a.L) != len(b.L) {
		return false
	}
	for i := range a.L {
		if !datumsEqual(a.L[i], b.L[i]) {
			return false
		}
	}
	return true
}
