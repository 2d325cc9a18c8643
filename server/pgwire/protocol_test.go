package pgwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawClient speaks the protocol message by message.
type rawClient struct {
	t  *testing.T
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

// startRaw dials and completes startup, returning the parameter statuses.
func startRaw(t *testing.T, addr string) (*rawClient, map[string]string) {
	t.Helper()
	c := dialRaw(t, addr)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "raw", "application_name": "rawtest"}})
	params := map[string]string{}
	for {
		switch m := c.recv().(type) {
		case *pgproto3.AuthenticationOk:
		case *pgproto3.ParameterStatus:
			params[m.Name] = m.Value
		case *pgproto3.BackendKeyData:
			if m.ProcessID == 0 || len(m.SecretKey) != 4 {
				t.Errorf("BackendKeyData %+v", m)
			}
		case *pgproto3.ReadyForQuery:
			return c, params
		default:
			t.Fatalf("unexpected %T during startup", m)
		}
	}
}

func (c *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	for _, m := range msgs {
		c.fe.Send(m)
	}
	if err := c.fe.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) recv() pgproto3.BackendMessage {
	c.t.Helper()
	m, err := c.fe.Receive()
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	return m
}

// expect receives messages and describes them compactly, until and
// including ReadyForQuery (or n messages when n > 0).
func (c *rawClient) expect(want string) {
	c.t.Helper()
	var got []string
	for {
		m := c.recv()
		got = append(got, describeMsg(m))
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if g := strings.Join(got, " "); g != want {
		c.t.Errorf("got  %s\nwant %s", g, want)
	}
}

func describeMsg(m pgproto3.BackendMessage) string {
	switch m := m.(type) {
	case *pgproto3.ErrorResponse:
		return "Error(" + m.Severity + " " + m.Code + ")"
	case *pgproto3.CommandComplete:
		return "Complete(" + string(m.CommandTag) + ")"
	case *pgproto3.RowDescription:
		var fs []string
		for _, f := range m.Fields {
			fs = append(fs, fmt.Sprintf("%s:%d:%d", f.Name, f.DataTypeOID, f.Format))
		}
		return "RowDesc(" + strings.Join(fs, ",") + ")"
	case *pgproto3.DataRow:
		var vs []string
		for _, v := range m.Values {
			if v == nil {
				vs = append(vs, "NULL")
			} else {
				vs = append(vs, fmt.Sprintf("%x", v))
			}
		}
		return "Row(" + strings.Join(vs, ",") + ")"
	case *pgproto3.ParameterDescription:
		return fmt.Sprintf("Params(%d)", len(m.ParameterOIDs))
	case *pgproto3.ReadyForQuery:
		if m.TxStatus != 'I' {
			return "Ready(" + string(m.TxStatus) + ")"
		}
		return "Ready"
	case *pgproto3.CopyData:
		return fmt.Sprintf("CopyData(%q)", m.Data)
	case *pgproto3.ParameterStatus:
		return "ParameterStatus(" + m.Name + "=" + m.Value + ")"
	case *pgproto3.NoticeResponse:
		return "Notice(" + m.Code + ")"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
}

func TestStartupParameters(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	_, params := startRaw(t, addr)
	want := map[string]string{
		"server_version": ServerVersion, "server_encoding": "UTF8", "client_encoding": "UTF8",
		"DateStyle": "ISO, MDY", "TimeZone": "UTC", "integer_datetimes": "on",
		"standard_conforming_strings": "on", "application_name": "rawtest", "session_authorization": "raw",
	}
	for k, v := range want {
		if params[k] != v {
			t.Errorf("%s = %q, want %q", k, params[k], v)
		}
	}
}

func TestSSLAndGSSRefused(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c := dialRaw(t, addr)
	for _, code := range []uint32{gssEncRequestCode, sslRequestCode} {
		var b [8]byte
		binary.BigEndian.PutUint32(b[:], 8)
		binary.BigEndian.PutUint32(b[4:], code)
		c.nc.Write(b[:])
		var resp [1]byte
		if _, err := io.ReadFull(c.nc, resp[:]); err != nil || resp[0] != 'N' {
			t.Fatalf("answer %q %v", resp, err)
		}
	}
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "u"}})
	for {
		if _, ok := c.recv().(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	c.send(&pgproto3.Query{String: "SELECT ONE"})
	c.expect("RowDesc(N:23:0) Row(31) Complete(SELECT 1) Ready")
}

func TestUnsupportedProtocolVersion(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c := dialRaw(t, addr)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: 2 << 16, Parameters: map[string]string{"user": "u"}})
	// A 2.0 startup packet has the same framing; the answer is FATAL.
	m := c.recv()
	if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Severity != "FATAL" || e.Code != "0A000" {
		t.Fatalf("got %#v", m)
	}
}

