package main

// This file holds the REST API's flags and turns them into a server:
// authentication, TLS, the loopback rule and request limits.

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/server/rest"
)

// restFlags are the REST API's flags (besides --http-addr).
type restFlags struct {
	authUsers      *string
	tlsCert        *string
	tlsKey         *string
	allowRemote    *bool
	maxBodyBytes   *int64
	maxPushQueries *int
}

func addRESTFlags(fs *flag.FlagSet) *restFlags {
	return &restFlags{
		authUsers: stringFlag(fs, "http-auth-users", "",
			"file of REST API users, one name:password (or name:sha256:<hex digest>) per line; turns on HTTP basic authentication for every endpoint but /healthcheck"),
		tlsCert: stringFlag(fs, "http-tls-cert", "", "PEM certificate file: serve the REST API over HTTPS (needs --http-tls-key)"),
		tlsKey:  stringFlag(fs, "http-tls-key", "", "PEM private key file of --http-tls-cert"),
		allowRemote: boolFlag(fs, "http-allow-remote", false,
			"allow a non-loopback --http-addr without --http-auth-users: anyone who reaches the port can then run any statement"),
		maxBodyBytes:   int64Flag(fs, "http-max-body-bytes", rest.DefaultMaxBodyBytes, "largest REST request body (and /inserts-stream line) in bytes"),
		maxPushQueries: intFlag(fs, "http-max-push-queries", rest.DefaultMaxPushQueries, "most push queries running at once over REST"),
	}
}

// restSettings are the parsed REST flags.
type restSettings struct {
	authUsers, tlsCert, tlsKey string
	allowRemote                bool
	maxBodyBytes               int64
	maxPushQueries             int
}

func (f *restFlags) settings() restSettings {
	return restSettings{
		authUsers: *f.authUsers, tlsCert: *f.tlsCert, tlsKey: *f.tlsKey, allowRemote: *f.allowRemote,
		maxBodyBytes: *f.maxBodyBytes, maxPushQueries: *f.maxPushQueries,
	}
}

// build checks the settings against the listen address and returns the
// REST server's options and, with TLS, its configuration. Without users,
// a non-loopback address is refused unless allowRemote is set.
func (s restSettings) build(addr string, log *slog.Logger, reg *metrics.Registry, info rest.Info) ([]rest.Opt, *tls.Config, error) {
	opts := []rest.Opt{
		rest.WithLogger(log), rest.WithMetrics(reg), rest.WithInfo(info),
		rest.WithMaxBodyBytes(s.maxBodyBytes), rest.WithMaxPushQueries(s.maxPushQueries),
	}
	var users *rest.Users
	if s.authUsers != "" {
		u, err := rest.LoadUsers(s.authUsers)
		if err != nil {
			return nil, nil, fmt.Errorf("--http-auth-users: %w", err)
		}
		users = u
		opts = append(opts, rest.WithUsers(u))
	}
	if users == nil {
		if err := rest.RequireLoopback(addr); err != nil {
			if !s.allowRemote {
				return nil, nil, fmt.Errorf("--http-addr %w; set --http-auth-users, or --http-allow-remote to accept this", err)
			}
			log.Warn("the REST API listens beyond loopback without authentication (--http-allow-remote)", "addr", addr)
		}
	}
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return nil, nil, fmt.Errorf("--http-tls-cert and --http-tls-key go together")
	}
	var tlsCfg *tls.Config
	if s.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(s.tlsCert, s.tlsKey)
		if err != nil {
			return nil, nil, fmt.Errorf("loading the REST API's TLS certificate: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	} else if users != nil && rest.RequireLoopback(addr) != nil {
		log.Warn("REST API passwords travel in clear text: set --http-tls-cert and --http-tls-key", "addr", addr)
	}
	return opts, tlsCfg, nil
}

// boolFlag defines a bool flag whose default comes from its environment
// variable when set (true/false, 1/0).
func boolFlag(fs *flag.FlagSet, name string, def bool, usage string) *bool {
	if v, ok := os.LookupEnv(envName(name)); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams: ignoring %s=%q: %v\n", envName(name), v, err)
		} else {
			def = b
		}
	}
	return fs.Bool(name, def, usage+" (env "+envName(name)+")")
}

// intFlag defines an int flag whose default comes from its environment
// variable when set.
func intFlag(fs *flag.FlagSet, name string, def int, usage string) *int {
	if v, ok := os.LookupEnv(envName(name)); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams: ignoring %s=%q: %v\n", envName(name), v, err)
		} else {
			def = n
		}
	}
	return fs.Int(name, def, usage+" (env "+envName(name)+")")
}

// int64Flag is intFlag for int64 values.
func int64Flag(fs *flag.FlagSet, name string, def int64, usage string) *int64 {
	if v, ok := os.LookupEnv(envName(name)); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams: ignoring %s=%q: %v\n", envName(name), v, err)
		} else {
			def = n
		}
	}
	return fs.Int64(name, def, usage+" (env "+envName(name)+")")
}
