package engine_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/registry"
)

// kfakeBrokers starts a one-broker kfake cluster (over TCP) for the
// test's lifetime and returns its addresses.
func kfakeBrokers(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// registryCluster starts a one-broker kfake cluster and a schema registry
// over it, served on loopback HTTP, for the test's lifetime; it returns
// the brokers and a client of the registry.
func registryCluster(ctx context.Context, t *testing.T) ([]string, *registry.Client) {
	t.Helper()
	brokers := kfakeBrokers(t)
	reg, err := registry.Open(ctx, registry.Config{Kafka: kafka.Plain(brokers...), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	schemas, err := registry.NewClient(registry.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return brokers, schemas
}
