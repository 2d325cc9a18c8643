// Package splittest holds the quoting cases every statement splitter of
// sqlstreams is tested against: sql.Segments itself, pgwire's statement
// split, the shell's line-by-line splitter and the web console's
// JavaScript splitter (which reads cases.json with node).
package splittest

import (
	_ "embed"
	"encoding/json"
)

//go:embed cases.json
var casesJSON []byte

// Case is one text and how it splits.
type Case struct {
	Name string `json:"name"`
	Text string `json:"text"`
	// Statements are the statements of Text, in order, as sql.Segments
	// cuts them: trimmed, without their semicolons, with their byte
	// offsets in Text. Blank ones (white space and comments) are left out.
	Statements []Statement `json:"statements"`
	// Complete reports whether Text leaves nothing open: the last
	// statement ends with a semicolon (sql.Complete).
	Complete bool `json:"complete"`
}

// Statement is one statement of a Case.
type Statement struct {
	Pos  int    `json:"pos"`
	Text string `json:"text"`
}

// Cases returns the cases of cases.json.
func Cases() []Case {
	var cs []Case
	if err := json.Unmarshal(casesJSON, &cs); err != nil {
		panic("splittest: cases.json: " + err.Error()) // a broken file in the source tree
	}
	return cs
}
