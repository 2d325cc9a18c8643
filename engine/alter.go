package engine

import (
	"github.com/sqlstreams/sqlstreams/sql"
)

// alter turns ALTER STREAM|TABLE … ADD COLUMN … into the CREATE OR
// REPLACE statement it makes of the source's definition
// (sql.AlterAsReplace): its text, which is what the command topic
// records, and its parse.
func (e *Engine) alter(al *sql.AlterSource) (string, sql.Statement, error) {
	src, ok := e.cat.Source(al.Name)
	if !ok {
		return "", nil, sql.NameError(al, sql.CodeUndefinedTable, "Source %s does not exist.", al.Name)
	}
	text, err := sql.AlterAsReplace(al, src)
	if err != nil {
		return "", nil, err
	}
	st, err := sql.Parse(text)
	return text, st, err
}
