// Command sqlstreams runs the sqlstreams server (the default, or
// "sqlstreams server"), its interactive shell ("sqlstreams shell"),
// the demo data generator ("sqlstreams datagen"), resets a persistent
// query ("sqlstreams reset --query ID"), runs the broker alone
// ("sqlstreams broker"), or runs ksqlDB test files against an in-process
// broker and engine ("sqlstreams test"), or lists every permission the
// service lacks on a Kafka cluster ("sqlstreams check-kafka").
//
// The server serves the Postgres wire protocol and the REST API and, when
// no --bootstrap-servers is given, starts an embedded Kafka-protocol broker
// whose data lives under --data-dir. Every flag has an SQLSTREAMS_*
// environment equivalent (--pg-addr is SQLSTREAMS_PG_ADDR).
package main

import (
	"fmt"
	"os"
)

func main() {
	args := os.Args[1:]
	cmd := "server"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var code int
	switch cmd {
	case "server":
		code = runServer(args)
	case "broker":
		code = runBroker(args)
	case "shell":
		code = runShell(args)
	case "datagen":
		code = runDatagen(args)
	case "reset":
		code = runReset(args)
	case "test":
		code = runTest(args)
	case "check-kafka":
		code = runCheckKafka(args)
	case "help":
		fmt.Println("usage: sqlstreams [server] [flags] | sqlstreams broker [flags] | sqlstreams shell [flags] | sqlstreams datagen [flags] | sqlstreams reset --query ID [flags] | sqlstreams test [flags] | sqlstreams check-kafka [flags]")
	default:
		fmt.Fprintf(os.Stderr, "sqlstreams: unknown command %q (want server, broker, shell, datagen, reset, test or check-kafka)\n", cmd)
		code = 2
	}
	os.Exit(code)
}
