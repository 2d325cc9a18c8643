package pgwire

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// TestDecodeBindReused: the reader's own Bind decoding, which reuses its
// slices and names, gives what pgproto3's Bind.Decode gives, for binds one
// after another in one reader, and for every truncation of them (both
// fail).
func TestDecodeBindReused(t *testing.T) {
	binds := []pgproto3.Bind{
		{PreparedStatement: "P0_1", Parameters: [][]byte{[]byte("42")}, ResultFormatCodes: []int16{0}},
		{PreparedStatement: "P0_1", Parameters: [][]byte{[]byte("7")}, ResultFormatCodes: []int16{0}},
		{DestinationPortal: "c1", PreparedStatement: "other", ParameterFormatCodes: []int16{1, 0, 1},
			Parameters: [][]byte{{0, 0, 0, 5}, nil, {}}, ResultFormatCodes: []int16{1, 0}},
		{},
		{PreparedStatement: "P0_1", Parameters: [][]byte{nil}},
	}
	norm := func(m *pgproto3.Bind) string {
		// nil and empty slices print alike: they are the same to bind.
		return fmt.Sprintf("%q %q %v %q %v", m.DestinationPortal, m.PreparedStatement, m.ParameterFormatCodes, m.Parameters, m.ResultFormatCodes)
	}
	r := &msgReader{}
	for round := 0; round < 2; round++ {
		for i, b := range binds {
			enc, err := b.Encode(nil)
			if err != nil {
				t.Fatal(err)
			}
			body := enc[5:]
			for cut := 0; cut <= len(body); cut++ {
				src := body[:cut]
				var want pgproto3.Bind
				werr := want.Decode(src)
				gerr := r.decodeBind(src)
				if (werr != nil) != (gerr != nil) {
					t.Fatalf("bind %d cut at %d of %d: error %v, pgproto3's %v", i, cut, len(body), gerr, werr)
				}
				if werr != nil {
					if gerr.Error() != werr.Error() {
						t.Fatalf("bind %d cut at %d: error %q, pgproto3's %q", i, cut, gerr, werr)
					}
					continue
				}
				if got, w := norm(&r.bind), norm(&want); got != w {
					t.Fatalf("bind %d cut at %d: %s, pgproto3's %s", i, cut, got, w)
				}
				for j, p := range want.Parameters {
					if (p == nil) != (r.bind.Parameters[j] == nil) {
						t.Fatalf("bind %d: parameter %d null %v, pgproto3's %v", i, j, r.bind.Parameters[j] == nil, p == nil)
					}
				}
			}
		}
	}
	// A prepared statement bound again keeps its name's string.
	b := pgproto3.Bind{PreparedStatement: "P0_1", Parameters: [][]byte{[]byte("1")}, ResultFormatCodes: []int16{0}}
	enc, _ := b.Encode(nil)
	if err := r.decodeBind(enc[5:]); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = r.decodeBind(enc[5:]) }); n != 0 {
		t.Fatalf("decoding a repeated Bind allocates %v times", n)
	}
}

// TestDecodeExecuteReused: the reader's own Execute decoding gives what
// pgproto3's Execute.Decode gives, for every truncation too, and
// allocates nothing for a repeated portal.
func TestDecodeExecuteReused(t *testing.T) {
	r := &msgReader{}
	for _, e := range []pgproto3.Execute{{}, {Portal: "c1", MaxRows: 10}, {MaxRows: 1 << 31}} {
		enc, err := e.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		body := enc[5:]
		for cut := 0; cut <= len(body); cut++ {
			var want pgproto3.Execute
			werr := want.Decode(body[:cut])
			gerr := r.decodeExecute(body[:cut])
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("%+v cut at %d: error %v, pgproto3's %v", e, cut, gerr, werr)
			}
			if werr == nil && r.execute != want {
				t.Fatalf("%+v cut at %d: %+v, pgproto3's %+v", e, cut, r.execute, want)
			}
		}
	}
	enc, _ := (&pgproto3.Execute{}).Encode(nil)
	if n := testing.AllocsPerRun(100, func() { _ = r.decodeExecute(enc[5:]) }); n != 0 {
		t.Fatalf("decoding a repeated Execute allocates %v times", n)
	}
}
