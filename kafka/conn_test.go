package kafka_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
)

// roundTrip produces a record with a client of p and reads it back: the
// profile reaches the cluster.
func roundTrip(t *testing.T, p kafka.Profile) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	topic := "rt" + strings.ReplaceAll(t.Name(), "/", "_")
	cl, err := p.NewClient(kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		return err
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		return err
	}
	if fs.NumRecords() != 1 || string(fs.Records()[0].Value) != "hello" {
		t.Fatalf("read back %d records", fs.NumRecords())
	}
	return nil
}

// TestSASLOverTLS: each mechanism kfake speaks, over TLS with the test's
// CA and host name verification, by Java's and librdkafka's names.
func TestSASLOverTLS(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			c := kafkatest.NewCluster(t, kafkatest.Options{Brokers: 1, Mechanism: mech})
			if err := roundTrip(t, c.AdminProfile(t)); err != nil {
				t.Fatalf("Java names (sasl.jaas.config): %v", err)
			}
			p, _, err := kafka.Parse(props("metadata.broker.list", c.Brokers[0], "security.protocol", "SASL_SSL",
				"sasl.mechanisms", mech, "sasl.username", c.AdminUser, "sasl.password", c.AdminPassword, "ssl.ca.location", c.CAFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := roundTrip(t, p); err != nil {
				t.Fatalf("librdkafka names: %v", err)
			}
			if mech != "SCRAM-SHA-512" {
				return
			}
			bad, _, _ := kafka.Parse(props("bootstrap.servers", c.Brokers[0], "security.protocol", "SASL_SSL",
				"sasl.mechanism", mech, "sasl.username", c.AdminUser, "sasl.password", "wrong", "ssl.ca.location", c.CAFile))
			if err := roundTrip(t, bad); err == nil {
				t.Fatal("a wrong password connected")
			}
		})
	}
}

