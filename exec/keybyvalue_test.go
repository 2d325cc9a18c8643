package exec

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// jsonSRKey is a JSON_SR record key in the Confluent wire format: magic
// byte, schema id, the JSON text.
func jsonSRKey(id uint32, text string) []byte {
	b := binary.BigEndian.AppendUint32([]byte{0}, id)
	return append(b, text...)
}

// TestKeyByValueRestore checks that a table restored from its topic into
// a store keyed by value (physical.Source.KeyByValue) keeps one row per
// key value: records of one key written with two schemas (two schema IDs,
// two byte strings) update and delete the same row, and the stored row
// reads back with its key.
func TestKeyByValueRestore(t *testing.T) {
	src := &physical.Source{Topic: "t", KeyFormat: types.FormatJSONSR, ValueFormat: types.FormatJSON, Table: true, KeyByValue: true,
		Out: types.Schema{Columns: append([]types.Column{
			{Name: "ID", Type: types.IntType, Key: true},
			{Name: "NAME", Type: types.StringType},
		}, types.PseudoColumns...)}}
	dec, err := newRecordDecoder("restore", src)
	if err != nil {
		t.Fatal(err)
	}
	st := state.NewMemory()
	apply := tableRecordApplier(dec, st)
	for _, r := range []*kgo.Record{
		{Key: jsonSRKey(1, "10"), Value: []byte(`{"NAME":"a"}`), Timestamp: time.UnixMilli(1)},
		{Key: jsonSRKey(7, "10"), Value: []byte(`{"NAME":"b"}`), Timestamp: time.UnixMilli(2)},
		{Key: jsonSRKey(7, "20"), Value: []byte(`{"NAME":"c"}`), Timestamp: time.UnixMilli(3)},
		{Key: jsonSRKey(1, "20"), Timestamp: time.UnixMilli(4)}, // a tombstone
	} {
		if err := apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := apply(&kgo.Record{Key: jsonSRKey(1, "not json"), Value: []byte(`{"NAME":"x"}`)}); err == nil {
		t.Error("a key that does not decode was restored")
	}
	v, err := st.Get([]byte("10"))
	if err != nil || len(v) < tsLen {
		t.Fatalf("key 10 by value: %q, %v", v, err)
	}
	if got := string(v[tsLen:]); got != `{"NAME":"b"}` {
		t.Errorf("key 10 holds %s, want the later record's value", got)
	}
	if v, _ := st.Get([]byte("20")); v != nil {
		t.Errorf("key 20 holds %q after its tombstone under another schema", v)
	}
	// A join reads the stored row back with a decoder of the same source.
	stored, err := newRecordDecoder("lookup", src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stored.decode(&kgo.Record{Key: []byte("10"), Value: v[tsLen:]}); err != nil {
		t.Fatal(err)
	}
	if row := stored.row; row[0].I != 10 || string(row[1].B) != "b" {
		t.Errorf("stored row reads back as %v", row[:2])
	}
}
