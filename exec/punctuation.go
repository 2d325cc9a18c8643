package exec

import "time"

// PunctuationType says which clock a punctuation follows.
type PunctuationType int

const (
	// StreamTime punctuations follow the task's stream time (the largest
	// event time it has seen): they fire between records, when a record
	// moves stream time past their next due time. A task without input
	// never fires them.
	StreamTime PunctuationType = iota
	// WallClockTime punctuations follow the system clock: the stream
	// thread fires them between polls.
	WallClockTime
)

// punctuation is one scheduled callback of a task.
type punctuation struct {
	kind     PunctuationType
	interval int64 // ms
	next     int64 // due time in ms; -1 until the clock is first seen
	fn       func(now int64) error
}

// punctuationQueue holds a task's punctuations (Kafka Streams'
// PunctuationQueue). Each fires at most once per call of fire, and is
// then due at the next multiple of its interval past now: missed periods
// are skipped, not replayed.
type punctuationQueue struct {
	items []*punctuation
}

func (q *punctuationQueue) schedule(kind PunctuationType, interval time.Duration, fn func(now int64) error) {
	ms := max(interval.Milliseconds(), 1)
	p := &punctuation{kind: kind, interval: ms, next: -1, fn: fn}
	if kind == WallClockTime {
		p.next = time.Now().UnixMilli() + ms
	}
	q.items = append(q.items, p)
}

// has reports whether any punctuation of kind is scheduled.
func (q *punctuationQueue) has(kind PunctuationType) bool {
	for _, p := range q.items {
		if p.kind == kind {
			return true
		}
	}
	return false
}

// fire runs the punctuations of kind that are due at now. A stream-time
// punctuation first fires at the first stream time it sees.
func (q *punctuationQueue) fire(kind PunctuationType, now int64) error {
	for _, p := range q.items {
		if p.kind != kind || (p.next >= 0 && now < p.next) {
			continue
		}
		if p.next < 0 {
			p.next = now + p.interval
		} else {
			p.next += p.interval * ((now-p.next)/p.interval + 1)
		}
		if err := p.fn(now); err != nil {
			return err
		}
	}
	return nil
}

// due reports whether a punctuation of kind is due at now.
func (q *punctuationQueue) due(kind PunctuationType, now int64) bool {
	for _, p := range q.items {
		if p.kind == kind && (p.next < 0 || now >= p.next) {
			return true
		}
	}
	return false
}