// TestTLSVerification: a broker whose certificate another CA signed is
// refused; one whose certificate names another host is refused unless
// ssl.endpoint.identification.algorithm is empty (the chain is still
// verified); mutual TLS presents the client's certificate.
func TestTLSVerification(t *testing.T) {
	ca := kafkatest.NewCA(t)
	other := kafkatest.NewCA(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(ca.ServerTLS(t, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cert, key := ca.Issue(t, "svc-client")
	certFile, keyFile := kafkatest.WriteFile(t, "client.pem", cert), kafkatest.WriteFile(t, "client.key", key)
	caFile, otherFile := kafkatest.WriteFile(t, "ca.pem", ca.CertPEM), kafkatest.WriteFile(t, "other.pem", other.CertPEM)
	mtls := func(ca string, extra ...string) kafka.Profile {
		p, _, err := kafka.Parse(append(props("bootstrap.servers", addr, "security.protocol", "SSL", "ssl.ca.location", ca,
			"ssl.certificate.location", certFile, "ssl.key.location", keyFile), props(extra...)...))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := mtls(caFile)
	if p.Principal != "User:CN=svc-client" {
		t.Errorf("principal %q, want the certificate's subject", p.Principal)
	}
	if err := roundTrip(t, p); err != nil {
		t.Fatalf("mutual TLS: %v", err)
	}
	if err := roundTrip(t, mtls(otherFile)); err == nil {
		t.Fatal("a broker signed by an untrusted CA was accepted")
	}
	noCert, _, _ := kafka.Parse(props("bootstrap.servers", addr, "security.protocol", "SSL", "ssl.ca.location", caFile))
	if err := roundTrip(t, noCert); err == nil {
		t.Fatal("connected without the client certificate the broker requires")
	}

	// A certificate for another host name.
	srv, srvKey := ca.Issue(t, "broker", "kafka.internal.example")
	pair, err := tlsPair(srv, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(pair))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	strict, _, _ := kafka.Parse(props("bootstrap.servers", c2.ListenAddrs()[0], "security.protocol", "SSL", "ssl.ca.location", caFile))
	if err := roundTrip(t, strict); err == nil {
		t.Fatal("a certificate for another host name was accepted with host name verification on")
	}
	lax, _, _ := kafka.Parse(props("bootstrap.servers", c2.ListenAddrs()[0], "security.protocol", "SSL", "ssl.ca.location", caFile,
		"ssl.endpoint.identification.algorithm", ""))
	if err := roundTrip(t, lax); err != nil {
		t.Fatalf("ssl.endpoint.identification.algorithm empty: %v", err)
	}
	laxOther, _, _ := kafka.Parse(props("bootstrap.servers", c2.ListenAddrs()[0], "security.protocol", "SSL", "ssl.ca.location", otherFile,
		"ssl.endpoint.identification.algorithm", ""))
	if err := roundTrip(t, laxOther); err == nil {
		t.Fatal("without host name verification, an untrusted chain was accepted")
	}
}

// tokenServer is an OAuth client-credentials token endpoint.
type tokenServer struct {
	*httptest.Server
	calls atomic.Int32
}

func newTokenServer(t *testing.T, id, secret, scope string) *tokenServer {
	ts := &tokenServer{}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.calls.Add(1)
		_ = r.ParseForm()
		u, p, ok := r.BasicAuth()
		if !ok {
			u, p = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if r.PostForm.Get("grant_type") != "client_credentials" || u != id || p != secret || r.PostForm.Get("scope") != scope {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-" + id, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(ts.Close)
	return ts
}

// bridgeSASL makes kfake, which speaks PLAIN and SCRAM, accept another
// mechanism through its request control hook: the handshake is taken as
// PLAIN, and the first authenticate request is checked by verify, which
// returns the PLAIN user it stands for ("" refuses it).
func bridgeSASL(c *kfake.Cluster, mech, pass string, verify func([]byte) string, seen *atomic.Int32) {
	c.ControlKey(int16(kmsg.SASLHandshake), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if req := r.(*kmsg.SASLHandshakeRequest); req.Mechanism == mech {
			req.Mechanism = "PLAIN"
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.SASLAuthenticateRequest)
		if bytes.HasPrefix(req.SASLAuthBytes, []byte{0}) { // already PLAIN
			return nil, nil, false
		}
		seen.Add(1)
		user := verify(req.SASLAuthBytes)
		req.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
		if user == "" {
			req.SASLAuthBytes = []byte("\x00nobody\x00-")
		}
		return nil, nil, false
	})
}

// TestOAuthBearer: OAUTHBEARER fetches a token from the client-credentials
// endpoint (Java's JAAS options or librdkafka's names) and presents it in
// the SASL exchange; the token is fetched once and reused.
func TestOAuthBearer(t *testing.T) {
	ts := newTokenServer(t, "svc", "shh", "kafka")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "oauth-svc", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var seen atomic.Int32
	bridgeSASL(c, "OAUTHBEARER", "pw", func(b []byte) string {
		// RFC 7628: n,,\x01auth=Bearer <token>\x01…\x01
		if !bytes.Contains(b, []byte("\x01auth=Bearer tok-svc\x01")) || !bytes.Contains(b, []byte("\x01logicalCluster=lkc-1\x01")) {
			return ""
		}
		return "oauth-svc"
	}, &seen)
	addr := c.ListenAddrs()[0]
	java, _, err := kafka.Parse(props("bootstrap.servers", addr, "security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "OAUTHBEARER",
		"sasl.oauthbearer.token.endpoint.url", ts.URL,
		"sasl.jaas.config", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="svc" clientSecret="shh" scope="kafka" extension_logicalCluster="lkc-1";`,
		"sasl.login.callback.handler.class", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"))
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(t, java); err != nil {
		t.Fatalf("OAUTHBEARER with Java's settings: %v", err)
	}
	if seen.Load() == 0 || ts.calls.Load() != 1 {
		t.Errorf("%d OAUTHBEARER exchanges, %d token fetches: want some, and one fetch", seen.Load(), ts.calls.Load())
	}
	rdk, _, err := kafka.Parse(props("bootstrap.servers", addr, "security.protocol", "SASL_PLAINTEXT", "sasl.mechanisms", "OAUTHBEARER",
		"sasl.oauthbearer.method", "oidc", "sasl.oauthbearer.token.endpoint.url", ts.URL,
		"sasl.oauthbearer.client.id", "svc", "sasl.oauthbearer.client.secret", "shh", "sasl.oauthbearer.scope", "kafka",
		"sasl.oauthbearer.extensions", "logicalCluster=lkc-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(t, rdk); err != nil {
		t.Fatalf("OAUTHBEARER with librdkafka's settings: %v", err)
	}
	wrong, _, err := kafka.Parse(props("bootstrap.servers", addr, "security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "OAUTHBEARER",
		"sasl.oauthbearer.token.endpoint.url", ts.URL, "sasl.oauthbearer.client.id", "svc", "sasl.oauthbearer.client.secret", "nope",
		"sasl.oauthbearer.scope", "kafka"))
	if err != nil {
		t.Fatal(err)
	}
	err = roundTrip(t, wrong)
	if err == nil || !strings.Contains(err.Error(), "fetching an OAUTHBEARER token") || strings.Contains(err.Error(), "nope") {
		t.Fatalf("a refused client secret: %v", err)
	}
	if _, _, err := kafka.Parse(props("security.protocol", "SASL_SSL", "sasl.mechanism", "OAUTHBEARER")); err == nil || !strings.Contains(err.Error(), "token.endpoint.url") {
		t.Errorf("OAUTHBEARER without an endpoint: %v", err)
	}
}

// TestAWSMSKIAM: AWS_MSK_IAM signs its login with the environment's
// credentials or a shared credentials file's profile; the broker side of
// the exchange (kfake's control hook) checks the SigV4 signature with the
// same secret.
func TestAWSMSKIAM(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "iam", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	secrets := map[string]string{"AKIDENV": "env-secret", "AKIDFILE": "file-secret"}
	var seen atomic.Int32
	var signedBy atomic.Value
	bridgeSASL(c, "AWS_MSK_IAM", "pw", func(b []byte) string {
		key := verifySigV4(t, b, secrets)
		if key == "" {
			return ""
		}
		signedBy.Store(key)
		return "iam"
	}, &seen)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	t.Setenv("AWS_SESSION_TOKEN", "session-tok")
	addr := c.ListenAddrs()[0]
	iam := func(jaas string) kafka.Profile {
		p, _, err := kafka.Parse(props("bootstrap.servers", addr, "security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "AWS_MSK_IAM",
			"sasl.jaas.config", jaas, "sasl.client.callback.handler.class", "software.amazon.msk.auth.iam.IAMClientCallbackHandler"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// kfake answers a good login the PLAIN way (no bytes), which franz-go's
	// AWS_MSK_IAM session takes as a failure, so the connection itself
	// fails; what is checked is the signed login the broker saw.
	_ = roundTrip(t, iam(`software.amazon.msk.auth.iam.IAMLoginModule required;`))
	if seen.Load() == 0 || signedBy.Load() != "AKIDENV" {
		t.Fatalf("login signed by %v (%d seen), want the environment's AKIDENV", signedBy.Load(), seen.Load())
	}
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = X\naws_secret_access_key = Y\n\n[prod]\naws_access_key_id = AKIDFILE\naws_secret_access_key = file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	_ = roundTrip(t, iam(`software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="prod";`))
	if signedBy.Load() != "AKIDFILE" {
		t.Fatalf("login signed by %v, want the prod profile's AKIDFILE", signedBy.Load())
	}
	if _, _, err := kafka.Parse(props("security.protocol", "SASL_SSL", "sasl.mechanism", "AWS_MSK_IAM",
		"sasl.jaas.config", `software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="missing";`)); err == nil || !strings.Contains(err.Error(), "[missing]") {
		t.Errorf("a missing profile: %v", err)
	}
}

// verifySigV4 checks an AWS_MSK_IAM login payload's signature against the
// secrets by access key, returning the access key that signed it.
func verifySigV4(t *testing.T, payload []byte, secrets map[string]string) string {
	var kv map[string]string
	if err := json.Unmarshal(payload, &kv); err != nil {
		t.Errorf("AWS_MSK_IAM payload is not JSON: %v", err)
		return ""
	}
	cred := strings.Split(kv["x-amz-credential"], "/") // key/date/region/service/aws4_request
	if len(cred) != 5 || kv["action"] != "kafka-cluster:Connect" || kv["version"] != "2020_10_22" {
		t.Errorf("AWS_MSK_IAM payload %v", kv)
		return ""
	}
	secret, ok := secrets[cred[0]]
	if !ok {
		return ""
	}
	q := url.Values{}
	for _, k := range []string{"Action", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Security-Token"} {
		if v, ok := kv[strings.ToLower(k)]; ok {
			q.Set(k, v)
		}
	}
	canonical := strings.Join([]string{"GET", "/", strings.ReplaceAll(q.Encode(), "+", "%20"), "host:" + kv["host"] + "\n", "host", hexSHA("")}, "\n")
	scope := strings.Join(cred[1:], "/")
	toSign := strings.Join([]string{"AWS4-HMAC-SHA256", kv["x-amz-date"], scope, hexSHA(canonical)}, "\n")
	k := hmacSHA([]byte("AWS4"+secret), cred[1])
	for _, part := range cred[2:] {
		k = hmacSHA(k, part)
	}
	if hex.EncodeToString(hmacSHA(k, toSign)) != kv["x-amz-signature"] {
		t.Errorf("AWS_MSK_IAM signature does not verify with %s's secret", cred[0])
		return ""
	}
	return cred[0]
}

func hexSHA(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

func hmacSHA(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}
