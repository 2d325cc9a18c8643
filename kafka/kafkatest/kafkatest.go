// Package kafkatest starts Kafka clusters that behave like production ones
// for tests: several kfake brokers behind SASL_SSL (a CA made for the
// test), ACLs on, the service's principal granted only what it is given.
// Only tests import it.
package kafkatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// CA is a certificate authority made for one test.
type CA struct {
	CertPEM []byte
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
}

// NewCA makes a CA.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sqlstreams test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert: cert, key: key}
}

// Issue returns a certificate and key (PEM) signed by the CA for a server
// at hosts (IP addresses or names) or, with no hosts, for a client named
// commonName.
func (ca *CA) Issue(t testing.TB, commonName string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// ServerTLS is a listener's TLS configuration with a certificate for
// 127.0.0.1 and localhost; clientCAs, when set, asks for and verifies
// client certificates (mutual TLS).
func (ca *CA) ServerTLS(t testing.TB, clientCAs bool) *tls.Config {
	t.Helper()
	c, k := ca.Issue(t, "localhost", "127.0.0.1", "localhost")
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAs {
		pool := x509.NewCertPool()
		pool.AddCert(ca.cert)
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg
}

// WriteFile writes b into the test's temporary directory and returns its
// path.
func WriteFile(t testing.TB, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Cluster is a kfake cluster with SASL over TLS and ACLs on.
type Cluster struct {
	*kfake.Cluster
	CA      *CA
	CAFile  string // the CA's PEM file, for ssl.ca.location
	Brokers []string
	// Mechanism is the users' SASL mechanism (SCRAM-SHA-512 by default).
	Mechanism string
	// User and Password are the service's principal, which the ACLs of
	// Options.Grants name; AdminUser and AdminPassword a superuser's.
	User, Password           string
	AdminUser, AdminPassword string
}

// Options shape a Cluster.
type Options struct {
	// Brokers is the number of brokers (default 3).
	Brokers int
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (the default).
	Mechanism string
	// Grants are the service principal's ACLs (their Principal is set to
	// the service's user).
	Grants []kfake.ACL
	// Extra are further kfake options (MaxVersions, BrokerConfigs, …).
	Extra []kfake.Opt
}

// NewCluster starts a cluster that behaves like a production one: brokers
// behind SASL_SSL with a CA made for the test, ACLs on, a superuser, and
// a service user granted exactly o.Grants. It closes when the test ends.
func NewCluster(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Brokers == 0 {
		o.Brokers = 3
	}
	if o.Mechanism == "" {
		o.Mechanism = "SCRAM-SHA-512"
	}
	ca := NewCA(t)
	c := &Cluster{CA: ca, CAFile: WriteFile(t, "ca.pem", ca.CertPEM), Mechanism: o.Mechanism,
		User: "sqlstreams", Password: "svc-" + randomWord(), AdminUser: "admin", AdminPassword: "adm-" + randomWord()}
	opts := append([]kfake.Opt{
		kfake.NumBrokers(o.Brokers),
		kfake.EnableSASL(),
		kfake.Superuser(o.Mechanism, c.AdminUser, c.AdminPassword),
		kfake.User(o.Mechanism, c.User, c.Password, o.Grants...),
		kfake.EnableACLs(),
		kfake.TLS(ca.ServerTLS(t, false)),
	}, o.Extra...)
	kc, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	c.Cluster, c.Brokers = kc, kc.ListenAddrs()
	return c
}

func randomWord() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<40))
	return n.Text(36)
}

// Properties are the client settings of the service's principal, as a
// user would write them in a properties file.
func (c *Cluster) Properties() []kafka.Property { return c.properties(c.User, c.Password) }

// AdminProperties are a superuser's.
func (c *Cluster) AdminProperties() []kafka.Property {
	return c.properties(c.AdminUser, c.AdminPassword)
}

