package rest

// This file holds the server's access control: HTTP basic authentication
// against a users file, and the check that an unauthenticated server
// listens on loopback only.

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
)

// Users are the accounts HTTP basic authentication accepts. Passwords are
// kept as SHA-256 digests and compared in constant time.
type Users struct {
	digests map[string][sha256.Size]byte
}

// hashedPrefix marks a users-file password given as its SHA-256 digest.
const hashedPrefix = "sha256:"

// ParseUsers reads a users file: one "name:password" per line, where the
// password is either the password itself or "sha256:" followed by the hex
// SHA-256 digest of it (printf %s 'pw' | sha256sum). Blank lines and lines
// starting with # are ignored. Names may not contain ':'; a password may.
func ParseUsers(r io.Reader) (*Users, error) {
	u := &Users{digests: map[string][sha256.Size]byte{}}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if t := strings.TrimSpace(line); t == "" || t[0] == '#' {
			continue
		}
		name, pass, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("users file line %d: want name:password", n)
		}
		if _, dup := u.digests[name]; dup {
			return nil, fmt.Errorf("users file line %d: user %s appears twice", n, name)
		}
		var d [sha256.Size]byte
		if h, ok := strings.CutPrefix(pass, hashedPrefix); ok {
			b, err := hex.DecodeString(strings.TrimSpace(h))
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("users file line %d: %s needs 64 hex digits", n, hashedPrefix)
			}
			copy(d[:], b)
		} else {
			if pass == "" {
				return nil, fmt.Errorf("users file line %d: user %s has an empty password", n, name)
			}
			d = sha256.Sum256([]byte(pass))
		}
		u.digests[name] = d
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(u.digests) == 0 {
		return nil, fmt.Errorf("users file has no users")
	}
	return u, nil
}

// LoadUsers reads the users file at path (see ParseUsers).
func LoadUsers(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u, err := ParseUsers(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// Check reports whether name and password match an account.
func (u *Users) Check(name, password string) bool {
	want, ok := u.digests[name]
	got := sha256.Sum256([]byte(password))
	match := subtle.ConstantTimeCompare(want[:], got[:]) == 1
	return ok && match
}

// authorized reports whether r may use a protected endpoint.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.users == nil {
		return true
	}
	name, pass, ok := r.BasicAuth()
	return ok && s.cfg.users.Check(name, pass)
}

// RequireLoopback returns an error unless addr (host:port) listens on
// loopback only: 127.0.0.0/8, ::1 or a name that resolves to loopback
// addresses alone. An empty host, 0.0.0.0 or :: listen on every interface.
// The server calls it when it has no authentication, so that an open API
// that can create and drop streams is not reachable from the network by
// accident.
func RequireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	refuse := fmt.Errorf("%s is not a loopback address: the REST API would be reachable from other machines without authentication", addr)
	if host == "" {
		return refuse
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() {
			return nil
		}
		return refuse
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", host, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return refuse
		}
	}
	if len(ips) == 0 {
		return refuse
	}
	return nil
}
