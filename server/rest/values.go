package rest

// This file renders types and values the way ksqlDB's REST API does.

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// typeName renders t as ksqlDB's SqlType.toString, which clients show and
// parse: INTEGER, DECIMAL(4, 2), ARRAY<STRING>, MAP<STRING, INTEGER>,
// STRUCT<`F` STRING>.
func typeName(t types.Type) string {
	var b strings.Builder
	writeTypeName(&b, t)
	return b.String()
}

func writeTypeName(b *strings.Builder, t types.Type) {
	switch t.Kind {
	case types.Array:
		b.WriteString("ARRAY<")
		writeTypeName(b, *t.Elem)
		b.WriteByte('>')
	case types.Map:
		b.WriteString("MAP<")
		writeTypeName(b, *t.KeyType)
		b.WriteString(", ")
		writeTypeName(b, *t.Elem)
		b.WriteByte('>')
	case types.Struct:
		b.WriteString("STRUCT<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quoteName(f.Name))
			b.WriteByte(' ')
			writeTypeName(b, f.Type)
		}
		b.WriteByte('>')
	default:
		b.WriteString(t.String())
	}
}

// quoteName backquotes an identifier as ksqlDB prints names in schemas.
func quoteName(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// schemaString renders columns as the /query header's schema:
// "`ID` BIGINT, `NAME` STRING".
func schemaString(cols []types.Column) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteName(c.Name))
		b.WriteByte(' ')
		writeTypeName(&b, c.Type)
		if c.Key {
			b.WriteString(" KEY")
		}
	}
	return b.String()
}

// appendRow appends row as a JSON array laid out by cols.
func appendRow(dst []byte, row types.Row, cols []types.Column) []byte {
	dst = append(dst, '[')
	for i, c := range cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		if i < len(row) {
			dst = appendValue(dst, row[i], c.Type)
		} else {
			dst = append(dst, "null"...)
		}
	}
	return append(dst, ']')
}

// appendValue appends d as ksqlDB's REST API writes a value: as the JSON
// format does (DECIMAL as a number, BYTES as base64), except that DATE,
// TIME and TIMESTAMP are strings (2024-02-29, 13:14:15.123,
// 2024-02-29T13:14:15.123), at any depth.
func appendValue(dst []byte, d types.Datum, t types.Type) []byte {
	if d.Null {
		return append(dst, "null"...)
	}
	switch t.Kind {
	case types.Date, types.Time, types.Timestamp:
		dst = append(dst, '"')
		dst = types.AppendText(dst, d, t)
		return append(dst, '"')
	case types.Array, types.Map, types.Struct:
		return types.AppendJSONComposite(dst, d, t, appendValue, types.AppendText)
	}
	return types.AppendJSONValue(dst, d, t)
}

// schemaInfo is ksqlDB's SchemaInfo: a type as DESCRIBE returns it.
type schemaInfo struct {
	Type         string         `json:"type"`
	Fields       []fieldInfo    `json:"fields"`
	MemberSchema *schemaInfo    `json:"memberSchema"`
	Parameters   map[string]any `json:"parameters,omitempty"`
}

// fieldInfo is ksqlDB's FieldInfo: a column or STRUCT field.
type fieldInfo struct {
	Name   string     `json:"name"`
	Schema schemaInfo `json:"schema"`
	// Type is "KEY" for key columns and absent otherwise.
	Type string `json:"type,omitempty"`
}

func newSchemaInfo(t types.Type) schemaInfo {
	s := schemaInfo{Type: t.Kind.String()}
	switch t.Kind {
	case types.Decimal:
		s.Parameters = map[string]any{"precision": t.Precision, "scale": t.Scale}
	case types.Array, types.Map:
		m := newSchemaInfo(*t.Elem)
		s.MemberSchema = &m
	case types.Struct:
		s.Fields = make([]fieldInfo, len(t.Fields))
		for i, f := range t.Fields {
			s.Fields[i] = fieldInfo{Name: f.Name, Schema: newSchemaInfo(f.Type)}
		}
	}
	return s
}

// fieldInfos describes columns, leaving out pseudo columns.
func fieldInfos(cols []types.Column) []fieldInfo {
	out := make([]fieldInfo, 0, len(cols))
	for _, c := range cols {
		if c.Pseudo {
			continue
		}
		f := fieldInfo{Name: c.Name, Schema: newSchemaInfo(c.Type)}
		if c.Key {
			f.Type = "KEY"
		}
		out = append(out, f)
	}
	return out
}
