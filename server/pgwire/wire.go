package pgwire

// This file frames messages: msgReader reads and decodes frontend messages
// into pgproto3 structs the caller owns (unlike pgproto3.Backend.Receive,
// whose messages die at the next Receive, ours may be handed to another
// goroutine), and writer buffers backend messages and decides when to flush.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Startup packet codes (the int32 after the length).
const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
)

// maxStartupPacket is Postgres's limit on a startup packet (MAX_STARTUP_PACKET_LENGTH).
const maxStartupPacket = 10000

// protocolError is a malformed or oversized message: the connection cannot
// continue, since framing may be lost.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

func protocolErrorf(format string, args ...any) error {
	return &protocolError{msg: fmt.Sprintf(format, args...)}
}

// unsupportedMsg is a well-framed message of a type the server does not
// handle (FunctionCall, a password message after startup, an unknown type
// byte). It is answered with an error; the connection stays usable.
type unsupportedMsg struct{ typ byte }

func (*unsupportedMsg) Frontend()           {}
func (*unsupportedMsg) Decode([]byte) error { return nil }
func (m *unsupportedMsg) Encode([]byte) ([]byte, error) {
	return nil, fmt.Errorf("cannot encode %q", m.typ)
}

// msgReader reads frontend messages from a buffered connection.
type msgReader struct {
	br  *bufio.Reader
	max int // largest message body accepted
	hdr [5]byte

	// The messages a prepared statement executed over and over sends —
	// Bind, Describe, Execute — are decoded by readReused into these and
	// the scratch body, not into new ones. See readReused.
	scratch  []byte
	bind     pgproto3.Bind
	describe pgproto3.Describe
	execute  pgproto3.Execute
}

// maxReused is the largest body readReused decodes into its scratch.
const maxReused = 4096

func newMsgReader(r io.Reader, max int) *msgReader {
	return &msgReader{br: bufio.NewReaderSize(r, 8192), max: max}
}

// readStartup reads the untyped first message of a connection: a
// StartupMessage, SSLRequest, GSSEncRequest or CancelRequest. A startup
// message of protocol 3.x for any x is decoded, its ProtocolVersion kept
// as sent, so the caller can negotiate the version down.
func (r *msgReader) readStartup() (pgproto3.FrontendMessage, error) {
	if _, err := io.ReadFull(r.br, r.hdr[:4]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(r.hdr[:4])))
	if n < 8 || n > maxStartupPacket {
		return nil, protocolErrorf("invalid length of startup packet: %d", n)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r.br, body); err != nil {
		return nil, unexpectedEOF(err)
	}
	code := binary.BigEndian.Uint32(body)
	switch {
	case code == sslRequestCode && n == 8:
		return &pgproto3.SSLRequest{}, nil
	case code == gssEncRequestCode && n == 8:
		return &pgproto3.GSSEncRequest{}, nil
	case code == cancelRequestCode:
		m := &pgproto3.CancelRequest{}
		if err := m.Decode(body); err != nil {
			return nil, protocolErrorf("invalid cancel request: %v", err)
		}
		return m, nil
	case code>>16 == 3:
		// pgproto3 decodes only 3.0 and 3.2; decode any 3.x as 3.0.
		binary.BigEndian.PutUint32(body, pgproto3.ProtocolVersion30)
		m := &pgproto3.StartupMessage{}
		if err := m.Decode(body); err != nil {
			return nil, protocolErrorf("invalid startup packet layout: %v", err)
		}
		m.ProtocolVersion = code
		return m, nil
	case code>>16 < 3 || code>>16 > 3 && code>>16 < 1234:
		// A version we do not speak; let the caller refuse it by name.
		return &pgproto3.StartupMessage{ProtocolVersion: code}, nil
	}
	return nil, protocolErrorf("unknown startup message code %d", code)
}

// readMessage reads one typed frontend message. A message of an unknown
// type comes back as *unsupportedMsg; a message whose length or content is
// invalid is a *protocolError.
func (r *msgReader) readMessage() (pgproto3.FrontendMessage, error) {
	typ, body, err := r.readRaw()
	if err != nil {
		return nil, err
	}
	return decodeMessage(typ, body)
}

