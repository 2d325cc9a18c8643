package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestPingWrongPassword: a wrong password fails at once, naming the
// principal and the mechanism and never the password.
func TestPingWrongPassword(t *testing.T) {
	c := aclCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := userProfile(c, "alice", "not-the-secret").Ping(ctx)
	took := time.Since(start)
	if !errors.Is(err, ErrLogin) {
		t.Fatalf("err = %v, want ErrLogin", err)
	}
	msg := err.Error()
	for _, want := range []string{"User:alice", "SCRAM-SHA-256", "password"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not name %s", msg, want)
		}
	}
	if strings.Contains(msg, "not-the-secret") {
		t.Errorf("%q shows the password", msg)
	}
	if took > 5*time.Second {
		t.Errorf("took %v to fail, want a few seconds at most", took)
	}
	t.Logf("failed in %v: %v", took, err)
	if _, err := userProfile(c, "alice", "alice-secret").Ping(ctx); err != nil {
		t.Errorf("right password: %v", err)
	}
}

// TestExplainDenied: a refusal names the operation, the resource and the
// principal, with the kafka-acls command that grants it.
func TestExplainDenied(t *testing.T) {
	c := aclCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := userProfile(c, "alice", "alice-secret")
	cl, err := p.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "orders2")
	if err == nil {
		err = resp.Err
	}
	need := Permission{Operation: Create, Resource: Resource{Type: Topic, Name: "orders2"}}
	err = p.Explain(err, need, Permission{Operation: Read, Resource: Resource{Type: Group, Name: "g"}})
	if !errors.Is(err, ErrDenied) {
		t.Fatalf("err = %v, want ErrDenied", err)
	}
	want := `Kafka refused CREATE on topic "orders2" for User:alice: grant it with kafka-acls --bootstrap-server ` +
		strings.Join(p.Brokers, ",") + ` --add --allow-principal User:alice --operation Create --topic orders2`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

// TestPingUntrustedCertificate: a certificate signed by an unknown CA, or
// one that does not name the host, fails at once with the setting to
// change.
func TestPingUntrustedCertificate(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafka"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"kafka.example"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	trusted := x509.NewCertPool()
	trusted.AddCert(leaf)
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		want string
	}{
		{"unknown CA", &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "kafka.example"}, "ssl.ca.location"},
		{"host name", &tls.Config{RootCAs: trusted}, "ssl.endpoint.identification.algorithm"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		_, err := Profile{Brokers: c.ListenAddrs(), TLS: tc.cfg}.Ping(ctx)
		cancel()
		if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a TLS error naming %s", tc.name, err, tc.want)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: took %v", tc.name, took)
		}
	}
	// With the name checked against the chain only, it connects.
	cfg := &tls.Config{RootCAs: trusted, ServerName: "kafka.example"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := (Profile{Brokers: c.ListenAddrs(), TLS: cfg}).Ping(ctx); err != nil {
		t.Errorf("trusted: %v", err)
	}
}

// TestExactlyOnceFloor: brokers advertising Kafka 2.4's API versions are
// refused, by name and guessed version; 2.5 and later are not.
func TestExactlyOnceFloor(t *testing.T) {
	for _, tc := range []struct {
		v  *kversion.Versions
		ok bool
	}{
		{kversion.V2_4_0(), false},
		{kversion.V2_5_0(), true},
		{kversion.V2_8_0(), true},
		{kversion.V3_6_0(), true},
		{kversion.Stable(), true},
	} {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(tc.v))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		brokers, err := Plain(c.ListenAddrs()...).Ping(ctx)
		cancel()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		err = ExactlyOnce(brokers)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.v.VersionGuess(), err)
		case !tc.ok && (!errors.Is(err, ErrTooOld) || !strings.Contains(err.Error(), "2.5")):
			t.Errorf("%s: %v, want refused naming 2.5", tc.v.VersionGuess(), err)
		case !tc.ok:
			t.Logf("%v", err)
		}
	}
	_ = kmsg.TxnOffsetCommit
}
