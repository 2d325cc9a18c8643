package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sqlstreams/sqlstreams/types"
)

// ClientConfig configures a Client of a Confluent-compatible registry.
type ClientConfig struct {
	// URL is the registry's base URL, e.g. http://127.0.0.1:8081.
	URL string
	// Username and Password, when set, are sent as HTTP basic auth.
	Username, Password string
	// TLS configures https URLs (nil: the system's roots).
	TLS *tls.Config
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration
}

// Client is the schema source the formats use (types.SchemaSource), over
// franz-go's pkg/sr client. Schemas by ID are immutable and cached for
// good; registrations are cached per subject and schema text. It is safe
// for concurrent use.
type Client struct {
	cl      *sr.Client
	timeout time.Duration

	mu         sync.Mutex
	byID       map[int]types.RegisteredSchema
	byVersion  map[verKey]types.RegisteredSchema
	registered map[regKey]int
}

type regKey struct{ subject, typ, text string }

type verKey struct {
	subject string
	version int
}

var _ types.SchemaSource = (*Client)(nil)

// NewClient returns a client of the registry at cfg.URL.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	opts := []sr.ClientOpt{sr.URLs(cfg.URL), sr.UserAgent("sqlstreams")}
	if cfg.Username != "" || cfg.Password != "" {
		opts = append(opts, sr.BasicAuth(cfg.Username, cfg.Password))
	}
	if cfg.TLS != nil {
		opts = append(opts, sr.HTTPClient(&http.Client{Timeout: cfg.Timeout,
			Transport: &http.Transport{TLSClientConfig: cfg.TLS}}))
	} else {
		opts = append(opts, sr.HTTPClient(&http.Client{Timeout: cfg.Timeout}))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &Client{cl: cl, timeout: cfg.Timeout, byID: map[int]types.RegisteredSchema{},
		byVersion: map[verKey]types.RegisteredSchema{}, registered: map[regKey]int{}}, nil
}

// SR returns the underlying pkg/sr client.
func (c *Client) SR() *sr.Client { return c.cl }

func (c *Client) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.timeout)
}

// notFound wraps the registry's "not found" answers in
// types.ErrSchemaNotFound.
func notFound(err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: %s", types.ErrSchemaNotFound, re.Message)
	}
	return err
}

func toTypes(s sr.Schema) types.RegisteredSchema {
	out := types.RegisteredSchema{Type: s.Type.String(), Text: s.Schema}
	for _, r := range s.References {
		out.References = append(out.References, types.SchemaRef{Name: r.Name, Subject: r.Subject, Version: r.Version})
	}
	return out
}

func fromTypes(s types.RegisteredSchema) (sr.Schema, error) {
	out := sr.Schema{Schema: s.Text}
	switch s.Type {
	case "", types.SchemaTypeAvro:
		out.Type = sr.TypeAvro
	case types.SchemaTypeProtobuf:
		out.Type = sr.TypeProtobuf
	case types.SchemaTypeJSON:
		out.Type = sr.TypeJSON
	default:
		return out, fmt.Errorf("unknown schema type %q", s.Type)
	}
	for _, r := range s.References {
		out.References = append(out.References, sr.SchemaReference{Name: r.Name, Subject: r.Subject, Version: r.Version})
	}
	return out, nil
}

// SchemaByID returns the schema with id.
func (c *Client) SchemaByID(id int) (types.RegisteredSchema, error) {
	c.mu.Lock()
	s, ok := c.byID[id]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	ctx, cancel := c.ctx()
	defer cancel()
	got, err := c.cl.SchemaByID(ctx, id)
	if err != nil {
		return types.RegisteredSchema{}, notFound(err)
	}
	s = toTypes(got)
	c.mu.Lock()
	c.byID[id] = s
	c.mu.Unlock()
	return s, nil
}

// Register registers s under subject (or finds it) and returns its ID.
func (c *Client) Register(subject string, s types.RegisteredSchema) (int, error) {
	k := regKey{subject, s.Type, s.Text}
	c.mu.Lock()
	id, ok := c.registered[k]
	c.mu.Unlock()
	if ok && len(s.References) == 0 {
		return id, nil
	}
	in, err := fromTypes(s)
	if err != nil {
		return 0, err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	id, err = c.cl.RegisterSchema(ctx, subject, in, -1, -1)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.registered[k] = id
	c.byID[id] = s
	c.mu.Unlock()
	return id, nil
}

// SchemaByVersion returns version version of subject (-1: the latest).
// Numbered versions are cached: their schema never changes.
func (c *Client) SchemaByVersion(subject string, version int) (types.RegisteredSchema, error) {
	k := verKey{subject, version}
	c.mu.Lock()
	s, ok := c.byVersion[k]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	ctx, cancel := c.ctx()
	defer cancel()
	ss, err := c.cl.SchemaByVersion(ctx, subject, version)
	if err != nil {
		return types.RegisteredSchema{}, notFound(err)
	}
	s = toTypes(ss.Schema)
	if version > 0 {
		c.mu.Lock()
		c.byVersion[k] = s
		c.mu.Unlock()
	}
	return s, nil
}

// Latest returns the ID and schema of subject's latest version.
func (c *Client) Latest(subject string) (int, types.RegisteredSchema, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	ss, err := c.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		return 0, types.RegisteredSchema{}, notFound(err)
	}
	return ss.ID, toTypes(ss.Schema), nil
}
