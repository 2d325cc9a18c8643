package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// ErrTooOld: a broker is older than what the service needs (the error is
// a *VersionError).
var ErrTooOld = errors.New("kafka: broker too old")

// Broker is one broker's API versions, as it advertises them.
type Broker struct {
	NodeID   int32
	Versions *kversion.Versions
}

// Guess is the Kafka release the broker's API versions look like
// ("v3.6", "at least v4.1", "between v2.3 and v2.4"), judged by the APIs
// it advertises only: a broker that leaves some out (a KRaft broker
// has no ZooKeeper-era inter-broker APIs, kfake implements a subset)
// still looks like its release.
func (b Broker) Guess() string {
	var absent []int16
	kversion.Tip().EachMaxKeyVersion(func(k, _ int16) {
		if !b.Versions.HasKey(k) {
			absent = append(absent, k)
		}
	})
	return b.Versions.VersionGuess(kversion.SkipKeys(absent...))
}

// Ping connects to the cluster as the profile and returns every broker's
// API versions. It is the first thing a server does with Kafka: a refused
// login, an untrusted certificate or unreachable brokers fail here,
// explained (see Explain), bounded by ctx.
func (p Profile) Ping(ctx context.Context) ([]Broker, error) {
	cl, err := p.NewClient()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	all, err := kadm.NewClient(cl).ApiVersions(ctx)
	if err != nil {
		return nil, p.Explain(err)
	}
	var out []Broker
	for _, v := range all.Sorted() {
		if v.Err != nil {
			return nil, p.Explain(fmt.Errorf("API versions of broker %d: %w", v.NodeID, v.Err))
		}
		out = append(out, Broker{NodeID: v.NodeID, Versions: kversion.FromApiVersionsResponse(v.Raw())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out, nil
}

// VersionError is a broker too old for what the service needs.
type VersionError struct {
	Broker Broker
	// Need is what needs the newer broker; Floor the oldest Kafka
	// release that has it.
	Need, Floor string
	// Hint says what to do instead.
	Hint string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("Kafka broker %d looks like Kafka %s (by the API versions it advertises); %s needs Kafka %s or newer: %s",
		e.Broker.NodeID, e.Broker.Guess(), e.Need, e.Floor, e.Hint)
}

// Unwrap returns ErrTooOld.
func (e *VersionError) Unwrap() error { return ErrTooOld }

// ExactlyOnce reports whether every broker supports exactly_once_v2:
// transactional offset commits bound to the group's generation (KIP-447,
// TxnOffsetCommit v3, Kafka 2.5). It returns a *VersionError naming the
// first broker that does not.
func ExactlyOnce(brokers []Broker) error {
	for _, b := range brokers {
		if v, ok := b.Versions.LookupMaxKeyVersion(int16(kmsg.TxnOffsetCommit)); !ok || v < 3 {
			return &VersionError{Broker: b, Need: "processing.guarantee exactly_once_v2", Floor: "2.5 (KIP-447)",
				Hint: "upgrade the brokers, or run with --processing-guarantee at_least_once (records may then be processed twice after a failure)"}
		}
	}
	return nil
}
