//go:build !linux

package pgwire

// platformIO is the plain path off Linux: there is no serving loop and
// no socket read outside the network poller.
func platformIO(polledSockets bool) socketIO { return plainIO{} }
