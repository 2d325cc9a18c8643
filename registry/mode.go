package registry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// Modes are Confluent's registry modes. READWRITE is the default;
// READONLY refuses registrations and deletions; IMPORT lets a
// registration give its own ID and version (to copy schemas from another
// registry, or to pin the IDs a test names) and skips the compatibility
// check, as Confluent's IMPORT mode does.
const (
	ModeReadWrite = "READWRITE"
	ModeReadOnly  = "READONLY"
	ModeImport    = "IMPORT"
)

var modes = map[string]bool{ModeReadWrite: true, ModeReadOnly: true, ModeImport: true}

type modeValue struct {
	Mode string `json:"mode"`
}

func errInvalidMode(m string) *Error {
	return &Error{http.StatusUnprocessableEntity, 42204, fmt.Sprintf("Invalid mode %q. Valid values are READWRITE, READONLY and IMPORT", m)}
}

func errNotImport(subj string) *Error {
	return &Error{http.StatusUnprocessableEntity, 42205, fmt.Sprintf("Subject %s is not in import mode", subj)}
}

func errReadOnly(subj string) *Error {
	return &Error{http.StatusUnprocessableEntity, 42205, fmt.Sprintf("Subject %s is in read-only mode", subj)}
}

func errIDTaken(id int) *Error {
	return &Error{http.StatusUnprocessableEntity, 42207, fmt.Sprintf("Overwrite new schema with id %d is not permitted.", id)}
}

// mode is the mode of subj: its own, else the global one. The caller
// holds r.mu.
func (r *Registry) mode(subj string) string {
	if m, ok := r.modes[subj]; ok {
		return m
	}
	if r.globalMode != "" {
		return r.globalMode
	}
	return ModeReadWrite
}

// Mode returns the mode of subj ("" the global one); ok is false when
// subj has no mode of its own.
func (r *Registry) Mode(subj string) (mode string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if subj == "" {
		return r.mode(""), true
	}
	m, ok := r.modes[subj]
	return m, ok
}

// SetMode sets the mode of subj ("" the global one); an empty mode
// removes a subject's own mode. Like Confluent's, it refuses IMPORT for
// a subject that has schemas unless force is set.
func (r *Registry) SetMode(ctx context.Context, subj, mode string, force bool) error {
	mode = strings.ToUpper(mode)
	if mode != "" && !modes[mode] {
		return errInvalidMode(mode)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if mode == ModeImport && !force {
		nonEmpty := false
		if subj == "" {
			nonEmpty = len(r.subjects) > 0
		} else if sub := r.subjects[subj]; sub != nil && len(sub.versions) > 0 {
			nonEmpty = true
		}
		if nonEmpty {
			return &Error{http.StatusUnprocessableEntity, 42205, "Cannot import since found existing subjects"}
		}
	}
	key := recordKey{KeyType: "MODE", Magic: 0}
	if subj != "" {
		key.Subject = strPtr(subj)
	}
	var v any
	if mode != "" {
		v = modeValue{Mode: mode}
	}
	return r.write(ctx, key, v)
}

// applyMode applies a MODE record. The caller holds r.mu or is replaying.
func (r *Registry) applyMode(subj *string, v *modeValue) {
	switch {
	case subj == nil && v != nil:
		r.globalMode = v.Mode
	case subj == nil:
		r.globalMode = ""
	case v == nil:
		delete(r.modes, *subj)
	default:
		r.modes[*subj] = v.Mode
	}
}