func TestNegotiateProtocolVersion(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c := dialRaw(t, addr)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion32, Parameters: map[string]string{"user": "u", "_pq_.future": "x"}})
	m, ok := c.recv().(*pgproto3.NegotiateProtocolVersion)
	if !ok || m.NewestMinorProtocol != 0 || len(m.UnrecognizedOptions) != 1 || m.UnrecognizedOptions[0] != "_pq_.future" {
		t.Fatalf("got %#v", m)
	}
	var got []string
	for {
		m := c.recv()
		if _, ok := m.(*pgproto3.ParameterStatus); ok {
			got = append(got, "ParameterStatus")
			continue
		}
		got = append(got, describeMsg(m))
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if g := strings.Join(got, " "); g != "AuthenticationOk"+strings.Repeat(" ParameterStatus", 13)+" BackendKeyData Ready" {
		t.Errorf("got %s", g)
	}
}

func TestSimpleProtocolEdges(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c, _ := startRaw(t, addr)

	c.send(&pgproto3.Query{String: ""})
	c.expect("EmptyQueryResponse Ready")
	c.send(&pgproto3.Query{String: " ; -- nothing\n"})
	c.expect("EmptyQueryResponse Ready")
	c.send(&pgproto3.Query{String: "SELECT ONE; SELECT NOSUCH; SELECT ONE"})
	c.expect("RowDesc(N:23:0) Row(31) Complete(SELECT 1) Error(ERROR 42703) Ready")
	c.send(&pgproto3.Query{String: "CREATE STREAM S"})
	c.expect("Complete(CREATE STREAM) Ready")
}

