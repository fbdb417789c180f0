package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// schema is an MCP tool's input schema as the model gets it.
type schema struct {
	wire   json.RawMessage // what is sent as the function's parameters
	strict bool            // sent with strict: true
	why    string          // why not strict
	opt    *optional       // strict only: the properties made nullable
}

// optional records, along an object tree, the properties that were
// optional in the server's schema and are nullable in the strict one: a
// null the model sends for one is dropped from the arguments, so the
// server sees the property absent, as its schema has it.
type optional struct {
	props map[string]bool      // property name -> was optional
	sub   map[string]*optional // property name -> inside it
	items *optional            // inside an array's items
}

// Keywords of a strict schema (OpenAI's strict mode, as llmtest checks
// it), and annotations dropped on the way.
var (
	keptKeywords    = []string{"type", "enum", "const", "title", "description", "$ref"}
	handledKeywords = []string{"properties", "required", "additionalProperties", "items", "anyOf", "$defs", "default"}
	droppedKeywords = []string{"$schema", "$id", "$comment", "examples", "deprecated", "readOnly", "writeOnly"}
	// typingKeywords: a strict schema has one of them (else it is any value).
	typingKeywords = []string{"type", "anyOf", "$ref", "enum", "const"}
)

// toolSchema turns an MCP tool's input schema (as the SDK client decodes
// it: JSON values) into what the model gets, by the rule of the package
// documentation (# Schemas): strict when strict mode can say it without
// changing what the server accepts, else as the server wrote it. Only a
// schema that is not a JSON object is an error.
func toolSchema(in any) (schema, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return schema{}, fmt.Errorf("input schema: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return schema{}, fmt.Errorf("input schema %.100s: not a JSON object", raw)
	}
	if _, typed := doc["type"]; !typed {
		// OpenAI takes only "type": "object" parameters (MCP asks for it
		// too); a server that leaves it out gets it added.
		doc["type"] = "object"
		if raw, err = json.Marshal(doc); err != nil {
			return schema{}, fmt.Errorf("input schema: %w", err)
		}
	}
	if !isObject(doc["type"]) {
		return schema{wire: raw, why: "#: the root is not an object"}, nil
	}
	out, opt, why := strictify(doc, "#", true)
	if why != "" {
		return schema{wire: raw, why: why}, nil
	}
	wire, err := json.Marshal(out)
	if err != nil {
		return schema{}, fmt.Errorf("input schema: %w", err)
	}
	return schema{wire: wire, strict: true, opt: opt}, nil
}

// strictify returns the strict form of node, the optional properties it
// made nullable (track: only along properties and items from the root),
// or why node cannot be strict.
func strictify(node any, path string, track bool) (map[string]any, *optional, string) {
	m, ok := node.(map[string]any)
	if !ok {
		return nil, nil, path + ": not a schema object (a boolean schema or a list)"
	}
	out := make(map[string]any, len(m)+3)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case slices.Contains(keptKeywords, k):
			out[k] = m[k]
		case slices.Contains(handledKeywords, k), slices.Contains(droppedKeywords, k):
		default:
			return nil, nil, fmt.Sprintf("%s: keyword %q is not accepted in strict mode", path, k)
		}
	}
	if d, ok := m["default"]; ok {
		b, _ := json.Marshal(d) // a decoded JSON value encodes
		desc, _ := m["description"].(string)
		out["description"] = strings.TrimSpace(desc + " (default: " + string(b) + ")")
	}
	opt := &optional{}
	if isObject(m["type"]) || m["properties"] != nil {
		if why := strictObject(m, out, opt, path, track); why != "" {
			return nil, nil, why
		}
	}
	if items, ok := m["items"]; ok {
		sub, subOpt, why := strictify(items, path+"/items", track)
		if why != "" {
			return nil, nil, why
		}
		out["items"], opt.items = sub, subOpt
	}
	if anyOf, ok := m["anyOf"]; ok {
		list, ok := anyOf.([]any)
		if !ok {
			return nil, nil, path + ": anyOf is not a list"
		}
		branches := make([]any, len(list))
		for i, b := range list {
			sub, _, why := strictify(b, fmt.Sprintf("%s/anyOf/%d", path, i), false)
			if why != "" {
				return nil, nil, why
			}
			branches[i] = sub
		}
		out["anyOf"] = branches
	}
	if defs, ok := m["$defs"]; ok {
		dm, ok := defs.(map[string]any)
		if !ok {
			return nil, nil, path + ": $defs is not an object"
		}
		outDefs := make(map[string]any, len(dm))
		for _, name := range slices.Sorted(maps.Keys(dm)) {
			sub, _, why := strictify(dm[name], path+"/$defs/"+name, false)
			if why != "" {
				return nil, nil, why
			}
			outDefs[name] = sub
		}
		out["$defs"] = outDefs
	}
	if !slices.ContainsFunc(typingKeywords, func(k string) bool { _, ok := out[k]; return ok }) {
		// Any value: strict mode wants a type, and no type says it.
		return nil, nil, path + ": no type (any value)"
	}
	if opt.props == nil && opt.sub == nil && opt.items == nil {
		opt = nil
	}
	return out, opt, ""
}

