package pgwire

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// TestSpinReader: the spinning reader of a lone connection reads what
// arrives while it polls and what arrives after it parked, reports the
// peer's close as io.EOF and honours read deadlines, as net.Conn does.
func TestSpinReader(t *testing.T) {
	client, server := tcpPair(t)

	srv := &Server{}
	srv.nconns.Store(1) // lone: the reader spins
	r := newSpinReader(server, srv)
	if _, ok := r.(*spinReader); !ok {
		t.Fatalf("a TCP connection got %T, not a spinning reader", r)
	}
	buf := make([]byte, 16)
	for _, after := range []time.Duration{0, 10 * time.Microsecond, 500 * time.Microsecond, 5 * time.Millisecond} {
		go func() {
			time.Sleep(after)
			client.Write([]byte("ping"))
		}()
		n, err := io.ReadFull(r, buf[:4])
		if err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("written %v later: read %q, %v", after, buf[:n], err)
		}
	}
	srv.nconns.Store(2) // not lone: it parks at once
	go client.Write([]byte("pong"))
	if n, err := io.ReadFull(r, buf[:4]); err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a deadline error", err)
	}
	server.SetReadDeadline(time.Time{})
	client.Close()
	if _, err := r.Read(buf); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
}
