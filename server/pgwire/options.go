package pgwire

import (
	"crypto/tls"
	"github.com/sqlstreams/sqlstreams/metrics"
	"log/slog"
	"time"
)

// Option configures a Server; pass options to New.
type Option func(*config)

type config struct {
	logger           *slog.Logger
	flushDelay       time.Duration
	maxMessage       int
	startupTimeout   time.Duration
	maxConns         int
	idleTimeout      time.Duration
	statementTimeout time.Duration
	users            *Users // nil: trust
	tls              *tls.Config
	allowInsecure    bool
	metrics          *metrics.Registry
	polledOnly       bool
	plainIO          bool
}

// DefaultMaxConnections is the connection limit when WithMaxConnections is
// not given.
const DefaultMaxConnections = 500

func defaultConfig() config {
	return config{
		logger:         slog.Default(),
		flushDelay:     2 * time.Millisecond,
		maxMessage:     32 << 20,
		startupTimeout: 10 * time.Second,
		maxConns:       DefaultMaxConnections,
	}
}

// WithLogger sets the logger for connection events and errors. The default
// is slog.Default(). Connections log at Debug, failures at Warn, recovered
// panics at Error.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithFlushDelay bounds how long a streamed row may sit in the connection's
// buffer before it is written: rows are written when 16 KiB are pending or
// d after the first unwritten one, whichever comes first. Larger values
// make fewer, larger writes for push queries at the cost of latency; zero
// or less writes every row at once. The default is 2ms.
func WithFlushDelay(d time.Duration) Option {
	return func(c *config) { c.flushDelay = d }
}

// WithMaxMessageSize sets the largest frontend message body accepted, in
// bytes; a larger message closes the connection with a protocol error. The
// default is 32 MiB.
func WithMaxMessageSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxMessage = n
		}
	}
}

// WithStartupTimeout bounds the time a new connection has to send its
// startup message (including any SSL or GSS negotiation); a connection
// that is slower is closed. The default is 10s; zero or less disables it.
func WithStartupTimeout(d time.Duration) Option {
	return func(c *config) { c.startupTimeout = d }
}

// WithMaxConnections limits the connections served at once (Postgres's
// max_connections); a client past the limit gets FATAL 53300 "sorry, too
// many clients already" after its startup message. CancelRequests are not
// counted. The default is DefaultMaxConnections; zero or less removes the
// limit.
func WithMaxConnections(n int) Option {
	return func(c *config) { c.maxConns = n }
}

// WithPolledSockets keeps every connection's socket in the Go runtime's
// network poller. By default the server's only connection reads its
// socket outside the poller until another one opens (sockConn), which
// lowers a lone client's tail latency.
func WithPolledSockets() Option {
	return func(c *config) { c.polledOnly = true }
}

// WithPlainIO serves every connection on the plain path: its goroutine
// reads its net.Conn, waiting in the Go runtime's network poller, with
// no spin reader, no read outside the poller and no serving loop. It is
// the only path off Linux; on Linux the default adds those three
// (platform_linux.go; bench/README.md compares the two).
func WithPlainIO() Option {
	return func(c *config) { c.plainIO = true }
}

// socketIO returns the I/O path the options choose.
func (c *config) socketIO() socketIO {
	if c.plainIO {
		return plainIO{}
	}
	return platformIO(c.polledOnly)
}

// WithIdleTimeout closes a connection that sends nothing for d between
// statements (Postgres's idle_session_timeout), with FATAL 57P05. A running
// statement, such as a push query streaming rows, is not idle. The default
// is no timeout.
func WithIdleTimeout(d time.Duration) Option {
	return func(c *config) { c.idleTimeout = d }
}

// WithStatementTimeout sets the default statement_timeout: a statement
// running longer is cancelled with 57014 "canceling statement due to
// statement timeout". It applies to push queries too; a session may change
// it with SET statement_timeout. The default is no timeout.
func WithStatementTimeout(d time.Duration) Option {
	return func(c *config) { c.statementTimeout = d }
}

// WithPasswordAuth requires every client to authenticate with SCRAM-SHA-256
// as one of users. Without it every client is trusted (AuthenticationOk
// whatever the user name).
func WithPasswordAuth(users *Users) Option {
	return func(c *config) { c.users = users }
}

// WithTLS serves TLS to clients that ask for it with SSLRequest (psql's
// sslmode=prefer or require). Clients that do not ask are served in plain
// text. Without it SSLRequest is answered 'N'.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg }
}

// WithInsecureListen lets Serve accept connections on a non-loopback
// address without authentication. Without it, Serve refuses such a
// listener with ErrInsecureListen: anyone who can reach the port could run
// any statement.
func WithInsecureListen() Option {
	return func(c *config) { c.allowInsecure = true }
}

// WithMetrics counts connections and statements (sqlstreams_connections
// and sqlstreams_statements_total with server="pgwire") in reg.
func WithMetrics(reg *metrics.Registry) Option {
	return func(c *config) { c.metrics = reg }
}
