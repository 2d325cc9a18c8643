package types

import (
	"strings"
	"testing"
)

func TestParsePartitioner(t *testing.T) {
	for in, want := range map[string]Partitioner{
		"murmur2": Murmur2, "MURMUR2": Murmur2, "murmur2_random": Murmur2,
		"crc32": CRC32, "CRC32": CRC32, "consistent_random": CRC32, "consistent": CRC32,
		"unknown": UnknownPartitioner, " Unknown ": UnknownPartitioner,
	} {
		got, err := ParsePartitioner(in)
		if err != nil || got != want {
			t.Errorf("ParsePartitioner(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "random", "crc", "fnv1a"} {
		if _, err := ParsePartitioner(in); err == nil || !strings.Contains(err.Error(), "'"+in+"'") {
			t.Errorf("ParsePartitioner(%q): %v, want an error naming the value", in, err)
		}
	}
}

// TestCRC32Partition checks librdkafka's consistent partitioner on keys
// of known IEEE CRC32s (tests/e2e checks the partitions kcat and
// confluent-kafka chose with their defaults for many more).
func TestCRC32Partition(t *testing.T) {
	// crc32("a") = 0xe8b7be43, crc32("foo") = 0x8c736521,
	// crc32("123456789") = 0xcbf43926 (the IEEE check value).
	for _, c := range []struct {
		key  string
		n    int32
		want int32
	}{
		{"a", 4, int32(0xe8b7be43 % 4)},
		{"foo", 3, int32(0x8c736521 % 3)},
		{"123456789", 7, int32(0xcbf43926 % 7)},
	} {
		if got := CRC32Partition([]byte(c.key), c.n); got != c.want {
			t.Errorf("CRC32Partition(%q, %d) = %d, want %d", c.key, c.n, got, c.want)
		}
	}
	if got := CRC32.Partition([]byte("foo"), 3); got != CRC32Partition([]byte("foo"), 3) {
		t.Errorf("CRC32.Partition differs from CRC32Partition")
	}
	if got := Murmur2.Partition([]byte("foo"), 3); got != Murmur2Partition([]byte("foo"), 3) {
		t.Errorf("Murmur2.Partition differs from Murmur2Partition")
	}
}

func BenchmarkMurmur2Partition(b *testing.B) {
	key := []byte("person-12345")
	b.ReportAllocs()
	for b.Loop() {
		Murmur2Partition(key, 12)
	}
}
