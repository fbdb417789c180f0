package studio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/message"
)

// A member's join carries a summary of its config for the member panel:
// the model, the endpoint's host, the window, the tools, the backstory and
// the limits set; never a key, nor a credential or a query in the
// endpoint's URL. The same summary comes from a live config and from its
// JSON (a restored team).
func TestMemberInfoNeverHoldsAKey(t *testing.T) {
	f := newFixture(t, Options{}, false)
	cfg := agent.NewConfig("@Dev", "Developer")
	cfg.Model.Model, cfg.Model.Provider = "gpt-4.1", "openai-compatible"
	cfg.Model.BaseURL = "https://user:hunter2@llm.example:8443/v1?api-key=qwerty"
	cfg.Model.APIKey, cfg.Model.APIKeyEnv = "sk-secret-123", "DEV_KEY"
	cfg.Model.ContextLength = 128000
	cfg.Tools = tool.Cards{planning.New()}
	ten := 10
	cfg.RunLimits.RequestLimit = &ten
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []any{cfg, json.RawMessage(raw)} {
		ev, ok := render(&message.StartMessage{Base: message.Base{Sender: f.manager}, Config: c})
		if !ok || ev.Info == nil {
			t.Fatalf("%T: no member info: %+v", c, ev)
		}
		got, _ := json.Marshal(ev)
		for _, secret := range []string{"sk-secret-123", "hunter2", "qwerty", "user:", "DEV_KEY"} {
			if strings.Contains(string(got), secret) {
				t.Errorf("%T: the join event holds %q: %s", c, secret, got)
			}
		}
		i := ev.Info
		if i.Model != "gpt-4.1" || i.Where != "openai-compatible at llm.example:8443" || i.Window != 128000 ||
			len(i.Tools) != 1 || i.Tools[0] != "PlanningTool" || !strings.Contains(strings.Join(i.Limits, ","), "run_request_limit 10") {
			t.Errorf("%T: member info %+v", c, i)
		}
	}
	if ev, _ := render(&message.StartMessage{Base: message.Base{Sender: f.human}, Config: map[string]any{"name": "@Human"}}); ev.Info != nil {
		t.Errorf("a person's join has member info: %+v", ev.Info)
	}
}
