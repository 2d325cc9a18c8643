package broker

// This file holds the broker's security: TLS on outside connections, SASL
// (SCRAM) users, the internal superuser the broker's own clients log in
// as, and the handshake fix that lets librdkafka 2.0 clients log in.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// User is a SASL account of the broker. It can log in with SCRAM-SHA-256
// and with SCRAM-SHA-512, and may do anything on the broker (the embedded
// broker has no ACLs).
type User struct {
	Name, Password string
}

// InternalUser is the name of the account the broker's own clients and
// [Broker.Profile]'s clients log in as when SASL is on. Its password is
// random, new at every start, and never logged or written down by the
// broker; a configured user may not take the name.
const InternalUser = "sqlstreams-internal"

// Mechanisms are the SASL mechanisms the broker's users log in with.
var Mechanisms = []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}

// ParseUsers reads a SASL users file: one "name:password" per line, the
// password as is (SCRAM needs it to derive its keys, so a digest will not
// do). Blank lines and lines starting with # are ignored. Names may not
// contain ':'; a password may.
func ParseUsers(r io.Reader) ([]User, error) {
	var users []User
	seen := map[string]bool{}
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
		if seen[name] {
			return nil, fmt.Errorf("users file line %d: user %s appears twice", n, name)
		}
		if pass == "" {
			return nil, fmt.Errorf("users file line %d: user %s has an empty password", n, name)
		}
		seen[name] = true
		users = append(users, User{Name: name, Password: pass})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, errors.New("users file has no users")
	}
	return users, nil
}

// LoadUsers reads the SASL users file at path (see [ParseUsers]).
func LoadUsers(path string) ([]User, error) {
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

// security is what Start derived from Config.TLS and Config.Users.
type security struct {
	// tls serves outside connections; nil is plaintext.
	tls *tls.Config
	// clientTLS is what Profile's clients use: the broker's own
	// certificate pinned, whatever name they dial.
	clientTLS *tls.Config
	// internal is the internal superuser's login; nil without SASL.
	internal sasl.Mechanism
}

// newSecurity checks the settings and returns the kfake options they
// need.
func newSecurity(cfg Config) (*security, []kfake.Opt, error) {
	s := &security{}
	var opts []kfake.Opt
	if cfg.TLS != nil {
		leaves := make([][]byte, 0, len(cfg.TLS.Certificates))
		for _, c := range cfg.TLS.Certificates {
			if len(c.Certificate) > 0 {
				leaves = append(leaves, c.Certificate[0])
			}
		}
		if len(leaves) == 0 {
			return nil, nil, errors.New("broker: the TLS configuration has no certificate")
		}
		s.tls = cfg.TLS.Clone()
		if s.tls.MinVersion == 0 {
			s.tls.MinVersion = tls.VersionTLS12
		}
		s.clientTLS = &tls.Config{
			MinVersion: tls.VersionTLS12,
			// The chain and name are not what is checked: the
			// certificate itself is, against the broker's own.
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) > 0 {
					for _, l := range leaves {
						if bytes.Equal(cs.PeerCertificates[0].Raw, l) {
							return nil
						}
					}
				}
				return errors.New("broker: the listener presented a certificate that is not the embedded broker's")
			},
		}
	}
	if len(cfg.Users) == 0 {
		return s, opts, nil
	}
	seen := map[string]bool{}
	for _, u := range cfg.Users {
		switch {
		case u.Name == "" || strings.ContainsAny(u.Name, ",="):
			// SCRAM escapes ',' and '='; kfake does not unescape them.
			return nil, nil, fmt.Errorf("broker: SASL user name %q: want a non-empty name without ',' or '='", u.Name)
		case u.Name == InternalUser:
			return nil, nil, fmt.Errorf("broker: SASL user name %s is reserved for the broker's own clients", InternalUser)
		case u.Password == "":
			return nil, nil, fmt.Errorf("broker: SASL user %s has an empty password", u.Name)
		case seen[u.Name]:
			return nil, nil, fmt.Errorf("broker: SASL user %s appears twice", u.Name)
		}
		seen[u.Name] = true
		for _, m := range Mechanisms {
			opts = append(opts, kfake.Superuser(m, u.Name, u.Password))
		}
	}
	pass, err := randomSecret()
	if err != nil {
		return nil, nil, err
	}
	s.internal = scram.Auth{User: InternalUser, Pass: pass}.AsSha512Mechanism()
	opts = append(opts, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", InternalUser, pass))
	return s, opts, nil
}

func randomSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("broker: internal password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// kfakeSASLFile is where kfake persists its SASL users in a DataDir. Start
// deletes it: the users are Config.Users, not the last run's (kfake would
// load the file over the configured users, and the internal superuser of
// the last run with them), and Close deletes it again so that no salted
// password stays on disk.
const kfakeSASLFile = "sasl.json"

func removeSASLFile(dataDir string) error {
	if dataDir == "" {
		return nil
	}
	err := os.Remove(filepath.Join(dataDir, kfakeSASLFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// protectInternalUser refuses AlterUserScramCredentials on the internal
// superuser: deleting or changing it would lock the broker out of itself.
func protectInternalUser(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.AlterUserSCRAMCredentials), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
		touches := false
		for _, d := range r.Deletions {
			touches = touches || d.Name == InternalUser
		}
		for _, u := range r.Upsertions {
			touches = touches || u.Name == InternalUser
		}
		if !touches {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		msg := "the embedded broker's internal user cannot be changed"
		names := map[string]bool{}
		for _, d := range r.Deletions {
			names[d.Name] = true
		}
		for _, u := range r.Upsertions {
			names[u.Name] = true
		}
		for name := range names {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User = name
			res.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			res.ErrorMessage = &msg
			resp.Results = append(resp.Results, res)
		}
		return resp, nil, true
	})
}

// handshakeV0Conn is an outside connection whose ApiVersions answers
// advertise SaslHandshake from version 0, as Kafka before 4.0 did.
//
// kfake implements SaslHandshake v1 only (v0 means the SASL bytes follow
// unframed, which it does not speak) and so advertises 1–1. librdkafka
// before 2.4 (Debian 12 ships 2.0.2: kcat, confluent-kafka) turns on its
// handshake support only when the broker lists version 0, and otherwise
// sends the unframed bytes kfake cannot read, so it cannot log in.
// Listing 0–1 makes it send the v1 handshake and SaslAuthenticate, which
// kfake serves; a client that really sends v0 is refused as before.
//
// kfake writes each response with one Write call, which this relies on:
// a write that is not a whole ApiVersions response passes through as is.
type handshakeV0Conn struct {
	net.Conn

	// Read side, one goroutine (kfake's reader): where in the request
	// stream we are.
	hdr  [12]byte // size, key, version, correlation ID
	nhdr int
	skip int64 // bytes left of the current request after its header
	lost bool  // the stream made no sense; stop looking

	mu      sync.Mutex
	pending map[int32]int16 // ApiVersions correlation ID → version
}

func newHandshakeV0Conn(c net.Conn) *handshakeV0Conn {
	return &handshakeV0Conn{Conn: c, pending: map[int32]int16{}}
}

func (c *handshakeV0Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.scan(p[:n])
	return n, err
}

// scan follows the request frames in b, noting ApiVersions requests.
func (c *handshakeV0Conn) scan(b []byte) {
	for len(b) > 0 && !c.lost {
		if c.skip > 0 {
			k := min(c.skip, int64(len(b)))
			c.skip -= k
			b = b[k:]
			continue
		}
		k := copy(c.hdr[c.nhdr:], b)
		c.nhdr += k
		b = b[k:]
		if c.nhdr < len(c.hdr) {
			return
		}
		c.nhdr = 0
		size := int32(binary.BigEndian.Uint32(c.hdr[0:4]))
		if size < 8 {
			c.lost = true
			return
		}
		c.skip = int64(size) - 8
		if key := int16(binary.BigEndian.Uint16(c.hdr[4:6])); key == int16(kmsg.ApiVersions) {
			c.mu.Lock()
			c.pending[int32(binary.BigEndian.Uint32(c.hdr[8:12]))] = int16(binary.BigEndian.Uint16(c.hdr[6:8]))
			c.mu.Unlock()
		}
	}
}

func (c *handshakeV0Conn) Write(b []byte) (int, error) {
	if len(b) >= 8 {
		corr := int32(binary.BigEndian.Uint32(b[4:8]))
		c.mu.Lock()
		version, ok := c.pending[corr]
		delete(c.pending, corr)
		c.mu.Unlock()
		if ok {
			if patched := patchApiVersions(b, version); patched != nil {
				if _, err := c.Conn.Write(patched); err != nil {
					return 0, err
				}
				return len(b), nil
			}
		}
	}
	return c.Conn.Write(b)
}

// patchApiVersions returns the ApiVersions response frame b (size,
// correlation ID, body; its header has no tagged fields, even when
// flexible) with SaslHandshake's minimum version lowered to 0, or nil to
// leave b alone.
func patchApiVersions(b []byte, version int16) []byte {
	// A version above what kfake serves is answered at v0 with an
	// error; leave such answers alone.
	if version < 0 || version > 5 || int(binary.BigEndian.Uint32(b[0:4])) != len(b)-4 {
		return nil
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	if err := resp.ReadFrom(b[8:]); err != nil || resp.ErrorCode != 0 {
		return nil
	}
	changed := false
	for i := range resp.ApiKeys {
		k := &resp.ApiKeys[i]
		if k.ApiKey == int16(kmsg.SASLHandshake) && k.MinVersion == 1 {
			k.MinVersion = 0
			changed = true
		}
	}
	if !changed {
		return nil
	}
	out := append([]byte(nil), b[:8]...)
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out[0:4], uint32(len(out)-4))
	return out
}

// wrap is applied to every outside connection: TLS, then the handshake
// fix when SASL is on.
func (s *security) wrap(c net.Conn) net.Conn {
	if s.tls != nil {
		c = tls.Server(c, s.tls)
	}
	if s.internal != nil {
		c = newHandshakeV0Conn(c)
	}
	return c
}

// protocol is the security.protocol clients need.
func (s *security) protocol() string {
	switch {
	case s.tls != nil && s.internal != nil:
		return "SASL_SSL"
	case s.tls != nil:
		return "SSL"
	case s.internal != nil:
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}