// readReused is readMessage for a caller that handles each message before
// it reads the next and keeps nothing of a Bind, Describe or Execute (bind
// copies what it keeps): those are decoded into the reader's own structs
// over its scratch body, which the next read overwrites. Only the
// connection's own goroutine reads this way; a reader goroutine, whose
// messages wait in a channel, uses readMessage.
func (r *msgReader) readReused() (pgproto3.FrontendMessage, error) {
	typ, n, err := r.readHeader()
	if err != nil {
		return nil, err
	}
	var msg pgproto3.FrontendMessage
	switch {
	case n > maxReused:
	case typ == 'B':
		msg = &r.bind
	case typ == 'D':
		msg = &r.describe
	case typ == 'E':
		msg = &r.execute
	}
	if msg == nil {
		body, err := r.readBody(n)
		if err != nil {
			return nil, err
		}
		return decodeMessage(typ, body)
	}
	if cap(r.scratch) < n {
		r.scratch = make([]byte, 0, max(n, 256))
	}
	body := r.scratch[:n]
	if _, err := io.ReadFull(r.br, body); err != nil {
		return nil, unexpectedEOF(err)
	}
	decode := msg.Decode
	switch typ {
	case 'B':
		decode = r.decodeBind
	case 'E':
		decode = r.decodeExecute
	}
	if err := decode(body); err != nil {
		return nil, protocolErrorf("invalid %q message: %v", typ, err)
	}
	return msg, nil
}

// pgproto3's errors for a malformed Bind or Execute, as their Decode
// methods give them.
var (
	errBindFormat    = (&pgproto3.Bind{}).Decode(nil)
	errExecuteFormat = (&pgproto3.Execute{}).Decode([]byte{0})
)

// decodeExecute decodes an Execute as pgproto3's Execute.Decode does, into
// r.execute, keeping the portal's name when it repeats (Decode copies it).
func (r *msgReader) decodeExecute(src []byte) error {
	m := &r.execute
	i := bytes.IndexByte(src, 0)
	if i < 0 {
		return io.EOF
	}
	if string(src[:i]) != m.Portal {
		m.Portal = string(src[:i])
	}
	if len(src[i+1:]) < 4 {
		return errExecuteFormat
	}
	m.MaxRows = binary.BigEndian.Uint32(src[i+1:])
	return nil
}

// decodeBind decodes a Bind as pgproto3's Bind.Decode does, into r.bind,
// reusing its slices and its names when they repeat: a prepared statement
// bound over and over costs no allocation here (Decode makes three: the
// statement's name, the parameters and the result formats).
func (r *msgReader) decodeBind(src []byte) error {
	m := &r.bind
	cstring := func(old string) (string, bool) {
		i := bytes.IndexByte(src, 0)
		if i < 0 {
			return "", false
		}
		b := src[:i]
		src = src[i+1:]
		if string(b) == old {
			return old, true
		}
		return string(b), true
	}
	codes := func(dst []int16) ([]int16, bool) {
		if len(src) < 2 {
			return nil, false
		}
		n := int(binary.BigEndian.Uint16(src))
		src = src[2:]
		if len(src) < 2*n {
			return nil, false
		}
		dst = dst[:0]
		for i := range n {
			dst = append(dst, int16(binary.BigEndian.Uint16(src[2*i:])))
		}
		src = src[2*n:]
		return dst, true
	}
	var ok bool
	if m.DestinationPortal, ok = cstring(m.DestinationPortal); !ok {
		return errBindFormat
	}
	if m.PreparedStatement, ok = cstring(m.PreparedStatement); !ok {
		return errBindFormat
	}
	if m.ParameterFormatCodes, ok = codes(m.ParameterFormatCodes); !ok {
		return errBindFormat
	}
	if len(src) < 2 {
		return errBindFormat
	}
	n := int(binary.BigEndian.Uint16(src))
	src = src[2:]
	m.Parameters = m.Parameters[:0]
	for range n {
		if len(src) < 4 {
			return errBindFormat
		}
		size := int(int32(binary.BigEndian.Uint32(src)))
		src = src[4:]
		if size == -1 {
			m.Parameters = append(m.Parameters, nil)
			continue
		}
		if size < 0 || len(src) < size {
			return errBindFormat
		}
		m.Parameters = append(m.Parameters, src[:size:size])
		src = src[size:]
	}
	if m.ResultFormatCodes, ok = codes(m.ResultFormatCodes); !ok {
		return errBindFormat
	}
	return nil
}

