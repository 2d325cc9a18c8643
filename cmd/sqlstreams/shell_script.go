package main

// This file is the shell's RUN SCRIPT 'file.sql' command: it runs the
// file's statements in order, as -f does, and stops at the first error.
// The shell runs it itself rather than sending it to the server. Typed on
// a line of its own it needs no semicolon.

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// maxScriptDepth bounds scripts running scripts, so that a script that
// runs itself ends.
const maxScriptDepth = 16

var runScriptRE = regexp.MustCompile(`(?is)^\s*RUN\s+SCRIPT\s+'((?:[^'\\]|''|\\.)*)'\s*;?\s*$`)

// runScriptPath returns the file a RUN SCRIPT statement names and true,
// or false when stmt is not one. The statement may end in a semicolon.
func runScriptPath(stmt string) (string, bool) {
	m := runScriptRE.FindStringSubmatch(stmt)
	if m == nil {
		return "", false
	}
	path := strings.ReplaceAll(m[1], "''", "'")
	path = regexp.MustCompile(`\\(.)`).ReplaceAllString(path, "$1")
	return path, true
}

// errScript is returned for a script that failed; its statement has
// already printed the error.
var errScript = errors.New("script failed")

// runStatement runs one statement typed or read from a script: RUN
// SCRIPT in the shell, anything else on the server. A successful CREATE
// or DROP makes completion fetch the stream and table names again.
func (sh *shell) runStatement(stmt string) error {
	if path, ok := runScriptPath(stmt); ok {
		return sh.runScript(path)
	}
	err := sh.run(stmt)
	if sh.comp != nil && changesSources(stmt) {
		sh.comp.invalidate()
	}
	return err
}

// runScript runs the statements in the file at path.
func (sh *shell) runScript(path string) error {
	if sh.depth >= maxScriptDepth {
		fmt.Fprintf(sh.errw, "ERROR: RUN SCRIPT nested more than %d deep\n", maxScriptDepth)
		return errScript
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(sh.errw, "ERROR: RUN SCRIPT: %v\n", err)
		return err
	}
	defer f.Close()
	sh.depth++
	code := sh.script(f)
	sh.depth--
	if code != 0 {
		return errScript
	}
	return nil
}
