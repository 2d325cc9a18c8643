package kafka_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
)

func props(kv ...string) []kafka.Property {
	var out []kafka.Property
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kafka.Property{Key: kv[i], Value: kv[i+1], Source: "test"})
	}
	return out
}

// TestTruststore: a Java JKS truststore is refused with the command that
// converts it; a PEM one (ssl.truststore.type=PEM) is read.
func TestTruststore(t *testing.T) {
	dir := t.TempDir()
	jks := filepath.Join(dir, "kafka.truststore.jks")
	if err := os.WriteFile(jks, []byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := kafka.Parse(props("security.protocol", "SSL", "ssl.truststore.location", jks))
	if err == nil || !strings.Contains(err.Error(), "keytool -exportcert") || !strings.Contains(err.Error(), "ssl.ca.location") {
		t.Errorf("JKS truststore: %v", err)
	}
	ca := kafkatest.NewCA(t)
	pem := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(pem, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	p, _, err := kafka.Parse(props("security.protocol", "SSL", "ssl.truststore.type", "PEM", "ssl.truststore.location", pem))
	if err != nil || p.TLS.RootCAs == nil {
		t.Fatalf("PEM truststore: %v", err)
	}
	_, _, err = kafka.Parse(props("security.protocol", "SSL", "ssl.ca.location", filepath.Join(dir, "missing.pem")))
	if err == nil || !strings.Contains(err.Error(), "ssl.ca.location") {
		t.Errorf("missing CA file: %v", err)
	}
	_, _, err = kafka.Parse(props("security.protocol", "SSL", "ssl.certificate.location", pem))
	if err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("certificate without key: %v", err)
	}
}

func tlsPair(certPEM, keyPEM []byte) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
