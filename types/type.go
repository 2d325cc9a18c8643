package types

import (
	"fmt"
	"strings"
)

// Kind is the SQL type family of a value.
type Kind uint8

// The SQL type kinds. Their names follow ksqlDB.
const (
	Unknown Kind = iota
	Boolean
	Int
	Bigint
	Double
	Decimal
	String
	Bytes
	Date
	Time
	Timestamp
	Array
	Map
	Struct
)

var kindNames = [...]string{
	Unknown:   "UNKNOWN",
	Boolean:   "BOOLEAN",
	Int:       "INTEGER",
	Bigint:    "BIGINT",
	Double:    "DOUBLE",
	Decimal:   "DECIMAL",
	String:    "STRING",
	Bytes:     "BYTES",
	Date:      "DATE",
	Time:      "TIME",
	Timestamp: "TIMESTAMP",
	Array:     "ARRAY",
	Map:       "MAP",
	Struct:    "STRUCT",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("KIND(%d)", k)
}

// Type is a SQL type: a kind plus the parameters composite and decimal
// types carry. Types are small values compared with Equal.
type Type struct {
	Kind      Kind
	Precision int     // DECIMAL
	Scale     int     // DECIMAL
	Elem      *Type   // ARRAY element, MAP value
	KeyType   *Type   // MAP key
	Fields    []Field // STRUCT fields in order
}

// Field is one named field of a STRUCT type.
type Field struct {
	Name string
	Type Type
}

// Scalar types, for convenience.
var (
	BooleanType   = Type{Kind: Boolean}
	IntType       = Type{Kind: Int}
	BigintType    = Type{Kind: Bigint}
	DoubleType    = Type{Kind: Double}
	StringType    = Type{Kind: String}
	BytesType     = Type{Kind: Bytes}
	DateType      = Type{Kind: Date}
	TimeType      = Type{Kind: Time}
	TimestampType = Type{Kind: Timestamp}
	UnknownType   = Type{Kind: Unknown}
)

// IsNumeric reports whether values of t take part in arithmetic.
func (t Type) IsNumeric() bool {
	switch t.Kind {
	case Int, Bigint, Double, Decimal:
		return true
	}
	return false
}

// IsIntegral reports whether t is INT or BIGINT.
func (t Type) IsIntegral() bool { return t.Kind == Int || t.Kind == Bigint }

// Equal reports whether two types are the same.
func (t Type) Equal(o Type) bool {
	if t.Kind != o.Kind || t.Precision != o.Precision || t.Scale != o.Scale || len(t.Fields) != len(o.Fields) {
		return false
	}
	if (t.Elem == nil) != (o.Elem == nil) || (t.KeyType == nil) != (o.KeyType == nil) {
		return false
	}
	if t.Elem != nil && !t.Elem.Equal(*o.Elem) {
		return false
	}
	if t.KeyType != nil && !t.KeyType.Equal(*o.KeyType) {
		return false
	}
	for i := range t.Fields {
		if t.Fields[i].Name != o.Fields[i].Name || !t.Fields[i].Type.Equal(o.Fields[i].Type) {
			return false
		}
	}
	return true
}

// String renders t the way ksqlDB prints it in DESCRIBE.
func (t Type) String() string {
	switch t.Kind {
	case Decimal:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case Array:
		return "ARRAY<" + t.Elem.String() + ">"
	case Map:
		return "MAP<" + t.KeyType.String() + ", " + t.Elem.String() + ">"
	case Struct:
		var b strings.Builder
		b.WriteString("STRUCT<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteByte(' ')
			b.WriteString(f.Type.String())
		}
		b.WriteByte('>')
		return b.String()
	}
	return t.Kind.String()
}

// ScalarByName maps a ksqlDB scalar type name (any case) to its type.
// Composite and DECIMAL types are parsed by the sql package.
func ScalarByName(name string) (Type, bool) {
	switch strings.ToUpper(name) {
	case "BOOLEAN", "BOOL":
		return BooleanType, true
	case "INT", "INTEGER":
		return IntType, true
	case "BIGINT":
		return BigintType, true
	case "DOUBLE":
		return DoubleType, true
	case "VARCHAR", "STRING":
		return StringType, true
	case "BYTES":
		return BytesType, true
	case "DATE":
		return DateType, true
	case "TIME":
		return TimeType, true
	case "TIMESTAMP":
		return TimestampType, true
	}
	return Type{}, false
}
