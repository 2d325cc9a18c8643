package rest_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sqlstreams/sqlstreams/types"
)

// TestQueryStreamProtobufRows: /query-stream with Accept
// application/vnd.ksql.v1+protobuf answers as ksqlDB does: /query's
// layout, the header carrying the rows' .proto in Connect's naming
// (protoSchema), each row {"protobufBytes": base64} of that message
// (RQTT's pull-queries-protobuf.json).
func TestQueryStreamProtobufRows(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE TABLE RQ_PROTO (ID BIGINT PRIMARY KEY, NAME STRING, TAGS MAP<STRING, INT>) WITH (KAFKA_TOPIC='rq_proto', VALUE_FORMAT='JSON', PARTITIONS=1);
		INSERT INTO RQ_PROTO (ID, NAME, TAGS) VALUES (1, 'ann', MAP('a' := 1, 'b' := 0));
		INSERT INTO RQ_PROTO (ID, NAME, TAGS) VALUES (2, 'bob', MAP('c' := 3));`, nil)
	wantSchema := "syntax = \"proto3\";\n\nmessage ConnectDefault1 {\n  int64 ID = 1;\n  string NAME = 2;\n  repeated ConnectDefault2Entry TAGS = 3;\n\n  message ConnectDefault2Entry {\n    string key = 1;\n    int32 value = 2;\n  }\n}\n"
	eventually(t, 30*time.Second, func() error {
		resp, body := f.do("POST", "/query-stream", map[string]any{"sql": "SELECT * FROM RQ_PROTO;"}, "Accept", "application/vnd.ksql.v1+protobuf")
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %s", resp.Status, body)
		}
		var elems []map[string]any
		if err := json.Unmarshal(body, &elems); err != nil {
			return fmt.Errorf("%v in %s", err, body)
		}
		if len(elems) != 3 {
			return fmt.Errorf("want header and two rows (no final message for a table), got %s", body)
		}
		h, _ := elems[0]["header"].(map[string]any)
		if got := h["protoSchema"]; got != wantSchema {
			t.Fatalf("protoSchema %q, want %q", got, wantSchema)
		}
		md, err := types.CompileProtobufSchema(wantSchema)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, e := range elems[1:] {
			b, err := base64.StdEncoding.DecodeString(e["row"].(map[string]any)["protobufBytes"].(string))
			if err != nil {
				t.Fatal(err)
			}
			m := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(b, m); err != nil {
				t.Fatalf("row %s: %v", e, err)
			}
			fd := md.Fields()
			row := fmt.Sprintf("%d|%s|", m.Get(fd.ByName("ID")).Int(), m.Get(fd.ByName("NAME")).String())
			l := m.Get(fd.ByName("TAGS")).List()
			var tags []string
			for i := 0; i < l.Len(); i++ {
				ent := l.Get(i).Message()
				tags = append(tags, fmt.Sprintf("%s=%d", ent.Get(ent.Descriptor().Fields().ByName("key")).String(), ent.Get(ent.Descriptor().Fields().ByName("value")).Int()))
			}
			sort.Strings(tags)
			rows = append(rows, row+strings.Join(tags, ","))
		}
		sort.Strings(rows)
		if got, want := strings.Join(rows, " "), "1|ann|a=1,b=0 2|bob|c=3"; got != want {
			return fmt.Errorf("rows %s, want %s", got, want)
		}
		return nil
	})
}

// TestPushQueryWithGroupBy: a push query with GROUP BY runs (as ksqlDB's
// transient query) over REST and ends at its LIMIT.
func TestPushQueryWithGroupBy(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM RQ_GSRC (K INT KEY, ID INT) WITH (KAFKA_TOPIC='rq_gsrc', VALUE_FORMAT='JSON', PARTITIONS=2);
		INSERT INTO RQ_GSRC (K, ID) VALUES (0, 2);
		INSERT INTO RQ_GSRC (K, ID) VALUES (1, 2);`, nil)
	elems, err := f.queryRows("SELECT ID, COUNT(1) AS COUNT FROM RQ_GSRC GROUP BY ID EMIT CHANGES LIMIT 2;", map[string]any{"auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(elems[1:])
	if want := `[{"row":{"columns":[2,1]}},{"row":{"columns":[2,2]}},{"finalMessage":"Limit Reached"}]`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if s := elems[0]["header"].(map[string]any)["schema"]; s != "`ID` INTEGER, `COUNT` BIGINT" {
		t.Errorf("header schema %v", s)
	}
}
