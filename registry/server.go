package registry

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// contentType is the Schema Registry API's media type.
const contentType = "application/vnd.schemaregistry.v1+json"

// Handler serves Confluent's Schema Registry REST API over the registry:
//
//	GET    /subjects, /subjects/{s}/versions, /subjects/{s}/versions/{v|latest}[/schema|/referencedby]
//	POST   /subjects/{s}/versions (register), /subjects/{s} (look up)
//	DELETE /subjects/{s}[/versions/{v}] (?permanent=true)
//	GET    /schemas (?subjectPrefix, deleted, latestOnly), /schemas/ids/{id}[/schema|/subjects|/versions], /schemas/types
//	GET, PUT /config[/{s}] (?defaultToGlobal=true); DELETE /config/{s}
//	POST   /compatibility/subjects/{s}/versions[/{v|latest}]
//	GET, PUT /mode[/{s}] (READWRITE, READONLY, IMPORT; ?force=true); DELETE /mode/{s}
//	GET    /
//
// Errors are {"error_code": …, "message": …} with Confluent's codes.
func (r *Registry) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { reply(w, struct{}{}) })
	m.HandleFunc("GET /subjects", func(w http.ResponseWriter, q *http.Request) {
		reply(w, r.Subjects(q.URL.Query().Get("deleted") == "true"))
	})
	m.HandleFunc("GET /subjects/{s}/versions", func(w http.ResponseWriter, q *http.Request) {
		vs, err := r.Versions(q.PathValue("s"), q.URL.Query().Get("deleted") == "true")
		answer(w, vs, err)
	})
	m.HandleFunc("POST /subjects/{s}/versions", func(w http.ResponseWriter, q *http.Request) {
		var in SchemaInput
		if !readBody(w, q, &in) {
			return
		}
		id, err := r.Register(q.Context(), q.PathValue("s"), in)
		answer(w, map[string]int{"id": id}, err)
	})
	m.HandleFunc("POST /subjects/{s}", func(w http.ResponseWriter, q *http.Request) {
		var in SchemaInput
		if !readBody(w, q, &in) {
			return
		}
		ss, err := r.Lookup(q.PathValue("s"), in)
		answer(w, ss, err)
	})
	m.HandleFunc("GET /subjects/{s}/versions/{v}", func(w http.ResponseWriter, q *http.Request) {
		ss, err := r.versionParam(q)
		answer(w, ss, err)
	})
	m.HandleFunc("GET /subjects/{s}/versions/{v}/schema", func(w http.ResponseWriter, q *http.Request) {
		ss, err := r.versionParam(q)
		if err != nil {
			answer(w, nil, err)
			return
		}
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, ss.Schema)
	})
	m.HandleFunc("GET /subjects/{s}/versions/{v}/referencedby", func(w http.ResponseWriter, q *http.Request) {
		v, err := parseVersion(q.PathValue("v"))
		if err != nil {
			answer(w, nil, err)
			return
		}
		ids, err := r.ReferencedBy(q.PathValue("s"), v)
		answer(w, ids, err)
	})
	m.HandleFunc("DELETE /subjects/{s}", func(w http.ResponseWriter, q *http.Request) {
		vs, err := r.Delete(q.Context(), q.PathValue("s"), 0, q.URL.Query().Get("permanent") == "true")
		answer(w, vs, err)
	})
	m.HandleFunc("DELETE /subjects/{s}/versions/{v}", func(w http.ResponseWriter, q *http.Request) {
		v, err := parseVersion(q.PathValue("v"))
		if err != nil {
			answer(w, nil, err)
			return
		}
		vs, err := r.Delete(q.Context(), q.PathValue("s"), v, q.URL.Query().Get("permanent") == "true")
		if err == nil && len(vs) == 1 {
			answer(w, vs[0], nil)
			return
		}
		answer(w, vs, err)
	})
	m.HandleFunc("GET /schemas", func(w http.ResponseWriter, q *http.Request) {
		qs := q.URL.Query()
		reply(w, r.All(qs.Get("subjectPrefix"), qs.Get("deleted") == "true", qs.Get("latestOnly") == "true"))
	})
	m.HandleFunc("GET /schemas/types", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, []string{"JSON", "PROTOBUF", "AVRO"})
	})
	byID := func(q *http.Request) (SubjectSchema, []subjectVersion, error) {
		id, err := strconv.Atoi(q.PathValue("id"))
		if err != nil {
			return SubjectSchema{}, nil, errSchemaNotFound()
		}
		return r.ByID(id)
	}
	m.HandleFunc("GET /schemas/ids/{id}", func(w http.ResponseWriter, q *http.Request) {
		ss, _, err := byID(q)
		answer(w, struct {
			SchemaType string      `json:"schemaType,omitempty"`
			References []Reference `json:"references,omitempty"`
			Schema     string      `json:"schema"`
		}{ss.SchemaType, ss.References, ss.Schema}, err)
	})
	m.HandleFunc("GET /schemas/ids/{id}/schema", func(w http.ResponseWriter, q *http.Request) {
		ss, _, err := byID(q)
		if err != nil {
			answer(w, nil, err)
			return
		}
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, ss.Schema)
	})
	m.HandleFunc("GET /schemas/ids/{id}/subjects", func(w http.ResponseWriter, q *http.Request) {
		_, svs, err := byID(q)
		subs := []string{}
		for _, sv := range svs {
			if len(subs) == 0 || subs[len(subs)-1] != sv.Subject {
				subs = append(subs, sv.Subject)
			}
		}
		answer(w, subs, err)
	})
	m.HandleFunc("GET /schemas/ids/{id}/versions", func(w http.ResponseWriter, q *http.Request) {
		_, svs, err := byID(q)
		answer(w, svs, err)
	})
	getConfig := func(w http.ResponseWriter, q *http.Request) {
		subj := q.PathValue("s")
		l, ok := r.Compatibility(subj)
		if !ok && q.URL.Query().Get("defaultToGlobal") == "true" {
			l, ok = r.Compatibility("")
		}
		if !ok {
			answer(w, nil, &Error{http.StatusNotFound, 40408, "Subject '" + subj + "' does not have subject-level compatibility configured"})
			return
		}
		reply(w, map[string]string{"compatibilityLevel": l})
	}
	putConfig := func(w http.ResponseWriter, q *http.Request) {
		var in struct {
			Compatibility string `json:"compatibility"`
		}
		if !readBody(w, q, &in) {
			return
		}
		if in.Compatibility == "" {
			answer(w, nil, errInvalidCompat(""))
			return
		}
		err := r.SetCompatibility(q.Context(), q.PathValue("s"), in.Compatibility)
		answer(w, map[string]string{"compatibility": in.Compatibility}, err)
	}
	m.HandleFunc("GET /config", getConfig)
	m.HandleFunc("GET /config/{s}", getConfig)
	m.HandleFunc("PUT /config", putConfig)
	m.HandleFunc("PUT /config/{s}", putConfig)
	m.HandleFunc("DELETE /config/{s}", func(w http.ResponseWriter, q *http.Request) {
		l, _ := r.Compatibility(q.PathValue("s"))
		err := r.SetCompatibility(q.Context(), q.PathValue("s"), "")
		answer(w, map[string]string{"compatibilityLevel": l}, err)
	})
	compat := func(w http.ResponseWriter, q *http.Request) {
		v := -2
		if s := q.PathValue("v"); s != "" {
			var err error
			if v, err = parseVersion(s); err != nil {
				answer(w, nil, err)
				return
			}
		}
		var in SchemaInput
		if !readBody(w, q, &in) {
			return
		}
		msgs, err := r.CheckCompatibility(q.PathValue("s"), v, in)
		res := map[string]any{"is_compatible": len(msgs) == 0}
		if q.URL.Query().Get("verbose") == "true" {
			res["messages"] = append([]string{}, msgs...)
		}
		answer(w, res, err)
	}
	m.HandleFunc("POST /compatibility/subjects/{s}/versions", compat)
	m.HandleFunc("POST /compatibility/subjects/{s}/versions/{v}", compat)
	getMode := func(w http.ResponseWriter, q *http.Request) {
		subj := q.PathValue("s")
		md, ok := r.Mode(subj)
		if !ok && q.URL.Query().Get("defaultToGlobal") == "true" {
			md, ok = r.Mode("")
		}
		if !ok {
			answer(w, nil, &Error{http.StatusNotFound, 40409, "Subject '" + subj + "' does not have subject-level mode configured"})
			return
		}
		reply(w, map[string]string{"mode": md})
	}
	putMode := func(w http.ResponseWriter, q *http.Request) {
		var in struct {
			Mode string `json:"mode"`
		}
		if !readBody(w, q, &in) {
			return
		}
		if in.Mode == "" {
			answer(w, nil, errInvalidMode(""))
			return
		}
		err := r.SetMode(q.Context(), q.PathValue("s"), in.Mode, q.URL.Query().Get("force") == "true")
		answer(w, map[string]string{"mode": strings.ToUpper(in.Mode)}, err)
	}
	m.HandleFunc("GET /mode", getMode)
	m.HandleFunc("GET /mode/{s}", getMode)
	m.HandleFunc("PUT /mode", putMode)
	m.HandleFunc("PUT /mode/{s}", putMode)
	m.HandleFunc("DELETE /mode/{s}", func(w http.ResponseWriter, q *http.Request) {
		md, _ := r.Mode(q.PathValue("s"))
		err := r.SetMode(q.Context(), q.PathValue("s"), "", false)
		answer(w, map[string]string{"mode": md}, err)
	})
	return m
}

func (r *Registry) versionParam(q *http.Request) (SubjectSchema, error) {
	v, err := parseVersion(q.PathValue("v"))
	if err != nil {
		return SubjectSchema{}, err
	}
	return r.Version(q.PathValue("s"), v)
}

func parseVersion(s string) (int, error) {
	if s == "latest" {
		return -1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v == 0 || v < -1 {
		return 0, &Error{http.StatusUnprocessableEntity, 42202, "The specified version '" + s + "' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""}
	}
	return v, nil
}

func readBody(w http.ResponseWriter, q *http.Request, into any) bool {
	b, err := io.ReadAll(io.LimitReader(q.Body, 16<<20))
	if err == nil {
		err = json.Unmarshal(b, into)
	}
	if err != nil {
		answer(w, nil, &Error{http.StatusUnprocessableEntity, 42201, "Invalid request body: " + err.Error()})
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", contentType)
	_ = json.NewEncoder(w).Encode(v)
}

func answer(w http.ResponseWriter, v any, err error) {
	if err == nil {
		reply(w, v)
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{http.StatusInternalServerError, 50001, err.Error()}
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e)
}
