package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPgFlags(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	os.WriteFile(users, []byte("alice:secret\n"), 0o600)
	for _, c := range []struct {
		args    []string
		addr    string
		wantErr string
	}{
		{nil, "127.0.0.1:5433", ""},
		{nil, "localhost:5433", ""},
		{nil, "0.0.0.0:5433", "not a loopback address"},
		{[]string{"--pg-allow-remote-trust"}, "0.0.0.0:5433", ""},
		{[]string{"--pg-auth", "password"}, "0.0.0.0:5433", "needs users"},
		{[]string{"--pg-auth", "password", "--pg-users", "bob:pw"}, "0.0.0.0:5433", ""},
		{[]string{"--pg-auth", "password", "--pg-users-file", users}, "[::]:5433", ""},
		{[]string{"--pg-auth", "md5"}, "127.0.0.1:5433", "want trust or password"},
		{[]string{"--pg-tls-cert", "x.pem"}, "127.0.0.1:5433", "go together"},
		{[]string{"--pg-idle-timeout", "soon"}, "127.0.0.1:5433", "duration"},
		{[]string{"--pg-max-connections", "-1"}, "127.0.0.1:5433", "non-negative"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		f := definePgFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := f.options(c.addr)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%v %s: %v", c.args, c.addr, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%v %s: error %v, want %q", c.args, c.addr, err, c.wantErr)
		}
	}
}
