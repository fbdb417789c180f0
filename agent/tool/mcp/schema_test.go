package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// Which MCP input schemas are sent strict, and how (the rule of
// toolSchema); the others are sent as the server wrote them.
func TestToolSchemaStrictness(t *testing.T) {
	var strict []json.RawMessage
	defer func() { acceptedAsStrict(t, strict) }()
	for _, tc := range []struct {
		name, in string
		strict   bool
		want     string // the wire schema when strict; why it is not, when not
	}{
		{"the SDK's inferred schema", `{"type":"object","properties":{"text":{"type":"string"},"upper":{"type":"boolean"}},"required":["text"],"additionalProperties":false}`,
			true, `{"additionalProperties":false,"properties":{"text":{"type":"string"},"upper":{"type":["boolean","null"]}},"required":["text","upper"],"type":"object"}`},
		{"no arguments", `{}`,
			true, `{"additionalProperties":false,"properties":{},"required":[],"type":"object"}`},
		{"properties without type, additionalProperties absent", `{"properties":{"q":{"type":"string","description":"query"}},"required":["q"]}`,
			true, `{"additionalProperties":false,"properties":{"q":{"description":"query","type":"string"}},"required":["q"],"type":"object"}`},
		{"an optional enum and an optional const", `{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]},"v":{"const":1}}}`,
			true, `{"additionalProperties":false,"properties":{"mode":{"anyOf":[{"enum":["a","b"],"type":"string"},{"type":"null"}]},"v":{"anyOf":[{"const":1},{"type":"null"}]}},"required":["mode","v"],"type":"object"}`},
		{"an optional union type", `{"type":"object","properties":{"x":{"type":["string","integer"]}}}`,
			true, `{"additionalProperties":false,"properties":{"x":{"type":["string","integer","null"]}},"required":["x"],"type":"object"}`},
		{"annotations dropped, a default folded", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"n":{"type":"integer","description":"how many","default":5,"examples":[1]}},"required":["n"]}`,
			true, `{"additionalProperties":false,"properties":{"n":{"description":"how many (default: 5)","type":"integer"}},"required":["n"],"type":"object"}`},
		{"nested objects and arrays", `{"type":"object","properties":{"o":{"type":"object","properties":{"y":{"type":"number"}}},"list":{"type":"array","items":{"type":"object","properties":{"p":{"type":"string"}},"required":["p"]}}},"required":["o","list"]}`,
			true, `{"additionalProperties":false,"properties":{"list":{"items":{"additionalProperties":false,"properties":{"p":{"type":"string"}},"required":["p"],"type":"object"},"type":"array"},"o":{"additionalProperties":false,"properties":{"y":{"type":["number","null"]}},"required":["y"],"type":"object"}},"required":["list","o"],"type":"object"}`},
		{"$defs and $ref with required properties", `{"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],"$defs":{"P":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}`,
			true, `{"$defs":{"P":{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}},"additionalProperties":false,"properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],"type":"object"}`},
		{"a nested object closed without properties", `{"type":"object","properties":{"meta":{"type":"object","additionalProperties":false}},"required":["meta"]}`,
			true, `{"additionalProperties":false,"properties":{"meta":{"additionalProperties":false,"properties":{},"required":[],"type":"object"}},"required":["meta"],"type":"object"}`},
		// Review: strict mode would narrow these (a free-form object to {})
		// or OpenAI refuses them (a schema without a type).
		{"a nested object without properties (free-form)", `{"type":"object","properties":{"meta":{"type":"object","description":"any keys"}},"required":["meta"]}`,
			false, `#/properties/meta: an object without properties (free-form keys)`},
		{"a nested object with empty properties (free-form)", `{"type":"object","properties":{"meta":{"type":"object","properties":{}}},"required":["meta"]}`,
			false, `#/properties/meta: an object without properties (free-form keys)`},
		{"free-form objects in items", `{"type":"object","properties":{"rows":{"type":"array","items":{"type":"object"}}},"required":["rows"]}`,
			false, `#/properties/rows/items: an object without properties (free-form keys)`},
		{"a free-form object in anyOf", `{"type":"object","properties":{"v":{"anyOf":[{"type":"object"},{"type":"null"}]}},"required":["v"]}`,
			false, `#/properties/v/anyOf/0: an object without properties (free-form keys)`},
		{"a property without a type", `{"type":"object","properties":{"v":{}},"required":["v"]}`,
			false, `#/properties/v: no type (any value)`},
		{"an optional property with only a description", `{"type":"object","properties":{"v":{"description":"anything"}}}`,
			false, `#/properties/v: no type (any value)`},
		{"items without a type", `{"type":"object","properties":{"l":{"type":"array","items":{"title":"x"}}},"required":["l"]}`,
			false, `#/properties/l/items: no type (any value)`},
		{"a $defs entry without a type", `{"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],"$defs":{"P":{"description":"any"}}}`,
			false, `#/$defs/P: no type (any value)`},
		{"minimum", `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`,
			false, `#/properties/n: keyword "minimum" is not accepted in strict mode`},
		{"oneOf", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			false, `#/properties/v: keyword "oneOf" is not accepted in strict mode`},
		{"pattern, no type at the root (added)", `{"properties":{"id":{"type":"string","pattern":"^[a-z]+$"}}}`,
			false, `#/properties/id: keyword "pattern" is not accepted in strict mode`},
		{"free-form keys", `{"type":"object","additionalProperties":true}`,
			false, `#: additionalProperties is true (free-form keys)`},
		{"a map", `{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}}`,
			false, `#/properties/tags: additionalProperties is a schema (a map)`},
		{"an optional property inside anyOf", `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"null"}]}},"required":["v"]}`,
			false, `#/properties/v/anyOf/0: optional property "a" inside anyOf or $defs`},
		{"tuple items", `{"type":"object","properties":{"pt":{"type":"array","items":[{"type":"number"},{"type":"number"}]}},"required":["pt"]}`,
			false, `#/properties/pt/items: not a schema object (a boolean schema or a list)`},
		{"a root that is not an object", `{"type":"string"}`,
			false, `#: the root is not an object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in any
			if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
				t.Fatal(err)
			}
			s, err := toolSchema(in)
			if err != nil {
				t.Fatal(err)
			}
			if s.strict != tc.strict {
				t.Fatalf("strict %v (%s), want %v", s.strict, s.why, tc.strict)
			}
			if tc.strict {
				strict = append(strict, s.wire)
				if string(s.wire) != tc.want {
					t.Fatalf("wire\n%s\nwant\n%s", s.wire, tc.want)
				}
				return
			}
			if s.why != tc.want {
				t.Errorf("why %q, want %q", s.why, tc.want)
			}
			var written map[string]any
			_ = json.Unmarshal([]byte(tc.in), &written)
			if _, typed := written["type"]; !typed {
				written["type"] = "object"
			}
			if want, _ := json.Marshal(written); !jsonEqual(t, s.wire, want) {
				t.Errorf("a non-strict schema is not sent as written: %s", s.wire)
			}
		})
	}
	if _, err := toolSchema("not a schema"); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("a string schema: %v", err)
	}
}

// acceptedAsStrict sends the schemas as strict tools to llmtest's
// server, which refuses a request with a schema OpenAI's strict mode
// would refuse (400).
func acceptedAsStrict(t *testing.T, schemas []json.RawMessage) {
	t.Helper()
	if len(schemas) == 0 {
		t.Fatal("no strict schema")
	}
	srv := llmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Model("").Enqueue(llmtest.Final("done"))
	type function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
		Strict     bool            `json:"strict"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	req := map[string]any{"model": "gpt-4.1", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	var tools []tool
	for i, sch := range schemas {
		tools = append(tools, tool{Type: "function", Function: function{Name: fmt.Sprintf("t%d", i), Parameters: sch, Strict: true}})
	}
	req["tools"] = tools
	body, _ := json.Marshal(req)
	resp, err := srv.HTTPClient().Post(srv.URL()+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("llmtest refused the strict schemas: %d %s", resp.StatusCode, b)
	}
}

// The nulls the model sends for properties made nullable are
// dropped, at any depth along properties and items; others stay.
func TestArgumentsDropNulls(t *testing.T) {
	var in any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{
		"a":{"type":"string"}, "b":{"type":["string","null"]},
		"o":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"number"}},"required":["y"]},
		"list":{"type":"array","items":{"type":"object","properties":{"p":{"type":"string"}}}}},
		"required":["b","o","list"]}`), &in)
	s, err := toolSchema(in)
	if err != nil || !s.strict {
		t.Fatalf("%v %s", err, s.why)
	}
	out, err := s.arguments(json.RawMessage(`{"a":null,"b":null,"o":{"x":null,"y":12345678901234567890},"list":[{"p":null},{"p":"q"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":null,"list":[{},{"p":"q"}],"o":{"y":12345678901234567890}}`; string(out) != want {
		t.Fatalf("arguments %s, want %s", out, want)
	}
	for _, bad := range []string{`[1]`, `{"a":`} {
		if _, err := s.arguments(json.RawMessage(bad)); err == nil {
			t.Errorf("arguments %s: no error", bad)
		}
	}
}

// toolSchema takes any JSON without panicking; what it sends is
// JSON; a strict schema is its own strict form (the rule is idempotent);
// and arguments of any shape are handled.
func FuzzToolSchema(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"type":"object","properties":{"a":{"type":"string"}}}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"enum":["a"]}}},"l":{"type":"array","items":{"type":"object","properties":{"p":{}}}}}}`,
		`{"anyOf":[{"type":"object"}],"$defs":{"A":true}}`, `{"type":["object","null"],"properties":{"a":false}}`,
		`{"properties":{"a":{"default":{"x":[1]}}},"required":[1]}`, `[]`, `"x"`, `null`,
	} {
		f.Add(seed, `{"a":null,"o":{"x":null},"l":[{"p":null}]}`)
	}
	f.Fuzz(func(t *testing.T, schemaJSON, args string) {
		var in any
		if json.Unmarshal([]byte(schemaJSON), &in) != nil {
			return
		}
		s, err := toolSchema(in)
		if err != nil {
			return
		}
		if !json.Valid(s.wire) {
			t.Fatalf("wire is not JSON: %s", s.wire)
		}
		if s.strict {
			var again any
			if err := json.Unmarshal(s.wire, &again); err != nil {
				t.Fatal(err)
			}
			s2, err := toolSchema(again)
			if err != nil || !s2.strict || string(s2.wire) != string(s.wire) {
				t.Fatalf("not idempotent:\n%s\n%s (%v, %s)", s.wire, s2.wire, err, s2.why)
			}
		}
		// The runner passes on only valid JSON arguments.
		if !json.Valid([]byte(args)) {
			return
		}
		if out, err := s.arguments(json.RawMessage(args)); err == nil && !json.Valid(out) {
			t.Fatalf("arguments are not JSON: %s", out)
		}
	})
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
