package exec

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/spaolacci/murmur3"
)

// TestMurmur3 checks that the library's 128-bit hash is the reference
// implementation's (seed 0, h1 then h2 little-endian, its published
// digests), which Kafka Streams' Murmur3.hash128 also computes.
func TestMurmur3(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "00000000000000000000000000000000"},
		{"The quick brown fox jumps over the lazy dog", "6c1b07bc7bbc4be347939ac4a93c437a"},
	} {
		h1, h2 := murmur3.Sum128WithSeed([]byte(c.in), 0)
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], h1)
		binary.LittleEndian.PutUint64(b[8:], h2)
		if got := hex.EncodeToString(b[:]); got != c.want {
			t.Errorf("murmur3(%q) = %s; want %s", c.in, got, c.want)
		}
	}
}
