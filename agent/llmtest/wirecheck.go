package llmtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// requestFields are the request parameters the API knows: the properties
// of CreateChatCompletionRequest in OpenAI's OpenAPI document (a test
// keeps the two equal). Any other is refused, as the API does.
var requestFields = setOf("audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
	"max_completion_tokens", "max_tokens", "messages", "metadata", "modalities", "model", "moderation", "n",
	"parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_options",
	"prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier",
	"stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p",
	"user", "verbosity", "web_search_options")

// The enumerations of the document the checks below use.
var (
	roles            = []string{"system", "assistant", "user", "function", "tool", "developer"}
	reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}
	formatTypes      = []string{"json_schema", "json_object", "text"}
	toolTypes        = []string{"function", "custom"}
)

// maxTools is the most tools a request may declare.
const maxTools = 128

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// wireMsg is a request message with the presence of its fields kept.
type wireMsg struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Refusal      json.RawMessage `json:"refusal"`
	FunctionCall json.RawMessage `json:"function_call"`
	ToolCallID   *string         `json:"tool_call_id"`
	ToolCalls    []struct {
		ID       *string                    `json:"id"`
		Type     string                     `json:"type"`
		Function map[string]json.RawMessage `json:"function"`
		Custom   map[string]json.RawMessage `json:"custom"`
	} `json:"tool_calls"`
}

// present says a field was sent with a value other than null.
func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// checkShape applies the document's rules that the decoded Request cannot
// see (unknown parameters, missing fields, ranges, enumerations) and the
// API's own about them, with its error wording.
func checkShape(body []byte, r *Request) *badRequest {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return &badRequest{message: "We could not parse the JSON body of your request. (" + err.Error() + ")"}
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !requestFields[k] {
			return &badRequest{message: "Unrecognized request argument supplied: " + k}
		}
	}
	var msgs []wireMsg
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		return &badRequest{param: "messages", message: "Invalid type for 'messages': expected an array of objects."}
	}
	for i, m := range msgs {
		if b := checkMessage(i, m); b != nil {
			return b
		}
	}
	for _, rg := range []struct {
		name     string
		min, max float64
	}{{"temperature", 0, 2}, {"top_p", 0, 1}, {"frequency_penalty", -2, 2}, {"presence_penalty", -2, 2}} {
		if b := checkRange(top, rg.name, rg.min, rg.max, "decimal"); b != nil {
			return b
		}
	}
	if b := checkRange(top, "n", 1, maxTools, "integer"); b != nil {
		return b
	}
	if r.ReasoningEffort != "" && !slices.Contains(reasoningEfforts, r.ReasoningEffort) {
		return invalidValue("reasoning_effort", r.ReasoningEffort, reasoningEfforts)
	}
	if present(r.ToolChoice) && len(r.Tools) == 0 {
		return &badRequest{param: "tool_choice",
			message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."}
	}
	if len(r.Tools) > maxTools {
		return &badRequest{code: "array_above_max_length", param: "tools", message: fmt.Sprintf(
			"Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxTools, len(r.Tools))}
	}
	for i, t := range r.Tools {
		if !slices.Contains(toolTypes, t.Type) {
			return invalidValue(fmt.Sprintf("tools[%d].type", i), t.Type, toolTypes)
		}
	}
	return checkFormatType(r)
}

// checkMessage checks message i: its role, and the fields its role
// requires.
func checkMessage(i int, m wireMsg) *badRequest {
	at := func(field string) string { return fmt.Sprintf("messages[%d].%s", i, field) }
	if !slices.Contains(roles, m.Role) {
		return invalidValue(at("role"), m.Role, roles)
	}
	switch m.Role {
	case "assistant":
		if !present(m.Content) && len(m.ToolCalls) == 0 && !present(m.FunctionCall) && !present(m.Refusal) {
			return missing(at("content"))
		}
	default:
		if !present(m.Content) {
			return missing(at("content"))
		}
	}
	if m.Role == "tool" && m.ToolCallID == nil {
		return missing(at("tool_call_id"))
	}
	for j, c := range m.ToolCalls {
		call := func(field string) string { return at(fmt.Sprintf("tool_calls[%d].%s", j, field)) }
		switch {
		case c.ID == nil:
			return missing(call("id"))
		case c.Type == "function" && !present(c.Function["name"]):
			return missing(call("function.name"))
		case c.Type == "function" && !present(c.Function["arguments"]):
			return missing(call("function.arguments"))
		case c.Type == "custom" && !present(c.Custom["input"]):
			return missing(call("custom.input"))
		case c.Type != "function" && c.Type != "custom":
			return invalidValue(call("type"), c.Type, toolTypes)
		}
	}
	return nil
}

// checkRange checks that the number top[name], when sent, is in [min, max]
// (and, for kind "integer", whole).
func checkRange(top map[string]json.RawMessage, name string, min, max float64, kind string) *badRequest {
	raw, ok := top[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return &badRequest{code: "invalid_type", param: name,
			message: fmt.Sprintf("Invalid type for '%s': expected a %s, but got %s instead.", name, kind, string(raw))}
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case v > max:
		return &badRequest{code: kind + "_above_max_value", param: name, message: fmt.Sprintf(
			"Invalid '%s': %s above maximum value. Expected a value <= %s, but got %s instead.", name, kind, num(max), num(v))}
	case v < min:
		return &badRequest{code: kind + "_below_min_value", param: name, message: fmt.Sprintf(
			"Invalid '%s': %s below minimum value. Expected a value >= %s, but got %s instead.", name, kind, num(min), num(v))}
	case kind == "integer" && v != float64(int64(v)):
		return &badRequest{code: "invalid_type", param: name,
			message: fmt.Sprintf("Invalid type for '%s': expected an integer, but got a decimal number instead.", name)}
	}
	return nil
}

// checkFormatType checks response_format's type, and that a json_object
// format comes with the word "json" in a message, as the API requires.
func checkFormatType(r *Request) *badRequest {
	if !present(r.ResponseFormat) {
		return nil
	}
	var rf struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(r.ResponseFormat, &rf); err != nil {
		return &badRequest{param: "response_format", message: "Invalid 'response_format': " + err.Error()}
	}
	if !slices.Contains(formatTypes, rf.Type) {
		return invalidValue("response_format.type", rf.Type, formatTypes)
	}
	if rf.Type != "json_object" {
		return nil
	}
	for _, m := range r.Messages {
		if strings.Contains(strings.ToLower(m.Text()), "json") {
			return nil
		}
	}
	return &badRequest{param: "messages",
		message: "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."}
}

// missing is the API's answer to a required field left out.
func missing(param string) *badRequest {
	return &badRequest{code: "missing_required_parameter", param: param,
		message: fmt.Sprintf("Missing required parameter: '%s'.", param)}
}

// invalidValue is the API's answer to a value outside an enumeration:
// "Invalid value: 'x'. Supported values are: 'a', 'b', and 'c'."
func invalidValue(param, got string, supported []string) *badRequest {
	quoted := make([]string, len(supported))
	for i, s := range supported {
		quoted[i] = "'" + s + "'"
	}
	list := strings.Join(quoted, " and ")
	if len(quoted) > 2 {
		list = strings.Join(quoted[:len(quoted)-1], ", ") + ", and " + quoted[len(quoted)-1]
	}
	return &badRequest{code: "invalid_value", param: param,
		message: fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", got, list)}
}
