package llmtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// namePattern is what OpenAI accepts for schema and function names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// strictKeywords is the JSON Schema subset strict mode accepts: the
// structure, and the string, number and array constraints OpenAI's
// structured-output guide lists as supported.
var strictKeywords = setOf("type", "properties", "required", "items", "enum", "const", "anyOf",
	"description", "$defs", "$ref", "additionalProperties", "title",
	"pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minItems", "maxItems")

// strictFormats are the string formats strict mode supports.
var strictFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

// The documented limits of a strict schema.
const (
	maxNesting        = 10      // levels of nested objects
	maxProperties     = 5000    // object properties in all
	maxEnumValues     = 1000    // enum values in all
	bigEnum           = 250     // an enum of more string values than this...
	maxBigEnumLength  = 15000   // ...has at most this many characters in all
	maxSchemaCharsAll = 120_000 // characters of property names, definition names, enum and const values
)

// typingKeywords: every schema in strict mode has one of them (a schema
// without says any value, which strict mode refuses).
var typingKeywords = []string{"type", "anyOf", "$ref", "enum", "const"}

// checkStrictSchema reports why schema (a JSON Schema document) would be
// rejected by OpenAI's strict mode, or nil if it would be accepted: the
// root is an object; every schema needs a type (or anyOf, $ref, enum or
// const), every object "additionalProperties": false and a "required"
// array naming every property and no other; references resolve; only a
// subset of keywords is allowed; and the documented limits hold.
func checkStrictSchema(schema json.RawMessage) error {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return fmt.Errorf("schema is not valid JSON: %v", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("#: a schema must be a JSON object")
	}
	if !isObjectType(root["type"]) {
		got, _ := json.Marshal(root["type"])
		if root["type"] == nil {
			got = []byte("None")
		}
		return fmt.Errorf("schema must be a JSON Schema of 'type: \"object\"', got 'type: %s'", got)
	}
	w := &strictWalk{root: root}
	if err := w.node(doc, "#", 0); err != nil {
		return err
	}
	return w.limits()
}

// strictWalk checks the nodes of a strict schema and counts what the
// limits bound.
type strictWalk struct {
	root                     map[string]any
	properties, enums, chars int
}

func (w *strictWalk) limits() error {
	switch {
	case w.properties > maxProperties:
		return fmt.Errorf("the schema has %d object properties in all; at most %d are permitted", w.properties, maxProperties)
	case w.enums > maxEnumValues:
		return fmt.Errorf("the schema has %d enum values in all; at most %d are permitted", w.enums, maxEnumValues)
	case w.chars > maxSchemaCharsAll:
		return fmt.Errorf("the property names, definition names, enum and const values of the schema have %d characters in all; at most %d are permitted", w.chars, maxSchemaCharsAll)
	}
	return nil
}

func (w *strictWalk) node(node any, path string, depth int) error {
	obj, ok := node.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a schema must be a JSON object", path)
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !strictKeywords[k] {
			return fmt.Errorf("%s: '%s' is not permitted", path, k)
		}
	}
	if !slices.ContainsFunc(typingKeywords, func(k string) bool { _, ok := obj[k]; return ok }) {
		return fmt.Errorf("%s: schema must have a 'type' key", path)
	}
	if f, ok := obj["format"]; ok {
		if fs, _ := f.(string); !slices.Contains(strictFormats, fs) {
			return fmt.Errorf("%s: format '%v' is not supported; supported formats are %s", path, f, strings.Join(strictFormats, ", "))
		}
	}
	if ref, ok := obj["$ref"].(string); ok && !w.resolves(ref) {
		return fmt.Errorf("%s: reference to component '%s' which was not found in the schema", path, ref)
	}
	if err := w.values(obj, path); err != nil {
		return err
	}
	props, _ := obj["properties"].(map[string]any)
	if isObjectType(obj["type"]) || len(props) > 0 {
		if depth++; depth > maxNesting {
			return fmt.Errorf("%s: objects are nested %d levels deep; at most %d are permitted", path, depth, maxNesting)
		}
		if ap, ok := obj["additionalProperties"].(bool); !ok || ap {
			return fmt.Errorf("%s: 'additionalProperties' is required to be supplied and to be false", path)
		}
		req, _ := obj["required"].([]any)
		names := slices.Sorted(maps.Keys(props))
		for _, name := range names {
			if !slices.Contains(req, any(name)) {
				return fmt.Errorf("%s: 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", path, name)
			}
		}
		for _, r := range req {
			if name, _ := r.(string); !slices.Contains(names, name) {
				return fmt.Errorf("%s: 'required' is required to be supplied and to be an array including every key in properties. Extra required key '%v' supplied", path, r)
			}
		}
		w.properties += len(names)
		for _, name := range names {
			w.chars += len(name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if err := w.node(props[name], path+"/properties/"+name, depth); err != nil {
			return err
		}
	}
	if items, ok := obj["items"]; ok {
		if err := w.node(items, path+"/items", depth); err != nil {
			return err
		}
	}
	if anyOf, ok := obj["anyOf"].([]any); ok {
		for i, sub := range anyOf {
			if err := w.node(sub, fmt.Sprintf("%s/anyOf/%d", path, i), depth); err != nil {
				return err
			}
		}
	}
	defs, _ := obj["$defs"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		w.chars += len(name)
		if err := w.node(defs[name], path+"/$defs/"+name, depth); err != nil {
			return err
		}
	}
	return nil
}

// values counts a node's enum and const values against the limits.
func (w *strictWalk) values(obj map[string]any, path string) error {
	if c, ok := obj["const"].(string); ok {
		w.chars += len(c)
	}
	enum, _ := obj["enum"].([]any)
	w.enums += len(enum)
	n := 0
	for _, v := range enum {
		if s, ok := v.(string); ok {
			n += len(s)
		}
	}
	w.chars += n
	if len(enum) > bigEnum && n > maxBigEnumLength {
		return fmt.Errorf("%s: an enum of more than %d values may have at most %d characters in all; this one has %d", path, bigEnum, maxBigEnumLength, n)
	}
	return nil
}

// resolves says whether a $ref points into the schema: "#" (recursion) or
// a JSON pointer to a node of it.
func (w *strictWalk) resolves(ref string) bool {
	p, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return false
	}
	var node any = w.root
	for _, tok := range strings.Split(p, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = m[tok]; !ok {
			return false
		}
	}
	return true
}

