package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/twmb/avro"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Error is a registry error as Confluent's REST API returns it: an HTTP
// status and an error code such as 40401 (subject not found).
type Error struct {
	Status  int    `json:"-"`
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (error code %d)", e.Message, e.Code) }

func errSubjectNotFound(s string) *Error {
	return &Error{http.StatusNotFound, 40401, fmt.Sprintf("Subject '%s' not found.", s)}
}
func errVersionNotFound(s string, v int) *Error {
	return &Error{http.StatusNotFound, 40402, fmt.Sprintf("Version %d not found for subject '%s'.", v, s)}
}
func errSchemaNotFound() *Error {
	return &Error{http.StatusNotFound, 40403, "Schema not found"}
}
func errInvalidSchema(msg string) *Error {
	return &Error{http.StatusUnprocessableEntity, 42201, "Invalid schema: " + msg}
}
func errIncompatible(subj string, msgs []string) *Error {
	return &Error{http.StatusConflict, 409, fmt.Sprintf("Schema being registered is incompatible with an earlier schema for subject \"%s\", details: %s", subj, strings.Join(msgs, "; "))}
}
func errInvalidCompat(level string) *Error {
	return &Error{http.StatusUnprocessableEntity, 42203, fmt.Sprintf("Invalid compatibility level %q. Valid values are NONE, BACKWARD, FORWARD, FULL and their _TRANSITIVE forms", level)}
}

// Levels are Confluent's compatibility levels.
var levels = map[string]bool{"NONE": true, "BACKWARD": true, "BACKWARD_TRANSITIVE": true,
	"FORWARD": true, "FORWARD_TRANSITIVE": true, "FULL": true, "FULL_TRANSITIVE": true}

// SchemaInput is a schema posted to the registry.
type SchemaInput struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	// ID and Version, given only in IMPORT mode, are the ID and
	// version the schema is registered with.
	ID      int `json:"id,omitempty"`
	Version int `json:"version,omitempty"`
}

func normType(t string) (string, *Error) {
	switch strings.ToUpper(t) {
	case "", "AVRO":
		return "", nil
	case "PROTOBUF":
		return "PROTOBUF", nil
	case "JSON":
		return "JSON", nil
	}
	return "", &Error{http.StatusUnprocessableEntity, 42201, fmt.Sprintf("Invalid schema type %q", t)}
}

