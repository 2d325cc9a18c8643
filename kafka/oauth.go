package kafka

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// oauthSettings are OAUTHBEARER's client-credentials settings (KIP-768):
// librdkafka's sasl.oauthbearer.* names, or Java's, where the client id,
// secret and scope sit in the JAAS line (clientId="…" clientSecret="…"
// scope="…").
type oauthSettings struct {
	endpoint, clientID, secret, scope, extensions string
}

func (o *oauthSettings) fromJAAS(opts map[string]string) {
	for k, dst := range map[string]*string{"clientId": &o.clientID, "clientSecret": &o.secret, "scope": &o.scope} {
		if v, ok := opts[k]; ok && *dst == "" {
			*dst = v
		}
	}
	// Java's extensions: extension_<name>="value" options.
	for k, v := range opts {
		if name, ok := strings.CutPrefix(k, "extension_"); ok {
			if o.extensions != "" {
				o.extensions += ","
			}
			o.extensions += name + "=" + v
		}
	}
}

// mechanism fetches tokens from the endpoint with the client credentials,
// caching each until shortly before it expires.
func (o oauthSettings) mechanism() (sasl.Mechanism, error) {
	if o.endpoint == "" {
		return nil, errors.New("sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url (a client-credentials token endpoint)")
	}
	if o.clientID == "" || o.secret == "" {
		return nil, errors.New("sasl.mechanism OAUTHBEARER needs a client id and secret: sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret, or clientId=\"…\" clientSecret=\"…\" in sasl.jaas.config")
	}
	ext := map[string]string{}
	for _, kv := range strings.Split(o.extensions, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			ext[k] = v
		}
	}
	cc := clientcredentials.Config{ClientID: o.clientID, ClientSecret: o.secret, TokenURL: o.endpoint}
	if o.scope != "" {
		cc.Scopes = strings.Fields(strings.ReplaceAll(o.scope, ",", " "))
	}
	// The token source reuses a token until it is about to expire.
	hc := &http.Client{Timeout: loginDeadline}
	src := cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, hc))
	endpoint := o.endpoint
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, err := src.Token()
		if err != nil {
			// The error may quote the endpoint's answer, never the secret.
			return oauth.Auth{}, fmt.Errorf("fetching an OAUTHBEARER token from %s: %w", endpoint, err)
		}
		return oauth.Auth{Token: tok.AccessToken, Extensions: ext}, nil
	}), nil
}

// awsMechanism signs AWS_MSK_IAM logins with credentials from the
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN) or the shared credentials file's profile
// (awsProfileName in the JAAS line, else AWS_PROFILE, else default), read
// again at each login so that rotated credentials are picked up.
func awsMechanism(opts map[string]string) (sasl.Mechanism, error) {
	if _, ok := opts["awsRoleArn"]; ok {
		return nil, errors.New("sasl.jaas.config: awsRoleArn is not supported: assume the role outside sqlstreams and pass its credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN")
	}
	profile := opts["awsProfileName"]
	load := func() (aws.Auth, error) { return awsCredentials(profile) }
	if _, err := load(); err != nil {
		return nil, err
	}
	return aws.ManagedStreamingIAM(func(context.Context) (aws.Auth, error) { return load() }), nil
}

func awsCredentials(profile string) (aws.Auth, error) {
	if profile == "" {
		if id, key := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); id != "" && key != "" {
			return aws.Auth{AccessKey: id, SecretKey: key, SessionToken: os.Getenv("AWS_SESSION_TOKEN")}, nil
		}
		profile = os.Getenv("AWS_PROFILE")
	}
	if profile == "" {
		profile = "default"
	}
	path := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if path == "" {
		home, _ := os.UserHomeDir()
		path = home + "/.aws/credentials"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return aws.Auth{}, fmt.Errorf("sasl.mechanism AWS_MSK_IAM: no credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set and %v", err)
	}
	vals := iniSection(string(b), profile)
	if vals["aws_access_key_id"] == "" || vals["aws_secret_access_key"] == "" {
		return aws.Auth{}, fmt.Errorf("sasl.mechanism AWS_MSK_IAM: profile [%s] of %s has no aws_access_key_id and aws_secret_access_key", profile, path)
	}
	return aws.Auth{AccessKey: vals["aws_access_key_id"], SecretKey: vals["aws_secret_access_key"], SessionToken: vals["aws_session_token"]}, nil
}

// iniSection returns the key = value lines of [name] in an INI file.
func iniSection(text, name string) map[string]string {
	out := map[string]string{}
	in := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			sec := strings.TrimSpace(line[1 : len(line)-1])
			in = sec == name || sec == "profile "+name
			continue
		}
		if k, v, ok := strings.Cut(line, "="); in && ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// loginDeadline bounds a token fetch.
const loginDeadline = 10 * time.Second
