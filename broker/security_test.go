package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
)

// secureBroker starts a broker with TLS (a certificate of a test CA for
// 127.0.0.1) and one SCRAM user, alice.
func secureBroker(t *testing.T, cfg Config) (*Broker, *x509.CertPool) {
	t.Helper()
	ca := kafkatest.NewCA(t)
	cfg.TLS = ca.ServerTLS(t, false)
	cfg.Users = []User{{Name: "alice", Password: "alice-secret"}}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	b := startBroker(t, cfg)
	t.Cleanup(b.Close)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	return b, pool
}

// userProfile is how a user's client reaches the broker: SASL_SSL, the
// test CA, SCRAM with the given mechanism.
func userProfile(b *Broker, pool *x509.CertPool, user, pass string, sha512 bool) kafka.Profile {
	p := kafka.Plain(b.Addr())
	p.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	a := scram.Auth{User: user, Pass: pass}
	p.SASL = a.AsSha256Mechanism()
	if sha512 {
		p.SASL = a.AsSha512Mechanism()
	}
	return p
}

// TestSecureBrokerLogin: a broker with TLS and SCRAM users serves a client
// with the right credentials, by either SCRAM mechanism, and refuses a
// wrong password, an unknown user, a client without SASL and one without
// TLS; its own clients (the log cleaner, the checkpoint) still work.
func TestSecureBrokerLogin(t *testing.T) {
	dir := t.TempDir()
	b, pool := secureBroker(t, Config{DataDir: dir})

	for _, sha512 := range []bool{false, true} {
		cl, err := userProfile(b, pool, "alice", "alice-secret", sha512).NewClient(kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		adm := kadm.NewClient(cl)
		topic := "t256"
		if sha512 {
			topic = "t512"
		}
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("sha512=%v: create topic: %v", sha512, err)
		}
		if err := cl.ProduceSync(ctx, rec(topic, 0, "v")).FirstErr(); err != nil {
			t.Fatalf("sha512=%v: produce: %v", sha512, err)
		}
		cancel()
		cl.Close()
	}

	refused := func(name string, p kafka.Profile) {
		t.Helper()
		cl, err := p.NewClient(kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := kadm.NewClient(cl).ListTopics(ctx); err == nil {
			t.Errorf("%s: listed topics, want a refusal", name)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
	refused("wrong password", userProfile(b, pool, "alice", "wrong", true))
	refused("unknown user", userProfile(b, pool, "mallory", "alice-secret", false))
	noSASL := userProfile(b, pool, "alice", "alice-secret", true)
	noSASL.SASL = nil
	refused("no SASL", noSASL)
	noTLS := userProfile(b, pool, "alice", "alice-secret", true)
	noTLS.TLS = nil
	refused("no TLS", noTLS)
	wrongCA := userProfile(b, x509.NewCertPool(), "alice", "alice-secret", true)
	refused("untrusted certificate", wrongCA)

	// The profile the server builds for its own clients: internal
	// credentials, the certificate pinned.
	cl, err := b.Profile(kafka.Plain()).NewClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	cl.Close()
	if err != nil || !topics.Has("t512") {
		t.Fatalf("Profile's client: %v, %v", topics.Names(), err)
	}
	if got, err := b.compactNow(ctx); err != nil {
		t.Fatalf("the broker's own client (cleaner): %v %v", got, err)
	}

	// A user may not lock the broker out of itself.
	admin, err := userProfile(b, pool, "alice", "alice-secret", true).NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	res, err := kadm.NewClient(admin).AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: InternalUser, Mechanism: kadm.ScramSha512}}, nil)
	if err == nil {
		err = res.Error()
	}
	if err == nil {
		t.Fatalf("deleting %s was allowed", InternalUser)
	}
	t.Logf("deleting %s: %v", InternalUser, err)

	// No salted password stays on disk after a stop, and a restart on
	// the same directory (a new internal password) serves its users.
	b.Close()
	if _, err := os.Stat(filepath.Join(dir, kfakeSASLFile)); !os.IsNotExist(err) {
		t.Fatalf("%s after Close: %v", kfakeSASLFile, err)
	}
	b2 := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir, TLS: b.sec.tls, Users: []User{{"alice", "alice-secret"}}})
	defer b2.Close()
	cl, err = userProfile(b2, pool, "alice", "alice-secret", true).NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if topics, err := kadm.NewClient(cl).ListTopics(ctx); err != nil || !topics.Has("t256") {
		t.Fatalf("after restart: %v, %v", topics.Names(), err)
	}
}

// TestSecurityConfigErrors: what Start refuses.
func TestSecurityConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{TLS: &tls.Config{}}, "no certificate"},
		{Config{Users: []User{{InternalUser, "x"}}}, "reserved"},
		{Config{Users: []User{{"a", ""}}}, "empty password"},
		{Config{Users: []User{{"a", "x"}, {"a", "y"}}}, "twice"},
		{Config{Users: []User{{"a,b", "x"}}}, "without ','"},
	} {
		c.cfg.Addr = "127.0.0.1:0"
		b, err := Start(context.Background(), c.cfg)
		if err == nil {
			b.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg.Users, err, c.want)
		}
	}
}

func TestParseUsers(t *testing.T) {
	users, err := ParseUsers(strings.NewReader("# users\nalice:pa:ss\n\n bob :x\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []User{{"alice", "pa:ss"}, {"bob", "x"}}; !slices.Equal(users, want) {
		t.Fatalf("got %v, want %v", users, want)
	}
	for _, bad := range []string{"", "# only\n", "alice\n", "alice:\n", "a:1\na:2\n"} {
		if _, err := ParseUsers(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestHandshakeV0Advertised: with SASL on, outside clients are told that
// SaslHandshake starts at version 0 (what librdkafka 2.0 needs to log in);
// the rest of kfake's answer is unchanged.
func TestHandshakeV0Advertised(t *testing.T) {
	b := startBroker(t, Config{Addr: "127.0.0.1:0", Users: []User{{"alice", "pw"}}})
	defer b.Close()
	for _, version := range []int16{0, 1, 2, 3, 4} {
		resp := apiVersions(t, b.Addr(), version)
		var hs *kmsg.ApiVersionsResponseApiKey
		for i := range resp.ApiKeys {
			if resp.ApiKeys[i].ApiKey == int16(kmsg.SASLHandshake) {
				hs = &resp.ApiKeys[i]
			}
		}
		if hs == nil || hs.MinVersion != 0 || hs.MaxVersion != 1 {
			t.Fatalf("v%d: SaslHandshake advertised as %+v, want 0–1", version, hs)
		}
		if len(resp.ApiKeys) < 40 {
			t.Fatalf("v%d: only %d keys advertised", version, len(resp.ApiKeys))
		}
		if version >= 3 && len(resp.SupportedFeatures) == 0 {
			t.Fatalf("v%d: features lost", version)
		}
	}
}

// apiVersions sends one ApiVersions request over a raw connection.
func apiVersions(t *testing.T, addr string, version int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	body := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 7)
	if _, err := c.Write(body); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(buf[:4])); corr != 7 {
		t.Fatalf("correlation ID %d", corr)
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if err := resp.ReadFrom(buf[4:]); err != nil {
		t.Fatal(err)
	}
	return resp
}
