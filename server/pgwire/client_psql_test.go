package pgwire

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// psql's \dt, \d, \d name, \d+, \l and \dn print the streams and tables
// of the real server with their columns and types; session statements
// (SET, SHOW, BEGIN, version()) work.
func TestRealPsqlDescribe(t *testing.T) {
	s := sharedReal(t)
	out, err := s.psql(t, nil,
		"-c", "CREATE STREAM PSQL_ORDERS (ID INT KEY, ITEM STRING, QTY BIGINT, PRICE DECIMAL(10,2), AT TIMESTAMP, TAGS ARRAY<STRING>) WITH (KAFKA_TOPIC='psql_orders', VALUE_FORMAT='JSON', PARTITIONS=1)",
		"-c", "CREATE TABLE PSQL_USERS (ID INT PRIMARY KEY, NAME STRING) WITH (KAFKA_TOPIC='psql_users', VALUE_FORMAT='JSON', PARTITIONS=1)")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}

	out, err = s.psql(t, nil, "-c", `\dt`)
	if err != nil {
		t.Fatalf("\\dt: %v\n%s", err, out)
	}
	for _, want := range []string{
		"List of relations",
		" Schema | Name | Type | Owner ",
		" public | PSQL_ORDERS | stream | sqlstreams",
		" public | PSQL_USERS | table | sqlstreams",
		" public | PROCESSING_LOG | stream | sqlstreams",
	} {
		// psql pads columns to the longest name: compare with the padding
		// folded.
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("\\dt output lacks %q:\n%s", want, out)
		}
	}

	// psql lower-cases the name it is given; it still finds PSQL_ORDERS.
	out, err = s.psql(t, nil, "-c", `\d psql_orders`)
	if err != nil {
		t.Fatalf("\\d psql_orders: %v\n%s", err, out)
	}
	want := `Table "public.PSQL_ORDERS"
 Column |      Type      | Collation | Nullable | Default 
--------+----------------+-----------+----------+---------
 ID     | INTEGER KEY    |           |          | 
 ITEM   | STRING         |           |          | 
 QTY    | BIGINT         |           |          | 
 PRICE  | DECIMAL(10, 2) |           |          | 
 AT     | TIMESTAMP      |           |          | 
 TAGS   | ARRAY<STRING>  |           |          | 
`
	if !strings.Contains(out, want) {
		t.Errorf("\\d psql_orders printed\n%s\nwant\n%s", out, want)
	}
	out, _ = s.psql(t, nil, "-c", `\d "PSQL_USERS"`)
	if !strings.Contains(out, `Table "public.PSQL_USERS"`) || !strings.Contains(out, "ID     | INTEGER PRIMARY KEY") {
		t.Errorf("\\d \"PSQL_USERS\" printed\n%s", out)
	}
	if strings.Contains(out, "PSQL_ORDERS") {
		t.Errorf("\\d of one table shows another:\n%s", out)
	}

	out, _ = s.psql(t, nil, "-c", `\d`, "-c", `\d+`, "-c", `\l`, "-c", `\dn`, "-c", `\d nosuch`, "-c", `\dv`)
	for _, want := range []string{
		" public | PSQL_USERS | table | sqlstreams",
		"Kafka topic psql_orders, KAFKA keys, JSON values",
		"List of databases",
		" db | sqlstreams | UTF8",
		"List of schemas",
		`Did not find any relation named "nosuch".`,
		"Did not find any relations.",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("psql output lacks %q:\n%s", want, out)
		}
	}

	out, err = s.psql(t, nil, "-A", "-t",
		"-c", "SELECT version()",
		"-c", "SELECT current_database(), current_schema()",
		"-c", "SET DateStyle TO 'ISO, DMY'",
		"-c", "SHOW DateStyle",
		"-c", "SET application_name = 'psql-test'",
		"-c", "SHOW application_name",
		"-c", "BEGIN", "-c", "SHOW STREAMS", "-c", "COMMIT",
		"-c", "SET extra_float_digits = 3", "-c", "SET search_path TO public",
		"-c", "SHOW standard_conforming_strings",
		"-c", "SELECT 1")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	for _, want := range []string{"PostgreSQL 15.0", "db|public", "ISO, DMY", "psql-test", "PSQL_ORDERS|psql_orders|KAFKA|JSON|false", "on\n1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("psql output lacks %q:\n%s", want, out)
		}
	}
}

// COPY (SELECT … EMIT CHANGES) TO STDOUT streams rows into an interactive
// psql as they are produced; Ctrl-C sends a CancelRequest that stops the
// query and frees its consumer.
func TestRealPsqlCopyStreamsLive(t *testing.T) {
	script := testtool.Need(t, "script", "util-linux's script gives psql a terminal: apt-get install util-linux")
	testtool.Need(t, "psql", "apt-get install postgresql-client; scripts/deps.sh does")
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := s.pgxConn(t, ctx)
	if _, err := conn.Exec(ctx, "CREATE STREAM COPY_LIVE (ID INT KEY, NOTE STRING) WITH (KAFKA_TOPIC='copy_live', VALUE_FORMAT='JSON', PARTITIONS=1)"); err != nil {
		t.Fatal(err)
	}

	// psql in a pseudo-terminal, as a person runs it: its standard output
	// is then line-buffered, so each row shows as soon as it arrives.
	host, port, _ := net.SplitHostPort(s.PGAddr)
	cmd := exec.Command(script, "-qfec", "psql -X -h "+host+" -p "+port+" -U tester -d db -c \"SET 'auto.offset.reset'='earliest'\" -c \"COPY (SELECT ID, NOTE FROM COPY_LIVE EMIT CHANGES) TO STDOUT\"", "/dev/null")
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "TERM=dumb")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	stdin, _ := cmd.StdinPipe()
	var mu sync.Mutex
	var out bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); pw.Close(); close(done) }()
	defer func() {
		select {
		case <-done:
		default:
			// script and the psql it runs are in their own group.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()

	// Produce one row at a time, each after the query started.
	for i, note := range []string{"first", "second"} {
		if _, err := conn.Exec(ctx, "INSERT INTO COPY_LIVE (ID, NOTE) VALUES ($1, $2)", i+1, note); err != nil {
			t.Fatal(err)
		}
		want := []string{"1\tfirst", "2\tsecond"}[i]
		if !testserver.WaitFor(20*time.Second, func() bool { return strings.Contains(output(), want) }) {
			t.Fatalf("row %q not shown while the query runs; psql shows:\n%s", want, output())
		}
	}
	select {
	case <-done:
		t.Fatalf("psql ended early (%v):\n%s", waitErr, output())
	default:
	}

	// Ctrl-C: psql sends a CancelRequest and reports the cancellation.
	stdin.Write([]byte{3})
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("psql did not end after Ctrl-C:\n%s", output())
	}
	if !strings.Contains(output(), "canceling statement due to user request") {
		t.Errorf("psql did not report the cancellation:\n%s", output())
	}
	if !s.WaitLog(10*time.Second, "statement ended", "SELECT ID, NOTE FROM COPY_LIVE EMIT CHANGES", "canceled") {
		t.Errorf("the push query did not end")
	}
}
