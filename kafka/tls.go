package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// tlsSettings are the ssl.* properties, by their librdkafka and Java
// names.
type tlsSettings struct {
	caFile, caPEM              string // ssl.ca.location / ssl.ca.pem, ssl.truststore.certificates
	truststore, truststoreType string // Java's ssl.truststore.location / .type
	certFile, certPEM          string // ssl.certificate.location / .pem
	keyFile, keyPEM            string // ssl.key.location / .pem
	keyPassword                string
	keystore, keystoreType     string // Java's ssl.keystore.location / .type
	hostAlgo                   string // ssl.endpoint.identification.algorithm
	hostAlgoSet                bool
	noVerify                   bool   // enable.ssl.certificate.verification=false
	minVersion                 string // ssl.protocol / ssl.enabled.protocols

	subject string // the client certificate's subject, once loaded
}

func (t *tlsSettings) any() bool {
	return t.caFile != "" || t.caPEM != "" || t.truststore != "" || t.certFile != "" || t.certPEM != "" ||
		t.keyFile != "" || t.keyPEM != "" || t.keystore != ""
}

// config builds the client's TLS configuration: the system's roots unless
// a CA is given, the server's host name verified unless
// ssl.endpoint.identification.algorithm is empty or none, and a client
// certificate for mutual TLS.
func (t *tlsSettings) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if strings.Contains(t.minVersion, "1.3") && !strings.Contains(t.minVersion, "1.2") {
		cfg.MinVersion = tls.VersionTLS13
	}
	caPEM := []byte(t.caPEM)
	caFrom := "ssl.truststore.certificates"
	switch {
	case t.caFile != "":
		b, err := os.ReadFile(t.caFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.ca.location: %w", err)
		}
		caPEM, caFrom = b, "ssl.ca.location "+t.caFile
	case t.truststore != "":
		b, err := readPEMStore("ssl.truststore.location", t.truststore, t.truststoreType)
		if err != nil {
			return nil, err
		}
		caPEM, caFrom = b, "ssl.truststore.location "+t.truststore
	}
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", caFrom)
		}
		cfg.RootCAs = pool
	}
	if err := t.clientCert(cfg); err != nil {
		return nil, err
	}
	switch {
	case t.noVerify:
		cfg.InsecureSkipVerify = true
	case t.hostAlgoSet && (t.hostAlgo == "" || t.hostAlgo == "none"):
		// Verify the chain, not the name: Go has no switch for that, so
		// the check runs here in place of the standard one.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	case t.hostAlgoSet && t.hostAlgo != "https":
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm=%s: want https (the default) or empty", t.hostAlgo)
	}
	return cfg, nil
}

// clientCert loads the certificate and key of mutual TLS.
func (t *tlsSettings) clientCert(cfg *tls.Config) error {
	certPEM, keyPEM := []byte(t.certPEM), []byte(t.keyPEM)
	if t.certFile != "" {
		b, err := os.ReadFile(t.certFile)
		if err != nil {
			return fmt.Errorf("ssl.certificate.location: %w", err)
		}
		certPEM = b
	}
	if t.keyFile != "" {
		b, err := os.ReadFile(t.keyFile)
		if err != nil {
			return fmt.Errorf("ssl.key.location: %w", err)
		}
		keyPEM = b
	}
	if t.keystore != "" {
		b, err := readPEMStore("ssl.keystore.location", t.keystore, t.keystoreType)
		if err != nil {
			return err
		}
		// A PEM keystore holds the key and its certificate chain.
		if len(certPEM) == 0 {
			certPEM = b
		}
		if len(keyPEM) == 0 {
			keyPEM = b
		}
	}
	if len(certPEM) == 0 && len(keyPEM) == 0 {
		return nil
	}
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return errors.New("mutual TLS needs both ssl.certificate.location and ssl.key.location")
	}
	keyPEM, err := decryptKey(keyPEM, t.keyPassword)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("ssl.certificate.location / ssl.key.location: %w", err)
	}
	if leaf, err := x509.ParseCertificate(cert.Certificate[0]); err == nil {
		t.subject = "User:" + leaf.Subject.String()
	}
	cfg.Certificates = []tls.Certificate{cert}
	return nil
}

// readPEMStore reads a Java truststore or keystore, which sqlstreams takes
// only in PEM form.
func readPEMStore(key, path, typ string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if typ == "PEM" || strings.Contains(string(b), "-----BEGIN ") {
		return b, nil
	}
	return nil, fmt.Errorf("%s %s is a %s store, which Go cannot read; convert it to PEM, e.g. "+
		"keytool -exportcert -rfc -keystore %s -alias <alias> > ca.pem (a truststore), or "+
		"keytool -importkeystore -srckeystore %s -destkeystore ks.p12 -deststoretype PKCS12 && "+
		"openssl pkcs12 -in ks.p12 -nodes > client.pem (a keystore), then set ssl.ca.location / "+
		"ssl.certificate.location and ssl.key.location", key, path, storeType(typ), path, path)
}

func storeType(t string) string {
	if t == "" {
		return "JKS"
	}
	return t
}

// decryptKey decrypts a PEM key encrypted the legacy OpenSSL way
// (Proc-Type: 4,ENCRYPTED) with ssl.key.password.
func decryptKey(keyPEM []byte, password string) ([]byte, error) {
	rest := keyPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return keyPEM, nil
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, errors.New("ssl.key.location: an encrypted PKCS#8 key cannot be read; decrypt it once: openssl pkcs8 -in key.pem -out key-plain.pem (and keep that file private)")
		}
		//lint:ignore SA1019 legacy PEM encryption is what such files use.
		if !x509.IsEncryptedPEMBlock(block) { //nolint:staticcheck
			continue
		}
		if password == "" {
			return nil, errors.New("ssl.key.location: the key is encrypted; set ssl.key.password")
		}
		der, err := x509.DecryptPEMBlock(block, []byte(password)) //nolint:staticcheck
		if err != nil {
			return nil, errors.New("ssl.key.location: cannot decrypt the key with ssl.key.password")
		}
		return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der}), nil
	}
}
