package pgwire

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
)

// psql runs psql against addr with args and returns stdout and stderr.
func psql(t *testing.T, addr string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	path := testtool.Need(t, "psql", "apt-get install postgresql-client; scripts/deps.sh does")
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-h", host, "-p", port, "-X", "-A", "-t"}, args...)...)
	cmd.Env = append(os.Environ(), "PGUSER=tester", "PGDATABASE=db", "PGCONNECT_TIMEOUT=5", "LC_ALL=C.UTF-8", "PGCLIENTENCODING=UTF8")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// (d) psql, which negotiates SSL first, runs two statements of one -c and
// prints both results.
func TestPsqlMultiStatement(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	out, errOut, err := psql(t, addr, "-c", "SELECT ONE; SELECT TYPES")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, errOut)
	}
	want := "1\n" +
		"t|-42|1099511627776|3.25|héllo|\\x0001ff|2024-02-29|13:14:15.123|2024-02-29 13:14:15.123|12345.678|[1,2,3]\n" +
		"||||||||||\n" +
		"f|0|-1|-0.5||\\x|1970-01-01|00:00:00.000|1970-01-01 00:00:00.000|-0.001|[]\n"
	if out != want {
		t.Errorf("psql printed\n%s\nwant\n%s", out, want)
	}
}

// psql shows the error position with a caret under the offending token.
func TestPsqlErrorPosition(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	_, errOut, err := psql(t, addr, "-v", "VERBOSITY=verbose", "-c", "SELECT NOSUCH")
	if err == nil {
		t.Fatal("psql succeeded")
	}
	for _, want := range []string{"ERROR:  42703: line 1:8: column \"NOSUCH\" cannot be resolved", "LINE 1: SELECT NOSUCH\n               ^"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("psql stderr lacks %q:\n%s", want, errOut)
		}
	}
}
