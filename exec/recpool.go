package exec

import (
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordPool lends the client the slices it decodes fetched records into
// (kgo.PoolRecords). A stream thread recycles each record once processed,
// and a slice goes back here when all its records have been: a steady
// stream reuses a few slices instead of allocating ~150 bytes per record
// for the garbage collector. Only the Record structs are pooled; keys and
// values still point into the fetch response, which the collector owns.
//
// Slices are kept by power-of-two capacity, at most recordPoolDepth per
// size: enough for the fetches a client buffers.
type recordPool struct {
	mu   sync.Mutex
	free [32][][]kgo.Record
}

const recordPoolDepth = 16

var _ kgo.PoolRecords = (*recordPool)(nil)

func (p *recordPool) GetRecords(n int) []kgo.Record {
	c := bits.Len(uint(n - 1)) // the smallest 1<<c ≥ n
	if n <= 1 {
		c = 0
	}
	if c >= len(p.free) {
		return make([]kgo.Record, 0, n)
	}
	p.mu.Lock()
	if l := len(p.free[c]); l > 0 {
		s := p.free[c][l-1]
		p.free[c][l-1] = nil
		p.free[c] = p.free[c][:l-1]
		p.mu.Unlock()
		return s[:0]
	}
	p.mu.Unlock()
	return make([]kgo.Record, 0, 1<<c)
}

// PutRecords takes back a slice whose records have all been recycled
// (zeroed).
func (p *recordPool) PutRecords(s []kgo.Record) {
	c := bits.Len(uint(cap(s))) - 1 // the largest 1<<c ≤ cap
	if c < 0 || c >= len(p.free) || cap(s) != 1<<c {
		return // not one of ours: let it go
	}
	p.mu.Lock()
	if len(p.free[c]) < recordPoolDepth {
		p.free[c] = append(p.free[c], s[:0])
	}
	p.mu.Unlock()
}