func TestExtendedProtocol(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c, _ := startRaw(t, addr)

	// Named statement, Describe S, two portals with different formats.
	c.send(
		&pgproto3.Parse{Name: "s1", Query: "SELECT ONE;"},
		&pgproto3.Describe{ObjectType: 'S', Name: "s1"},
		&pgproto3.Bind{DestinationPortal: "p_text", PreparedStatement: "s1"},
		&pgproto3.Bind{DestinationPortal: "p_bin", PreparedStatement: "s1", ResultFormatCodes: []int16{1}},
		&pgproto3.Describe{ObjectType: 'P', Name: "p_bin"},
		&pgproto3.Execute{Portal: "p_text"},
		&pgproto3.Execute{Portal: "p_bin"},
		&pgproto3.Execute{Portal: "p_bin"}, // exhausted: nothing more
		&pgproto3.Sync{},
	)
	c.expect("ParseComplete Params(0) RowDesc(N:23:0) BindComplete BindComplete RowDesc(N:23:1) " +
		"Row(31) Complete(SELECT 1) Row(00000001) Complete(SELECT 1) Complete(SELECT 0) Ready")

	// Portals end at Sync; the statement lives on.
	c.send(&pgproto3.Execute{Portal: "p_text"}, &pgproto3.Sync{})
	c.expect("Error(ERROR 34000) Ready")

	// Per-column formats, and a wrong count of them.
	c.send(
		&pgproto3.Parse{Query: "SELECT TYPES"},
		&pgproto3.Bind{ResultFormatCodes: []int16{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Sync{},
	)
	c.expect("ParseComplete BindComplete RowDesc(B:16:1,I:23:0,L:20:1,D:701:0,S:25:1,Y:17:0,DT:1082:1,TM:1083:0,TS:1114:1,N:1700:0,J:114:1) Ready")
	c.send(
		&pgproto3.Parse{Query: "SELECT TYPES"},
		&pgproto3.Describe{ObjectType: 'S'},
		&pgproto3.Bind{ResultFormatCodes: []int16{1, 0}},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	c.expect("ParseComplete Params(0) RowDesc(B:16:0,I:23:0,L:20:0,D:701:0,S:25:0,Y:17:0,DT:1082:0,TM:1083:0,TS:1114:0,N:1700:0,J:114:0) Error(ERROR 08P01) Ready")

	// After an error, everything up to Sync is discarded.
	c.send(
		&pgproto3.Parse{Query: "SELECT NOSUCH"},
		&pgproto3.Describe{ObjectType: 'S'},
		&pgproto3.Bind{},
		&pgproto3.Execute{},
		&pgproto3.Query{String: "SELECT ONE"},
		&pgproto3.Sync{},
	)
	c.expect("ParseComplete Error(ERROR 42703) Ready")

	// Close a statement, then use it.
	c.send(
		&pgproto3.Close{ObjectType: 'S', Name: "s1"},
		&pgproto3.Close{ObjectType: 'P', Name: "nope"},
		&pgproto3.Bind{PreparedStatement: "s1"},
		&pgproto3.Sync{},
	)
	c.expect("CloseComplete CloseComplete Error(ERROR 26000) Ready")

	// Duplicate names, multiple commands, parameters.
	c.send(&pgproto3.Parse{Name: "d", Query: "SELECT ONE"}, &pgproto3.Parse{Name: "d", Query: "SELECT ONE"}, &pgproto3.Sync{})
	c.expect("ParseComplete Error(ERROR 42P05) Ready")
	c.send(&pgproto3.Parse{Query: "SELECT ONE; SELECT ONE"}, &pgproto3.Sync{})
	c.expect("Error(ERROR 42601) Ready")
	c.send(&pgproto3.Parse{Query: "ECHO x = $1"}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{})
	c.expect("ParseComplete Params(1) RowDesc(ECHO:25:0) Ready")
	c.send(&pgproto3.Parse{Query: "SELECT ONE", ParameterOIDs: []uint32{23}}, &pgproto3.Bind{}, &pgproto3.Sync{})
	c.expect("ParseComplete Error(ERROR 08P01) Ready")
	c.send(&pgproto3.Parse{Query: "SELECT ONE"}, &pgproto3.Bind{Parameters: [][]byte{[]byte("1")}}, &pgproto3.Sync{})
	c.expect("ParseComplete Error(ERROR 08P01) Ready")
	c.send(&pgproto3.Parse{Query: "SELECT ONE"}, &pgproto3.Bind{ResultFormatCodes: []int16{7}}, &pgproto3.Sync{})
	c.expect("ParseComplete Error(ERROR 22023) Ready")

	// An empty statement.
	c.send(&pgproto3.Parse{Query: "  "}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.expect("ParseComplete Params(0) NoData BindComplete EmptyQueryResponse Ready")

	// A statement without rows.
	c.send(&pgproto3.Parse{Query: "CREATE STREAM S"}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.expect("ParseComplete Params(0) NoData BindComplete Complete(CREATE STREAM) Ready")

	// Flush writes without Sync.
	c.send(&pgproto3.Parse{Query: "SELECT ONE"}, &pgproto3.Flush{})
	if _, ok := c.recv().(*pgproto3.ParseComplete); !ok {
		t.Fatal("no ParseComplete after Flush")
	}
	c.send(&pgproto3.Sync{})
	c.expect("Ready")
}

// A statement described with one shape and executed with another fails the
// way Postgres does, so that pgx re-prepares it.
func TestResultTypeChanged(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Parse{Name: "x", Query: "SELECT ONE"}, &pgproto3.Describe{ObjectType: 'S', Name: "x"}, &pgproto3.Sync{})
	c.expect("ParseComplete Params(0) RowDesc(N:23:0) Ready")
	fx.oneAsBigint.Store(true)
	c.send(&pgproto3.Bind{PreparedStatement: "x"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.expect("BindComplete Error(ERROR 0A000) Ready")

	// pgx recovers by preparing again.
	fx.oneAsBigint.Store(false)
	conn := connect(t, addr, "&sslmode=disable")
	var n int64
	if err := conn.QueryRow(testCtx(t), "SELECT ONE").Scan(&n); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	fx.oneAsBigint.Store(true)
	if err := conn.QueryRow(testCtx(t), "SELECT ONE").Scan(&n); err == nil {
		t.Fatal("first query after the change succeeded")
	}
	if err := conn.QueryRow(testCtx(t), "SELECT ONE").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after re-prepare: %v %v", n, err)
	}
}

func TestUnsupportedMessages(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c, _ := startRaw(t, addr)

	// Unknown type outside a batch: error and ReadyForQuery.
	c.nc.Write([]byte{'Z', 0, 0, 0, 4})
	c.expect("Error(ERROR 08P01) Ready")
	// FunctionCall.
	c.send(&pgproto3.FunctionCall{Function: 1})
	c.expect("Error(ERROR 0A000) Ready")
	// Inside a batch: error, then discard until Sync.
	c.send(&pgproto3.Parse{Query: "SELECT ONE"})
	c.nc.Write([]byte{'F', 0, 0, 0, 4})
	c.send(&pgproto3.Bind{}, &pgproto3.Sync{})
	c.expect("ParseComplete Error(ERROR 0A000) Ready")
	// Stray COPY messages are ignored.
	c.send(&pgproto3.CopyData{Data: []byte("x")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "SELECT ONE"})
	c.expect("RowDesc(N:23:0) Row(31) Complete(SELECT 1) Ready")
}

func TestMalformedMessageClosesConnection(t *testing.T) {
	_, addr := startServer(t, newFake(), false, WithMaxMessageSize(1024))
	for name, raw := range map[string][]byte{
		"bad length":   {'Q', 0, 0, 0, 2},
		"no NUL":       {'Q', 0, 0, 0, 6, 'h', 'i'},
		"too large":    {'Q', 0, 1, 0, 0},
		"sync payload": {'S', 0, 0, 0, 5, 1},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := startRaw(t, addr)
			c.nc.Write(raw)
			m := c.recv()
			if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Severity != "FATAL" || e.Code != "08P01" {
				t.Fatalf("got %#v", m)
			}
			if _, err := c.fe.Receive(); err == nil {
				t.Fatal("connection still open")
			}
		})
	}
	// Other connections are unaffected.
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Query{String: "SELECT ONE"})
	c.expect("RowDesc(N:23:0) Row(31) Complete(SELECT 1) Ready")
}

func TestPanicClosesOnlyThatConnection(t *testing.T) {
	s, addr := startServer(t, newFake(), true)
	other, _ := startRaw(t, addr)
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Query{String: "PANIC"})
	m := c.recv()
	if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Severity != "FATAL" || e.Code != "XX000" {
		t.Fatalf("got %#v", m)
	}
	if _, err := c.fe.Receive(); err == nil {
		t.Fatal("connection still open")
	}
	if s.panics.Load() != 1 {
		t.Errorf("%d panics recorded", s.panics.Load())
	}
	other.send(&pgproto3.Query{String: "SELECT ONE"})
	other.expect("RowDesc(N:23:0) Row(31) Complete(SELECT 1) Ready")
}

// Terminate while a push query runs stops it, and the server hangs up.
func TestTerminateStopsPush(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Query{String: "PUSH"})
	if _, ok := c.recv().(*pgproto3.RowDescription); !ok {
		t.Fatal("no RowDescription")
	}
	if _, ok := c.recv().(*pgproto3.DataRow); !ok {
		t.Fatal("no DataRow")
	}
	c.send(&pgproto3.Terminate{})
	if err := waitPushEnd(t, fx, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("PUSH ended with %v", err)
	}
	for {
		if _, err := c.fe.Receive(); err != nil {
			break
		}
	}
}

