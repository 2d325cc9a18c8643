package main

// This file holds the security flags of the embedded broker and the
// embedded schema registry (TLS, SASL users, basic authentication) and the
// rule that either listens beyond loopback only with them, or with an
// explicit --…-allow-remote, as pgwire and REST do.

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/server/rest"
)

// embeddedKafkaFlags are the embedded broker's security flags: the
// server's --embedded-kafka-…, sqlstreams broker's without the prefix.
type embeddedKafkaFlags struct {
	prefix, addrFlag string
	tlsCert, tlsKey  *string
	usersFile, users *string
	allowRemote      *bool
}

func addEmbeddedKafkaFlags(fs *flag.FlagSet, prefix, addrFlag string) *embeddedKafkaFlags {
	return &embeddedKafkaFlags{
		prefix: prefix, addrFlag: addrFlag,
		tlsCert: stringFlag(fs, prefix+"tls-cert", "", "PEM certificate file: the embedded broker serves TLS (security.protocol SSL, or SASL_SSL with users; needs --"+prefix+"tls-key)"),
		tlsKey:  stringFlag(fs, prefix+"tls-key", "", "PEM private key file of --"+prefix+"tls-cert"),
		usersFile: stringFlag(fs, prefix+"sasl-users-file", "",
			"file of the embedded broker's SASL users, one name:password per line: turns SASL on, every client logs in with SCRAM-SHA-256 or SCRAM-SHA-512 (security.protocol SASL_SSL or SASL_PLAINTEXT)"),
		users: stringFlag(fs, prefix+"sasl-users", "",
			"SASL users as for --"+prefix+"sasl-users-file: name:password pairs, comma-separated (prefer the file or the environment variable: flags show in ps)"),
		allowRemote: boolFlag(fs, prefix+"allow-remote", false,
			"allow a non-loopback --"+addrFlag+" without TLS and SASL users: anyone who reaches the port can then read, write and delete every topic"),
	}
}

// embeddedKafkaSettings are the parsed flags, checked against the listen
// address.
type embeddedKafkaSettings struct {
	tls   *tls.Config
	users []broker.User
	// insecureRemote: beyond loopback without TLS or users, allowed by
	// --…-allow-remote; worth a warning at start.
	insecureRemote bool
}

