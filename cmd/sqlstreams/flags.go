package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
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

// parseBytes reads a size such as 64MiB, 512KiB, 1GiB or a plain number of
// bytes.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 64MiB)", s)
	}
	return n * mult, nil
}