// decodeMessage decodes a message of type typ from body, which it may
// keep.
func decodeMessage(typ byte, body []byte) (pgproto3.FrontendMessage, error) {
	var msg pgproto3.FrontendMessage
	switch typ {
	case 'Q':
		msg = &pgproto3.Query{}
	case 'P':
		msg = &pgproto3.Parse{}
	case 'B':
		msg = &pgproto3.Bind{}
	case 'D':
		msg = &pgproto3.Describe{}
	case 'E':
		msg = &pgproto3.Execute{}
	case 'S':
		msg = &pgproto3.Sync{}
	case 'H':
		msg = &pgproto3.Flush{}
	case 'C':
		msg = &pgproto3.Close{}
	case 'X':
		msg = &pgproto3.Terminate{}
	case 'd':
		msg = &pgproto3.CopyData{}
	case 'c':
		msg = &pgproto3.CopyDone{}
	case 'f':
		msg = &pgproto3.CopyFail{}
	default:
		return &unsupportedMsg{typ: typ}, nil
	}
	if err := msg.Decode(body); err != nil {
		return nil, protocolErrorf("invalid %q message: %v", typ, err)
	}
	return msg, nil
}

// readRaw reads one typed message: its type byte and body.
func (r *msgReader) readRaw() (byte, []byte, error) {
	typ, n, err := r.readHeader()
	if err != nil {
		return 0, nil, err
	}
	body, err := r.readBody(n)
	return typ, body, err
}

// readHeader reads a typed message's type byte and the length of its body.
func (r *msgReader) readHeader() (byte, int, error) {
	if _, err := io.ReadFull(r.br, r.hdr[:]); err != nil {
		return 0, 0, unexpectedEOF(err)
	}
	typ := r.hdr[0]
	n := int(int32(binary.BigEndian.Uint32(r.hdr[1:])))
	if n < 4 {
		return 0, 0, protocolErrorf("invalid message length %d", n)
	}
	if n-4 > r.max {
		return 0, 0, protocolErrorf("message of %d bytes exceeds the limit of %d", n-4, r.max)
	}
	return typ, n - 4, nil
}

// buffered reports how many bytes were read from the connection but not
// yet decoded.
func (r *msgReader) buffered() int { return r.br.Buffered() }

