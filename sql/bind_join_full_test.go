package sql

import (
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestJoinAfterFullTableJoin binds table joins after a FULL OUTER
// table–table join (beyond ksqlDB): the FULL join's rows are keyed by
// its synthetic ROWKEY, which the next ON and the SELECT name; each
// result's key and columns, and the errors for what stays refused.
func TestJoinAfterFullTableJoin(t *testing.T) {
	cat := catalog.New()
	for _, name := range []string{"T1", "T2", "T3"} {
		cat.AddSource(&catalog.Source{Name: name, Kind: catalog.Table, Topic: strings.ToLower(name), KeyFormat: types.FormatKafka,
			ValueFormat: "JSON", Partitions: 2, Schema: types.Schema{Columns: []types.Column{
				{Name: "ID", Type: types.StringType, Key: true},
				{Name: "V" + name[1:], Type: types.BigintType},
			}}}, false)
	}
	for _, name := range []string{"S1", "S2"} {
		cat.AddSource(&catalog.Source{Name: name, Kind: catalog.Stream, Topic: strings.ToLower(name), KeyFormat: types.FormatKafka,
			ValueFormat: "JSON", Partitions: 2, Schema: types.Schema{Columns: []types.Column{
				{Name: "ID", Type: types.StringType, Key: true},
				{Name: "W" + name[1:], Type: types.BigintType},
			}}}, false)
	}
	const from = " FROM t1 FULL JOIN t2 ON t1.id = t2.id "
	for _, c := range []struct{ stmt, want string }{
		{"CREATE TABLE o AS SELECT ROWKEY AS id, v1, v2, v3" + from + "JOIN t3 ON ROWKEY = t3.id;",
			"ID STRING KEY, V1 BIGINT, V2 BIGINT, V3 BIGINT"},
		{"CREATE TABLE o AS SELECT ROWKEY, v1, v3" + from + "LEFT JOIN t3 ON t3.id = ROWKEY;",
			"ROWKEY STRING KEY, V1 BIGINT, V3 BIGINT"},
		// t3.id stands for the key of an INNER join on it.
		{"CREATE TABLE o AS SELECT t3.id, v1, v3" + from + "JOIN t3 ON ROWKEY = t3.id;",
			"T3_ID STRING KEY, V1 BIGINT, V3 BIGINT"},
		// SELECT * leaves ROWKEY out: t3.id stands for the key.
		{"CREATE TABLE o AS SELECT *" + from + "JOIN t3 ON ROWKEY = t3.id;",
			"T1_ID STRING, T1_V1 BIGINT, T2_ID STRING, T2_V2 BIGINT, T3_ID STRING KEY, T3_V3 BIGINT"},
		{"CREATE TABLE o AS SELECT ROWKEY AS k, ROWKEY_1 AS id, v1, v3" + from + "FULL JOIN t3 ON ROWKEY = t3.id;",
			"K STRING, ID STRING KEY, V1 BIGINT, V3 BIGINT"},
		{"CREATE TABLE o AS SELECT t3.id, v1, v3" + from + "RIGHT JOIN t3 ON ROWKEY = t3.id;",
			"T3_ID STRING KEY, V1 BIGINT, V3 BIGINT"},
		// A source's column: a foreign-key join on it, keyed by ROWKEY.
		{"CREATE TABLE o AS SELECT ROWKEY AS id, v1, v3" + from + "LEFT JOIN t3 ON t1.id = t3.id;",
			"ID STRING KEY, V1 BIGINT, V3 BIGINT"},
		{"CREATE TABLE o AS SELECT v1, v3" + from + "FULL JOIN t3 ON t2.id = t3.id;",
			"error: a FULL OUTER JOIN after a FULL OUTER JOIN of tables joins on the rows' key, the synthetic column ROWKEY (ON ROWKEY = T3.ID). Got T2.ID = T3.ID."},
		{"CREATE TABLE o AS SELECT v1, v3" + from + "JOIN t3 ON ROWKEY = t3.id;",
			"error: Key missing from projection"},
		// A stream join's synthetic key keeps ksqlDB's refusal.
		{"CREATE STREAM o AS SELECT ROWKEY AS id, w1, v3 FROM s1 FULL JOIN s2 WITHIN 1 MINUTE ON s1.id = s2.id JOIN t3 ON ROWKEY = t3.id;",
			"error: JOIN ON column 'ROWKEY' cannot be resolved."},
	} {
		st, err := Parse(c.stmt)
		if err != nil {
			t.Fatalf("%s: %v", c.stmt, err)
		}
		got := ""
		if sink, err := BindCreateAs(st.(*CreateAs), cat); err != nil {
			got = "error: " + err.Error()
		} else {
			got = sink.Schema().String()
		}
		if strings.HasPrefix(c.want, "error: ") && !strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) || !strings.HasPrefix(c.want, "error: ") && got != c.want {
			t.Errorf("%s\ngot  %s\nwant %s", c.stmt, got, c.want)
		}
	}
}
