// Package e2e holds end-to-end tests that build the sqlstreams binary, run
// it as a separate process (embedded broker over TCP), drive it with real
// clients, and kill and restart it.
package e2e
