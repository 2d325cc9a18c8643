// Command sqlstreams runs the sqlstreams server (the default, or
// "sqlstreams server"), its interactive shell ("sqlstreams shell") or
// the demo data generator ("sqlstreams datagen"), or runs ksqlDB test
// files against an in-process broker and engine ("sqlstreams test").
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
	case "shell":
		code = runShell(args)
	case "datagen":
		code = runDatagen(args)
	case "test":
		code = runTest(args)
	case "help":
		fmt.Println("usage: sqlstreams [server] [flags] | sqlstreams shell [flags] | sqlstreams datagen [flags] | sqlstreams test [flags]")
	default:
		fmt.Fprintf(os.Stderr, "sqlstreams: unknown command %q (want server, shell, datagen or test)\n", cmd)
		code = 2
	}
	os.Exit(code)
}
