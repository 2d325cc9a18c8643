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
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/registry"
	"github.com/sqlstreams/sqlstreams/server/rest"
	"github.com/sqlstreams/sqlstreams/types"
)

// registryFlags are the schema registry's flags.
type registryFlags struct {
	url, basicAuth, caFile, addr *string
	embedded                     *embeddedRegistryFlags
}

func addRegistryFlags(fs *flag.FlagSet) *registryFlags {
	return &registryFlags{
		url:       stringFlag(fs, "schema-registry-url", "", "a Confluent-compatible schema registry for the AVRO format; empty serves the embedded one (with the embedded broker)"),
		basicAuth: stringFlag(fs, "schema-registry-basic-auth", "", "user:password for --schema-registry-url"),
		caFile:    stringFlag(fs, "schema-registry-ca-file", "", "PEM CA certificates that sign an https --schema-registry-url (default: the system's)"),
		addr:      stringFlag(fs, "schema-registry-addr", "127.0.0.1:8081", "where the embedded schema registry listens (with the embedded broker and no --schema-registry-url); empty turns it off"),
		embedded:  addEmbeddedRegistryFlags(fs),
	}
}

type registrySettings struct {
	url, user, password, caFile, addr string

	// The embedded registry's security: TLS, basic authentication,
	// and whether it listens beyond loopback without them.
	tls            *tls.Config
	users          *rest.Users
	insecureRemote bool
}

// settings parses the flags; embeddedBroker says whether the server runs
// the embedded broker, and so serves the embedded registry when no
// --schema-registry-url is given.
func (f *registryFlags) settings(embeddedBroker bool) (registrySettings, error) {
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
	if s.url != "" && (*f.embedded.authUsers != "" || *f.embedded.tlsCert != "") {
		return s, errors.New("--schema-registry-auth-users and --schema-registry-tls-cert are for the embedded schema registry; with --schema-registry-url, use --schema-registry-basic-auth and --schema-registry-ca-file")
	}
	if !embeddedBroker || s.url != "" {
		s.addr = "" // no embedded registry
		return s, nil
	}
	return s, f.embedded.apply(&s)
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
	handler := reg.Handler()
	clientCfg := registry.ClientConfig{}
	if s.users != nil {
		// The server's own client logs in as the internal user.
		pass, err := randomSecret()
		if err != nil {
			ln.Close()
			reg.Close()
			return nil, nothing, fmt.Errorf("schema registry: %w", err)
		}
		handler = basicAuth(handler, s.users, pass)
		clientCfg.Username, clientCfg.Password = registryInternalUser, pass
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: s.tls,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	scheme := "http"
	if s.tls != nil {
		scheme = "https"
		clientCfg.TLS = pinnedTLS(s.tls)
		go func() { _ = hs.ServeTLS(ln, "", "") }()
	} else {
		go func() { _ = hs.Serve(ln) }()
	}
	if s.insecureRemote {
		log.Warn("the schema registry listens beyond loopback without both TLS and authentication (--schema-registry-allow-remote)", "addr", s.addr)
	}
	clientCfg.URL = scheme + "://" + localAddr(ln.Addr())
	log.Info("schema registry listening", "addr", ln.Addr().String(), "scheme", scheme, "auth", s.users != nil)
	cl, err := registry.NewClient(clientCfg)
	if err != nil {
		hs.Close()
		reg.Close()
		return nil, nothing, err
	}
	return cl, func() { hs.Close(); reg.Close() }, nil
}

// localAddr is where a client in this process reaches a listener on addr:
// addr itself, or loopback for a listener on every interface.
func localAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	// A wildcard listener of network "tcp" is dual-stack: IPv4
	// loopback reaches it.
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}
