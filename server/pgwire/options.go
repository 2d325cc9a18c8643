package pgwire

import (
	"log/slog"
	"time"
)

// Option configures a Server; pass options to New.
type Option func(*config)

type config struct {
	logger         *slog.Logger
	flushDelay     time.Duration
	maxMessage     int
	startupTimeout time.Duration
}

func defaultConfig() config {
	return config{
		logger:         slog.Default(),
		flushDelay:     2 * time.Millisecond,
		maxMessage:     32 << 20,
		startupTimeout: 10 * time.Second,
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
