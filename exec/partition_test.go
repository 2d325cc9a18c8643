package exec

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDefaultPartition checks that DefaultPartition picks the partition
// franz-go's default partitioner (Kafka's murmur2) gives keys of every
// length modulo 4, for several partition counts.
func TestDefaultPartition(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 12, 100} {
		p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
		for i := 0; i < 2000; i++ {
			key := fmt.Appendf(nil, "key-%08d", i)[:3+i%9]
			if i%5 == 0 {
				key = []byte{byte(i), byte(i >> 8), 0xff, 0x80}[:i%4+1]
			}
			want := p.Partition(&kgo.Record{Key: key}, n)
			if got := DefaultPartition(key, int32(n)); int(got) != want {
				t.Fatalf("key %x over %d partitions: %d, franz-go says %d", key, n, got, want)
			}
		}
	}
}
