package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Errors Explain returns wrap one of these (errors.Is), besides the
// client's own error.
var (
	// ErrDenied: the broker refused an operation for lack of an ACL
	// (the error is a *DeniedError).
	ErrDenied = errors.New("kafka: not authorized")
	// ErrLogin: the broker refused the SASL login (wrong user name or
	// password, or a mechanism it does not enable).
	ErrLogin = errors.New("kafka: login refused")
	// ErrTLS: the TLS handshake failed (an untrusted certificate, one
	// that does not name the broker's host, or TLS on one side only).
	ErrTLS = errors.New("kafka: TLS handshake failed")
	// ErrUnreachable: no broker answered the connection.
	ErrUnreachable = errors.New("kafka: brokers unreachable")
)

// DeniedError is Kafka's refusal of an operation for lack of an ACL.
type DeniedError struct {
	// Principal is who was refused.
	Principal string
	// Need are the permissions that may be missing: one when the
	// refusal names its resource, several when it could be any of them
	// (a transaction's offset commit covers every input topic), none
	// when the caller did not know.
	Need []Permission
	// Brokers are the profile's, for the kafka-acls commands.
	Brokers []string
	// Err is the client's error (a *kerr.Error inside).
	Err error
}

func (e *DeniedError) Error() string {
	code := "not authorized"
	if ke := (*kerr.Error)(nil); errors.As(e.Err, &ke) {
		code = ke.Message
	}
	switch len(e.Need) {
	case 0:
		return fmt.Sprintf("Kafka refused %s an operation (%s): %v", e.Principal, code, e.Err)
	case 1:
		n := e.Need[0]
		return fmt.Sprintf("Kafka refused %s for %s: grant it with %s", n, e.Principal, n.Grant(e.Principal, e.Brokers))
	}
	var what, grants []string
	for _, n := range e.Need {
		what = append(what, n.String())
		grants = append(grants, n.Grant(e.Principal, e.Brokers))
	}
	return fmt.Sprintf("Kafka refused %s %s (%s): grant what is missing with %s", e.Principal, strings.Join(what, " or "), code, strings.Join(grants, "; "))
}

// Unwrap returns ErrDenied and the client's error.
func (e *DeniedError) Unwrap() []error { return []error{ErrDenied, e.Err} }

// explained is an error Explain rewrote: a message for the user, its
// kind and the client's error.
type explained struct {
	msg  string
	kind error
	err  error
}

func (e *explained) Error() string   { return e.msg }
func (e *explained) Unwrap() []error { return []error{e.kind, e.err} }

// Denied reports whether err is a broker's refusal for lack of an ACL or
// of a login: an error retrying does not cure until someone changes the
// cluster's ACLs or the credentials.
func Denied(err error) bool {
	return deniedType(err) != 0 || errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, ErrLogin)
}

// deniedType is the type of resource an authorization error refuses, or
// 0.
func deniedType(err error) ResourceType {
	switch {
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return Topic
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		return Group
	case errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return TransactionalID
	case errors.Is(err, kerr.ClusterAuthorizationFailed):
		return Cluster
	}
	return 0
}

// Explain turns a client's error into one a user can act on: a refusal
// for lack of an ACL names the operation, the resource and the principal
// and gives the kafka-acls command that grants it (need are what the
// caller was doing: the permission of the refused resource's type is
// named, all of them when several could be); a refused login names the
// principal and the mechanism; a TLS failure says which certificate check
// failed and which setting changes it; unreachable brokers are named.
// Other errors, nil, and errors already explained come back as they are.
// No secret is ever part of the message.
func (p Profile) Explain(err error, need ...Permission) error {
	if err == nil {
		return nil
	}
	var d *DeniedError
	var x *explained
	if errors.As(err, &d) || errors.As(err, &x) {
		return err
	}
	if t := deniedType(err); t != 0 {
		var match []Permission
		for _, n := range need {
			if n.Type == t {
				match = append(match, n)
			}
		}
		return &DeniedError{Principal: p.principal(), Need: match, Brokers: p.Brokers, Err: err}
	}
	brokers := strings.Join(p.Brokers, ",")
	mech := ""
	if p.SASL != nil {
		mech = p.SASL.Name()
	}
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return &explained{kind: ErrLogin, err: err, msg: fmt.Sprintf(
			"Kafka at %s refused the login of %s (SASL %s): check the user name and password (sasl.jaas.config, or sasl.username and sasl.password): %v",
			brokers, p.principal(), mech, err)}
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return &explained{kind: ErrLogin, err: err, msg: fmt.Sprintf(
			"Kafka at %s does not enable sasl.mechanism %s on this listener: %v", brokers, mech, err)}
	case p.SASL != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		// Kafka answers a bad password with SASL_AUTHENTICATION_FAILED;
		// some brokers (kfake) close the connection instead.
		return &explained{kind: ErrLogin, err: err, msg: fmt.Sprintf(
			"Kafka at %s closed the connection as %s logged in (SASL %s): the user name or password is most likely wrong (check sasl.jaas.config, or sasl.username and sasl.password), or the listener expects another security.protocol than %s: %v",
			brokers, p.principal(), mech, p.Protocol(), err)}
	}
	var unknownCA x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var notTLS tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA):
		return &explained{kind: ErrTLS, err: err, msg: fmt.Sprintf(
			"the Kafka broker's certificate (at %s) is signed by a CA this server does not trust: set ssl.ca.location to the CA certificate that signed the brokers' certificates (without it the system's CAs are used): %v",
			brokers, err)}
	case errors.As(err, &host):
		return &explained{kind: ErrTLS, err: err, msg: fmt.Sprintf(
			"the Kafka broker's certificate does not name the host it was reached at (%s): use a name the certificate has in bootstrap.servers and the brokers' advertised.listeners, or set ssl.endpoint.identification.algorithm= (empty) to check only the chain: %v",
			brokers, err)}
	case errors.As(err, &invalid):
		return &explained{kind: ErrTLS, err: err, msg: fmt.Sprintf(
			"the Kafka broker's certificate (at %s) is not valid: %v", brokers, err)}
	case errors.As(err, &notTLS):
		return &explained{kind: ErrTLS, err: err, msg: fmt.Sprintf(
			"the Kafka broker at %s did not answer TLS: its listener is likely PLAINTEXT or SASL_PLAINTEXT, while security.protocol is %s: %v",
			brokers, p.Protocol(), err)}
	}
	if fe := (*kgo.ErrFirstReadEOF)(nil); errors.As(err, &fe) {
		return &explained{kind: ErrTLS, err: err, msg: fmt.Sprintf(
			"Kafka at %s closed the connection at once (security.protocol is %s; does the listener expect another?): %v",
			brokers, p.Protocol(), err)}
	}
	if oe := (*net.OpError)(nil); errors.As(err, &oe) && oe.Op == "dial" {
		return &explained{kind: ErrUnreachable, err: err, msg: fmt.Sprintf(
			"cannot reach the Kafka brokers at %s (bootstrap.servers): %v", brokers, err)}
	}
	return err
}
