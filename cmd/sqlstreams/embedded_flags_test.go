package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
)

// tlsFiles writes a certificate of a test CA for hosts and its key, and
// returns the CA and the two paths.
func tlsFiles(t *testing.T, hosts ...string) (ca *kafkatest.CA, cert, key string) {
	t.Helper()
	ca = kafkatest.NewCA(t)
	c, k := ca.Issue(t, "sqlstreams", hosts...)
	return ca, kafkatest.WriteFile(t, "cert.pem", c), kafkatest.WriteFile(t, "key.pem", k)
}

// TestEmbeddedKafkaFlags: the embedded broker listens beyond loopback only
// with TLS and SASL users, or with --embedded-kafka-allow-remote; the
// refusal names what to add.
func TestEmbeddedKafkaFlags(t *testing.T) {
	_, cert, key := tlsFiles(t, "127.0.0.1")
	users := filepath.Join(t.TempDir(), "users")
	os.WriteFile(users, []byte("alice:secret\n"), 0o600)
	secure := []string{"--embedded-kafka-tls-cert", cert, "--embedded-kafka-tls-key", key, "--embedded-kafka-sasl-users-file", users}
	for _, c := range []struct {
		args    []string
		addr    string
		wantErr string
	}{
		{nil, "127.0.0.1:9092", ""},
		{nil, "localhost:9092", ""},
		{nil, "0.0.0.0:9092", "--embedded-kafka-addr 0.0.0.0:9092 is not a loopback address and the embedded broker has no TLS and no SASL users"},
		{nil, ":9092", "set --embedded-kafka-tls-cert and --embedded-kafka-tls-key and --embedded-kafka-sasl-users-file, or force it with --embedded-kafka-allow-remote"},
		{[]string{"--embedded-kafka-sasl-users", "bob:pw"}, "0.0.0.0:9092", "has no TLS: anyone"},
		{[]string{"--embedded-kafka-tls-cert", cert, "--embedded-kafka-tls-key", key}, "192.0.2.1:9092", "has no SASL users: anyone"},
		{[]string{"--embedded-kafka-allow-remote"}, "0.0.0.0:9092", ""},
		{secure, "0.0.0.0:9092", ""},
		{secure, "[::]:9092", ""},
		{[]string{"--embedded-kafka-tls-cert", cert}, "127.0.0.1:9092", "go together"},
		{[]string{"--embedded-kafka-sasl-users", "bob"}, "127.0.0.1:9092", "name:password"},
		{[]string{"--embedded-kafka-sasl-users-file", filepath.Join(t.TempDir(), "none")}, "127.0.0.1:9092", "--embedded-kafka-sasl-users-file"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		f := addEmbeddedKafkaFlags(fs, "embedded-kafka-", "embedded-kafka-addr")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		s, err := f.settings(c.addr)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%v %s: %v", c.args, c.addr, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%v %s: error %v, want %q", c.args, c.addr, err, c.wantErr)
		case err == nil && s.insecureRemote != (len(c.args) == 1 && c.args[0] == "--embedded-kafka-allow-remote"):
			t.Errorf("%v %s: insecureRemote %v", c.args, c.addr, s.insecureRemote)
		}
	}

	// sqlstreams broker's flags have no prefix.
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	f := addEmbeddedKafkaFlags(fs, "", "addr")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.settings("0.0.0.0:9092"); err == nil || !strings.Contains(err.Error(), "--addr 0.0.0.0:9092 is not a loopback address") ||
		!strings.Contains(err.Error(), "set --tls-cert and --tls-key and --sasl-users-file, or force it with --allow-remote") {
		t.Errorf("sqlstreams broker: %v", err)
	}
}

// TestEmbeddedRegistryFlags: the same rule for the embedded schema
// registry, with basic authentication in place of SASL.
func TestEmbeddedRegistryFlags(t *testing.T) {
	_, cert, key := tlsFiles(t, "127.0.0.1")
	users := filepath.Join(t.TempDir(), "users")
	os.WriteFile(users, []byte("bob:secret\n"), 0o600)
	secure := []string{"--schema-registry-tls-cert", cert, "--schema-registry-tls-key", key, "--schema-registry-auth-users", users}
	for _, c := range []struct {
		args     []string
		embedded bool
		wantErr  string
	}{
		{nil, true, ""},
		{[]string{"--schema-registry-addr", "0.0.0.0:8081"}, true, "--schema-registry-addr 0.0.0.0:8081 is not a loopback address and the schema registry has no TLS and no authentication: anyone who reaches it could register and delete every subject; set --schema-registry-tls-cert and --schema-registry-tls-key and --schema-registry-auth-users, or force it with --schema-registry-allow-remote"},
		{[]string{"--schema-registry-addr", "0.0.0.0:8081", "--schema-registry-auth-users", users}, true, "has no TLS: anyone"},
		{[]string{"--schema-registry-addr", "0.0.0.0:8081", "--schema-registry-allow-remote"}, true, ""},
		{append([]string{"--schema-registry-addr", "0.0.0.0:8081"}, secure...), true, ""},
		// No embedded registry is served: the address does not matter.
		{[]string{"--schema-registry-addr", "0.0.0.0:8081"}, false, ""},
		{[]string{"--schema-registry-addr", "0.0.0.0:8081", "--schema-registry-url", "http://r:8081"}, true, ""},
		{[]string{"--schema-registry-url", "http://r:8081", "--schema-registry-auth-users", users}, true, "are for the embedded schema registry"},
		{[]string{"--schema-registry-tls-key", key}, true, "go together"},
		{[]string{"--schema-registry-auth-users", filepath.Join(t.TempDir(), "none")}, true, "--schema-registry-auth-users"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		f := addRegistryFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := f.settings(c.embedded)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%v: error %v, want %q", c.args, err, c.wantErr)
		}
	}
}

// TestRemoteEmbeddedRefused: the commands exit with status 2, before
// starting anything, when asked to listen beyond loopback without
// security.
func TestRemoteEmbeddedRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func([]string) int
		args []string
	}{
		{"server broker", runServer, []string{"--embedded-kafka-addr", "0.0.0.0:0"}},
		{"server registry", runServer, []string{"--schema-registry-addr", "0.0.0.0:0"}},
		{"broker", runBroker, []string{"--addr", "0.0.0.0:0"}},
		{"broker registry", runBroker, []string{"--schema-registry-addr", "0.0.0.0:0"}},
	} {
		if code := c.run(append([]string{"--data-dir", t.TempDir()}, c.args...)); code != 2 {
			t.Errorf("%s %v: exit code %d, want 2", c.name, c.args, code)
		}
	}
}
