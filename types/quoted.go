package types

import "strings"

// Quoted renders t as ksqlDB's error messages print it: as String, with
// each STRUCT field name in backticks (STRUCT<`F` DOUBLE>).
func (t Type) Quoted() string {
	switch t.Kind {
	case Array:
		return "ARRAY<" + t.Elem.Quoted() + ">"
	case Map:
		return "MAP<" + t.KeyType.Quoted() + ", " + t.Elem.Quoted() + ">"
	case Struct:
		var b strings.Builder
		b.WriteString("STRUCT<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("`" + f.Name + "` " + f.Type.Quoted())
		}
		b.WriteByte('>')
		return b.String()
	}
	return t.String()
}

// ColumnsText renders the columns cols of s as ksqlDB's error messages
// list them: "`K` STRING KEY, `V` INTEGER".
func ColumnsText(s Schema, cols []int) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		col := s.Columns[c]
		parts[i] = "`" + col.Name + "` " + col.Type.Quoted()
		if col.Key {
			parts[i] += " KEY"
		}
	}
	return strings.Join(parts, ", ")
}