func (c *Cluster) properties(user, pass string) []kafka.Property {
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if c.Mechanism == "PLAIN" {
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	kv := [][2]string{
		{"bootstrap.servers", joinComma(c.Brokers)},
		{"security.protocol", "SASL_SSL"},
		{"sasl.mechanism", c.Mechanism},
		{"sasl.jaas.config", module + ` required username="` + user + `" password="` + pass + `";`},
		{"ssl.ca.location", c.CAFile},
	}
	out := make([]kafka.Property, len(kv))
	for i, p := range kv {
		out[i] = kafka.Property{Key: p[0], Value: p[1], Source: "kafkatest"}
	}
	return out
}

// Profile is the service principal's connection profile.
func (c *Cluster) Profile(t testing.TB) kafka.Profile { return mustParse(t, c.Properties()) }

// AdminProfile is a superuser's.
func (c *Cluster) AdminProfile(t testing.TB) kafka.Profile { return mustParse(t, c.AdminProperties()) }

func mustParse(t testing.TB, props []kafka.Property) kafka.Profile {
	t.Helper()
	p, warnings, err := kafka.Parse(props)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("profile: %v %q", err, warnings)
	}
	return p
}

// PropertiesFile writes the service principal's settings as a properties
// file and returns its path.
func (c *Cluster) PropertiesFile(t testing.TB) string {
	return writeProperties(t, "client.properties", c.Properties())
}

// AdminPropertiesFile is PropertiesFile for a superuser's settings.
func (c *Cluster) AdminPropertiesFile(t testing.TB) string {
	return writeProperties(t, "admin.properties", c.AdminProperties())
}

func writeProperties(t testing.TB, name string, props []kafka.Property) string {
	var b []byte
	for _, p := range props {
		b = append(b, p.Key+"="+p.Value+"\n"...)
	}
	return WriteFile(t, name, b)
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// Prefixed is an ALLOW ACL on every resource of a type whose name starts
// with prefix.
func Prefixed(res kmsg.ACLResourceType, prefix string, op kmsg.ACLOperation) kfake.ACL {
	return kfake.ACL{Resource: res, Name: prefix, Pattern: kmsg.ACLResourcePatternTypePrefixed, Operation: op, Allow: true}
}

// Literal is an ALLOW ACL on one named resource ("kafka-cluster" for the
// cluster).
func Literal(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
	return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
}

// ACL is the ALLOW ACL that grants p.
func ACL(p kafka.Permission) kfake.ACL {
	rt := map[kafka.ResourceType]kmsg.ACLResourceType{
		kafka.Topic: kmsg.ACLResourceTypeTopic, kafka.Group: kmsg.ACLResourceTypeGroup,
		kafka.TransactionalID: kmsg.ACLResourceTypeTransactionalId, kafka.Cluster: kmsg.ACLResourceTypeCluster,
	}[p.Type]
	op := map[kafka.Operation]kmsg.ACLOperation{
		kafka.Read: kmsg.ACLOperationRead, kafka.Write: kmsg.ACLOperationWrite, kafka.Create: kmsg.ACLOperationCreate,
		kafka.Delete: kmsg.ACLOperationDelete, kafka.Describe: kmsg.ACLOperationDescribe, kafka.Alter: kmsg.ACLOperationAlter,
		kafka.DescribeConfigs: kmsg.ACLOperationDescribeConfigs, kafka.AlterConfigs: kmsg.ACLOperationAlterConfigs, kafka.IdempotentWrite: kmsg.ACLOperationIdempotentWrite,
	}[p.Operation]
	pt := kmsg.ACLResourcePatternTypeLiteral
	if p.Prefixed {
		pt = kmsg.ACLResourcePatternTypePrefixed
	}
	return kfake.ACL{Resource: rt, Name: p.Name, Pattern: pt, Operation: op, Allow: true}
}

// ACLs grants each permission (ACL of each).
func ACLs(ps []kafka.Permission) []kfake.ACL {
	out := make([]kfake.ACL, len(ps))
	for i, p := range ps {
		out[i] = ACL(p)
	}
	return out
}

// ErrorResponse answers req (Produce, Fetch, EndTxn, TxnOffsetCommit)
// with code on every partition it names: a fault for a kfake control
// function to return.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID // Produce v13 names topics by ID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.FetchRequest:
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.EndTxnRequest:
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.TxnOffsetCommitRequest:
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	panic(fmt.Sprintf("no error response for %T", req))
}
