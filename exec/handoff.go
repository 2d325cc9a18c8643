package exec

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// handOff gives a stream thread's records to its Kafka client from a
// goroutine of its own. Handing a record over (kgo's Produce: the
// topic's partitions looked up, the partitioner, the partition's buffer
// locked) costs a stream thread that produces a record or more per
// input record about a seventh of its time; the thread, the one
// goroutine that processes its tasks' records, goes on processing
// meanwhile, and the work moves to another core. (On the 2-core bench
// VM, whose second core the broker and the background work fill, it
// measured neutral; on a machine with idle cores the thread should
// gain most of that seventh, not measured here.)
//
// Records are handed over in the order the outbox flushed them, so each
// partition's stay in order. The thread waits (settle) until every
// record it flushed is with the client before it ends a transaction:
// a record handed over later would land in the next one.
type handOff struct {
	send func(*kgo.Record)
	work chan []*kgo.Record
	// free returns emptied runs to the outbox, so that handing over
	// allocates nothing once a few runs go round.
	free chan []*kgo.Record
	// queued counts the runs given and not yet handed over.
	queued sync.WaitGroup
	done   chan struct{}
}

// handOffRuns bounds the runs waiting for the goroutine: a thread that
// outruns its client (kgo's buffer full, its Produce blocking) waits.
const handOffRuns = 8

func newHandOff(send func(*kgo.Record)) *handOff {
	h := &handOff{send: send, work: make(chan []*kgo.Record, handOffRuns), free: make(chan []*kgo.Record, handOffRuns+1),
		done: make(chan struct{})}
	go h.run()
	return h
}

func (h *handOff) run() {
	defer close(h.done)
	for recs := range h.work {
		for i, r := range recs {
			h.send(r)
			recs[i] = nil
		}
		h.queued.Done()
		select {
		case h.free <- recs[:0]:
		default:
		}
	}
}

// give queues a run of records and returns an empty slice for the next.
func (h *handOff) give(recs []*kgo.Record) []*kgo.Record {
	h.queued.Add(1)
	h.work <- recs
	select {
	case next := <-h.free:
		return next
	default:
		return make([]*kgo.Record, 0, cap(recs))
	}
}

// settle waits until every run given is with the client.
func (h *handOff) settle() { h.queued.Wait() }

// close stops the goroutine once it has handed everything over.
func (h *handOff) close() {
	close(h.work)
	<-h.done
}
