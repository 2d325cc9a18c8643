package pgwire

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// unpolledPair returns a client socket and the server's end of it, which
// its first read takes out of the network poller: srv has one
// connection.
func unpolledPair(t *testing.T) (client net.Conn, u *sockConn, srv *Server) {
	t.Helper()
	client, server := tcpPair(t)
	srv = &Server{log: testLogger(), conns: map[*conn]struct{}{{}: {}}}
	srv.nconns.Store(1)
	u = newSockConn(server, srv)
	t.Cleanup(func() { u.Close() })
	return client, u, srv
}

// tcpPair returns both ends of a loopback TCP connection, closed when the
// test ends.
func tcpPair(t *testing.T) (client net.Conn, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = (<-accepted).(*net.TCPConn)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// returnsWithin runs f and fails unless it returns within d.
func returnsWithin(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestUnpolledConn: a lone connection's socket out of the network poller
// reads what arrives while it spins and after it waits, writes, honours
// read deadlines set before and during a read, and reports the peer's
// close as io.EOF, as net.Conn does.
func TestUnpolledConn(t *testing.T) {
	client, u, _ := unpolledPair(t)
	buf := make([]byte, 16)
	for _, after := range []time.Duration{0, 10 * time.Microsecond, 500 * time.Microsecond, 5 * time.Millisecond} {
		go func() {
			time.Sleep(after)
			client.Write([]byte("ping"))
		}()
		n, err := io.ReadFull(u, buf[:4])
		if err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("written %v later: read %q, %v", after, buf[:n], err)
		}
		if !u.unpolled() {
			t.Fatal("a lone connection's socket is in the network poller after a read")
		}
		if _, err := u.Write([]byte("pong")); err != nil {
			t.Fatal(err)
		}
		if n, err := io.ReadFull(client, buf[:4]); err != nil || string(buf[:n]) != "pong" {
			t.Fatalf("client read %q, %v", buf[:n], err)
		}
	}

	u.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := u.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a deadline error", err)
	}
	var ne net.Error
	if _, err := u.Read(buf); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a net.Error that is a timeout", err)
	}
	// A deadline set while a read waits (as the connection's end does)
	// ends the read.
	u.SetReadDeadline(time.Time{})
	go func() {
		time.Sleep(20 * time.Millisecond)
		u.SetReadDeadline(time.Unix(1, 0))
	}()
	returnsWithin(t, 5*time.Second, "a read whose deadline passed while it waited", func() {
		if _, err := u.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read: %v, want a deadline error", err)
		}
	})
	u.SetReadDeadline(time.Time{})
	client.Write([]byte("late"))
	if n, err := io.ReadFull(u, buf[:4]); err != nil || string(buf[:n]) != "late" {
		t.Fatalf("read after the deadline was cleared: %q, %v", buf[:n], err)
	}
	client.Close()
	if _, err := u.Read(buf); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
}

// TestUnpolledConnClose: Close ends a read and a write that wait, and
// both then report net.ErrClosed.
func TestUnpolledConnClose(t *testing.T) {
	for _, out := range []bool{true, false} {
		testSockClose(t, out)
	}
}

