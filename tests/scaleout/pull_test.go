package scaleout

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestPullFromAnyInstance asks every one of two servers pull queries over
// tables whose partitions are spread over both: a scan of an aggregate,
// a LIMIT, key lookups (simple and prepared, the prepared one routed to
// the key's owner), each answering the whole table; then one server is
// killed, and the survivor either answers in full or says that a
// partition has no owner that answers — never a partial table — until
// it has taken over.
func TestPullFromAnyInstance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(t, 2)
	addr := c.broker.KafkaAddr
	conns := []*pgx.Conn{connect(t, ctx, c.servers[0]), connect(t, ctx, c.servers[1])}
	exec1(t, ctx, conns[0], `CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='JSON', PARTITIONS=4)`)
	exec1(t, ctx, conns[0], `CREATE TABLE pc AS SELECT pageid, COUNT(*) AS n FROM pv GROUP BY pageid`)
	// A Top-N's result table answers from the Top-N's own store, whose
	// partitions (the repartition by pageid's) are spread over both.
	exec1(t, ctx, conns[1], `CREATE TABLE first2 AS SELECT * FROM (SELECT pageid, userid, ROW_NUMBER() OVER (PARTITION BY pageid ORDER BY userid) AS rn FROM pv) WHERE rn <= 2`)
	exec1(t, ctx, conns[1], `CREATE TABLE users (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='users', VALUE_FORMAT='JSON', PARTITIONS=4)`)

	var recs, users [][2]string
	for i := range 400 {
		recs = append(recs, [2]string{fmt.Sprintf("u%d", i), fmt.Sprintf(`{"PAGEID":"p%d"}`, i%40)})
	}
	for i := range 40 {
		users = append(users, [2]string{fmt.Sprintf("u%d", i), fmt.Sprintf(`{"NAME":"n%d"}`, i)})
	}
	produce(t, ctx, addr, "pv", recs...)
	produce(t, ctx, addr, "users", users...)

	wantPC := make([]string, 0, 40)
	for i := range 40 {
		wantPC = append(wantPC, fmt.Sprintf("p%d|10", i))
	}
	slices.Sort(wantPC)
	full := func(conn *pgx.Conn) (bool, error) {
		got, err := rows(ctx, conn, "SELECT pageid, n FROM pc")
		if err != nil {
			return false, err
		}
		slices.Sort(got)
		return slices.Equal(got, wantPC), nil
	}
	// Both instances own part of each table once the groups settle.
	for i, conn := range conns {
		if !testserver.WaitFor(90*time.Second, func() bool { ok, _ := full(conn); return ok }) {
			got, err := rows(ctx, conn, "SELECT pageid, n FROM pc")
			t.Fatalf("server i%d never answered the whole table: %d rows, err %v", i+1, len(got), err)
		}
	}
	byPage := map[string][]string{}
	for _, r := range recs {
		page := strings.TrimSuffix(strings.TrimPrefix(r[1], `{"PAGEID":"`), `"}`)
		byPage[page] = append(byPage[page], r[0])
	}
	var wantFirst []string
	for page, users := range byPage {
		slices.Sort(users)
		wantFirst = append(wantFirst, page+"|"+users[0]+"|1", page+"|"+users[1]+"|2")
	}
	slices.Sort(wantFirst)
	for i, conn := range conns {
		var got []string
		var err error
		if !testserver.WaitFor(90*time.Second, func() bool {
			got, err = rows(ctx, conn, "SELECT pageid, userid, rn FROM first2")
			slices.Sort(got)
			return slices.Equal(got, wantFirst)
		}) {
			t.Fatalf("server i%d never answered the whole Top-N: %d rows (want %d), err %v", i+1, len(got), len(wantFirst), err)
		}
		want := "p7|" + byPage["p7"][1]
		if got := mustRows(t, ctx, conn, "SELECT pageid, userid FROM first2 WHERE pageid = 'p7' AND rn = 2"); len(got) != 1 || got[0] != want {
			t.Errorf("i%d: a Top-N row by its key: %v, want %s", i+1, got, want)
		}
	}
	for i, conn := range conns {
		if got := mustRows(t, ctx, conn, "SELECT * FROM pc LIMIT 7"); len(got) != 7 {
			t.Errorf("i%d: LIMIT 7 gave %d rows", i+1, len(got))
		}
		for k := range 40 {
			key := fmt.Sprintf("u%d", k)
			want := fmt.Sprintf("%s|n%d", key, k)
			var got []string
			var err error
			if !testserver.WaitFor(30*time.Second, func() bool {
				got, err = rows(ctx, conn, "SELECT id, name FROM users WHERE id = '"+key+"'")
				return len(got) == 1 && got[0] == want
			}) {
				t.Fatalf("i%d: key %s: %v (%v), want %s", i+1, key, got, err, want)
			}
			// Prepared (extended protocol): the key goes with the
			// forwarded query when another instance owns it.
			var id, name string
			if err := conn.QueryRow(ctx, "SELECT id, name FROM users WHERE id = $1", key).Scan(&id, &name); err != nil || id+"|"+name != want {
				t.Fatalf("i%d: prepared key %s: %s|%s, %v", i+1, key, id, name, err)
			}
		}
		if got := mustRows(t, ctx, conn, "SELECT * FROM users WHERE id = 'nobody'"); len(got) != 0 {
			t.Errorf("i%d: a missing key gave %v", i+1, got)
		}
	}

	// Kill i2: i1 answers in full, or fails saying why, and is whole
	// again after the failover.
	c.servers[1].Kill()
	killed := time.Now()
	var errs []string
	var window time.Duration
	for time.Since(killed) < 90*time.Second {
		ok, err := full(conns[0])
		if err != nil {
			if !strings.Contains(err.Error(), "no partial answer") && !strings.Contains(err.Error(), "no live owner") && !strings.Contains(err.Error(), "being restored") {
				t.Fatalf("during failover: %v", err)
			}
			if len(errs) < 3 {
				errs = append(errs, err.Error())
			}
		} else if !ok {
			t.Fatal("during failover a pull query answered a partial table")
		} else {
			window = time.Since(killed)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if window == 0 {
		t.Fatalf("no full answer within 90s of the kill; errors: %q", errs)
	}
	t.Logf("after SIGKILL of i2, i1 answered the whole table again after %v; errors meanwhile: %q", window.Round(100*time.Millisecond), errs)
}

// TestPullCRC32FromAnyInstance looks every key of a table kcat produced
// with librdkafka's default partitioner (crc32), declared
// PARTITIONER='crc32', up from each of two servers that share its
// partitions: a lookup is routed to the owner of the key's crc32
// partition (routing by murmur2 would ask an instance that does not hold
// the key, and it answers no row).
func TestPullCRC32FromAnyInstance(t *testing.T) {
	testtool.Need(t, "kcat", "scripts/deps.sh installs it")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t, 2)
	addr := c.broker.KafkaAddr
	conns := []*pgx.Conn{connect(t, ctx, c.servers[0]), connect(t, ctx, c.servers[1])}
	exec1(t, ctx, conns[0], `CREATE TABLE cusers (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='cusers', VALUE_FORMAT='JSON', PARTITIONS=4, PARTITIONER='crc32')`)
	var in strings.Builder
	var want []string
	moved := 0
	for i := range 60 {
		key := fmt.Sprintf("u%d", i)
		fmt.Fprintf(&in, "%s|{\"NAME\":\"n%d\"}\n", key, i)
		want = append(want, fmt.Sprintf("%s|n%d", key, i))
		if types.CRC32Partition([]byte(key), 4) != types.Murmur2Partition([]byte(key), 4) {
			moved++
		}
	}
	slices.Sort(want)
	cmd := exec.CommandContext(ctx, "kcat", "-b", addr, "-P", "-t", "cusers", "-K", "|")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	t.Logf("%d of 60 keys have another crc32 partition than murmur2's", moved)
	for i, conn := range conns {
		if !testserver.WaitFor(90*time.Second, func() bool {
			got, err := rows(ctx, conn, "SELECT id, name FROM cusers")
			slices.Sort(got)
			return err == nil && slices.Equal(got, want)
		}) {
			got, err := rows(ctx, conn, "SELECT id, name FROM cusers")
			t.Fatalf("server i%d never answered the whole table: %d rows, err %v", i+1, len(got), err)
		}
	}
	for i, conn := range conns {
		for _, w := range want {
			key, _, _ := strings.Cut(w, "|")
			got, err := rows(ctx, conn, "SELECT id, name FROM cusers WHERE id = '"+key+"'")
			if err != nil || len(got) != 1 || got[0] != w {
				t.Errorf("i%d: key %s: %v (%v), want %s", i+1, key, got, err, w)
			}
			var id, name string
			if err := conn.QueryRow(ctx, "SELECT id, name FROM cusers WHERE id = $1", key).Scan(&id, &name); err != nil || id+"|"+name != w {
				t.Errorf("i%d: prepared key %s: %s|%s, %v", i+1, key, id, name, err)
			}
		}
	}
}
