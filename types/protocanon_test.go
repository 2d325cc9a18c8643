package types

import "testing"

// TestProtobufCanonicalSchema checks the .proto of /query-stream's
// protobuf header against ksqlDB's (its pull-queries-protobuf RQTT cases).
func TestProtobufCanonicalSchema(t *testing.T) {
	it, st, by := Type{Kind: Int}, Type{Kind: String}, Type{Kind: Bytes}
	m := Type{Kind: Map, KeyType: &st, Elem: &it}
	s := Type{Kind: Struct, Fields: []Field{{Name: "KEY", Type: st}, {Name: "VALUE", Type: by}}}
	a := Type{Kind: Array, Elem: &s}
	for _, tc := range []struct {
		names []string
		types []Type
		want  string
	}{
		{[]string{"ID", "FILTERED_TRANSFORMED"}, []Type{{Kind: Bigint}, m},
			"syntax = \"proto3\";\n\nmessage ConnectDefault1 {\n  int64 ID = 1;\n  repeated ConnectDefault2Entry FILTERED_TRANSFORMED = 2;\n\n  message ConnectDefault2Entry {\n    string key = 1;\n    int32 value = 2;\n  }\n}\n"},
		{[]string{"MYKEY", "MYVALUE", "MYHEADERS"}, []Type{it, it, a},
			"syntax = \"proto3\";\n\nmessage ConnectDefault1 {\n  int32 MYKEY = 1;\n  int32 MYVALUE = 2;\n  repeated ConnectDefault2 MYHEADERS = 3;\n\n  message ConnectDefault2 {\n    string KEY = 1;\n    bytes VALUE = 2;\n  }\n}\n"},
	} {
		if got := ProtobufCanonicalSchema(tc.names, tc.types); got != tc.want {
			t.Errorf("got\n%s\nwant\n%s", got, tc.want)
		}
		if _, err := compileProto(nil, RegisteredSchema{Type: SchemaTypeProtobuf, Text: ProtobufCanonicalSchema(tc.names, tc.types)}, []int{0}); err != nil {
			t.Errorf("%v does not compile: %v", tc.names, err)
		}
	}
}
