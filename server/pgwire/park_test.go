package pgwire

import (
	"strings"
	"testing"
)

// TestParkProtocol drives the park state machine (parkState) through
// every order in which a connection's goroutine, its serving loop and the
// server can act, one step at a time: who owns the connection after each
// step, and which steps succeed.
func TestParkProtocol(t *testing.T) {
	names := map[int32]string{parkOwned: "owned", parkParked: "parked", parkServing: "serving", parkReclaimd: "reclaimed"}
	for _, tc := range []struct {
		name  string
		steps string // step:result … ; results: ok, no, - (no result)
		end   int32
	}{
		{"served and parked again", "park:- take:ok repark:ok", parkParked},
		{"served, given back", "park:- take:ok give:-", parkOwned},
		{"reclaimed while parked", "park:- reclaim:ok take:no", parkOwned},
		{"reclaimed while served", "park:- take:ok reclaim:no repark:no give:-", parkOwned},
		{"reclaimed twice while served", "park:- take:ok reclaim:no reclaim:no repark:no give:-", parkOwned},
		{"reclaimed after it was given back", "park:- take:ok give:- reclaim:no", parkOwned},
		{"left alone while parked", "park:- unpark:ok take:no reclaim:no", parkOwned},
		{"left alone while served", "park:- take:ok unpark:no repark:ok unpark:ok", parkOwned},
		{"a stale event after the goroutine took it", "park:- reclaim:ok take:no unpark:no", parkOwned},
		{"parked again after coming back", "park:- take:ok give:- park:- take:ok repark:ok reclaim:ok", parkOwned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p parkState
			for _, step := range strings.Fields(tc.steps) {
				op, want, _ := strings.Cut(step, ":")
				var got bool
				switch op {
				case "park":
					p.park()
				case "take":
					got = p.take()
				case "repark":
					got = p.repark()
				case "give":
					p.give()
				case "reclaim":
					got = p.reclaim()
				case "unpark":
					got = p.unpark()
				default:
					t.Fatalf("unknown step %q", op)
				}
				if want != "-" && got != (want == "ok") {
					t.Fatalf("%s: got %v (state %s)", step, got, names[p.load()])
				}
			}
			if p.load() != tc.end {
				t.Fatalf("ends %s, want %s", names[p.load()], names[tc.end])
			}
		})
	}
}

// TestParkWake: the goroutine hears of every hand-back on its wake
// channel exactly once, whoever gives the connection back — the server
// (unpark) or the loop after a reclaim — and never when it took the
// connection back itself.
func TestParkWake(t *testing.T) {
	c := &conn{wake: make(chan inbound, 1)}
	// The server leaves it alone while parked: one wake.
	c.park.park()
	c.unpark()
	if len(c.wake) != 1 {
		t.Fatalf("unpark of a parked connection: %d wakes, want 1", len(c.wake))
	}
	<-c.wake
	// Not parked: unpark does nothing.
	c.unpark()
	if len(c.wake) != 0 {
		t.Fatal("unpark of an owned connection woke it")
	}
	// The goroutine takes it back while parked: no wake, it owns it.
	c.park.park()
	if !c.reclaim() || len(c.wake) != 0 {
		t.Fatal("reclaim of a parked connection did not take it back at once")
	}
	// While the loop serves it, reclaim waits for the loop's hand-back.
	c.park.park()
	c.park.take()
	if c.reclaim() {
		t.Fatal("reclaim took a connection the loop is serving")
	}
	if c.park.repark() {
		t.Fatal("the loop parked a reclaimed connection again")
	}
}