func testSockClose(t *testing.T, out bool) {
	client, u, srv := unpolledPair(t)
	if !out {
		srv.nconns.Store(2)
	}
	client.Write([]byte("x"))
	if _, err := u.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if u.unpolled() != out {
		t.Fatalf("out of the poller: %v, want %v", u.unpolled(), out)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := u.Read(make([]byte, 16))
		readErr <- err
	}()
	// A write the client never reads blocks once the socket's buffers
	// are full.
	writeErr := make(chan error, 1)
	go func() {
		chunk := make([]byte, 1<<20)
		for {
			if _, err := u.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	returnsWithin(t, 5*time.Second, "Close", func() { u.Close() })
	for what, ch := range map[string]chan error{"read": readErr, "write": writeErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("%s after Close: %v, want net.ErrClosed", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the %s did not end at Close", what)
		}
	}
	if _, err := u.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
}

// TestUnpolledConnWriteDeadline: a write to a client that does not read
// ends at its deadline with a timeout, as the connection's close relies
// on.
func TestUnpolledConnWriteDeadline(t *testing.T) {
	client, u, _ := unpolledPair(t)
	client.Write([]byte("x"))
	if _, err := u.Read(make([]byte, 1)); err != nil || !u.unpolled() {
		t.Fatalf("read: %v; out of the poller: %v", err, u.unpolled())
	}
	u.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	returnsWithin(t, 5*time.Second, "a write past its deadline", func() {
		chunk := make([]byte, 1<<20)
		for {
			_, err := u.Write(chunk)
			if err == nil {
				continue
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("write: %v, want a deadline error", err)
			}
			return
		}
	})
}

// TestUnpolledConnHandover: asked to, the connection gives its socket
// back to the network poller at its next read, waiting or not, losing
// nothing the client sent before or after; deadlines, writes, the peer's
// close and Close work on the socket in the poller.
func TestUnpolledConnHandover(t *testing.T) {
	for _, waiting := range []bool{true, false} {
		client, u, srv := unpolledPair(t)
		// Sent before the handover, read after it.
		client.Write([]byte("before"))
		buf := make([]byte, 6)
		if _, err := io.ReadFull(u, buf[:3]); err != nil || string(buf[:3]) != "bef" {
			t.Fatalf("read %q, %v", buf[:3], err)
		}
		if !u.unpolled() {
			t.Fatal("a lone connection's socket is in the network poller after a read")
		}
		srv.nconns.Store(2)
		if waiting {
			go func() {
				time.Sleep(30 * time.Millisecond)
				u.requestHandover()
				time.Sleep(30 * time.Millisecond)
				client.Write([]byte("after"))
			}()
		} else {
			u.requestHandover()
		}
		if _, err := io.ReadFull(u, buf[:3]); err != nil || string(buf[:3]) != "ore" {
			t.Fatalf("waiting=%v: read %q, %v", waiting, buf[:3], err)
		}
		if !waiting {
			client.Write([]byte("after"))
		}
		if n, err := io.ReadFull(u, buf[:5]); err != nil || string(buf[:n]) != "after" {
			t.Fatalf("waiting=%v: read after the handover %q, %v", waiting, buf[:n], err)
		}
		if u.unpolled() {
			t.Fatalf("waiting=%v: the socket is not in the poller after the handover", waiting)
		}
		if _, err := u.Write([]byte("reply")); err != nil {
			t.Fatal(err)
		}
		if n, err := io.ReadFull(client, buf[:5]); err != nil || string(buf[:n]) != "reply" {
			t.Fatalf("client read %q, %v", buf[:n], err)
		}
		u.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := u.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past the deadline after the handover: %v", err)
		}
		u.SetReadDeadline(time.Time{})
		client.Close()
		if _, err := u.Read(buf); err != io.EOF {
			t.Fatalf("read after the peer closed: %v, want io.EOF", err)
		}
		if err := u.Close(); err != nil {
			t.Fatalf("Close after the handover: %v", err)
		}
	}
}

// TestUnpolledServer: through the server, a lone client's socket leaves
// the poller; when a second client connects it goes back at the first's
// next read, both keep working, and once the first is alone again its
// socket leaves again. WithPolledSockets keeps it in.
func TestUnpolledServer(t *testing.T) {
	fx := newFake()
	srv, addr := startServer(t, fx, false)
	a := connect(t, addr, "")
	var one int
	query := func(c *pgx.Conn, who string) {
		t.Helper()
		if err := c.QueryRow(testCtx(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("%s: SELECT 1: %d, %v", who, one, err)
		}
	}
	query(a, "alone")
	ua := waitLone(t, srv, true)
	b := connect(t, addr, "")
	for i := 0; i < 3; i++ {
		query(a, "first client, with a second connected")
		query(b, "second client")
	}
	waitLone(t, srv, false)
	// Both wait for their requests in the serving loop, out of the
	// poller; SELECT 1 is not a lookup the loop answers, so it gave
	// each back to its goroutine.
	if !ua.unpolled() {
		t.Fatal("with a second client connected, the first client's socket is in the network poller, not the serving loop")
	}
	if served, given := loopCounts(srv); given < 6 || served != 0 {
		t.Fatalf("the serving loop handled %d messages and gave connections back %d times; want 0 and at least 6", served, given)
	}
	b.Close(testCtx(t))
	waitConns(t, srv, 1)
	query(a, "alone again")
	if u := waitLone(t, srv, true); u != ua {
		t.Fatalf("the lone socket is %p, want the first client's %p", u, ua)
	}
	query(a, "alone again, out of the poller")

	srv2, addr2 := startServer(t, fx, false, WithPolledSockets())
	d := connect(t, addr2, "")
	query(d, "WithPolledSockets")
	time.Sleep(20 * time.Millisecond)
	if lonerOf(srv2) != nil {
		t.Fatal("WithPolledSockets: a lone socket is out of the poller")
	}
}

// lonerOf returns the server's lone socket out of the poller, if any.
func lonerOf(s *Server) *sockConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, _ := s.loner.(*sockConn)
	return u
}

// waitLone waits until the server has a lone socket out of the poller
// (or none, !want) and returns it.
func waitLone(t *testing.T, s *Server, want bool) *sockConn {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		u := lonerOf(s)
		if (u != nil && u.unpolled()) == want {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("a lone socket out of the poller: %v, want %v", u != nil, want)
		}
	}
}

func waitConns(t *testing.T, s *Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.nconns.Load() != int32(n); {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", s.nconns.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
