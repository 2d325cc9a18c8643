package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// gatedListener is the listener kfake accepts on. It merges two sources of
// connections:
//
//   - in-process pipes from the broker's own clients (dialInternal), always
//     accepted, so the repair can talk to kfake before anyone else;
//   - the real TCP listener, whose connections are accepted only after
//     open: until then they wait in the kernel's accept queue, so an
//     outside client that connects during the repair is served after it
//     instead of racing it.
//
// Addr reports the advertised address, which kfake puts in metadata.
type gatedListener struct {
	tcp  net.Listener
	adv  net.Addr
	log  *slog.Logger
	gate chan struct{} // closed by open
	done chan struct{} // closed by Close
	conn chan net.Conn
	// wrap, when set, wraps each outside connection (TLS); set it
	// before open.
	wrap func(net.Conn) net.Conn

	openOnce  sync.Once
	closeOnce sync.Once
}

var _ net.Listener = (*gatedListener)(nil)

func newGatedListener(tcp net.Listener, adv net.Addr, log *slog.Logger) *gatedListener {
	l := &gatedListener{
		tcp:  tcp,
		adv:  adv,
		log:  log,
		gate: make(chan struct{}),
		done: make(chan struct{}),
		conn: make(chan net.Conn),
	}
	go l.pump()
	return l
}

// open starts handing outside connections to kfake.
func (l *gatedListener) open() { l.openOnce.Do(func() { close(l.gate) }) }

// pump accepts TCP connections once the gate is open and hands them to
// Accept. Unlike kfake's own accept loop it survives transient errors
// (EMFILE and the like) instead of going deaf.
func (l *gatedListener) pump() {
	select {
	case <-l.gate:
	case <-l.done:
		return
	}
	for {
		c, err := l.tcp.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.log.Warn("broker: accept failed; retrying", "err", err)
			select {
			case <-time.After(50 * time.Millisecond):
			case <-l.done:
				return
			}
			continue
		}
		if l.wrap != nil {
			c = l.wrap(c)
		}
		select {
		case l.conn <- c:
		case <-l.done:
			c.Close()
			return
		}
	}
}

// Accept returns the next internal or (after open) outside connection.
func (l *gatedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conn:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; kfake calls it when the cluster closes.
func (l *gatedListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.tcp.Close()
	})
	return err
}

// Addr returns the advertised address.
func (l *gatedListener) Addr() net.Addr { return l.adv }

// dialInternal is a kgo.Dialer: it ignores the address and connects to kfake
// through an in-process pipe.
func (l *gatedListener) dialInternal(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conn <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errClosed
}
