package exec

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// txnSession is what a stream thread needs of its Kafka client: consume
// its inputs as a group member, produce, and end each commit interval
// with its input offsets committed together with (exactly-once) or after
// (at-least-once) what it produced. kgo.GroupTransactSession is the
// exactly-once one; atLeastOnce the other.
type txnSession interface {
	Client() *kgo.Client
	PollFetches(ctx context.Context) kgo.Fetches
	PollRecords(ctx context.Context, max int) kgo.Fetches
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
	Begin() error
	End(ctx context.Context, try kgo.TransactionEndTry) (bool, error)
	Close()
}

var _ txnSession = (*kgo.GroupTransactSession)(nil)

// errAtLeastOnceAbort ends a stream thread that must abort under
// at-least-once: what it produced cannot be taken back, so the thread
// restarts from its committed offsets (and its stores from their
// changelogs) and processes the records again.
var errAtLeastOnceAbort = errors.New("at-least-once: an interval could not be committed; the stream thread restarts from its committed offsets")

// atLeastOnce is processing.guarantee=at_least_once: no transactions.
// Output is produced as it is made, so a consumer sees it at once, and
// each commit interval ends by waiting for every produced record to be
// acknowledged and then committing the input offsets. After a failure,
// or when another member takes a partition before its offsets were
// committed, records are processed again: their results may be written
// twice, and a state store may count them twice (its changelog has the
// first pass's updates), as in Kafka Streams under at_least_once.
type atLeastOnce struct {
	cl *kgo.Client
	// produceFailed reports whether a record produced since the last
	// commit failed: its input offsets must not be committed.
	produceFailed func() bool
}

func newAtLeastOnce(p kafka.Profile, opts ...kgo.Opt) (*atLeastOnce, error) {
	cl, err := p.NewClient(append(opts, kgo.DisableAutoCommit())...)
	if err != nil {
		return nil, err
	}
	return &atLeastOnce{cl: cl}, nil
}

func (s *atLeastOnce) Client() *kgo.Client { return s.cl }

func (s *atLeastOnce) PollFetches(ctx context.Context) kgo.Fetches { return s.cl.PollFetches(ctx) }

func (s *atLeastOnce) PollRecords(ctx context.Context, max int) kgo.Fetches {
	return s.cl.PollRecords(ctx, max)
}

func (s *atLeastOnce) Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	s.cl.Produce(ctx, r, promise)
}

func (s *atLeastOnce) Begin() error { return nil }

// End commits: it waits until everything produced is acknowledged, then
// commits the offsets of the records polled so far (the thread calls it
// only once it has processed them all). An abort cannot take produced
// records back: it returns errAtLeastOnceAbort.
func (s *atLeastOnce) End(ctx context.Context, try kgo.TransactionEndTry) (bool, error) {
	if try != kgo.TryCommit {
		return false, errAtLeastOnceAbort
	}
	if err := s.cl.Flush(ctx); err != nil {
		return false, fmt.Errorf("waiting for produced records: %w", err)
	}
	if s.produceFailed != nil && s.produceFailed() {
		return false, errAtLeastOnceAbort
	}
	if err := s.cl.CommitUncommittedOffsets(ctx); err != nil {
		return false, fmt.Errorf("committing offsets: %w", err)
	}
	return true, nil
}

func (s *atLeastOnce) Close() { s.cl.Close() }
