package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/server/pgwire"
)

// pgFlags are the flags of the Postgres wire endpoint beyond its address.
type pgFlags struct {
	auth, users, usersFile       *string
	tlsCert, tlsKey              *string
	allowRemoteTrust             *bool
	maxConns, maxMessage         *string
	idleTimeout, statementTimout *string
}

func definePgFlags(fs *flag.FlagSet) *pgFlags {
	return &pgFlags{
		auth:             stringFlag(fs, "pg-auth", "trust", "Postgres client authentication: trust (anyone connects) or password (SCRAM-SHA-256 against --pg-users / --pg-users-file)"),
		users:            stringFlag(fs, "pg-users", "", "users for --pg-auth=password: user:password pairs, comma-separated (prefer the environment variable or --pg-users-file: flags show in ps)"),
		usersFile:        stringFlag(fs, "pg-users-file", "", "file of users for --pg-auth=password: one user:password per line; the password may be a Postgres SCRAM-SHA-256 verifier"),
		tlsCert:          stringFlag(fs, "pg-tls-cert", "", "PEM certificate file: serve TLS to Postgres clients that ask for it (with --pg-tls-key)"),
		tlsKey:           stringFlag(fs, "pg-tls-key", "", "PEM private key file for --pg-tls-cert"),
		allowRemoteTrust: boolFlag(fs, "pg-allow-remote-trust", false, "allow --pg-auth=trust on a non-loopback --pg-addr: anyone who reaches the port can run any statement"),
		maxConns:         stringFlag(fs, "pg-max-connections", strconv.Itoa(pgwire.DefaultMaxConnections), "most Postgres connections at once; 0 for no limit"),
		maxMessage:       stringFlag(fs, "pg-max-message-size", strconv.Itoa(32<<20), "largest Postgres message accepted, in bytes; a larger one closes the connection"),
		idleTimeout:      stringFlag(fs, "pg-idle-timeout", "0", "close Postgres connections idle between statements this long (e.g. 30m); 0 never"),
		statementTimout:  stringFlag(fs, "pg-statement-timeout", "0", "default statement_timeout of Postgres sessions (e.g. 5m), push queries included; 0 never"),
	}
}

// options checks the flags against the listen address and returns the
// server options they ask for.
func (f *pgFlags) options(addr string) ([]pgwire.Option, error) {
	var opts []pgwire.Option
	atoi := func(name, v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("--%s: want a non-negative integer, got %q", name, v)
		}
		return n, nil
	}
	dur := func(name, v string) (time.Duration, error) {
		if strings.TrimSpace(v) == "0" {
			return 0, nil
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return 0, fmt.Errorf("--%s: want a duration such as 30s or 5m, got %q", name, v)
		}
		return d, nil
	}
	switch *f.auth {
	case "trust":
		force := *f.allowRemoteTrust
		if !force && !loopback(addr) {
			return nil, fmt.Errorf("--pg-addr %s is not a loopback address and --pg-auth is trust: anyone who reaches it could run any statement; use --pg-auth=password, or force it with --pg-allow-remote-trust", addr)
		}
		if force {
			opts = append(opts, pgwire.WithInsecureListen())
		}
	case "password":
		users := pgwire.NewUsers()
		if *f.usersFile != "" {
			var err error
			if users, err = pgwire.LoadUsers(*f.usersFile); err != nil {
				return nil, fmt.Errorf("--pg-users-file: %w", err)
			}
		}
		for _, pair := range strings.Split(*f.users, ",") {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			user, pass, ok := strings.Cut(pair, ":")
			if !ok {
				return nil, errors.New("--pg-users: want user:password pairs")
			}
			if err := users.Add(strings.TrimSpace(user), pass); err != nil {
				return nil, fmt.Errorf("--pg-users: %w", err)
			}
		}
		if users.Len() == 0 {
			return nil, errors.New("--pg-auth=password needs users: give --pg-users or --pg-users-file")
		}
		opts = append(opts, pgwire.WithPasswordAuth(users))
	default:
		return nil, fmt.Errorf("--pg-auth: want trust or password, got %q", *f.auth)
	}
	if (*f.tlsCert == "") != (*f.tlsKey == "") {
		return nil, errors.New("--pg-tls-cert and --pg-tls-key go together")
	}
	if *f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*f.tlsCert, *f.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("loading the Postgres TLS certificate: %w", err)
		}
		opts = append(opts, pgwire.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}
	maxConns, err := atoi("pg-max-connections", *f.maxConns)
	if err != nil {
		return nil, err
	}
	maxMsg, err := atoi("pg-max-message-size", *f.maxMessage)
	if err != nil {
		return nil, err
	}
	idle, err := dur("pg-idle-timeout", *f.idleTimeout)
	if err != nil {
		return nil, err
	}
	stmt, err := dur("pg-statement-timeout", *f.statementTimout)
	if err != nil {
		return nil, err
	}
	return append(opts, pgwire.WithMaxConnections(maxConns), pgwire.WithMaxMessageSize(maxMsg),
		pgwire.WithIdleTimeout(idle), pgwire.WithStatementTimeout(stmt)), nil
}

// loopback reports whether addr's host is a loopback address or localhost.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