// readBody reads an n-byte message body into a new slice the message may
// keep. Large bodies grow as bytes arrive, so a bogus length costs no more
// memory than the bytes actually sent.
func (r *msgReader) readBody(n int) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		body := make([]byte, n)
		_, err := io.ReadFull(r.br, body)
		return body, unexpectedEOF(err)
	}
	body := make([]byte, 0, chunk)
	for len(body) < n {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		m := min(cap(body), n) - len(body)
		k, err := io.ReadFull(r.br, body[len(body):len(body)+m])
		body = body[:len(body)+k]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return body, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// flushThreshold is the buffered size at which rows are written at once.
const flushThreshold = 16 << 10

// writer buffers backend messages for one connection. Writes happen under
// mu, so the flush timer and the connection goroutine can both write.
//
// Flush policy: control messages are buffered and written when the protocol
// hands the turn to the client (ReadyForQuery, the Flush message), as
// Postgres does, or when 64 KiB are pending.
// Rows (DataRow, CopyData) are written as soon as flushThreshold bytes are
// pending, and otherwise at most delay after the first unwritten row: a
// burst of rows becomes a few large writes, and a lone row of a push query
// reaches the client within delay instead of waiting for the next one.
// When a statement starts its result (flushSoon), what is pending goes out
// within delay too, since a client may wait for BindComplete or
// RowDescription before a push query has produced anything.
type writer struct {
	mu      sync.Mutex
	nc      net.Conn
	buf     []byte
	err     error // sticky: the first failed write
	delay   time.Duration
	timer   *time.Timer
	armed   bool
	stopped bool
	// The messages every statement ends with, reused (under mu) so that
	// a statement's end allocates nothing.
	cc  pgproto3.CommandComplete
	rfq pgproto3.ReadyForQuery
}

func newWriter(nc net.Conn, delay time.Duration) *writer {
	return &writer{nc: nc, buf: make([]byte, 0, 8192), delay: delay}
}

// send buffers msg.
func (w *writer) send(msg pgproto3.BackendMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appendLocked(msg)
}

// commandComplete buffers a CommandComplete with tag.
func (w *writer) commandComplete(tag string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cc.CommandTag = append(w.cc.CommandTag[:0], tag...)
	return w.appendLocked(&w.cc)
}

// readyForQuery buffers a ReadyForQuery with the transaction status.
func (w *writer) readyForQuery(status byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rfq.TxStatus = status
	return w.appendLocked(&w.rfq)
}

// sendRow buffers msg and writes it out now or within the flush delay.
func (w *writer) sendRow(msg pgproto3.BackendMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.appendLocked(msg); err != nil {
		return err
	}
	return w.soonLocked()
}

// sendBatched buffers msg and writes what is buffered once flushThreshold
// bytes are pending, without arming the flush timer: for a statement whose
// end flushes (resultWriter.pullQuery).
func (w *writer) sendBatched(msg pgproto3.BackendMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.appendLocked(msg); err != nil {
		return err
	}
	if len(w.buf) >= flushThreshold {
		return w.writeLocked()
	}
	return nil
}

// flushSoon writes what is buffered within the flush delay: a statement
// has started to return its result (BindComplete, RowDescription or
// CopyOutResponse are pending) and the client may wait for it before the
// first row, which a push query may take long to produce.
func (w *writer) flushSoon() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.soonLocked()
}

func (w *writer) soonLocked() error {
	switch {
	case len(w.buf) >= flushThreshold || w.delay <= 0:
		return w.writeLocked()
	case !w.armed && !w.stopped:
		w.armed = true
		if w.timer == nil {
			w.timer = time.AfterFunc(w.delay, w.onTimer)
		} else {
			w.timer.Reset(w.delay)
		}
	}
	return nil
}

// sendRaw buffers bytes that are not a message (the SSLRequest answer).
func (w *writer) sendRaw(b []byte) {
	w.mu.Lock()
	w.buf = append(w.buf, b...)
	w.mu.Unlock()
}

func (w *writer) appendLocked(msg pgproto3.BackendMessage) error {
	if w.err != nil {
		return w.err
	}
	n := len(w.buf)
	b, err := msg.Encode(w.buf)
	if err != nil {
		w.buf = w.buf[:n]
		return fmt.Errorf("encoding %T: %w", msg, err)
	}
	w.buf = b
	if len(w.buf) >= 4*flushThreshold {
		return w.writeLocked()
	}
	return nil
}

// flush writes what is buffered.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked()
}

func (w *writer) onTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	w.writeLocked()
}

func (w *writer) writeLocked() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	// Nothing will be left unwritten: disarm the flush timer, so that a
	// statement answered at Sync does not cost a timer firing (a
	// goroutine) 2ms later. When Stop is too late, onTimer disarms it.
	if w.armed && w.timer.Stop() {
		w.armed = false
	}
	_, err := w.nc.Write(w.buf)
	if err != nil {
		w.err = err
	}
	if cap(w.buf) > 1<<20 {
		w.buf = make([]byte, 0, 8192)
	} else {
		w.buf = w.buf[:0]
	}
	return w.err
}

// failed returns the write error, if any.
func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// stop disarms the flush timer for good.
func (w *writer) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
