package exec

import (
	"errors"
	"testing"
)

// TestPullNeedsEveryPartition: a pull fails with ErrPartitionMoved, before
// any row, when a partition it needs from this instance is not here (its
// task moved after the query was planned), instead of answering without
// that partition's rows.
func TestPullNeedsEveryPartition(t *testing.T) {
	parts := func(ids ...int32) []Partition {
		var out []Partition
		for _, id := range ids {
			out = append(out, Partition{ID: id})
		}
		return out
	}
	key := []byte("k1")
	kp := DefaultPartition(key, 4)
	others := func() []int32 {
		var out []int32
		for p := range int32(4) {
			if p != kp {
				out = append(out, p)
			}
		}
		return out
	}
	cases := []struct {
		name  string
		sel   KeySelection
		parts []Partition
		moved bool
	}{
		{"scan, all here", KeySelection{Whole: 4}, parts(0, 1, 2, 3), false},
		{"scan, one gone", KeySelection{Whole: 4}, parts(0, 1, 3), true},
		{"scan, one asked elsewhere", KeySelection{Whole: 4, Except: []int32{2}}, parts(0, 1, 3), false},
		{"scan, one from a standby", KeySelection{Whole: 4, Standby: []int32{2}}, parts(0, 1, 3), false},
		{"scan, not planned (Whole 0)", KeySelection{}, parts(0), false},
		{"key, its partition here", KeySelection{Whole: 4, Partitions: 4, Keys: [][]byte{key}}, parts(kp), false},
		{"key, its partition gone", KeySelection{Whole: 4, Partitions: 4, Keys: [][]byte{key}}, parts(others()...), true},
		{"key, store partitioned otherwise", KeySelection{Whole: 4, Keys: [][]byte{key}}, parts(kp), true},
		{"forwarded, all here", KeySelection{Only: []int32{1, 2}}, parts(1, 2), false},
		{"forwarded, one gone", KeySelection{Only: []int32{1, 2}}, parts(1), true},
	}
	for _, c := range cases {
		err := c.sel.complete("S", c.parts)
		if moved := errors.Is(err, ErrPartitionMoved); moved != c.moved {
			t.Errorf("%s: err %v, want moved=%v", c.name, err, c.moved)
		}
	}
}
