package pgwire

// This file authenticates clients with SCRAM-SHA-256 (RFC 5802, RFC 7677),
// as Postgres's scram-sha-256 method does.
//
// Supported: the SCRAM-SHA-256 mechanism without channel binding (clients
// that offer binding with "y,," or none with "n,," both work; TLS does not
// offer SCRAM-SHA-256-PLUS). Users come from a file or a list of
// user:password pairs; a password may be given as a Postgres SCRAM
// verifier (SCRAM-SHA-256$iterations:salt$StoredKey:ServerKey, as
// pg_authid.rolpassword holds it) instead of plain text. Not supported:
// md5 and cleartext password exchanges.
//
// An unknown user goes through the same exchange against a made-up
// verifier (derived from a per-server secret, so it is stable) and fails
// the same way as a wrong password: neither the client nor the log says
// which of the two was wrong.

import (
	"bufio"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/sql"
)

// scramIterations is the PBKDF2 iteration count for verifiers made from
// plain-text passwords (Postgres's default).
const scramIterations = 4096

// verifier is what the server keeps of a password.
type verifier struct {
	iter      int
	salt      []byte
	storedKey []byte
	serverKey []byte
}

// Users is a set of users and their SCRAM verifiers, for
// WithPasswordAuth. It is safe for concurrent use.
type Users struct {
	mu     sync.RWMutex
	users  map[string]verifier
	secret []byte // for made-up verifiers of unknown users
}

// NewUsers returns an empty set of users.
func NewUsers() *Users {
	secret := make([]byte, 32)
	rand.Read(secret)
	return &Users{users: map[string]verifier{}, secret: secret}
}

// Add adds or replaces a user. password is plain text, or a Postgres SCRAM
// verifier (starting with "SCRAM-SHA-256$").
func (u *Users) Add(user, password string) error {
	if user == "" {
		return errors.New("empty user name")
	}
	var v verifier
	if strings.HasPrefix(password, "SCRAM-SHA-256$") {
		var err error
		if v, err = parseVerifier(password); err != nil {
			return fmt.Errorf("user %s: %w", user, err)
		}
	} else {
		if password == "" {
			return fmt.Errorf("user %s: empty password", user)
		}
		salt := make([]byte, 16)
		rand.Read(salt)
		v = makeVerifier(password, salt, scramIterations)
	}
	u.mu.Lock()
	u.users[user] = v
	u.mu.Unlock()
	return nil
}

// Len returns the number of users.
func (u *Users) Len() int {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return len(u.users)
}

// ParseUsers reads users from r: one user:password per line (the password
// may be a SCRAM verifier); blank lines and lines starting with # are
// skipped.
func ParseUsers(r io.Reader) (*Users, error) {
	u := NewUsers()
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, pass, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want user:password", n)
		}
		if err := u.Add(strings.TrimSpace(user), pass); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	return u, sc.Err()
}

// LoadUsers reads a users file (see ParseUsers).
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

// ScramVerifier returns the Postgres SCRAM-SHA-256 verifier of password
// with a random salt, for a users file that should not hold plain text.
func ScramVerifier(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	v := makeVerifier(password, salt, scramIterations)
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", v.iter, b64(v.salt), b64(v.storedKey), b64(v.serverKey))
}

func makeVerifier(password string, salt []byte, iter int) verifier {
	salted, _ := pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
	clientKey := hmacSHA256(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	return verifier{iter: iter, salt: salt, storedKey: stored[:], serverKey: hmacSHA256(salted, "Server Key")}
}

func parseVerifier(s string) (verifier, error) {
	bad := errors.New("malformed SCRAM-SHA-256 verifier")
	rest := strings.TrimPrefix(s, "SCRAM-SHA-256$")
	iterSalt, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return verifier{}, bad
	}
	iterS, saltS, ok1 := strings.Cut(iterSalt, ":")
	storedS, serverS, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return verifier{}, bad
	}
	iter, err := strconv.Atoi(iterS)
	if err != nil || iter < 1 {
		return verifier{}, bad
	}
	dec := base64.StdEncoding.DecodeString
	salt, err1 := dec(saltS)
	stored, err2 := dec(storedS)
	server, err3 := dec(serverS)
	if err1 != nil || err2 != nil || err3 != nil || len(stored) != sha256.Size || len(server) != sha256.Size {
		return verifier{}, bad
	}
	return verifier{iter: iter, salt: salt, storedKey: stored, serverKey: server}, nil
}

