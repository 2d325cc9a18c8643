package rest_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// queryRows posts a SELECT to /query and returns its elements.
func (f *fixture) queryRows(stmt string, props map[string]any) ([]map[string]any, error) {
	f.t.Helper()
	resp, body := f.do("POST", "/query", map[string]any{"ksql": stmt, "streamsProperties": props})
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	var elems []map[string]any
	if err := json.Unmarshal(body, &elems); err != nil {
		return nil, fmt.Errorf("%v in %s", err, body)
	}
	return elems, nil
}

// TestWindowedPullHeaderMarksWindowBoundsKey: the header of a pull query
// on a windowed table marks WINDOWSTART and WINDOWEND as KEY, as
// ksqlDB's does (RQTT's pull-query files).
func TestWindowedPullHeaderMarksWindowBoundsKey(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM RQ_WSRC (ID STRING KEY, V INT) WITH (KAFKA_TOPIC='rq_wsrc', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE TABLE RQ_WAGG AS SELECT ID, COUNT(1) AS COUNT FROM RQ_WSRC WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY ID;
		INSERT INTO RQ_WSRC (ID, V) VALUES ('a', 1);`, nil)
	want := "`ID` STRING KEY, `WINDOWSTART` BIGINT KEY, `WINDOWEND` BIGINT KEY, `COUNT` BIGINT"
	eventually(t, 30*time.Second, func() error {
		elems, err := f.queryRows("SELECT * FROM RQ_WAGG;", nil)
		if err != nil {
			return err
		}
		if len(elems) != 2 {
			return fmt.Errorf("want header and one row, got %v", elems)
		}
		if got := elems[0]["header"].(map[string]any)["schema"]; got != want {
			return fmt.Errorf("header schema %q, want %q", got, want)
		}
		return nil
	})
}
