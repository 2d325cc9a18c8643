package conformance

import (
	"slices"
	"testing"
)

// TestJavaHashOrder pins the order ksqlDB's runner registers topic
// schemas in (a java.util.HashMap's iteration order), which decides the
// schema IDs its tests name.
func TestJavaHashOrder(t *testing.T) {
	for s, want := range map[string]int32{"hello": 99162322, "": 0, "OUTPUT": -1952183039, "input": 100358090} {
		if got := javaHash(s); got != want {
			t.Errorf("javaHash(%q) = %d, want %d", s, got, want)
		}
	}
	// "input" lands in bucket 1 of 16, "OUTPUT" in 5: input first,
	// whatever the insertion order.
	for _, keys := range [][]string{{"OUTPUT", "input"}, {"input", "OUTPUT"}} {
		if got := javaHashOrder(keys); !slices.Equal(got, []string{"input", "OUTPUT"}) {
			t.Errorf("javaHashOrder(%v) = %v", keys, got)
		}
	}
}
