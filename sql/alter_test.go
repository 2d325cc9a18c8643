package sql

import (
	"strings"
	"testing"
)

// TestAlterAsReplace checks the CREATE OR REPLACE statement ALTER makes
// of a source's definition, and ksqlDB's refusals.
func TestAlterAsReplace(t *testing.T) {
	source := func(text string) *CreateSource {
		st, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		return st.(*CreateSource)
	}
	cs := source("CREATE STREAM a (id INT KEY, col1 INT) WITH (kafka_topic='a', value_format='JSON');")
	src, err := BindCreateSource(cs)
	if err != nil {
		t.Fatal(err)
	}
	alter := func(text string) (string, error) {
		st, err := Parse(text)
		if err != nil {
			return "", err
		}
		return AlterAsReplace(st.(*AlterSource), src)
	}
	got, err := alter("ALTER STREAM a ADD COLUMN col2 INT, ADD col3 ARRAY<STRING>;")
	want := "CREATE OR REPLACE STREAM a (id INT KEY, col1 INT, col2 INT, col3 ARRAY<STRING>) WITH (kafka_topic='a', value_format='JSON');"
	if err != nil || got != want {
		t.Fatalf("got %q, %v\nwant %q", got, err, want)
	}
	if _, err := Parse(got); err != nil {
		t.Fatalf("the statement does not parse: %v", err)
	}
	for text, msg := range map[string]string{
		"ALTER STREAM a ADD COLUMN col1 INT":               "Cannot add column `COL1` to schema. A column with the same name already exists.",
		"ALTER TABLE a ADD COLUMN col2 INT":                "Incompatible data source type is STREAM, but statement was ALTER TABLE",
		"ALTER STREAM a ADD COLUMN col2 INT, ADD col2 INT": "duplicate column COL2",
		"ALTER STREAM a DROP COLUMN col1":                  "expected ADD",
	} {
		if _, err := alter(text); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", text, err, msg)
		}
	}
	src.IsSource = true
	if _, err := alter("ALTER STREAM a ADD COLUMN col2 INT"); err == nil || !strings.Contains(err.Error(), "Cannot alter stream 'A': ALTER operations are not supported on source streams.") {
		t.Errorf("ALTER of a SOURCE stream: %v", err)
	}
	src.IsSource = false
	ca, err := Parse("CREATE STREAM b AS SELECT * FROM a;")
	if err != nil {
		t.Fatal(err)
	}
	src.SQL = ca.Text()
	if _, err := alter("ALTER STREAM a ADD COLUMN col2 INT"); err == nil || !strings.Contains(err.Error(), "ALTER command is not supported for CREATE ... AS statements.") {
		t.Errorf("ALTER of a CREATE … AS sink: %v", err)
	}
}
