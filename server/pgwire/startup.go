package pgwire

// This file handles the start of a connection.
//
// Supported: SSLRequest (answered 'S' and a TLS handshake when WithTLS is
// given, else 'N': the client goes on in plain text), GSSEncRequest
// (always 'N'), StartupMessage for protocol 3.0 (3.x asks are negotiated
// down to 3.0 with NegotiateProtocolVersion, and unknown _pq_ options are
// listed there), CancelRequest. Authentication is trust (AuthenticationOk
// for every user) or, with WithPasswordAuth, SCRAM-SHA-256 (auth.go).
// Past the connection limit the client gets FATAL 53300 after its startup
// message. Failed logins are logged at Warn with the user and the remote
// address, never with the reason.

import (
	"crypto/tls"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/sql"
)

// startup runs the startup exchange; it reports whether the connection
// continues into the query phase.
func (c *conn) startup() bool {
	if d := c.srv.cfg.startupTimeout; d > 0 {
		c.nc.SetReadDeadline(time.Now().Add(d))
		defer c.nc.SetReadDeadline(time.Time{})
	}
	negotiations := 0
	for {
		msg, err := c.rd.readStartup()
		if err != nil {
			if pe, ok := err.(*protocolError); ok {
				c.log.Debug("pgwire: bad startup packet", "err", err)
				c.fatal(sql.Errorf(codeProtocolViolation, "%s", pe.msg))
			}
			return false
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			// At most one of each; a client looping on them is broken.
			if negotiations++; negotiations > 2 {
				c.fatal(sql.Errorf(codeProtocolViolation, "too many encryption requests"))
				return false
			}
			_, ssl := m.(*pgproto3.SSLRequest)
			if ssl && c.srv.cfg.tls != nil && !c.tls {
				if !c.startTLS() {
					return false
				}
				continue
			}
			c.w.sendRaw([]byte{'N'})
			if c.w.flush() != nil {
				return false
			}
		case *pgproto3.CancelRequest:
			c.srv.cancelRequest(m.ProcessID, m.SecretKey)
			return false
		case *pgproto3.StartupMessage:
			return c.accept(m)
		}
	}
}

// accept answers a StartupMessage: AuthenticationOk, the parameters
// drivers read, the cancel key and ReadyForQuery.
func (c *conn) accept(m *pgproto3.StartupMessage) bool {
	major, minor := m.ProtocolVersion>>16, m.ProtocolVersion&0xFFFF
	if major != 3 {
		c.fatal(sql.Errorf(sql.CodeFeatureNotSupport, "unsupported frontend protocol %d.%d: server supports 3.0 to 3.0", major, minor))
		return false
	}
	if m.Parameters["replication"] != "" && m.Parameters["replication"] != "false" && m.Parameters["replication"] != "off" {
		c.fatal(sql.Errorf(sql.CodeFeatureNotSupport, "replication connections are not supported"))
		return false
	}
	var unknown []string
	for k := range m.Parameters {
		if strings.HasPrefix(k, "_pq_.") {
			unknown = append(unknown, k)
		}
	}
	if minor > 0 || len(unknown) > 0 {
		c.w.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknown})
	}

	c.user = m.Parameters["user"]
	if c.user == "" {
		c.fatal(sql.Errorf(codeInvalidAuthSpec, "no PostgreSQL user name specified in startup packet"))
		return false
	}
	c.database = m.Parameters["database"]
	if c.database == "" {
		c.database = c.user
	}
	if c.srv.tooMany(c) {
		c.log.Warn("pgwire: connection refused: too many clients", "limit", c.srv.cfg.maxConns)
		c.fatal(sql.Errorf(codeTooManyConnections, "sorry, too many clients already (the limit is %d)", c.srv.cfg.maxConns))
		return false
	}
	if c.srv.cfg.users != nil {
		if err := c.authenticate(c.user); err != nil {
			var pe *protocolError
			switch {
			case errors.As(err, &pe):
				c.log.Warn("pgwire: authentication failed: protocol violation", "user", c.user, "err", err)
				c.fatal(sql.Errorf(codeProtocolViolation, "%s", pe.msg))
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				// psql hangs up to ask for a password, then reconnects.
				c.log.Debug("pgwire: client left during authentication", "user", c.user)
			default:
				c.log.Warn("pgwire: authentication failed", "user", c.user)
				c.fatal(err)
			}
			return false
		}
	}

	c.srv.register(c)
	c.log = c.log.With("pid", c.pid, "user", c.user)
	c.log.Debug("pgwire: connection started", "database", c.database, "application_name", m.Parameters["application_name"], "tls", c.tls)

	c.initParams(m.Parameters)
	c.w.send(&pgproto3.AuthenticationOk{})
	for _, p := range pgParams {
		if p.report {
			c.w.send(&pgproto3.ParameterStatus{Name: p.name, Value: c.params[p.name]})
		}
	}
	c.w.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]})
	c.readyForQuery()
	return c.w.failed() == nil
}

// startTLS answers an SSLRequest with 'S' and runs the TLS handshake; the
// connection then reads and writes through TLS. It reports whether the
// handshake succeeded.
func (c *conn) startTLS() bool {
	if c.rd.buffered() > 0 {
		// Bytes sent before our answer could not have been encrypted:
		// someone injected them (CVE-2021-23214).
		c.fatal(sql.Errorf(codeProtocolViolation, "received unencrypted data after SSL request"))
		return false
	}
	c.w.sendRaw([]byte{'S'})
	if c.w.flush() != nil {
		return false
	}
	tc := tls.Server(c.raw, c.srv.cfg.tls)
	if err := tc.Handshake(); err != nil {
		c.log.Warn("pgwire: TLS handshake failed", "err", err)
		return false
	}
	c.tls = true
	c.nc = tc
	c.rd = newMsgReader(tc, c.srv.cfg.maxMessage)
	c.w = newWriter(tc, c.srv.cfg.flushDelay)
	return true
}
