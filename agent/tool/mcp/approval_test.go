package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/mcp"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// An MCP tool marked on the team's guards, by its <server>_<tool> name
// and a predicate on its arguments: the call that matches waits for the
// person, runs once approved; the one that does not runs at once.
func TestMCPToolWaitsForApproval(t *testing.T) {
	s, _, _ := httpServer(t, "s", nil)
	srv := llmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Model("@Assistant").Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "s_echo", `{"text": "quiet", "upper": false}`)),
		llmtest.ToolCalls(llmtest.Call("c2", "s_echo", `{"text": "loud", "upper": true}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"echoed"}]}`),
	)
	_, _, root := actortest.Team(t)
	team := orchestrator.Of(root)
	ctx := actortest.Context(t)
	inbox := make(chan *agent.AgentMessage, 2)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { inbox <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	upper := func(args json.RawMessage) bool {
		var a struct {
			Upper bool `json:"upper"`
		}
		return json.Unmarshal(args, &a) == nil && a.Upper
	}
	env := &agent.Env{HTTPClient: srv.HTTPClient(), Guards: &agent.Guards{Approval: &tool.Approval{
		When: map[string]func(json.RawMessage) bool{"s_echo": upper}}}}
	cfg := agent.NewConfig("@Assistant", "Assistant")
	cfg.Model = srv.ModelConfig("gpt-4.1")
	cfg.Tools = tool.Cards{&mcp.Card{Servers: []mcp.Server{s}}}
	assistant, err := team.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(ctx, human, assistant, agent.NewRequest("Echo twice.")); err != nil {
		t.Fatal(err)
	}
	var req *agent.AgentMessage
	select {
	case req = <-inbox:
	case <-ctx.Done():
		t.Fatalf("no approval request; model failures %v", srv.Failures())
	}
	if req.Approval == nil || req.Approval.Tool != "s_echo" || req.Approval.CallID != "c2" {
		t.Fatalf("the person got %+v, want the approval of the loud echo", req)
	}
	if n := len(srv.RequestsFor("@Assistant")); n != 2 {
		t.Fatalf("%d model requests before the approval, want 2 (the quiet echo ran at once)", n)
	}
	if err := agent.Answer(ctx, human, req, &agent.AgentMessage{Content: agent.Decision(true, "")}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-inbox:
		if m.Content != "echoed" {
			t.Fatalf("answer %q", m.Content)
		}
	case <-ctx.Done():
		t.Fatal("no answer after the approval")
	}
	reqs := srv.RequestsFor("@Assistant")
	if got := toolMessages(reqs[1])["c1"]; got != "quiet" {
		t.Errorf("the quiet echo's result %q", got)
	}
	if got := toolMessages(reqs[2])["c2"]; !strings.Contains(got, "LOUD") {
		t.Errorf("the approved echo's result %q", got)
	}
}
