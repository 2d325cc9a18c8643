package kafka

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// builder collects properties into a Profile.
type builder struct {
	p        Profile
	key      string // the property being applied, as the user wrote it
	warnings []string

	brokers             []string
	protocol, mechanism string
	jaas, user, pass    string
	oauth               oauthSettings
	tls                 tlsSettings
	batch, maxRequest   int32
	sources             map[*string]string
	sourceOf            string
}

func (b *builder) warn(w string) { b.warnings = append(b.warnings, w) }

func (b *builder) opt(o kgo.Opt) { b.p.opts = append(b.p.opts, o) }

// set stores a string setting, remembering where it came from.
func (b *builder) set(field *string, v string) error {
	*field = v
	b.sources[field] = b.sourceOf
	return nil
}

// Parse builds a profile from properties, later ones overriding earlier
// ones with the same (normalized) name. It returns warnings for settings
// it ignores and an error, naming the setting and where it came from, for
// one it cannot honour or that would break exactly-once. Secrets appear
// in neither.
func Parse(props []Property) (Profile, []string, error) {
	b := &builder{p: Profile{Topics: TopicSettings{Replicas: -1}}, sources: map[*string]string{}}
	// Later wins: keep the last value of each normalized name, in order.
	last := map[string]int{}
	for i, pr := range props {
		last[normalize(pr.Key)] = i
	}
	for i, pr := range props {
		n := normalize(pr.Key)
		if last[n] != i {
			continue
		}
		b.key, b.sourceOf = pr.Key, pr.Source
		b.p.settings = append(b.p.settings, Setting{Name: pr.Key, Value: Redact(pr.Key, pr.Value)})
		set, ok := handled[n]
		if !ok {
			b.warn(fmt.Sprintf("%s: unknown Kafka client setting %q ignored", where(pr.Source), pr.Key))
			continue
		}
		if err := set(b, pr.Value); err != nil {
			return Profile{}, nil, fmt.Errorf("%s: %w", where(pr.Source), err)
		}
	}
	if err := b.finish(); err != nil {
		return Profile{}, nil, err
	}
	return b.p, b.warnings, nil
}

func where(source string) string {
	if source == "" {
		return "kafka settings"
	}
	return source
}

// finish turns the collected settings into TLS, SASL and the producer's
// batch bounds.
func (b *builder) finish() error {
	b.p.Brokers = b.brokers
	switch {
	case b.batch > 0 && b.maxRequest > 0:
		b.opt(kgo.BrokerMaxWriteBytes(max(b.maxRequest, 1<<20)))
		b.opt(kgo.ProducerBatchMaxBytes(min(b.batch, b.maxRequest)))
	case b.batch > 0:
		b.opt(kgo.ProducerBatchMaxBytes(b.batch))
	case b.maxRequest > 0:
		// max.request.size bounds what one produce request may carry,
		// so no batch may be larger.
		b.opt(kgo.BrokerMaxWriteBytes(max(b.maxRequest, 1<<20)))
		b.opt(kgo.ProducerBatchMaxBytes(min(b.maxRequest, 1000012)))
	}
	proto := b.protocol
	if proto == "" {
		proto = "PLAINTEXT"
	}
	var useTLS, useSASL bool
	switch proto {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return fmt.Errorf("%s: security.protocol=%s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", where(b.sources[&b.protocol]), b.protocol)
	}
	if useTLS {
		cfg, err := b.tls.config()
		if err != nil {
			return err
		}
		b.p.TLS = cfg
		if cfg.Certificates != nil && !useSASL {
			b.p.Principal = b.tls.subject
		}
	} else if b.tls.any() {
		b.warn(fmt.Sprintf("ssl.* settings are ignored: security.protocol is %s (SSL or SASL_SSL uses them)", proto))
	}
	if !useSASL {
		if b.mechanism != "" || b.jaas != "" || b.user != "" {
			b.warn(fmt.Sprintf("sasl.* settings are ignored: security.protocol is %s (SASL_PLAINTEXT or SASL_SSL uses them)", proto))
		}
		return nil
	}
	m, err := b.mechanismOf()
	if err != nil {
		return err
	}
	b.p.SASL = m
	return nil
}