// strictObject fills out's properties, required and additionalProperties
// from the object schema m.
func strictObject(m, out map[string]any, opt *optional, path string, track bool) string {
	switch ap := m["additionalProperties"].(type) {
	case nil:
	case bool:
		if ap {
			return path + ": additionalProperties is true (free-form keys)"
		}
	default:
		return path + ": additionalProperties is a schema (a map)"
	}
	props, ok := m["properties"].(map[string]any)
	if !ok && m["properties"] != nil {
		return path + ": properties is not an object"
	}
	if len(props) == 0 && m["additionalProperties"] != false && path != "#" {
		// Any keys (JSON Schema's default), which strict mode would narrow
		// to {}. At the root it is a tool without arguments.
		return path + ": an object without properties (free-form keys)"
	}
	required := map[string]bool{}
	if r, ok := m["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return path + ": required is not a list"
		}
		for _, name := range list {
			s, ok := name.(string)
			if !ok {
				return path + ": required holds a non-string"
			}
			required[s] = true
		}
	}
	names := slices.Sorted(maps.Keys(props))
	outProps := make(map[string]any, len(props))
	for _, name := range names {
		sub, subOpt, why := strictify(props[name], path+"/properties/"+name, track)
		if why != "" {
			return why
		}
		if !required[name] {
			if !track {
				return fmt.Sprintf("%s: optional property %q inside anyOf or $defs", path, name)
			}
			sub = nullable(sub)
			if opt.props == nil {
				opt.props = map[string]bool{}
			}
			opt.props[name] = true
		}
		if subOpt != nil {
			if opt.sub == nil {
				opt.sub = map[string]*optional{}
			}
			opt.sub[name] = subOpt
		}
		outProps[name] = sub
	}
	req := make([]any, len(names))
	for i, n := range names {
		req[i] = n
	}
	out["type"] = withObject(m["type"])
	out["properties"], out["required"], out["additionalProperties"] = outProps, req, false
	return ""
}

// nullable returns s accepting null as well.
func nullable(s map[string]any) map[string]any {
	_, enum := s["enum"]
	_, constant := s["const"]
	if !enum && !constant {
		switch t := s["type"].(type) {
		case string:
			if t != "null" {
				s["type"] = []any{t, "null"}
			}
			return s
		case []any:
			if !slices.Contains(t, any("null")) {
				s["type"] = append(slices.Clone(t), "null")
			}
			return s
		}
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

func isObject(t any) bool {
	switch v := t.(type) {
	case string:
		return v == "object"
	case []any:
		return slices.Contains(v, any("object"))
	}
	return false
}

// withObject is t, or "object" when t is absent.
func withObject(t any) any {
	if t == nil {
		return "object"
	}
	return t
}

// arguments returns the arguments to send for the model's raw ones: the
// nulls of properties made nullable dropped (strict schemas only).
func (s schema) arguments(raw json.RawMessage) (json.RawMessage, error) {
	if s.opt == nil {
		return raw, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // numbers pass as written
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("not a JSON object")
	}
	s.opt.strip(v)
	return json.Marshal(v)
}

// strip deletes from v the nulls of properties that were optional.
func (o *optional) strip(v any) {
	if o == nil {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if val == nil && o.props[k] {
				delete(x, k)
				continue
			}
			o.sub[k].strip(val)
		}
	case []any:
		for _, e := range x {
			o.items.strip(e)
		}
	}
}
