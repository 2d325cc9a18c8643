package pgwire

import (
	"bytes"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

func encodeAll(tb testing.TB, msgs ...pgproto3.FrontendMessage) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			tb.Fatal(err)
		}
	}
	return b
}

// FuzzMessages feeds arbitrary bytes to a connection after a valid startup
// message: whatever arrives, the server must answer or hang up, never
// panic. Run it with: go test -run '^$' -fuzz FuzzMessages ./server/pgwire/
func FuzzMessages(f *testing.F) {
	startup := encodeAll(f, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "fuzz"}})
	seeds := [][]pgproto3.FrontendMessage{
		{&pgproto3.Query{String: "SELECT ONE; SELECT TYPES"}},
		{&pgproto3.Query{String: "SELECT NOSUCH"}, &pgproto3.Query{String: ""}},
		{&pgproto3.Query{String: "PUSH"}, &pgproto3.Terminate{}},
		{&pgproto3.Parse{Name: "a", Query: "SELECT TYPES"}, &pgproto3.Describe{ObjectType: 'S', Name: "a"}, &pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "a", ResultFormatCodes: []int16{1}}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{}},
		{&pgproto3.Parse{Query: "SELECT $1"}, &pgproto3.Bind{Parameters: [][]byte{nil}}, &pgproto3.Execute{MaxRows: 1}, &pgproto3.Close{ObjectType: 'S'}, &pgproto3.Flush{}, &pgproto3.Sync{}},
		{&pgproto3.FunctionCall{Function: 7}, &pgproto3.CopyData{Data: []byte("x")}, &pgproto3.CopyFail{Message: "no"}},
		{&pgproto3.Query{String: "BEGIN; SELECT NOSUCH; SELECT ONE; ROLLBACK; SET application_name = 'x'; SHOW ALL; RESET ALL; DISCARD ALL"}},
		{&pgproto3.Query{String: "SELECT version(), current_setting('TimeZone'), 1, 'a' AS b; COPY (SELECT TYPES) TO STDOUT WITH CSV HEADER"}},
		{&pgproto3.Query{String: "SELECT c.relname AS \"Name\" FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relname OPERATOR(pg_catalog.~) '^(x)$' COLLATE pg_catalog.default AND c.relkind IN ('r','') ORDER BY 1 LIMIT 3"}},
		{&pgproto3.Parse{Query: "ECHO $1 $2::int", ParameterOIDs: []uint32{1700}}, &pgproto3.Bind{ParameterFormatCodes: []int16{1, 0}, Parameters: [][]byte{{0, 1, 0, 0, 0, 0, 0, 2, 0, 5}, []byte("3")}},
			&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{}},
		{&pgproto3.Query{String: "BEGIN"}, &pgproto3.Parse{Query: "PUSH"}, &pgproto3.Bind{DestinationPortal: "c"}, &pgproto3.Execute{Portal: "c", MaxRows: 1},
			&pgproto3.Sync{}, &pgproto3.Execute{Portal: "c", MaxRows: 1}, &pgproto3.Close{ObjectType: 'P', Name: "c"}, &pgproto3.Sync{}},
	}
	for _, s := range seeds {
		f.Add(encodeAll(f, s...))
	}
	f.Add([]byte{'Q', 0, 0, 0, 4})
	f.Add([]byte{'B', 0, 0, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfb, 0})
	f.Add([]byte{'P', 0x7f, 0xff, 0xff, 0xff})

	fx := newFake()
	fx.noPanic, fx.pushLimit = true, 3
	s := New(fx, WithLogger(testLogger()), WithFlushDelay(0))
	defer s.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newConn(s, &memConn{r: bytes.NewReader(append(append([]byte(nil), startup...), data...))})
		if !s.track(c) {
			t.Fatal("server closed")
		}
		c.serve()
		s.untrack(c)
		if n := s.panics.Load(); n != 0 {
			t.Fatalf("%d panics", n)
		}
	})
}

// FuzzAuth feeds arbitrary bytes to a server that requires SCRAM-SHA-256,
// after a valid startup message: the authentication exchange must answer
// or hang up, never panic. Run it with:
// go test -run '^$' -fuzz FuzzAuth ./server/pgwire/
func FuzzAuth(f *testing.F) {
	startup := encodeAll(f, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "alice"}})
	f.Add(encodeAll(f, &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abcdef")},
		&pgproto3.SASLResponse{Data: []byte("c=biws,r=abcdef,p=AAAA")}))
	f.Add(encodeAll(f, &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS", Data: []byte("p=tls-server-end-point,,n=,r=x")}))
	f.Add(encodeAll(f, &pgproto3.PasswordMessage{Password: "s3cret"}))
	f.Add([]byte{'p', 0, 0, 0, 4})
	users := NewUsers()
	users.Add("alice", "s3cret")
	s := New(newFake(), WithLogger(testLogger()), WithFlushDelay(0), WithPasswordAuth(users))
	defer s.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newConn(s, &memConn{r: bytes.NewReader(append(append([]byte(nil), startup...), data...))})
		if !s.track(c) {
			t.Fatal("server closed")
		}
		c.serve()
		s.untrack(c)
		if n := s.panics.Load(); n != 0 {
			t.Fatalf("%d panics", n)
		}
	})
}
