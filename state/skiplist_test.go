package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSkiplistCommonPrefix: keys that share a long prefix, then keys
// that share less of it (before and after every key so far, and an
// empty one), keep their order, and each is found; seeks of keys
// outside the shared prefix land before or after every key.
func TestSkiplistCommonPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	l := newSkiplist(true)
	want := map[string]bool{}
	add := func(k string) {
		t.Helper()
		l.put([]byte(k), []byte(k), false)
		want[k] = true
		var got []string
		for n := l.head.next[0]; n != nil; n = n.next[0] {
			got = append(got, string(n.key))
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(got, keys) {
			t.Fatalf("after %q: %q; want %q", k, got, keys)
		}
		for _, k := range keys {
			if n := l.get([]byte(k)); n == nil || string(n.value) != k {
				t.Fatalf("after adding %q: %q not found", k, k)
			}
		}
	}
	for range 200 {
		add(fmt.Sprintf(`{"AUCTION":"%d","RN":%d}`, rng.IntN(1000), rng.IntN(4)))
	}
	if len(l.common) < len(`{"AUCTION":"`) {
		t.Fatalf("common prefix %q", l.common)
	}
	for _, k := range []string{`{"AUCTION":`, `{"A`, `{"Z":1}`, `[1]`, `~`, ``, "\x00", "{\xfe"} {
		if n := l.seek([]byte("\xff\xff"), nil, false); n != nil {
			t.Fatalf("seek past every key: %q", n.key)
		}
		add(k)
	}
	for i, k := range [][]byte{[]byte(`{"AUCTION":"5`), []byte(`{"B`), []byte(`{"AUCTION":"`)} {
		n := l.seek(k, nil, false)
		for x := l.head.next[0]; x != nil; x = x.next[0] {
			if bytes.Compare(x.key, k) >= 0 {
				if n != x {
					t.Fatalf("seek %d (%q) = %v; want %q", i, k, n, x.key)
				}
				break
			}
		}
	}
}
