package llmtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// namePattern is what OpenAI accepts for schema and function names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// strictKeywords is the JSON Schema subset strict mode accepts.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "items": true, "enum": true,
	"const": true, "anyOf": true, "description": true, "$defs": true, "$ref": true,
	"additionalProperties": true, "title": true,
}

// typingKeywords: every schema in strict mode has one of them (a schema
// without says any value, which strict mode refuses).
var typingKeywords = []string{"type", "anyOf", "$ref", "enum", "const"}

// checkStrictSchema reports why schema (a JSON Schema document) would be
// rejected by OpenAI's strict mode, or nil if it would be accepted: every
// schema needs a type (or anyOf, $ref, enum or const), every object
// "additionalProperties": false and a "required" array naming every
// property, and only a subset of keywords is allowed.
func checkStrictSchema(schema json.RawMessage) error {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return fmt.Errorf("schema is not valid JSON: %v", err)
	}
	return checkStrictNode(doc, "#")
}

func checkStrictNode(node any, path string) error {
	obj, ok := node.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a schema must be a JSON object", path)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strictKeywords[k] {
			return fmt.Errorf("%s: '%s' is not permitted", path, k)
		}
	}
	if !slices.ContainsFunc(typingKeywords, func(k string) bool { _, ok := obj[k]; return ok }) {
		return fmt.Errorf("%s: schema must have a 'type' key", path)
	}
	props, _ := obj["properties"].(map[string]any)
	if isObjectType(obj["type"]) || len(props) > 0 {
		if ap, ok := obj["additionalProperties"].(bool); !ok || ap {
			return fmt.Errorf("%s: 'additionalProperties' is required to be supplied and to be false", path)
		}
		req, _ := obj["required"].([]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			if !slices.Contains(req, any(name)) {
				return fmt.Errorf("%s: 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", path, name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if err := checkStrictNode(props[name], path+"/properties/"+name); err != nil {
			return err
		}
	}
	if items, ok := obj["items"]; ok {
		if err := checkStrictNode(items, path+"/items"); err != nil {
			return err
		}
	}
	if anyOf, ok := obj["anyOf"].([]any); ok {
		for i, sub := range anyOf {
			if err := checkStrictNode(sub, fmt.Sprintf("%s/anyOf/%d", path, i)); err != nil {
				return err
			}
		}
	}
	defs, _ := obj["$defs"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		if err := checkStrictNode(defs[name], path+"/$defs/"+name); err != nil {
			return err
		}
	}
	return nil
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
		if !namePattern.MatchString(t.Function.Name) {
			return &badRequest{param: fmt.Sprintf("tools[%d].function.name", i),
				message: fmt.Sprintf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)}
		}
		if t.Function.Strict {
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
