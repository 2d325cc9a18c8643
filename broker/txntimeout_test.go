package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnOpenPastTimeoutAcrossCrash: a transaction with a one-second
// timeout is open when the broker is SIGKILLed and stays down for longer
// than the timeout. After the restart the transaction is aborted: its
// producer's late commit fails, read_committed readers never see its
// record, and the same transactional ID commits new work that readers see.
func TestTxnOpenPastTimeoutAcrossCrash(t *testing.T) {
	_, addr, bp := startBrokerProcess(t, "o")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := newClient(t, addr, kgo.TransactionalID("slow"), kgo.TransactionTimeout(time.Second),
		kgo.RetryTimeout(5*time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, rec("o", 0, "stale")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bp.kill()
	time.Sleep(1500 * time.Millisecond) // down for longer than the timeout
	bp.start()

	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the producer committed a transaction the broker must have aborted")
	}
	produceTxn(t, addr, "slow", true, rec("o", 0, "fresh"))
	want := []string{"fresh"}
	if got := consume(t, addr, "o", kgo.ReadCommitted(), len(want), 5*time.Second); !slices.Equal(got, want) {
		t.Fatalf("read_committed: %v, want %v", got, want)
	}
}

// TestTxnRestoredAfterCleanRestartTimesOut: a transaction still open at a
// clean shutdown is restored (its producer may finish it, see
// TestOpenTxnSurvivesCleanRestart); if the producer never comes back, the
// broker aborts it on its timeout, as Kafka does, and read_committed
// readers get past it.
func TestTxnRestoredAfterCleanRestartTimesOut(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	createTopic(t, b.Addr(), "o", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := newClient(t, b.Addr(), kgo.TransactionalID("gone"), kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, rec("o", 0, "abandoned")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	p.Close()

	b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	defer b.Close()
	if err := newClient(t, b.Addr()).ProduceSync(ctx, rec("o", 0, "later")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want := []string{"later"}
	if got := consume(t, b.Addr(), "o", kgo.ReadCommitted(), len(want), 15*time.Second); !slices.Equal(got, want) {
		t.Fatalf("read_committed: %v, want %v (the abandoned transaction never timed out)", got, want)
	}
}