// Register registers in under subj, or returns the ID it already has
// there: a schema is the one already registered when it has the same
// identity (identity.go) — the same Avro schema in another text form, say
// — and the first text registered stays the one served. A schema new to
// subj that another subject holds gets that schema's ID. A new version must pass the subject's compatibility check. In
// IMPORT mode (mode.go) in may give its ID and version, and the
// compatibility check is skipped; elsewhere an ID or version is refused.
func (r *Registry) Register(ctx context.Context, subj string, in SchemaInput) (int, error) {
	typ, e := normType(in.SchemaType)
	if e != nil {
		return 0, e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	mode := r.mode(subj)
	switch {
	case mode == ModeReadOnly:
		return 0, errReadOnly(subj)
	case (in.ID > 0 || in.Version > 0) && mode != ModeImport:
		return 0, errNotImport(subj)
	}
	p, e := r.parse(typ, in.Schema, in.References)
	if e != nil {
		return 0, e
	}
	ident := identity(typ, in.Schema, p)
	same := func(s *schemaEntry) bool { return s.same(typ, ident, in.References) }
	sub := r.subjects[subj]
	if sub != nil {
		for _, v := range sub.versions {
			if !v.deleted && same(r.ids[v.id]) && (in.ID == 0 || in.ID == v.id) {
				return v.id, nil
			}
		}
	}
	if mode != ModeImport {
		if msgs := r.check(subj, typ, p, -2); len(msgs) > 0 {
			return 0, errIncompatible(subj, msgs)
		}
	}
	id := in.ID
	if id > 0 {
		if s := r.ids[id]; s != nil && !same(s) {
			return 0, errIDTaken(id)
		}
	} else {
		// The lowest ID of the same schema: a topic written before
		// schemas were compared by identity may hold several.
		for _, s := range r.ids {
			if same(s) && (id == 0 || s.id < id) {
				id = s.id
			}
		}
	}
	if id == 0 {
		id = r.maxID + 1
	}
	ver := in.Version
	if ver > 0 {
		if _, e := r.version(subj, ver); e == nil {
			return 0, &Error{http.StatusUnprocessableEntity, 42207, fmt.Sprintf("Overwrite new schema with version %d of subject '%s' is not permitted.", ver, subj)}
		}
	} else {
		ver = 1
		if sub != nil && len(sub.versions) > 0 {
			ver = sub.versions[len(sub.versions)-1].version + 1
		}
	}
	sv := schemaValue{Subject: subj, Version: ver, ID: id, References: in.References, Schema: in.Schema}
	if typ != "" {
		sv.SchemaType = typ
	}
	if err := r.write(ctx, recordKey{KeyType: "SCHEMA", Subject: strPtr(subj), Version: ver, Magic: 1}, sv); err != nil {
		return 0, err
	}
	r.log.Info("schema registered", "subject", subj, "version", ver, "id", id)
	return id, nil
}

func sameRefs(a, b []Reference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// parsed is a schema checked and compiled: an Avro schema, a protobuf
// file descriptor, or a JSON schema's text.
type parsed struct {
	avro  *avro.Schema
	proto protoreflect.FileDescriptor
	json  []byte
}

// parse checks a schema and returns its parsed form. The caller holds
// r.mu.
func (r *Registry) parse(typ, text string, refs []Reference) (parsed, *Error) {
	switch typ {
	case "":
		cache := &avro.SchemaCache{}
		if err := r.addRefs(cache, refs, 0); err != nil {
			return parsed{}, err
		}
		s, err := cache.Parse(text)
		if err != nil {
			return parsed{}, errInvalidSchema(err.Error())
		}
		return parsed{avro: s}, nil
	case "PROTOBUF":
		fd, e := r.compileProto(text, refs)
		if e != nil {
			return parsed{}, e
		}
		return parsed{proto: fd}, nil
	case "JSON":
		if !json.Valid([]byte(text)) {
			return parsed{}, errInvalidSchema("not JSON")
		}
		for _, ref := range refs {
			if _, e := r.version(ref.Subject, ref.Version); e != nil {
				return parsed{}, errInvalidSchema(fmt.Sprintf("reference %s: %v", ref.Name, e.Message))
			}
		}
		return parsed{json: []byte(text)}, nil
	}
	for _, ref := range refs {
		if _, e := r.version(ref.Subject, ref.Version); e != nil {
			return parsed{}, errInvalidSchema(fmt.Sprintf("reference %s: %v", ref.Name, e.Message))
		}
	}
	return parsed{}, nil
}

// addRefs parses the Avro schemas refs name into cache, references first.
func (r *Registry) addRefs(cache *avro.SchemaCache, refs []Reference, depth int) *Error {
	if depth > 32 {
		return errInvalidSchema("references nest too deeply")
	}
	for _, ref := range refs {
		v, e := r.version(ref.Subject, ref.Version)
		if e != nil {
			return errInvalidSchema(fmt.Sprintf("reference %s: %v", ref.Name, e.Message))
		}
		s := r.ids[v.id]
		if err := r.addRefs(cache, s.refs, depth+1); err != nil {
			return err
		}
		if _, err := cache.Parse(s.text); err != nil {
			return errInvalidSchema(fmt.Sprintf("reference %s: %v", ref.Name, err))
		}
	}
	return nil
}

// level is the compatibility level of subj. The caller holds r.mu.
func (r *Registry) level(subj string) string {
	if l, ok := r.configs[subj]; ok {
		return l
	}
	return r.global
}

// check returns why parsed cannot be registered under subj at its
// compatibility level, checked against version against (-1 latest, -2 as
// the level says: the latest, or all versions for _TRANSITIVE levels).
// The caller holds r.mu.
func (r *Registry) check(subj, typ string, p parsed, against int) []string {
	level := r.level(subj)
	if level == "NONE" || (p.avro == nil && p.proto == nil && p.json == nil) {
		return nil
	}
	sub := r.subjects[subj]
	if sub == nil {
		return nil
	}
	var live []*version
	for _, v := range sub.versions {
		if !v.deleted {
			live = append(live, v)
		}
	}
	if len(live) == 0 {
		return nil
	}
	switch {
	case against > 0:
		v, e := r.version(subj, against)
		if e != nil {
			return []string{e.Message}
		}
		live = []*version{v}
	case against == -1 || !strings.HasSuffix(level, "_TRANSITIVE"):
		live = live[len(live)-1:]
	}
	base := strings.TrimSuffix(level, "_TRANSITIVE")
	var msgs []string
	for _, v := range live {
		s := r.ids[v.id]
		if s.typ != typ {
			msgs = append(msgs, fmt.Sprintf("version %d is a %s schema", v.version, typeName(s.typ)))
			continue
		}
		old, e := r.parse(s.typ, s.text, s.refs)
		if e != nil {
			msgs = append(msgs, fmt.Sprintf("version %d: %s", v.version, e.Message))
			continue
		}
		// compatible(reader, writer) lists why reader cannot read writer.
		compatible := func(reader, writer parsed) []string {
			switch {
			case reader.avro != nil:
				if err := avro.CheckCompatibility(writer.avro, reader.avro); err != nil {
					return []string{err.Error()}
				}
				return nil
			case reader.proto != nil:
				return protoCompatible(reader.proto, writer.proto)
			}
			return jsonCompatible(reader.json, writer.json)
		}
		if base == "BACKWARD" || base == "FULL" {
			for _, why := range compatible(p, old) {
				msgs = append(msgs, fmt.Sprintf("the new schema cannot read data written with version %d: %s", v.version, why))
			}
		}
		if base == "FORWARD" || base == "FULL" {
			for _, why := range compatible(old, p) {
				msgs = append(msgs, fmt.Sprintf("version %d cannot read data written with the new schema: %s", v.version, why))
			}
		}
	}
	return msgs
}

// version finds a live version of subj (-1 or 0: the latest). The caller
// holds r.mu.
func (r *Registry) version(subj string, ver int) (*version, *Error) {
	sub := r.subjects[subj]
	if sub == nil {
		return nil, errSubjectNotFound(subj)
	}
	if ver <= 0 {
		for i := len(sub.versions) - 1; i >= 0; i-- {
			if !sub.versions[i].deleted {
				return sub.versions[i], nil
			}
		}
		return nil, errSubjectNotFound(subj)
	}
	for _, v := range sub.versions {
		if v.version == ver && !v.deleted {
			return v, nil
		}
	}
	return nil, errVersionNotFound(subj, ver)
}

func typeName(typ string) string {
	if typ == "" {
		return "AVRO"
	}
	return typ
}

// SubjectSchema is a schema as a subject's version holds it.
type SubjectSchema struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
}

func (r *Registry) subjectSchema(subj string, v *version) SubjectSchema {
	s := r.ids[v.id]
	return SubjectSchema{Subject: subj, Version: v.version, ID: v.id, SchemaType: s.typ, References: s.refs, Schema: s.text}
}

// Version returns version ver of subj (-1: the latest).
func (r *Registry) Version(subj string, ver int) (SubjectSchema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, e := r.version(subj, ver)
	if e != nil {
		return SubjectSchema{}, e
	}
	return r.subjectSchema(subj, v), nil
}

// Lookup finds in among subj's versions by its identity (identity.go), so
// another text form of a registered schema is found.
func (r *Registry) Lookup(subj string, in SchemaInput) (SubjectSchema, error) {
	typ, e := normType(in.SchemaType)
	if e != nil {
		return SubjectSchema{}, e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sub := r.subjects[subj]
	if sub == nil {
		return SubjectSchema{}, errSubjectNotFound(subj)
	}
	// As Confluent's lookup, a schema that does not parse is an error
	// (42201), not a schema that is not found.
	p, e := r.parse(typ, in.Schema, in.References)
	if e != nil {
		return SubjectSchema{}, e
	}
	ident := identity(typ, in.Schema, p)
	for _, v := range sub.versions {
		if !v.deleted && r.ids[v.id].same(typ, ident, in.References) {
			return r.subjectSchema(subj, v), nil
		}
	}
	return SubjectSchema{}, errSchemaNotFound()
}

// Subjects lists the subjects with a live version (every subject when
// deleted is set), sorted.
func (r *Registry) Subjects(deleted bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []string{}
	for name, sub := range r.subjects {
		for _, v := range sub.versions {
			if deleted || !v.deleted {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// All lists the versions of the subjects starting with prefix, by subject
// and version: live ones, or all with deleted, or each subject's latest
// with latestOnly.
func (r *Registry) All(prefix string, deleted, latestOnly bool) []SubjectSchema {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.subjects))
	for name := range r.subjects {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := []SubjectSchema{}
	for _, name := range names {
		var vs []SubjectSchema
		for _, v := range r.subjects[name].versions {
			if deleted || !v.deleted {
				vs = append(vs, r.subjectSchema(name, v))
			}
		}
		if latestOnly && len(vs) > 1 {
			vs = vs[len(vs)-1:]
		}
		out = append(out, vs...)
	}
	return out
}

// Versions lists subj's live version numbers (all when deleted is set).
func (r *Registry) Versions(subj string, deleted bool) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sub := r.subjects[subj]
	out := []int{}
	if sub != nil {
		for _, v := range sub.versions {
			if deleted || !v.deleted {
				out = append(out, v.version)
			}
		}
	}
	if len(out) == 0 {
		return nil, errSubjectNotFound(subj)
	}
	return out, nil
}

// ByID returns the schema with id. Schemas whose versions were deleted
// keep their IDs: records written with them stay readable.
func (r *Registry) ByID(id int) (SubjectSchema, []subjectVersion, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.ids[id]
	if s == nil {
		return SubjectSchema{}, nil, errSchemaNotFound()
	}
	return SubjectSchema{ID: id, SchemaType: s.typ, References: s.refs, Schema: s.text},
		append([]subjectVersion{}, s.registered...), nil
}

// Delete soft-deletes version ver of subj (ver 0: every version), or,
// with permanent, removes versions already soft-deleted. It returns the
// versions it deleted.
func (r *Registry) Delete(ctx context.Context, subj string, ver int, permanent bool) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mode(subj) == ModeReadOnly {
		return nil, errReadOnly(subj)
	}
	sub := r.subjects[subj]
	if sub == nil {
		return nil, errSubjectNotFound(subj)
	}
	var targets []*version
	for _, v := range sub.versions {
		if ver == 0 || v.version == ver || (ver == -1 && v == sub.versions[len(sub.versions)-1]) {
			targets = append(targets, v)
		}
	}
	if len(targets) == 0 {
		return nil, errVersionNotFound(subj, ver)
	}
	var done []int
	for _, v := range append([]*version{}, targets...) {
		key := recordKey{KeyType: "SCHEMA", Subject: strPtr(subj), Version: v.version, Magic: 1}
		if permanent {
			if !v.deleted {
				return done, &Error{http.StatusNotFound, 40407, fmt.Sprintf("Subject '%s' Version %d was not deleted first before being permanently deleted", subj, v.version)}
			}
			if err := r.write(ctx, key, nil); err != nil {
				return done, err
			}
		} else {
			if v.deleted {
				continue
			}
			s := r.ids[v.id]
			sv := schemaValue{Subject: subj, Version: v.version, ID: v.id, SchemaType: s.typ, References: s.refs, Schema: s.text, Deleted: true}
			if err := r.write(ctx, key, sv); err != nil {
				return done, err
			}
		}
		done = append(done, v.version)
	}
	if len(done) == 0 && !permanent {
		return nil, &Error{http.StatusNotFound, 40404, fmt.Sprintf("Subject '%s' was soft deleted. Set permanent=true to delete permanently", subj)}
	}
	return done, nil
}

// Compatibility returns the compatibility level of subj ("" the global
// one); ok is false when subj has no level of its own.
func (r *Registry) Compatibility(subj string) (level string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if subj == "" {
		return r.global, true
	}
	l, ok := r.configs[subj]
	return l, ok
}

// SetCompatibility sets the level of subj ("" the global one); an empty
// level removes a subject's own level.
func (r *Registry) SetCompatibility(ctx context.Context, subj, level string) error {
	level = strings.ToUpper(level)
	if level != "" && !levels[level] {
		return errInvalidCompat(level)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := recordKey{KeyType: "CONFIG", Magic: 0}
	if subj != "" {
		key.Subject = strPtr(subj)
	}
	var v any
	if level != "" {
		v = configValue{CompatibilityLevel: level}
	}
	return r.write(ctx, key, v)
}

// CheckCompatibility reports whether in could be registered under subj,
// checked against version ver (-1 the latest, -2 as the level says).
func (r *Registry) CheckCompatibility(subj string, ver int, in SchemaInput) ([]string, error) {
	typ, e := normType(in.SchemaType)
	if e != nil {
		return nil, e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ver > 0 || ver == -1 {
		if _, e := r.version(subj, ver); e != nil {
			return nil, e
		}
	}
	p, e := r.parse(typ, in.Schema, in.References)
	if e != nil {
		return nil, e
	}
	return r.check(subj, typ, p, ver), nil
}

// ReferencedBy lists the IDs of schemas that reference version ver of
// subj.
func (r *Registry) ReferencedBy(subj string, ver int) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, e := r.version(subj, ver)
	if e != nil {
		return nil, e
	}
	out := []int{}
	for _, s := range r.ids {
		for _, ref := range s.refs {
			if ref.Subject == subj && ref.Version == v.version {
				out = append(out, s.id)
				break
			}
		}
	}
	sort.Ints(out)
	return out, nil
}
