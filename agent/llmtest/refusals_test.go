package llmtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// send posts body to srv and returns the status and the decoded answer.
func send(t *testing.T, srv *llmtest.Server, body string) (int, map[string]json.RawMessage) {
	t.Helper()
	resp, err := srv.HTTPClient().Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("answer %s: %v", b, err)
	}
	return resp.StatusCode, out
}

// strictTool is a request declaring one strict function tool with params.
func strictTool(params string) string {
	return `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":` + params + `}}]}`
}

// nested returns an object schema with depth levels of nested objects.
func nested(depth int) string {
	s := `{"type":"object","properties":{},"required":[],"additionalProperties":false}`
	for range depth - 1 {
		s = `{"type":"object","properties":{"a":` + s + `},"required":["a"],"additionalProperties":false}`
	}
	return s
}

const userJSON = `{"role":"user","content":"Answer in JSON."}`

// callMsg is an assistant message calling f, with the given function body.
func callMsg(function string) string {
	return `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":` + function + `}]}`
}

// The fake refuses what OpenAI's API refuses, with its status, error
// shape and, where the API's is known, its wording: unknown roles and
// parameters, messages missing what their role requires, values out of
// range or outside an enumeration, tool_choice without tools, too many
// tools, a json_object format without "json" in the messages, and strict
// schemas the structured-output rules refuse.
func TestRefusesWhatOpenAIRefuses(t *testing.T) {
	many := make([]string, 129)
	for i := range many {
		many[i] = fmt.Sprintf(`{"type":"function","function":{"name":"f%d"}}`, i)
	}
	enum := make([]string, 1001)
	for i := range enum {
		enum[i] = fmt.Sprintf(`"v%d"`, i)
	}
	for name, c := range map[string]struct{ body, param, message string }{
		"unknown role": {`{"model":"m","messages":[{"role":"wizard","content":"hi"}]}`, "messages[0].role",
			"Invalid value: 'wizard'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."},
		"user without content": {`{"model":"m","messages":[{"role":"user"}]}`, "messages[0].content",
			"Missing required parameter: 'messages[0].content'."},
		"tool without content": {`{"model":"m","messages":[` + userJSON + `,` + callMsg(`{"name":"f","arguments":"{}"}`) + `,{"role":"tool","tool_call_id":"call_1"}]}`,
			"messages[2].content", "Missing required parameter: 'messages[2].content'."},
		"tool call without arguments": {`{"model":"m","messages":[` + userJSON + `,` + callMsg(`{"name":"f"}`) + `,{"role":"tool","tool_call_id":"call_1","content":""}]}`,
			"messages[1].tool_calls[0].function.arguments", "Missing required parameter: 'messages[1].tool_calls[0].function.arguments'."},
		"bare assistant": {`{"model":"m","messages":[` + userJSON + `,{"role":"assistant"},` + userJSON + `]}`, "messages[1].content",
			"Missing required parameter: 'messages[1].content'."},
		"temperature 3": {`{"model":"m","messages":[` + userJSON + `],"temperature":3}`, "temperature",
			"Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead."},
		"unknown reasoning effort": {`{"model":"gpt-5","messages":[` + userJSON + `],"reasoning_effort":"extreme"}`, "reasoning_effort",
			"Invalid value: 'extreme'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', and 'max'."},
		"unknown field": {`{"model":"m","messages":[` + userJSON + `],"foo":1}`, "", "Unrecognized request argument supplied: foo"},
		"tool_choice without tools": {`{"model":"m","messages":[` + userJSON + `],"tool_choice":"auto"}`, "tool_choice",
			"Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."},
		"129 tools": {`{"model":"m","messages":[` + userJSON + `],"tools":[` + strings.Join(many, ",") + `]}`, "tools",
			"Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 129 instead."},
		"unknown format type": {`{"model":"m","messages":[` + userJSON + `],"response_format":{"type":"xml"}}`, "response_format.type",
			"Invalid value: 'xml'. Supported values are: 'json_schema', 'json_object', and 'text'."},
		"json_object without json": {`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`, "messages",
			"'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."},
		"n 0": {`{"model":"m","messages":[` + userJSON + `],"n":0}`, "n",
			"Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead."},
		"n 129": {`{"model":"m","messages":[` + userJSON + `],"n":129}`, "n",
			"Invalid 'n': integer above maximum value. Expected a value <= 128, but got 129 instead."},
		"strict root not an object": {strictTool(`{"type":"array","items":{"type":"string"}}`), "tools[0].function.parameters",
			`schema must be a JSON Schema of 'type: "object"', got 'type: "array"'`},
		"strict required names a missing property": {strictTool(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"],"additionalProperties":false}`),
			"tools[0].function.parameters", "Extra required key 'b' supplied"},
		"strict dangling ref": {strictTool(`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}},"required":["a"],"additionalProperties":false}`),
			"tools[0].function.parameters", "reference to component '#/$defs/missing' which was not found in the schema"},
		"strict nesting over 10": {strictTool(nested(11)), "tools[0].function.parameters", "at most 10 are permitted"},
		"strict over 1000 enum values": {strictTool(`{"type":"object","properties":{"a":{"type":"string","enum":[` + strings.Join(enum, ",") + `]}},"required":["a"],"additionalProperties":false}`),
			"tools[0].function.parameters", "1001 enum values in all"},
		"strict unknown format": {strictTool(`{"type":"object","properties":{"a":{"type":"string","format":"color"}},"required":["a"],"additionalProperties":false}`),
			"tools[0].function.parameters", "format 'color' is not supported"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.NewServer()
			t.Cleanup(srv.Close)
			status, out := send(t, srv, c.body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(mustMarshal(t, out), &e); err != nil || status != http.StatusBadRequest || e.Error.Type != "invalid_request_error" {
				t.Fatalf("status %d, answer %v: want a 400 invalid_request_error", status, out)
			}
			if !strings.Contains(e.Error.Message, c.message) {
				t.Errorf("message %q, want %q", e.Error.Message, c.message)
			}
			if got := deref(e.Error.Param); got != c.param {
				t.Errorf("param %q, want %q", got, c.param)
			}
		})
	}
}

// And it accepts what OpenAI accepts: empty contents, the boundaries of
// the ranges, the constraints strict schemas support (pattern, format,
// minimum and maximum, multipleOf, minItems and maxItems), a strict tool
// without parameters, custom tools; n choices are answered with n.
func TestAcceptsWhatOpenAIAccepts(t *testing.T) {
	constrained := `{"type":"object","properties":{` +
		`"s":{"type":"string","pattern":"^[a-z]+$","format":"email"},` +
		`"n":{"type":"number","minimum":0,"maximum":10,"exclusiveMinimum":-1,"exclusiveMaximum":11,"multipleOf":0.5},` +
		`"l":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3},` +
		`"r":{"$ref":"#/$defs/r"}},` +
		`"required":["s","n","l","r"],"additionalProperties":false,` +
		`"$defs":{"r":{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["x"],"additionalProperties":false}}}`
	for name, body := range map[string]string{
		"empty tool result and answer": `{"model":"m","messages":[` + userJSON + `,` + callMsg(`{"name":"f","arguments":"{}"}`) +
			`,{"role":"tool","tool_call_id":"call_1","content":""},{"role":"assistant","content":""},` + userJSON + `]}`,
		"temperature 0 and 2":       `{"model":"m","messages":[` + userJSON + `],"temperature":2,"top_p":0}`,
		"strict constraints":        strictTool(constrained),
		"strict nesting of 10":      strictTool(nested(10)),
		"strict without parameters": `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","strict":true}}]}`,
		"custom tool": `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"custom","custom":{"name":"grep","description":"search",` +
			`"format":{"type":"text"}}}],"tool_choice":"auto"}`,
		"developer message": `{"model":"m","messages":[{"role":"developer","content":"Be brief."},` + userJSON + `]}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.NewServer()
			t.Cleanup(srv.Close)
			if status, out := send(t, srv, body); status != http.StatusOK {
				t.Fatalf("status %d: %s", status, mustMarshal(t, out))
			}
		})
	}
	srv := llmtest.NewServer()
	t.Cleanup(srv.Close)
	status, out := send(t, srv, `{"model":"m","messages":[`+userJSON+`],"n":3}`)
	var choices []struct {
		Index int `json:"index"`
	}
	if err := json.Unmarshal(out["choices"], &choices); err != nil || status != http.StatusOK || len(choices) != 3 || choices[2].Index != 2 {
		t.Fatalf("n 3: status %d, choices %s", status, out["choices"])
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
