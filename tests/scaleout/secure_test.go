package scaleout

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sqlstreams test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestForwardWithAuthAndTLS: instances whose REST APIs serve HTTPS and
// require basic authentication forward pull queries to each other with
// --internal-credentials over TLS (trusting their shared certificate),
// and every instance answers the whole table. An instance without the
// credentials cannot: its pull queries fail with an error naming the
// refusal, never a partial table.
func TestForwardWithAuthAndTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	users, creds := filepath.Join(dir, "users"), filepath.Join(dir, "internal")
	if err := os.WriteFile(users, []byte("alice:wonderland\nnode:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte("node:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secure := []string{"--http-auth-users", users, "--http-tls-cert", cert, "--http-tls-key", key}
	c := startCluster(t, 2, append(slices.Clone(secure), "--internal-credentials", creds)...)
	conn := connect(t, ctx, c.servers[0])
	exec1(t, ctx, conn, `CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='JSON', PARTITIONS=4)`)
	exec1(t, ctx, conn, `CREATE TABLE pc AS SELECT pageid, COUNT(*) AS n FROM pv GROUP BY pageid`)
	var recs [][2]string
	for i := range 400 {
		recs = append(recs, [2]string{fmt.Sprintf("u%d", i), fmt.Sprintf(`{"PAGEID":"p%d"}`, i%40)})
	}
	produce(t, ctx, c.broker.KafkaAddr, "pv", recs...)
	var want []string
	for i := range 40 {
		want = append(want, fmt.Sprintf("p%d|10", i))
	}
	slices.Sort(want)
	whole := func(s *testserver.Server) (bool, string) {
		got, err := rows(ctx, connect(t, ctx, s), "SELECT pageid, n FROM pc")
		if err != nil {
			return false, err.Error()
		}
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Sprintf("%d rows", len(got))
	}
	// Both own part of the table: each answers it whole only by
	// forwarding to the other.
	for i, s := range c.servers {
		var last string
		if !testserver.WaitFor(90*time.Second, func() bool { ok, why := whole(s); last = why; return ok }) {
			t.Fatalf("i%d never answered the whole table over authenticated TLS forwarding: %s", i+1, last)
		}
	}

	// A third instance without the internal credentials takes some
	// partitions; asked the table, it cannot forward.
	s3 := c.add(t, "i3", secure...)
	var last string
	if !testserver.WaitFor(90*time.Second, func() bool {
		_, last = whole(s3)
		return strings.Contains(last, "401") && strings.Contains(last, "--internal-credentials")
	}) {
		t.Fatalf("the instance without --internal-credentials answered %q, want a refusal naming HTTP 401", last)
	}
	t.Logf("without --internal-credentials: %s", last)
}