func (f *embeddedKafkaFlags) settings(addr string) (embeddedKafkaSettings, error) {
	var s embeddedKafkaSettings
	p := "--" + f.prefix
	if (*f.tlsCert == "") != (*f.tlsKey == "") {
		return s, fmt.Errorf("%stls-cert and %stls-key go together", p, p)
	}
	if *f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*f.tlsCert, *f.tlsKey)
		if err != nil {
			return s, fmt.Errorf("loading the embedded broker's TLS certificate: %w", err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if *f.usersFile != "" {
		u, err := broker.LoadUsers(*f.usersFile)
		if err != nil {
			return s, fmt.Errorf("%ssasl-users-file: %w", p, err)
		}
		s.users = u
	}
	for _, pair := range strings.Split(*f.users, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, pass, ok := strings.Cut(pair, ":")
		if !ok || strings.TrimSpace(name) == "" || pass == "" {
			return s, fmt.Errorf("%ssasl-users: want name:password pairs", p)
		}
		s.users = append(s.users, broker.User{Name: strings.TrimSpace(name), Password: pass})
	}
	if loopback(addr) {
		return s, nil
	}
	var missing []string
	if s.tls == nil {
		missing = append(missing, p+"tls-cert and "+p+"tls-key")
	}
	if len(s.users) == 0 {
		missing = append(missing, p+"sasl-users-file")
	}
	if len(missing) == 0 {
		return s, nil
	}
	if !*f.allowRemote {
		return s, fmt.Errorf("--%s %s is not a loopback address and the embedded broker has no %s: anyone who reaches it could read, write and delete every topic; set %s, or force it with %sallow-remote",
			f.addrFlag, addr, strings.Join(what(s.tls != nil, len(s.users) > 0, "TLS", "SASL users"), " and no "), strings.Join(missing, " and "), p)
	}
	s.insecureRemote = true
	return s, nil
}

// what names the missing ones of two protections.
func what(have1, have2 bool, name1, name2 string) []string {
	var out []string
	if !have1 {
		out = append(out, name1)
	}
	if !have2 {
		out = append(out, name2)
	}
	return out
}

// config is the broker's Config with these settings.
func (s embeddedKafkaSettings) config(cfg broker.Config) broker.Config {
	cfg.TLS, cfg.Users = s.tls, s.users
	return cfg
}

// embeddedRegistryFlags are the embedded schema registry's security flags
// (the server's and sqlstreams broker's alike).
type embeddedRegistryFlags struct {
	authUsers, tlsCert, tlsKey *string
	allowRemote                *bool
}

func addEmbeddedRegistryFlags(fs *flag.FlagSet) *embeddedRegistryFlags {
	return &embeddedRegistryFlags{
		authUsers: stringFlag(fs, "schema-registry-auth-users", "",
			"file of the embedded schema registry's users, one name:password (or name:sha256:<hex digest>) per line, as --http-auth-users: turns on HTTP basic authentication for every endpoint"),
		tlsCert: stringFlag(fs, "schema-registry-tls-cert", "", "PEM certificate file: serve the embedded schema registry over HTTPS (needs --schema-registry-tls-key)"),
		tlsKey:  stringFlag(fs, "schema-registry-tls-key", "", "PEM private key file of --schema-registry-tls-cert"),
		allowRemote: boolFlag(fs, "schema-registry-allow-remote", false,
			"allow a non-loopback --schema-registry-addr without TLS and --schema-registry-auth-users: anyone who reaches the port can then register and delete every subject"),
	}
}

// apply parses the flags into s and checks them against s.addr, the
// address the embedded registry will listen on ("" serves none).
func (f *embeddedRegistryFlags) apply(s *registrySettings) error {
	if (*f.tlsCert == "") != (*f.tlsKey == "") {
		return errors.New("--schema-registry-tls-cert and --schema-registry-tls-key go together")
	}
	if *f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*f.tlsCert, *f.tlsKey)
		if err != nil {
			return fmt.Errorf("loading the schema registry's TLS certificate: %w", err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if *f.authUsers != "" {
		u, err := rest.LoadUsers(*f.authUsers)
		if err != nil {
			return fmt.Errorf("--schema-registry-auth-users: %w", err)
		}
		s.users = u
	}
	if s.addr == "" || loopback(s.addr) {
		return nil
	}
	var missing []string
	if s.tls == nil {
		missing = append(missing, "--schema-registry-tls-cert and --schema-registry-tls-key")
	}
	if s.users == nil {
		missing = append(missing, "--schema-registry-auth-users")
	}
	if len(missing) == 0 {
		return nil
	}
	if !*f.allowRemote {
		return fmt.Errorf("--schema-registry-addr %s is not a loopback address and the schema registry has no %s: anyone who reaches it could register and delete every subject; set %s, or force it with --schema-registry-allow-remote",
			s.addr, strings.Join(what(s.tls != nil, s.users != nil, "TLS", "authentication"), " and no "), strings.Join(missing, " and "))
	}
	s.insecureRemote = true
	return nil
}

// registryInternalUser is who the server's own registry client logs in as
// when the embedded registry asks for basic authentication; its password
// is random at every start and never logged.
const registryInternalUser = "sqlstreams-internal"

// basicAuth lets a request through to h only with the credentials of one
// of users or the internal user's.
func basicAuth(h http.Handler, users *rest.Users, internalPass string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, pass, ok := r.BasicAuth()
		internal := subtle.ConstantTimeCompare([]byte(name), []byte(registryInternalUser)) &
			subtle.ConstantTimeCompare([]byte(pass), []byte(internalPass))
		if !ok || (internal != 1 && !users.Check(name, pass)) {
			w.Header().Set("WWW-Authenticate", `Basic realm="sqlstreams schema registry", charset="UTF-8"`)
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintln(w, `{"error_code":401,"message":"Unauthorized"}`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// pinnedTLS is a client configuration that trusts exactly the
// certificates of server (a listener of this process), whatever name it
// is reached by.
func pinnedTLS(server *tls.Config) *tls.Config {
	var leaves [][]byte
	for _, c := range server.Certificates {
		if len(c.Certificate) > 0 {
			leaves = append(leaves, c.Certificate[0])
		}
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // the certificate itself is checked below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) > 0 {
				for _, l := range leaves {
					if bytes.Equal(cs.PeerCertificates[0].Raw, l) {
						return nil
					}
				}
			}
			return errors.New("the listener presented a certificate that is not this server's")
		},
	}
}

func randomSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// securityProtocol is the security.protocol clients of the embedded broker
// need.
func securityProtocol(s embeddedKafkaSettings) string {
	switch {
	case s.tls != nil && len(s.users) > 0:
		return "SASL_SSL"
	case s.tls != nil:
		return "SSL"
	case len(s.users) > 0:
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}