func isObjectType(t any) bool {
	switch v := t.(type) {
	case string:
		return v == "object"
	case []any:
		return slices.Contains(v, any("object"))
	}
	return false
}

// reasoningModel reports whether OpenAI treats model as a reasoning model
// (gpt-5*, o-series): those take max_completion_tokens and reasoning_effort.
func reasoningModel(model string) bool {
	for _, p := range []string{"gpt-5", "o1", "o3", "o4"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// badRequest is an OpenAI 400 answer.
type badRequest struct {
	code, param, message string
}

func (b *badRequest) Error() string { return b.message }

// validateRequest applies the checks the real API makes that our client
// could get wrong; nil means the request is acceptable.
func validateRequest(r *Request) *badRequest {
	if b := checkShape(r.Body, r); b != nil {
		return b
	}
	if !r.Stream && r.StreamOptions != nil {
		return &badRequest{param: "stream_options", message: "The 'stream_options' parameter is only allowed when 'stream' is enabled."}
	}
	if r.Model == "" {
		return &badRequest{param: "model", message: "you must provide a model parameter"}
	}
	if len(r.Messages) == 0 {
		return &badRequest{param: "messages", message: "[] is too short - 'messages'"}
	}
	if reasoningModel(r.Model) && r.MaxTokens > 0 {
		return &badRequest{code: "unsupported_parameter", param: "max_tokens",
			message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."}
	}
	if !reasoningModel(r.Model) && r.ReasoningEffort != "" {
		return &badRequest{code: "unsupported_parameter", param: "reasoning_effort",
			message: "Unrecognized request argument supplied: reasoning_effort"}
	}
	if b := checkToolPairing(r.Messages); b != nil {
		return b
	}
	for i, t := range r.Tools {
		if t.Type == "custom" {
			if t.Custom == nil || !namePattern.MatchString(t.Custom.Name) {
				return &badRequest{param: fmt.Sprintf("tools[%d].custom.name", i),
					message: fmt.Sprintf("Invalid 'tools[%d].custom.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)}
			}
			continue
		}
		if !namePattern.MatchString(t.Function.Name) {
			return &badRequest{param: fmt.Sprintf("tools[%d].function.name", i),
				message: fmt.Sprintf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)}
		}
		if t.Function.Strict && len(t.Function.Parameters) > 0 { // a strict tool may take no parameters
			if err := checkStrictSchema(t.Function.Parameters); err != nil {
				return &badRequest{param: fmt.Sprintf("tools[%d].function.parameters", i),
					message: fmt.Sprintf("Invalid schema for function '%s': In context=(), %v.", t.Function.Name, err)}
			}
		}
	}
	return checkResponseFormat(r.ResponseFormat)
}

// checkToolPairing enforces that every assistant tool call is answered by a
// tool message before the next non-tool message, and that every tool message
// answers a call of the assistant message just before.
func checkToolPairing(msgs []Message) *badRequest {
	var pending []string
	for i, m := range msgs {
		if m.Role == "tool" {
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return &badRequest{param: fmt.Sprintf("messages.[%d].role", i),
					message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."}
			}
			pending = slices.Delete(pending, j, j+1)
			continue
		}
		if len(pending) > 0 {
			return missingToolReplies(pending)
		}
		if m.Role == "assistant" {
			for _, c := range m.ToolCalls {
				pending = append(pending, c.ID)
			}
		}
	}
	if len(pending) > 0 {
		return missingToolReplies(pending)
	}
	return nil
}

func missingToolReplies(ids []string) *badRequest {
	return &badRequest{param: "messages",
		message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(ids, ", ")}
}

func checkResponseFormat(raw json.RawMessage) *badRequest {
	if len(raw) == 0 {
		return nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return &badRequest{param: "response_format", message: "Invalid 'response_format': " + err.Error()}
	}
	if rf.Type != "json_schema" {
		return nil
	}
	if rf.JSONSchema == nil {
		return &badRequest{param: "response_format.json_schema", message: "Missing required parameter: 'response_format.json_schema'."}
	}
	if !namePattern.MatchString(rf.JSONSchema.Name) {
		return &badRequest{param: "response_format.json_schema.name",
			message: "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."}
	}
	if rf.JSONSchema.Strict {
		if err := checkStrictSchema(rf.JSONSchema.Schema); err != nil {
			return &badRequest{param: "response_format",
				message: fmt.Sprintf("Invalid schema for response_format '%s': In context=(), %v.", rf.JSONSchema.Name, err)}
		}
	}
	return nil
}