// mechanismOf builds the SASL mechanism from sasl.mechanism and the
// credentials (sasl.jaas.config, or sasl.username and sasl.password).
func (b *builder) mechanismOf() (sasl.Mechanism, error) {
	mech := b.mechanism
	if mech == "" {
		mech = "GSSAPI" // Java's default
	}
	var login jaasLogin
	if b.jaas != "" {
		var err error
		if login, err = parseJAAS(b.jaas); err != nil {
			return nil, fmt.Errorf("%s: sasl.jaas.config: %w", where(b.sources[&b.jaas]), err)
		}
	}
	user, pass := login.options["username"], login.options["password"]
	if b.user != "" {
		user = b.user
	}
	if b.pass != "" {
		pass = b.pass
	}
	needUser := func(module string) error {
		if login.module != "" && !strings.HasSuffix(login.module, module) {
			return fmt.Errorf("sasl.jaas.config names %s, but sasl.mechanism %s needs %s", login.module, mech, module)
		}
		if user == "" || pass == "" {
			return fmt.Errorf("sasl.mechanism %s needs a user name and a password: sasl.jaas.config=%s required username=\"…\" password=\"…\"; (or sasl.username and sasl.password)", mech, module)
		}
		return nil
	}
	switch mech {
	case "PLAIN":
		if err := needUser("PlainLoginModule"); err != nil {
			return nil, err
		}
		b.p.Principal = "User:" + user
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		if err := needUser("ScramLoginModule"); err != nil {
			return nil, err
		}
		b.p.Principal = "User:" + user
		a := scram.Auth{User: user, Pass: pass}
		if mech == "SCRAM-SHA-256" {
			return a.AsSha256Mechanism(), nil
		}
		return a.AsSha512Mechanism(), nil
	case "OAUTHBEARER":
		o := b.oauth
		o.fromJAAS(login.options)
		return o.mechanism()
	case "AWS_MSK_IAM":
		return awsMechanism(login.options)
	case "GSSAPI":
		return nil, errors.New("sasl.mechanism GSSAPI (Kerberos) is not supported: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM (and set sasl.mechanism, whose Java default is GSSAPI)")
	}
	return nil, fmt.Errorf("%s: sasl.mechanism=%s: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM", where(b.sources[&b.mechanism]), b.mechanism)
}

// jaasLogin is one sasl.jaas.config login module line.
type jaasLogin struct {
	module  string
	options map[string]string
}

var jaasOption = regexp.MustCompile(`^\s*([A-Za-z0-9_.\-]+)\s*=\s*("((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^\s;"']+))`)

// parseJAAS reads a JAAS login line as Java users write it:
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";
func parseJAAS(s string) (jaasLogin, error) {
	s = strings.TrimSpace(s)
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return jaasLogin{}, errors.New(`want "<LoginModule class> required key=\"value\" …;"`)
	}
	l := jaasLogin{module: fields[0], options: map[string]string{}}
	flag := strings.TrimSuffix(fields[1], ";")
	switch strings.ToLower(flag) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return jaasLogin{}, fmt.Errorf("after the login module %s, want the flag required, got %q", l.module, flag)
	}
	rest := strings.TrimSpace(s[strings.Index(s, fields[1])+len(fields[1]):])
	for {
		rest = strings.TrimSpace(rest)
		if rest == "" || rest == ";" {
			break
		}
		m := jaasOption.FindStringSubmatch(rest)
		if m == nil {
			return jaasLogin{}, fmt.Errorf("cannot read the option at %q: want key=\"value\"", firstWord(rest))
		}
		v := m[5]
		switch {
		case strings.HasPrefix(m[2], `"`):
			v = unescapeJAAS(m[3])
		case strings.HasPrefix(m[2], `'`):
			v = unescapeJAAS(m[4])
		}
		l.options[m[1]] = v
		rest = rest[len(m[0]):]
	}
	if !strings.HasSuffix(s, ";") {
		return jaasLogin{}, errors.New("the login line must end with ';'")
	}
	return l, nil
}

func unescapeJAAS(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// firstWord is the start of s up to its first space or '=', for an error
// that must not echo a secret.
func firstWord(s string) string {
	if i := strings.IndexAny(s, " ="); i >= 0 {
		return s[:i]
	}
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

// FromEnv returns the Kafka properties set in the environment as
// SQLSTREAMS_KAFKA_<NAME>, NAME the property with dots as underscores
// (SQLSTREAMS_KAFKA_SECURITY_PROTOCOL=SASL_SSL), as Confluent's images
// map KSQL_* variables.
func FromEnv() []Property {
	const prefix = "SQLSTREAMS_KAFKA_"
	var out []Property
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, prefix) {
			continue
		}
		key := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, prefix), "_", "."))
		out = append(out, Property{Key: key, Value: v, Source: "environment " + k})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
