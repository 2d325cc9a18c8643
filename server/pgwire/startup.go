package pgwire

// This file handles the start of a connection.
//
// Supported: SSLRequest and GSSEncRequest (answered 'N': no encryption; the
// client goes on in plain text), StartupMessage for protocol 3.0 (3.x asks
// are negotiated down to 3.0 with NegotiateProtocolVersion, and unknown
// _pq_ options are listed there), CancelRequest. There is no
// authentication: every user is accepted with AuthenticationOk. Not yet:
// TLS, passwords, SCRAM.

import (
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

	c.srv.register(c)
	user := m.Parameters["user"]
	c.log = c.log.With("pid", c.pid, "user", user)
	c.log.Debug("pgwire: connection started", "database", m.Parameters["database"], "application_name", m.Parameters["application_name"])

	c.w.send(&pgproto3.AuthenticationOk{})
	for _, p := range [...][2]string{
		{"application_name", m.Parameters["application_name"]},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"default_transaction_read_only", "off"},
		{"in_hot_standby", "off"},
		{"integer_datetimes", "on"},
		{"IntervalStyle", "postgres"},
		{"is_superuser", "off"},
		{"server_encoding", "UTF8"},
		{"server_version", ServerVersion},
		{"session_authorization", user},
		{"standard_conforming_strings", "on"},
		{"TimeZone", "UTC"},
	} {
		c.w.send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	c.w.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]})
	c.readyForQuery()
	return c.w.failed() == nil
}
