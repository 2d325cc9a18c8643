package registry

import (
	"encoding/json"
	"fmt"
	"sort"
)

// jsonCompatible returns why data valid against writer may be invalid
// against reader, in the common cases of Confluent's JSON Schema rules:
// a property both describe changed its type (integer may widen to
// number; a type list may add types), or the reader requires a property
// the writer does not. Properties are followed into nested objects and
// array items; oneOf/anyOf branches, $ref and content-model details are
// not compared.
func jsonCompatible(reader, writer []byte) []string {
	var r, w map[string]any
	if json.Unmarshal(reader, &r) != nil || json.Unmarshal(writer, &w) != nil {
		return nil // only objects are compared
	}
	var msgs []string
	jsonCompare("#", r, w, &msgs, 0)
	return msgs
}

func jsonTypes(s map[string]any) map[string]bool {
	out := map[string]bool{}
	switch t := s["type"].(type) {
	case string:
		out[t] = true
	case []any:
		for _, e := range t {
			if v, ok := e.(string); ok {
				out[v] = true
			}
		}
	}
	return out
}

func jsonCompare(path string, r, w map[string]any, msgs *[]string, depth int) {
	if depth > 32 {
		return
	}
	rt, wt := jsonTypes(r), jsonTypes(w)
	if len(rt) > 0 && len(wt) > 0 {
		for t := range wt {
			if !rt[t] && !(t == "integer" && rt["number"]) {
				*msgs = append(*msgs, fmt.Sprintf("%s: type %s is no longer allowed", path, t))
			}
		}
	}
	rp, _ := r["properties"].(map[string]any)
	wp, _ := w["properties"].(map[string]any)
	names := make([]string, 0, len(rp))
	for name := range rp {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rs, ok1 := rp[name].(map[string]any)
		ws, ok2 := wp[name].(map[string]any)
		if ok1 && ok2 {
			jsonCompare(path+"/properties/"+name, rs, ws, msgs, depth+1)
		}
	}
	if ri, ok := r["items"].(map[string]any); ok {
		if wi, ok := w["items"].(map[string]any); ok {
			jsonCompare(path+"/items", ri, wi, msgs, depth+1)
		}
	}
	wreq := map[string]bool{}
	if l, ok := w["required"].([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				wreq[s] = true
			}
		}
	}
	if l, ok := r["required"].([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok && !wreq[s] {
				*msgs = append(*msgs, fmt.Sprintf("%s: property %s is required but data written before need not have it", path, s))
			}
		}
	}
}
