// Package scaleout tests several sqlstreams server processes sharing one
// service: a standalone broker process (`sqlstreams broker`) and engine
// processes on loopback that use it through --bootstrap-servers, driven
// with real clients (pgx) and real signals.
package scaleout
