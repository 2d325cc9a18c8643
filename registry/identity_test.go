package registry

import (
	"testing"

	"github.com/twmb/avro"
)

// TestAvroIdentity: texts of one Avro schema that differ only in form
// (whitespace, key order, a type spelled as an object, a full name written
// dotted or as name plus namespace, a short or qualified reference or
// alias) have one identity; a change to anything schema resolution or a
// reader sees (a default, an alias, a logical type, a doc, a property, the
// field order) is another schema.
func TestAvroIdentity(t *testing.T) {
	const base = `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"a user","fields":[
		{"name":"id","type":"long"},
		{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
		{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},
		{"name":"prev","type":["null","Kind"],"default":null},
		{"name":"name","type":"string","aliases":["full_name"],"default":"x"}]}`
	same := []string{
		`{"fields":[{"type":"long","name":"id"},{"type":{"scale":2,"precision":9,"logicalType":"decimal","type":"bytes"},"name":"amount"},{"name":"kind","type":{"default":"A","symbols":["A","B"],"name":"acme.Kind","type":"enum"}},{"default":null,"type":["null","acme.Kind"],"name":"prev"},{"default":"x","aliases":["full_name"],"type":{"type":"string"},"name":"name"}],"doc":"a user","aliases":["acme.Person"],"name":"acme.User","type":"record"}`,
	}
	other := map[string]string{
		"a default added":   `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"a user","fields":[{"name":"id","type":"long","default":0},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","aliases":["full_name"],"default":"x"}]}`,
		"another default":   `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"a user","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","aliases":["full_name"],"default":"y"}]}`,
		"an alias dropped":  `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"a user","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","default":"x"}]}`,
		"another scale":     `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"a user","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":3}},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","aliases":["full_name"],"default":"x"}]}`,
		"no enum default":   `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"a user","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","aliases":["full_name"],"default":"x"}]}`,
		"another doc":       `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"the user","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","aliases":["full_name"],"default":"x"}]}`,
		"a property":        `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"a user","x-owner":"ops","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","aliases":["full_name"],"default":"x"}]}`,
		"another namespace": `{"type":"record","name":"User","namespace":"shop","aliases":["Person"],"doc":"a user","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","aliases":["full_name"],"default":"x"}]}`,
		"fields reordered":  `{"type":"record","name":"User","namespace":"acme","aliases":["Person"],"doc":"a user","fields":[{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"id","type":"long"},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},{"name":"prev","type":["null","Kind"],"default":null},{"name":"name","type":"string","aliases":["full_name"],"default":"x"}]}`,
	}
	id := func(text string) string {
		t.Helper()
		s, err := avro.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return identity("", text, parsed{avro: s})
	}
	want := id(base)
	for _, s := range same {
		if got := id(s); got != want {
			t.Errorf("another form of the schema has another identity:\n%s\n%s", got, want)
		}
	}
	for name, s := range other {
		if id(s) == want {
			t.Errorf("%s: the same identity as the original", name)
		}
	}
}
