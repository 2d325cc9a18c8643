package main

// This file holds the flags of the internal client: how this instance
// reaches the REST API of the other instances of its service when it
// forwards a pull query to the owner of a partition (engine/route.go).

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// internalFlags are the internal client's flags.
type internalFlags struct {
	credentials *string
	tlsCA       *string
}

func addInternalFlags(fs *flag.FlagSet) *internalFlags {
	return &internalFlags{
		credentials: stringFlag(fs, "internal-credentials", "",
			"file holding name:password (one line), the HTTP basic credentials this instance presents when it forwards a pull query to another instance whose REST API has --http-auth-users; that user must be in their users file"),
		tlsCA: stringFlag(fs, "internal-tls-ca", "",
			"PEM file of the certificates (or their CA) that other instances' HTTPS REST APIs present, for forwarded pull queries (default: the system's roots and this instance's own --http-tls-cert, enough when every instance serves the same certificate or one its CA signed)"),
	}
}

// forwardClient is the internal client a server forwards pull queries
// with, and the credentials it presents.
type forwardClient struct {
	client         *http.Client
	user, password string
}

// build makes the internal client: it trusts the CA file, else the
// system's roots and the server's own certificate (tlsCert, when set).
func (f *internalFlags) build(tlsCert string) (forwardClient, error) {
	var fc forwardClient
	if *f.credentials != "" {
		b, err := os.ReadFile(*f.credentials)
		if err != nil {
			return fc, fmt.Errorf("--internal-credentials: %w", err)
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		name, pass, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if !ok || strings.TrimSpace(name) == "" || pass == "" {
			return fc, errors.New("--internal-credentials: the file must hold name:password")
		}
		fc.user, fc.password = strings.TrimSpace(name), pass
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, path := range []string{*f.tlsCA, tlsCert} {
		if path == "" {
			continue
		}
		pem, err := os.ReadFile(path)
		if err != nil {
			return fc, fmt.Errorf("reading certificates for the internal client: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) && path == *f.tlsCA {
			return fc, fmt.Errorf("--internal-tls-ca %s holds no PEM certificate", path)
		}
		if *f.tlsCA != "" {
			break // the CA file given replaces the default
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	fc.client = &http.Client{Transport: tr, Timeout: time.Minute}
	return fc, nil
}
