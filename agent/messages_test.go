package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
)

// The prompt prefix: its article, the intent's protocol and the sender's
// name ("unknown" for none), table-tested.
func TestPrefixNamesIntentAndSender(t *testing.T) {
	from := message.NewSnapshotAddress(message.Identity{AgentID: uuid.New(), Name: "@Manager", Role: "Manager"})
	cases := []struct {
		intent agent.Intent
		sender *message.Address
		want   string
	}{
		{agent.Request, from, "You received a request from @Manager. Carry out the task, then respond to @Manager. You may also delegate to others.\n\nbody"},
		{agent.Instruction, from, "You received an instruction from @Manager. Carry out the task, then acknowledge to @Manager if requested.\n\nbody"},
		{agent.Acknowledgment, from, "You received an acknowledgment from @Manager. No further action needed.\n\nbody"},
		{agent.Response, from, "You received a response from @Manager. Analyse the response, then continue or end the exchange.\n\nbody"},
		{agent.Notification, nil, "You received a notification from unknown. Informational message. No reply is expected.\n\nbody"},
	}
	for _, c := range cases {
		m := &agent.AgentMessage{Type: c.intent, Content: "body"}
		m.Sender = c.sender
		if got := agent.Prefix(m); got != c.want {
			t.Errorf("%s: %q\nwant %q", c.intent, got, c.want)
		}
	}
	if agent.Prefix(nil) != "" {
		t.Fatal("a prefix for no message")
	}
	if agent.Protocol("shout", "x") != "" {
		t.Fatal("a protocol for an unknown intent")
	}
}

// Intents are validated at decoding (and by Say); the default is request;
// the type survives a round trip.
func TestAgentMessageIntentIsValidatedAndDefaultsToRequest(t *testing.T) {
	for _, i := range []agent.Intent{agent.Request, agent.Response, agent.Instruction, agent.Notification, agent.Acknowledgment} {
		if !i.Valid() {
			t.Fatalf("intent %q invalid", i)
		}
	}
	if agent.Intent("shout").Valid() || agent.Intent("").Valid() {
		t.Fatal("an unknown intent is valid")
	}
	m := &agent.AgentMessage{Type: agent.Acknowledgment, Content: "ok"}
	data, err := message.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := message.UnmarshalMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	if b := back.(*agent.AgentMessage); b.Type != agent.Acknowledgment || b.Content != "ok" {
		t.Fatalf("round trip %+v", b)
	}
	var bad agent.AgentMessage
	if err := json.Unmarshal([]byte(`{"type":"shout","content":"x"}`), &bad); err == nil {
		t.Fatal("unknown intent decoded")
	}
	var def agent.AgentMessage
	if err := json.Unmarshal([]byte(`{"content":"x"}`), &def); err != nil || def.Type != agent.Request {
		t.Fatalf("missing intent: %v %v", def.Type, err)
	}
}

// The backstory template fills {key} from Params, keeps {{ }} as literal
// braces and names a missing parameter.
func TestPromptTemplateRenders(t *testing.T) {
	p := agent.PromptTemplate{Template: "You are {name}, {{literal}}.", Params: map[string]string{"name": "@Ada"}}
	if s, err := p.Render(); err != nil || s != "You are @Ada, {literal}." {
		t.Fatalf("render %q %v", s, err)
	}
	if _, err := (agent.PromptTemplate{Template: "Hi {who}"}).Render(); err == nil || !strings.Contains(err.Error(), "{who}") {
		t.Fatalf("missing param: %v", err)
	}
	if _, err := (agent.PromptTemplate{Template: "Hi {who"}).Render(); err == nil {
		t.Fatal("unclosed brace accepted")
	}
	if s, _ := (agent.PromptTemplate{}).Render(); s != agent.DefaultPrompt {
		t.Fatalf("default %q", s)
	}
}

// Config validation names what is wrong.
func TestConfigValidateNamesWhatIsWrong(t *testing.T) {
	cfg := agent.NewConfig("@A", "A")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Prompt.Template = "{x}"
	cfg.Runtime.Retries = -1
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "{x}") || !strings.Contains(strings.ToLower(err.Error()), "retries") {
		t.Fatalf("validate: %v", err)
	}
}

// FuzzAgentMessage: decoding any bytes never panics, and what decodes has
// a valid intent.
func FuzzAgentMessage(f *testing.F) {
	f.Add([]byte(`{"type":"request","content":"hi"}`))
	f.Add([]byte(`{"__model__":"AgentMessage","type":"response","content":""}`))
	f.Add([]byte(`{"type":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m agent.AgentMessage
		if err := json.Unmarshal(data, &m); err == nil && !m.Type.Valid() {
			t.Fatalf("decoded an invalid intent %q", m.Type)
		}
		if v, err := message.UnmarshalMessage(data); err == nil {
			if am, ok := v.(*agent.AgentMessage); ok && !am.Type.Valid() {
				t.Fatalf("codec decoded an invalid intent %q", am.Type)
			}
		}
	})
}

// Say refuses what it cannot send.
func TestSayRefuses(t *testing.T) {
	if err := agent.Say(t.Context(), nil, nil, nil); err == nil {
		t.Fatal("Say(nil) accepted")
	}
	if err := agent.Say(t.Context(), nil, nil, &agent.AgentMessage{Type: "shout"}); err == nil || !strings.Contains(err.Error(), "shout") {
		t.Fatalf("bad intent: %v", err)
	}
}
