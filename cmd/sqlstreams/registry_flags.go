package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/registry"
	"github.com/sqlstreams/sqlstreams/types"
)

// registryFlags are the schema registry's flags.
type registryFlags struct {
	url, basicAuth, caFile, addr *string
}

func addRegistryFlags(fs *flag.FlagSet) *registryFlags {
	return &registryFlags{
		url:       stringFlag(fs, "schema-registry-url", "", "a Confluent-compatible schema registry for the AVRO format; empty serves the embedded one (with the embedded broker)"),
		basicAuth: stringFlag(fs, "schema-registry-basic-auth", "", "user:password for --schema-registry-url"),
		caFile:    stringFlag(fs, "schema-registry-ca-file", "", "PEM CA certificates that sign an https --schema-registry-url (default: the system's)"),
		addr:      stringFlag(fs, "schema-registry-addr", "127.0.0.1:8081", "where the embedded schema registry listens (with the embedded broker and no --schema-registry-url); empty turns it off"),
	}
}

type registrySettings struct {
	url, user, password, caFile, addr string
}

func (f *registryFlags) settings() (registrySettings, error) {
	s := registrySettings{url: *f.url, caFile: *f.caFile, addr: *f.addr}
	if *f.basicAuth != "" {
		u, p, ok := strings.Cut(*f.basicAuth, ":")
		if !ok {
			return s, errors.New("--schema-registry-basic-auth must be user:password")
		}
		s.user, s.password = u, p
	}
	if (s.user != "" || s.caFile != "") && s.url == "" {
		return s, errors.New("--schema-registry-basic-auth and --schema-registry-ca-file need --schema-registry-url")
	}
	return s, nil
}

// startSchemaRegistry returns the schema source the formats use: a client
// of --schema-registry-url, or, with the embedded broker, of the embedded
// registry it starts (stopped by the returned function). It returns nil
// when there is neither.
func startSchemaRegistry(ctx context.Context, log *slog.Logger, s registrySettings, kp kafka.Profile, embeddedBroker bool) (types.SchemaSource, func(), error) {
	nothing := func() {}
	if s.url != "" {
		cfg := registry.ClientConfig{URL: s.url, Username: s.user, Password: s.password}
		if s.caFile != "" {
			pem, err := os.ReadFile(s.caFile)
			if err != nil {
				return nil, nothing, fmt.Errorf("--schema-registry-ca-file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, nothing, fmt.Errorf("--schema-registry-ca-file: no certificates in %s", s.caFile)
			}
			cfg.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		cl, err := registry.NewClient(cfg)
		if err != nil {
			return nil, nothing, err
		}
		log.Info("using the schema registry", "url", s.url)
		return cl, nothing, nil
	}
	if !embeddedBroker || s.addr == "" {
		log.Info("no schema registry: the AVRO format is unavailable (give --schema-registry-url)")
		return nil, nothing, nil
	}
	octx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	reg, err := registry.Open(octx, registry.Config{Kafka: kp, Logger: log})
	cancel()
	if err != nil {
		return nil, nothing, fmt.Errorf("starting the schema registry: %w", err)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		reg.Close()
		return nil, nothing, fmt.Errorf("schema registry: %w", err)
	}
	hs := &http.Server{Handler: reg.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = hs.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	log.Info("schema registry listening", "addr", ln.Addr().String())
	cl, err := registry.NewClient(registry.ClientConfig{URL: url})
	if err != nil {
		hs.Close()
		reg.Close()
		return nil, nothing, err
	}
	return cl, func() { hs.Close(); reg.Close() }, nil
}