func TestCancelRequestOnlyClosesCancelConnection(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c := dialRaw(t, addr)
	b0, _ := (&pgproto3.CancelRequest{ProcessID: 12345, SecretKey: []byte{1, 2, 3, 4}}).Encode(nil)
	c.nc.Write(b0)
	var b [1]byte
	if n, err := c.nc.Read(b[:]); n != 0 || err == nil {
		t.Fatalf("cancel connection answered %d bytes, err %v", n, err)
	}
}

func TestStartupTimeout(t *testing.T) {
	_, addr := startServer(t, newFake(), false, WithStartupTimeout(50*time.Millisecond))
	c := dialRaw(t, addr)
	var b [1]byte
	_, err := c.nc.Read(b[:])
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("server did not hang up: %v", err)
	}
}

// TestShutdownEndsSessionsWithFatal57P01: Shutdown ends a running push
// query and an idle session each with one FATAL 57P01 and closes them,
// refuses new connections, and returns once they are gone.
func TestShutdownEndsSessionsWithFatal57P01(t *testing.T) {
	fx := newFake()
	s, addr := startServer(t, fx, false)
	push, _ := startRaw(t, addr)
	idle, _ := startRaw(t, addr)
	push.send(&pgproto3.Query{String: "PUSH"})
	for {
		if _, ok := push.recv().(*pgproto3.DataRow); ok {
			break // the push query runs
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Shutdown waited for its deadline: a session did not end")
	}
	if err := waitPushEnd(t, fx, 5*time.Second); err == nil {
		t.Error("the push query ended without its context cancelled")
	}
	for name, c := range map[string]*rawClient{"push": push, "idle": idle} {
		var last pgproto3.BackendMessage
		for {
			m, err := c.fe.Receive()
			if err != nil {
				break // the server closed the connection
			}
			if _, ok := m.(*pgproto3.DataRow); ok {
				continue
			}
			if last != nil {
				t.Errorf("%s session: %s after %s", name, describeMsg(m), describeMsg(last))
			}
			last = m
		}
		if last == nil || describeMsg(last) != "Error(FATAL 57P01)" {
			t.Errorf("%s session ended with %v, want one Error(FATAL 57P01)", name, last)
		}
	}
	if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		nc.Close()
		t.Error("a new connection was accepted after Shutdown")
	}
}
