package main

import (
	"flag"
	"os"
	"strings"
)

// envName maps a flag name to its environment variable: pg-addr becomes
// SQLSTREAMS_PG_ADDR.
func envName(flagName string) string {
	return "SQLSTREAMS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// stringFlag defines a string flag whose default comes from its
// environment variable when set.
func stringFlag(fs *flag.FlagSet, name, def, usage string) *string {
	if v, ok := os.LookupEnv(envName(name)); ok {
		def = v
	}
	return fs.String(name, def, usage+" (env "+envName(name)+")")
}
