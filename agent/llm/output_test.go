package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// The parser's verdicts, each naming what is wrong.
func TestOutputParse(t *testing.T) {
	type Inner struct {
		N     int     `json:"n"`
		F     float64 `json:"f"`
		B     bool    `json:"b"`
		Items []Inner `json:"items"`
	}
	type Doc struct {
		Name  string `json:"name" enum:"a,b"`
		Inner Inner  `json:"inner"`
	}
	out, err := llm.NewOutput[Doc]("Doc")
	if err != nil {
		t.Fatal(err)
	}
	if out.Name() != "Doc" || out.Schema() == nil {
		t.Fatal("accessors")
	}
	good := `{"name":"a","inner":{"n":1,"f":1.5,"b":true,"items":[{"n":2,"f":0,"b":false,"items":[]}]}}`
	if d, err := out.Parse(good); err != nil || d.Inner.Items[0].N != 2 {
		t.Fatalf("%+v %v", d, err)
	}
	for content, want := range map[string]string{
		`{"name":"c","inner":{"n":1,"f":1,"b":true,"items":[]}}`:   `"c" is not one of a, b`,
		`{"name":"a","inner":{"n":1.5,"f":1,"b":true,"items":[]}}`: "$.inner.n: expected an integer, got the number 1.5",
		`{"name":"a","inner":{"n":1,"f":"x","b":true,"items":[]}}`: "$.inner.f: expected a number",
		`{"name":"a","inner":{"n":1,"f":1,"b":"yes","items":[]}}`:  "$.inner.b: expected true or false",
		`{"name":"a","inner":{"n":1,"f":1,"b":true,"items":[7]}}`:  "$.inner.items[0]: expected an object, got the number 7",
		`{"name":null,"inner":{"n":1,"f":1,"b":true,"items":[]}}`:  "$.name: expected a string, got null",
		`{"inner":{"n":1,"f":1,"b":true,"items":null}}`:            `missing required property "name"`,
		`[]`:  "expected an object, got an array",
		`   `: "empty",
		`{"name":"a","inner":{"n":1,"f":1,"b":true,"items":[]}} x`:                  "after the JSON value",
		`{"name":"a","inner":{"n":99999999999999999999,"f":1,"b":true,"items":[]}}`: "expected an integer",
	} {
		_, err := out.Parse(content)
		var inv *llm.InvalidOutputError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", content, err, want)
		}
	}
}

// NewOutput refuses types strict mode cannot take, and bad names.
func TestNewOutputRejects(t *testing.T) {
	type Optional struct {
		A string `json:"a,omitempty"`
	}
	type WithMap struct {
		M map[string]string `json:"m"`
	}
	type Nullable struct {
		A string `json:"a" nullable:"true"`
	}
	if _, err := llm.NewOutput[Optional]("X"); err == nil || !strings.Contains(err.Error(), "omitempty") {
		t.Errorf("omitempty: %v", err)
	}
	if _, err := llm.NewOutput[WithMap]("X"); err == nil {
		t.Error("map accepted")
	}
	if _, err := llm.NewOutput[Nullable]("X"); err == nil || !strings.Contains(err.Error(), "nullable") {
		t.Errorf("nullable: %v", err)
	}
	if _, err := llm.NewOutput[string]("X"); err == nil {
		t.Error("string accepted")
	}
	if _, err := llm.NewOutput[any]("X"); err == nil {
		t.Error("interface accepted")
	}
	if _, err := llm.NewOutput[StructuredOutput]("bad name"); err == nil {
		t.Error("bad name accepted")
	}
	if o, err := llm.NewOutput[*StructuredOutput]("P"); err != nil {
		t.Errorf("pointer to struct: %v", err)
	} else if v, err := o.Parse(`{"messages":[]}`); err != nil || v == nil {
		t.Errorf("pointer parse: %v", err)
	}
}

// NewTool: optional fields make a non-strict tool; bad declarations fail.
func TestNewToolDeclarations(t *testing.T) {
	type Opt struct {
		A string `json:"a"`
		B string `json:"b,omitempty"`
	}
	tool, err := llm.NewTool("opt", "d", func(_ context.Context, a Opt) (any, error) { return a.A + a.B, nil })
	if err != nil || tool.Strict {
		t.Fatalf("tool %+v %v", tool, err)
	}
	if res, err := tool.Call(t.Context(), []byte(`{"a":"x"}`)); err != nil || res != "x" {
		t.Fatalf("%v %v", res, err)
	}
	if _, err := llm.NewTool("bad name", "d", func(context.Context, Opt) (any, error) { return nil, nil }); err == nil {
		t.Error("bad name accepted")
	}
	if _, err := llm.NewTool[Opt]("x", "d", nil); err == nil {
		t.Error("nil fn accepted")
	}
	if _, err := llm.NewTool("x", "d", func(context.Context, int) (any, error) { return nil, nil }); err == nil {
		t.Error("non-struct args accepted")
	}
	var re *llm.RetryError
	if err := llm.Retry("x %d", 1); !errors.As(err, &re) || re.Error() != "x 1" {
		t.Fatal("Retry")
	}
}

// FuzzParseOutput: the structured-output parser never panics, and whatever
// it accepts re-validates and matches the schema's shape.
func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{finalPlan, `{"messages":[]}`, "not json", "", `{"messages":[{"message_type":"x"}]}`,
		`{"messages":null}`, `{"messages":[{"message_type":"response","message":"m","recipient":"r","x":1}]}`, `[1,2`, `{"messages":[]} {}`} {
		f.Add(s)
	}
	out, err := llm.NewOutput[StructuredOutput]("StructuredOutput")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content string) {
		v, err := out.Parse(content)
		if err != nil {
			var inv *llm.InvalidOutputError
			if !errors.As(err, &inv) || inv.Reason == "" {
				t.Fatalf("error is not an InvalidOutputError: %T %v", err, err)
			}
			return
		}
		if v.Messages == nil {
			t.Fatalf("accepted %q without a messages array", content)
		}
		for _, m := range v.Messages {
			switch m.MessageType {
			case "request", "response", "notification", "instruction", "acknowledgment":
			default:
				t.Fatalf("accepted message_type %q", m.MessageType)
			}
			if m.Message == "" {
				t.Fatalf("accepted an empty message (validate:required)")
			}
		}
	})
}
