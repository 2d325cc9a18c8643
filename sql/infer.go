package sql

import (
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// Inferred names the registered schemas a CREATE without columns took its
// columns from; the engine records them with the command, so that a replay
// gets the same columns whatever the subject's latest version is by then.
type Inferred struct {
	KeySchemaID, ValueSchemaID int
}

// InferColumns fills in the key and value columns cs does not declare from
// the schema registry, as ksqlDB's schema inference does: when the value
// (key) format is AVRO, JSON_SR or PROTOBUF and cs declares no value (key) column, the columns
// come from the schema with the ID in prev (a replay), or VALUE_SCHEMA_ID
// (KEY_SCHEMA_ID), or the latest version of <topic>-value (<topic>-key).
// A value that is not a record gives one column ROWVAL and
// WRAP_SINGLE_VALUE=false. An AVRO or JSON_SR key is always one column
// ROWKEY, of the record's STRUCT type when the schema is a record (but for
// cs.LegacyKeyColumns); a PROTOBUF key is one column per field. It
// returns the IDs it used; without a registry, or with nothing to infer,
// it does nothing.
func InferColumns(cs *CreateSource, schemas types.SchemaSource, prev Inferred) (Inferred, error) {
	var got Inferred
	topic, ok := cs.Props["KAFKA_TOPIC"]
	if !ok {
		return got, nil // BindCreateSource reports it
	}
	valueFormat, keyFormat := types.FormatKafka, types.FormatKafka
	for _, name := range []string{"FORMAT", "VALUE_FORMAT", "KEY_FORMAT"} {
		p, ok := cs.Props[name]
		if !ok {
			continue
		}
		f, err := types.NormalizeFormat(p.Value)
		if err != nil {
			return got, nil // BindCreateSource reports it
		}
		if name != "KEY_FORMAT" {
			valueFormat = f
		}
		if name != "VALUE_FORMAT" {
			keyFormat = f
		}
	}
	hasKey, hasValue := false, false
	for _, c := range cs.Columns {
		hasKey = hasKey || c.Key
		hasValue = hasValue || !c.Key && !c.Header
	}
	infer := func(side, format string, prevID int, single string, key bool) (int, error) {
		if !types.InfersColumns(format) {
			return 0, nil
		}
		if schemas == nil {
			return 0, Errorf(CodeInvalidParameter, "%s columns: no column list, and no schema registry to infer them from", side)
		}
		id := prevID
		if p, ok := cs.Props[side+"_SCHEMA_ID"]; ok && id == 0 {
			n, err := strconv.Atoi(p.Value)
			if err != nil || n < 1 {
				return 0, errorAt(cs.text, p.Pos, CodeInvalidParameter, "%s_SCHEMA_ID must be a positive schema ID", side)
			}
			id = n
		}
		var rs types.RegisteredSchema
		var err error
		subject := topic.Value + "-" + map[bool]string{true: "key", false: "value"}[key]
		if id != 0 {
			rs, err = schemas.SchemaByID(id)
		} else {
			id, rs, err = schemas.Latest(subject)
		}
		if err != nil && id == 0 && strings.Contains(err.Error(), "not found") {
			return 0, Errorf(CodeInvalidParameter, "Schema for message %s on topic '%s' does not exist in the Schema Registry. Subject %s: %v", map[bool]string{true: "keys", false: "values"}[key], topic.Value, subject, err)
		}
		if err != nil {
			return 0, Errorf(CodeInvalidParameter, "inferring the %s columns of %s from the schema registry (subject %s): %v", map[bool]string{true: "key", false: "value"}[key], cs.Name, subject, err)
		}
		fullName := ""
		if p, ok := cs.Props[side+"_SCHEMA_FULL_NAME"]; ok && format == types.FormatProtobuf {
			fullName = p.Value
		}
		cols, wrapped, err := types.SchemaColumnsNamed(schemas, format, rs, single, fullName)
		if err != nil {
			return 0, Errorf(CodeInvalidParameter, "inferring columns from schema ID %d: %v", id, err)
		}
		if key && wrapped && format != types.FormatProtobuf && !cs.LegacyKeyColumns {
			// ksqlDB infers a key unwrapped: an AVRO record or a JSON_SR
			// object is one column ROWKEY of its STRUCT type (PROTOBUF
			// keys stay one column per field: a message is always wrapped).
			st := types.Type{Kind: types.Struct, Fields: make([]types.Field, len(cols))}
			for i, c := range cols {
				st.Fields[i] = types.Field{Name: c.Name, Type: c.Type}
			}
			cols = []types.Column{{Name: single, Type: st}}
		}
		for _, c := range cols {
			if !cs.OriginalFieldNames {
				c.Name, c.Type = strings.ToUpper(c.Name), upperFields(c.Type)
			}
			cs.Columns = append(cs.Columns, ColumnDef{Name: c.Name, Type: c.Type, Key: key, Pos: topic.Pos})
		}
		if !wrapped && !key {
			if _, ok := cs.Props["WRAP_SINGLE_VALUE"]; !ok {
				cs.Props["WRAP_SINGLE_VALUE"] = Property{Value: "false", Pos: topic.Pos}
			}
		}
		return id, nil
	}
	var err error
	if !hasKey && types.InfersColumns(keyFormat) {
		if got.KeySchemaID, err = infer("KEY", keyFormat, prev.KeySchemaID, "ROWKEY", true); err != nil {
			return got, err
		}
	}
	if !hasValue {
		if got.ValueSchemaID, err = infer("VALUE", valueFormat, prev.ValueSchemaID, "ROWVAL", false); err != nil {
			return got, err
		}
	}
	// A statement still without columns is refused by BindCreateSource,
	// after its properties: an unknown format or a bad delimiter is the
	// error ksqlDB gives first.
	return got, nil
}

// upperFields upper-cases the STRUCT field names in t, as ksqlDB's
// schema translation does for inferred columns.
func upperFields(t types.Type) types.Type {
	switch t.Kind {
	case types.Array, types.Map:
		e := upperFields(*t.Elem)
		t.Elem = &e
	case types.Struct:
		fs := make([]types.Field, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = types.Field{Name: strings.ToUpper(f.Name), Type: upperFields(f.Type)}
		}
		t.Fields = fs
	}
	return t
}

// CheckSchemaIDs refuses KEY_SCHEMA_ID (VALUE_SCHEMA_ID) on a CREATE that
// declares key (value) columns, as ksqlDB does: the columns come from the
// schema, or from the statement, not both.
func CheckSchemaIDs(cs *CreateSource) error {
	hasKey, hasValue := false, false
	for _, c := range cs.Columns {
		hasKey = hasKey || c.Key
		hasValue = hasValue || !c.Key && !c.Header
	}
	for _, side := range []struct {
		prop string
		has  bool
	}{{"KEY_SCHEMA_ID", hasKey}, {"VALUE_SCHEMA_ID", hasValue}} {
		if p, ok := cs.Props[side.prop]; ok && side.has {
			return errorAt(cs.text, p.Pos, CodeInvalidParameter, "Table elements and %s cannot both exist for create statement.", side.prop)
		}
	}
	return nil
}

// CheckWindowedKey refuses a windowed source (WINDOW_TYPE) without a key
// column, as ksqlDB does: a windowed key is the key columns and the
// window. Call it after InferColumns, on new statements.
func CheckWindowedKey(cs *CreateSource) error {
	p, ok := cs.Props["WINDOW_TYPE"]
	if !ok {
		return nil
	}
	for _, c := range cs.Columns {
		if c.Key {
			return nil
		}
	}
	return errorAt(cs.text, p.Pos, CodeInvalidParameter, "Windowed sources require a key column.")
}