// lookup returns user's verifier, or a made-up one and false.
func (u *Users) lookup(user string) (verifier, bool) {
	u.mu.RLock()
	v, ok := u.users[user]
	u.mu.RUnlock()
	if ok {
		return v, true
	}
	salt := hmacSHA256(u.secret, "salt:"+user)[:16]
	return verifier{iter: scramIterations, salt: salt, storedKey: hmacSHA256(u.secret, "stored:"+user), serverKey: hmacSHA256(u.secret, "server:"+user)}, false
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// errAuthFailed is what a client hears after any failed login.
func errAuthFailed(user string) error {
	return sql.Errorf(codeInvalidPassword, "password authentication failed for user %q", user)
}

// authenticate runs the SCRAM-SHA-256 exchange for user. It reports nil
// when the client proved it knows the password; otherwise the error to
// send (always the same for a wrong password or an unknown user, unless
// the client broke the protocol).
func (c *conn) authenticate(user string) error {
	v, known := c.srv.cfg.users.lookup(user)
	c.w.send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if err := c.w.flush(); err != nil {
		return err
	}
	// client-first-message
	body, err := c.readPassword()
	if err != nil {
		return err
	}
	var first pgproto3.SASLInitialResponse
	if err := first.Decode(body); err != nil {
		return protocolErrorf("invalid SASL initial response: %v", err)
	}
	if first.AuthMechanism != "SCRAM-SHA-256" {
		return sql.Errorf(codeInvalidAuthSpec, "SASL authentication mechanism %q is not supported; use SCRAM-SHA-256", first.AuthMechanism)
	}
	msg := string(first.Data)
	var gs2 string
	switch {
	case strings.HasPrefix(msg, "n,,"), strings.HasPrefix(msg, "y,,"):
		gs2 = msg[:3]
	case strings.HasPrefix(msg, "p="):
		return sql.Errorf(codeProtocolViolation, "channel binding is not supported: the server does not offer SCRAM-SHA-256-PLUS")
	default:
		return protocolErrorf("malformed SCRAM client-first-message")
	}
	clientFirstBare := msg[3:]
	var clientNonce string
	for _, attr := range strings.Split(clientFirstBare, ",") {
		if strings.HasPrefix(attr, "r=") {
			clientNonce = attr[2:]
		}
	}
	if clientNonce == "" || strings.HasPrefix(clientFirstBare, "m=") {
		return protocolErrorf("malformed SCRAM client-first-message")
	}
	snonce := make([]byte, 18)
	rand.Read(snonce)
	nonce := clientNonce + base64.StdEncoding.EncodeToString(snonce)
	serverFirst := "r=" + nonce + ",s=" + base64.StdEncoding.EncodeToString(v.salt) + ",i=" + strconv.Itoa(v.iter)
	c.w.send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)})
	if err := c.w.flush(); err != nil {
		return err
	}
	// client-final-message: c=…,r=…,p=…
	if body, err = c.readPassword(); err != nil {
		return err
	}
	var final pgproto3.SASLResponse
	if err := final.Decode(body); err != nil {
		return protocolErrorf("invalid SASL response: %v", err)
	}
	clientFinal := string(final.Data)
	i := strings.LastIndex(clientFinal, ",p=")
	if i < 0 {
		return protocolErrorf("malformed SCRAM client-final-message")
	}
	withoutProof := clientFinal[:i]
	proof, err := base64.StdEncoding.DecodeString(clientFinal[i+3:])
	if err != nil || len(proof) != sha256.Size {
		return protocolErrorf("malformed SCRAM proof")
	}
	var gotBinding, gotNonce string
	for _, attr := range strings.Split(withoutProof, ",") {
		switch {
		case strings.HasPrefix(attr, "c="):
			gotBinding = attr[2:]
		case strings.HasPrefix(attr, "r="):
			gotNonce = attr[2:]
		}
	}
	if gotBinding != base64.StdEncoding.EncodeToString([]byte(gs2)) || gotNonce != nonce {
		return errAuthFailed(user)
	}
	authMessage := clientFirstBare + "," + serverFirst + "," + withoutProof
	clientSig := hmacSHA256(v.storedKey, authMessage)
	clientKey := make([]byte, sha256.Size)
	for k := range clientKey {
		clientKey[k] = proof[k] ^ clientSig[k]
	}
	sum := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(sum[:], v.storedKey) != 1 || !known {
		return errAuthFailed(user)
	}
	serverSig := hmacSHA256(v.serverKey, authMessage)
	c.w.send(&pgproto3.AuthenticationSASLFinal{Data: []byte("v=" + base64.StdEncoding.EncodeToString(serverSig))})
	return nil
}

// readPassword reads the next message, which must be a password message
// ('p') during authentication.
func (c *conn) readPassword() ([]byte, error) {
	typ, body, err := c.rd.readRaw()
	if err != nil {
		return nil, err
	}
	if typ != 'p' {
		return nil, protocolErrorf("expected SASL response, got message type %s", msgTypeName(typ))
	}
	return body, nil
}
