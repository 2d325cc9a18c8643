package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// Execute with a row limit suspends the portal; inside a transaction block
// the portal survives Sync and the next Execute resumes the same running
// statement; Close stops it.
func TestPortalSuspended(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	c, _ := startRaw(t, addr)

	// A finite result in steps, outside a transaction (Flush, not Sync).
	c.send(&pgproto3.Parse{Query: "SELECT TYPES"}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 2}, &pgproto3.Flush{})
	for _, want := range []string{"ParseComplete", "BindComplete", "DataRow", "DataRow", "PortalSuspended"} {
		if got := strings.TrimPrefix(describeMsg(c.recv()), "Row("); !strings.HasPrefix(got, want) && !(want == "DataRow" && got != "PortalSuspended") {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	c.send(&pgproto3.Execute{MaxRows: 2}, &pgproto3.Sync{})
	var got []string
	for {
		m := c.recv()
		got = append(got, strings.SplitN(describeMsg(m), "(", 2)[0])
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if g := strings.Join(got, " "); g != "Row Complete Ready" {
		t.Errorf("second Execute: %s", g)
	}

	// A push query in a transaction block: rows 0,1, then 2,3,4 of the
	// same statement across Syncs.
	c.send(&pgproto3.Query{String: "BEGIN"})
	c.expect("Complete(BEGIN) Ready(T)")
	c.send(&pgproto3.Parse{Name: "p", Query: "PUSH"}, &pgproto3.Bind{DestinationPortal: "cur", PreparedStatement: "p"},
		&pgproto3.Execute{Portal: "cur", MaxRows: 2}, &pgproto3.Sync{})
	c.expect("ParseComplete BindComplete Row(30) Row(31) PortalSuspended Ready(T)")
	c.send(&pgproto3.Execute{Portal: "cur", MaxRows: 3}, &pgproto3.Sync{})
	c.expect("Row(32) Row(33) Row(34) PortalSuspended Ready(T)")
	c.send(&pgproto3.Close{ObjectType: 'P', Name: "cur"}, &pgproto3.Sync{})
	c.expect("CloseComplete Ready(T)")
	if err := waitPushEnd(t, fx, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("push after Close: %v", err)
	}
	// A portal still suspended at COMMIT's Sync is closed with it.
	c.send(&pgproto3.Bind{DestinationPortal: "cur2", PreparedStatement: "p"}, &pgproto3.Execute{Portal: "cur2", MaxRows: 1}, &pgproto3.Sync{})
	c.expect("BindComplete Row(30) PortalSuspended Ready(T)")
	c.send(&pgproto3.Query{String: "COMMIT"})
	c.expect("Complete(COMMIT) Ready")
	if err := waitPushEnd(t, fx, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("push after COMMIT: %v", err)
	}
	c.send(&pgproto3.Execute{Portal: "cur2"}, &pgproto3.Sync{})
	c.expect("Error(ERROR 34000) Ready")
}

// BEGIN, an error, then everything but ROLLBACK fails with 25P02, as in
// Postgres; the status shows in ReadyForQuery.
func TestTransactionStatus(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Query{String: "COMMIT"})
	c.expect("Notice(25P01) Complete(COMMIT) Ready")
	c.send(&pgproto3.Query{String: "BEGIN; SELECT ONE"})
	c.expect("Complete(BEGIN) RowDesc(N:23:0) Row(31) Complete(SELECT 1) Ready(T)")
	c.send(&pgproto3.Query{String: "SELECT NOSUCH"})
	c.expect("Error(ERROR 42703) Ready(E)")
	c.send(&pgproto3.Query{String: "SELECT ONE"})
	c.expect("Error(ERROR 25P02) Ready(E)")
	c.send(&pgproto3.Parse{Query: "SELECT ONE"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.expect("ParseComplete BindComplete Error(ERROR 25P02) Ready(E)")
	c.send(&pgproto3.Query{String: "COMMIT"})
	c.expect("Complete(ROLLBACK) Ready")
	c.send(&pgproto3.Query{String: "START TRANSACTION; SAVEPOINT a; SELECT NOSUCH"})
	c.expect("Complete(BEGIN) Complete(SAVEPOINT) Error(ERROR 42703) Ready(E)")
	c.send(&pgproto3.Query{String: "ROLLBACK TO SAVEPOINT a; SELECT ONE; ROLLBACK"})
	c.expect("Complete(ROLLBACK) RowDesc(N:23:0) Row(31) Complete(SELECT 1) Complete(ROLLBACK) Ready")
}

// SET, SHOW, RESET and the functions drivers call are answered by pgwire;
// a changed reported parameter comes with ParameterStatus.
func TestSessionStatements(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Query{String: "SET application_name = 'x y'; SHOW application_name"})
	c.expect("ParameterStatus(application_name=x y) Complete(SET) RowDesc(application_name:25:0) Row(782079) Complete(SELECT 1) Ready")
	c.send(&pgproto3.Query{String: "SET client_encoding TO 'LATIN1'"})
	c.expect("Error(ERROR 0A000) Ready")
	c.send(&pgproto3.Query{String: "SET NAMES 'unicode'; SET datestyle = iso, dmy; SHOW DateStyle"})
	c.expect("Complete(SET) ParameterStatus(DateStyle=ISO, DMY) Complete(SET) RowDesc(DateStyle:25:0) Row(49534f2c20444d59) Complete(SELECT 1) Ready")
	c.send(&pgproto3.Query{String: "SET nosuch = 1"})
	c.expect("Error(ERROR 42704) Ready")
	c.send(&pgproto3.Query{String: "SET server_version = '1'"})
	c.expect("Error(ERROR 55P02) Ready")
	c.send(&pgproto3.Query{String: "SET myapp.flag = on; SELECT current_setting('myapp.flag'); RESET ALL"})
	c.expect("Complete(SET) RowDesc(current_setting:25:0) Row(6f6e) Complete(SELECT 1) ParameterStatus(application_name=) ParameterStatus(DateStyle=ISO, MDY) Complete(RESET) Ready")
	c.send(&pgproto3.Query{String: "SELECT 1, 'a' AS b, TRUE, NULL, current_user, current_schema(), pg_catalog.current_database()"})
	c.expect("RowDesc(?column?:23:0,b:25:0,?column?:16:0,?column?:25:0,current_user:25:0,current_schema:25:0,current_database:25:0) Row(31,61,74,NULL,726177,7075626c6963,726177) Complete(SELECT 1) Ready")
	c.send(&pgproto3.Query{String: "SHOW TRANSACTION ISOLATION LEVEL; SET SESSION TIME ZONE 'Europe/Paris'; SHOW timezone"})
	c.expect("RowDesc(transaction_isolation:25:0) Row(7265616420636f6d6d6974746564) Complete(SELECT 1) ParameterStatus(TimeZone=Europe/Paris) Complete(SET) RowDesc(TimeZone:25:0) Row(4575726f70652f5061726973) Complete(SELECT 1) Ready")
	// SET 'prop' and SHOW STREAMS go to the engine (here: a syntax error).
	c.send(&pgproto3.Query{String: "SHOW STREAMS"})
	c.expect("Error(ERROR 42601) Ready")
	// The same through the extended protocol.
	c.send(&pgproto3.Parse{Query: "SHOW search_path"}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.expect("ParseComplete Params(0) RowDesc(search_path:25:0) BindComplete Row(222475736572222c207075626c6963) Complete(SELECT 1) Ready")
}

// Parameters are substituted as literals of their type, from text or
// binary values; strings cannot escape their quotes.
func TestParameterSubstitution(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c, _ := startRaw(t, addr)
	i4 := binary.BigEndian.AppendUint32(nil, uint32(0xFFFFFFFE)) // -2
	num, _ := appendNumeric(nil, []byte("-12.50"))
	ts := binary.BigEndian.AppendUint64(nil, uint64(86400*1e6+1500)) // 2000-01-02 00:00:00.0015
	c.send(&pgproto3.Parse{Query: "ECHO $1 $2 $3 $4 $5 $6 $7::int $1", ParameterOIDs: []uint32{23, 25, 16, 1700, 1114, 17}},
		&pgproto3.Describe{ObjectType: 'S'},
		&pgproto3.Bind{ParameterFormatCodes: []int16{1, 0, 0, 1, 1, 0, 0},
			Parameters: [][]byte{i4, []byte(`a'b\'); DROP`), []byte("t"), num, ts, []byte(`\x00ff`), []byte("7")}},
		&pgproto3.Execute{}, &pgproto3.Sync{})
	var got string
	for {
		m := c.recv()
		switch m := m.(type) {
		case *pgproto3.ParameterDescription:
			if len(m.ParameterOIDs) != 7 || m.ParameterOIDs[6] != 23 || m.ParameterOIDs[0] != 23 {
				t.Errorf("parameter OIDs %v", m.ParameterOIDs)
			}
		case *pgproto3.DataRow:
			got = string(m.Values[0])
		case *pgproto3.ErrorResponse:
			t.Fatalf("error %s", m.Message)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	want := `-2 'a''b\''); DROP' TRUE -12.50 '2000-01-02 00:00:00.0015' TO_BYTES('00ff', 'hex') 7 -2`
	if got != want {
		t.Errorf("substituted\n%s\nwant\n%s", got, want)
	}
	// Bad values fail at Bind.
	for _, bad := range []struct {
		oid uint32
		val string
	}{{23, "x"}, {16, "maybe"}, {1700, "1e"}, {25, "a\x00b"}, {25, "\xff"}} {
		c.send(&pgproto3.Parse{Query: "ECHO $1", ParameterOIDs: []uint32{bad.oid}}, &pgproto3.Bind{Parameters: [][]byte{[]byte(bad.val)}}, &pgproto3.Sync{})
		msgs := []string{}
		for {
			m := c.recv()
			msgs = append(msgs, describeMsg(m))
			if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
		if len(msgs) != 3 || !strings.HasPrefix(msgs[1], "Error(ERROR 22") {
			t.Errorf("oid %d value %q: %v", bad.oid, bad.val, msgs)
		}
	}
}

// COPY (query) TO STDOUT sends CopyData lines, text or CSV.
func TestCopyOut(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Query{String: "COPY (SELECT TYPES) TO STDOUT"})
	c.expect("CopyOutResponse " +
		`CopyData("t\t-42\t1099511627776\t3.25\théllo\t\\\\x0001ff\t2024-02-29\t13:14:15.123\t2024-02-29 13:14:15.123\t12345.678\t[1,2,3]\n") ` +
		`CopyData("\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n") ` +
		`CopyData("f\t0\t-1\t-0.5\t\t\\\\x\t1970-01-01\t00:00:00.000\t1970-01-01 00:00:00.000\t-0.001\t[]\n") ` +
		"CopyDone Complete(COPY 3) Ready")
	c.send(&pgproto3.Query{String: "COPY (SELECT ONE) TO STDOUT WITH (FORMAT csv, HEADER true)"})
	c.expect(`CopyOutResponse CopyData("N\n") CopyData("1\n") CopyDone Complete(COPY 1) Ready`)
	c.send(&pgproto3.Query{String: "COPY s FROM STDIN"})
	c.expect("Error(ERROR 0A000) Ready")
}

// statement_timeout cancels a statement that runs too long.
func TestStatementTimeout(t *testing.T) {
	_, addr := startServer(t, newFake(), false)
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Query{String: "SET statement_timeout = '100ms'; SLOW"})
	start := time.Now()
	c.expect("Complete(SET) RowDesc(N:20:0) Error(ERROR 57014) Ready")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeout took %v", d)
	}
	c.send(&pgproto3.Query{String: "SHOW statement_timeout; SELECT ONE"})
	c.expect("RowDesc(statement_timeout:25:0) Row(3130306d73) Complete(SELECT 1) RowDesc(N:23:0) Row(31) Complete(SELECT 1) Ready")
}

// An idle connection is closed with 57P05; a running statement is not idle.
func TestIdleTimeout(t *testing.T) {
	fx := newFake()
	fx.pushLimit = 40 // 40 rows, 5ms apart: longer than the idle timeout
	_, addr := startServer(t, fx, false, WithIdleTimeout(100*time.Millisecond))
	c, _ := startRaw(t, addr)
	c.send(&pgproto3.Query{String: "PUSH"})
	for {
		if _, ok := c.recv().(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	m := c.recv()
	if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Severity != "FATAL" || e.Code != "57P05" {
		t.Fatalf("got %#v", m)
	}
}

// Past the connection limit a client gets 53300; the others go on.
func TestMaxConnections(t *testing.T) {
	_, addr := startServer(t, newFake(), false, WithMaxConnections(2))
	ctx := testCtx(t)
	a := connect(t, addr, "&sslmode=disable")
	connect(t, addr, "&sslmode=disable")
	_, err := pgx.Connect(ctx, "postgres://x@"+addr+"/db?sslmode=disable")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" || !strings.Contains(pe.Message, "too many clients") {
		t.Fatalf("third connection: %v", err)
	}
	var n int32
	if err := a.QueryRow(ctx, "SELECT ONE").Scan(&n); err != nil {
		t.Fatal(err)
	}
	a.Close(ctx)
	if !testserver.WaitFor(5*time.Second, func() bool {
		c, err := pgx.Connect(ctx, "postgres://x@"+addr+"/db?sslmode=disable")
		if err == nil {
			c.Close(ctx)
		}
		return err == nil
	}) {
		t.Error("no room after a client left")
	}
}

// SCRAM-SHA-256: the right password gets in; a wrong password and an
// unknown user get the same answer.
func TestPasswordAuth(t *testing.T) {
	users := NewUsers()
	if err := users.Add("alice", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if err := users.Add("bob", ScramVerifier("hunter2")); err != nil {
		t.Fatal(err)
	}
	_, addr := startServer(t, newFake(), false, WithPasswordAuth(users))
	ctx := testCtx(t)
	for _, u := range []string{"alice:s3cret", "bob:hunter2"} {
		conn, err := pgx.Connect(ctx, "postgres://"+u+"@"+addr+"/db?sslmode=disable")
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		var n int32
		if err := conn.QueryRow(ctx, "SELECT ONE").Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: %v", u, err)
		}
		conn.Close(ctx)
	}
	var msgs []string
	for _, u := range []string{"alice:wrong", "mallory:s3cret", "alice:"} {
		_, err := pgx.Connect(ctx, "postgres://"+u+"@"+addr+"/db?sslmode=disable")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Fatalf("%s: %v", u, err)
		}
		msgs = append(msgs, strings.Replace(pe.Message, strings.SplitN(u, ":", 2)[0], "USER", 1))
	}
	if msgs[0] != msgs[1] || msgs[0] != msgs[2] {
		t.Errorf("failures differ: %q", msgs)
	}
}

// psql authenticates with SCRAM over TLS (sslmode=require) against the
// real server started with --pg-auth=password and --pg-tls-cert.
func TestRealPsqlPasswordTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir)
	usersFile := dir + "/users"
	writeFile(t, usersFile, "# users\nalice:"+ScramVerifier("s3cret")+"\n")
	s := startReal(t, "--pg-auth", "password", "--pg-users-file", usersFile, "--pg-tls-cert", certFile, "--pg-tls-key", keyFile)
	out, err := s.psql(t, []string{"PGUSER=alice", "PGPASSWORD=s3cret", "PGSSLMODE=require"}, "-A", "-t", "-c", "SELECT current_user")
	if err != nil || out != "alice\n" {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	out, err = s.psql(t, []string{"PGUSER=alice", "PGPASSWORD=wrong", "PGSSLMODE=require"}, "-c", "SELECT 1")
	if err == nil || !strings.Contains(out, `password authentication failed for user "alice"`) {
		t.Fatalf("wrong password: %v\n%s", err, out)
	}
	if !s.WaitLog(5*time.Second, "authentication failed", "user=alice") {
		t.Error("failed login not logged")
	}
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, "postgres://alice:s3cret@"+s.PGAddr+"/db?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if !conn.PgConn().Conn().(*tls.Conn).ConnectionState().HandshakeComplete {
		t.Error("not TLS")
	}
}

// Serve refuses a non-loopback listener when every client is trusted.
func TestInsecureListenRefused(t *testing.T) {
	s := New(newFake(), WithLogger(testLogger()))
	defer s.Close()
	err := s.Serve(fakeListener{addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5433}})
	if !errors.Is(err, ErrInsecureListen) {
		t.Fatalf("Serve: %v", err)
	}
	s2 := New(newFake(), WithLogger(testLogger()), WithInsecureListen())
	defer s2.Close()
	go s2.Serve(fakeListener{addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5433}})
}

type fakeListener struct{ addr net.Addr }

func (l fakeListener) Accept() (net.Conn, error) {
	time.Sleep(10 * time.Millisecond)
	return nil, net.ErrClosed
}
func (l fakeListener) Close() error   { return nil }
func (l fakeListener) Addr() net.Addr { return l.addr }

func writeCert(t *testing.T, dir string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := dir+"/cert.pem", dir+"/key.pem"
	writeFile(t, certFile, string(pemBlock("CERTIFICATE", der)))
	writeFile(t, keyFile, string(pemBlock("EC PRIVATE KEY", kder)))
	return certFile, keyFile
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
