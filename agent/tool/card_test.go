package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a card with a kind and one model tool.
type fake struct {
	K    string `json:"k"`
	Tool string `json:"tool,omitempty"`
}

func (f *fake) Kind() string { return f.K }
func (f *fake) Attach(context.Context, *tool.Owner) (tool.Capabilities, error) {
	return tool.Capabilities{Tools: []*llm.Tool{{Name: f.Tool}}}, nil
}

func init() { tool.Register("fake", func() tool.Card { return &fake{} }) }

// Cards round-trip through JSON by kind; unknown kinds are named.
func TestCardsJSON(t *testing.T) {
	in := tool.Cards{&fake{K: "x", Tool: "t"}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"kind":"x"`) {
		t.Fatalf("encoded %s", data)
	}
	data = []byte(strings.Replace(string(data), `"kind":"x"`, `"kind":"fake"`, 1))
	var out tool.Cards
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if f, ok := out[0].(*fake); !ok || f.Tool != "t" {
		t.Fatalf("decoded %#v", out[0])
	}
	if err := json.Unmarshal([]byte(`[{"kind":"nope"}]`), &out); err == nil || !strings.Contains(err.Error(), `"nope" is not registered`) {
		t.Fatalf("unknown kind: %v", err)
	}
	if _, err := json.Marshal(tool.Cards{nil}); err == nil {
		t.Fatal("nil card encoded")
	}
	if err := json.Unmarshal([]byte(`{}`), &out); err == nil {
		t.Fatal("non-array decoded")
	}
}

// A capability's channels are its defaults, none when disabled, or what it
// exposes; its instructions are appended to a description; registering a
// kind twice panics.
func TestCapability(t *testing.T) {
	def := tool.ToolCall | tool.Command
	if got := (tool.Capability{}).Channels(def); got != def {
		t.Fatalf("default %v", got)
	}
	if got := (tool.Capability{Disabled: true}).Channels(def); got != 0 || got.String() != "NONE" {
		t.Fatalf("disabled %v", got)
	}
	if got := (tool.Capability{Expose: tool.SystemPrompt}).Channels(def); got != tool.SystemPrompt {
		t.Fatalf("expose %v", got)
	}
	if def.String() != "TOOL_CALL|COMMAND" || def&tool.Command == 0 || def&tool.SystemPrompt != 0 {
		t.Fatalf("channel set %v", def)
	}
	if d := (tool.Capability{Instructions: "Be brief."}).Describe("Hire."); d != "Hire.\n\nAdditional Instructions:\nBe brief." {
		t.Fatalf("describe %q", d)
	}
	if d := (tool.Capability{}).Describe("Hire."); d != "Hire." {
		t.Fatalf("describe %q", d)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate Register did not panic")
		}
	}()
	tool.Register("fake", func() tool.Card { return &fake{} })
}

// A capability is true, false or an object; channels are names.
func TestCapabilityJSON(t *testing.T) {
	var caps struct {
		A tool.Capability `json:"a"`
		B tool.Capability `json:"b"`
		C tool.Capability `json:"c"`
	}
	err := json.Unmarshal([]byte(`{"a": true, "b": false, "c": {"expose": "TOOL_CALL|command", "instructions": "x"}}`), &caps)
	if err != nil {
		t.Fatal(err)
	}
	if caps.A.Disabled || !caps.B.Disabled || caps.C.Expose != tool.ToolCall|tool.Command || caps.C.Instructions != "x" {
		t.Fatalf("decoded %+v", caps)
	}
	data, _ := json.Marshal(caps.C)
	if string(data) != `{"expose":"TOOL_CALL|COMMAND","instructions":"x"}` {
		t.Fatalf("encoded %s", data)
	}
	var ch tool.Channel
	for in, want := range map[string]tool.Channel{`3`: tool.ToolCall | tool.SystemPrompt, `["COMMAND"]`: tool.Command, `"NONE"`: 0} {
		if err := json.Unmarshal([]byte(in), &ch); err != nil || ch != want {
			t.Fatalf("%s -> %v, %v", in, ch, err)
		}
	}
	if err := json.Unmarshal([]byte(`"SMOKE_SIGNAL"`), &ch); err == nil || !strings.Contains(err.Error(), "SMOKE_SIGNAL") {
		t.Fatalf("unknown channel: %v", err)
	}
	if err := json.Unmarshal([]byte(`{}`), &ch); err == nil {
		t.Fatal("object decoded as a channel")
	}
	var c tool.Capability
	if err := json.Unmarshal([]byte(`"yes"`), &c); err == nil {
		t.Fatal("string decoded as a capability")
	}
}
