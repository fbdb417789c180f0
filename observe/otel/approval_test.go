package akotel_test

import (
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// A tool call that waits for approval: its execute_tool span ends at the
// pause with an "approval requested" event and no error; approved, the
// call runs in a span of the decision's turn with an "approval granted"
// event; denied, the decision's turn has an "approval denied" event.
func TestApprovalEvents(t *testing.T) {
	tel := newTelemetry(t, true)
	tm := newTeam(t, orchestrator.WithSubscribers(tel.sub))
	env := &agent.Env{HTTPClient: tm.srv.HTTPClient(), Rand: func(int) int { return 0 },
		Guards: &agent.Guards{Approval: &tool.Approval{Always: []string{"hire_members"}}}}
	cfg := agent.NewConfig("@Boss", "Manager")
	cfg.Model = tm.srv.ModelConfig("gpt-4.1")
	boss, err := tm.team.Spawn(actortest.Context(t), &agent.BaseAgent{Env: env}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tm.srv.Model("@Boss").Enqueue(
		llmtest.ToolCalls(llmtest.Call("h1", "hire_members", `{"roles":["Developer"]}`)), final(agent.Response, "@Human", "hired"),
		llmtest.ToolCalls(llmtest.Call("h2", "hire_members", `{"roles":["Developer"]}`)), final(agent.Response, "@Human", "not hired"),
	)
	for _, c := range []struct {
		approve bool
		want    string
	}{{true, "hired"}, {false, "not hired"}} {
		tm.manager = boss
		req := tm.ask("hire a developer")
		if req.Approval == nil {
			t.Fatalf("the person got %q, want an approval request", req.Content)
		}
		if err := agent.Answer(actortest.Context(t), tm.human, req, &agent.AgentMessage{Content: agent.Decision(c.approve, "budget")}); err != nil {
			t.Fatal(err)
		}
		if got := <-tm.inbox; got.Content != c.want {
			t.Fatalf("the person got %q, want %q", got.Content, c.want)
		}
	}
	tm.stop()
	spans := tel.ended()
	tools := named(spans, "execute_tool hire_members")
	if len(tools) != 3 {
		t.Fatalf("%d execute_tool spans, want 3 (two paused, one run):\n%s", len(tools), tree(spans))
	}
	events := func(s sdktrace.ReadOnlySpan) (out []string) {
		for _, e := range s.Events() {
			out = append(out, e.Name)
		}
		return out
	}
	for i, want := range []string{"approval requested", "approval granted", "approval requested"} {
		if ev := events(tools[i]); len(ev) == 0 || ev[0] != want {
			t.Errorf("execute_tool span %d has events %v, want %q", i, ev, want)
		}
		if tools[i].Status().Code == codes.Error {
			t.Errorf("execute_tool span %d ended with an error: %v", i, tools[i].Status())
		}
	}
	denied := 0
	for _, s := range named(spans, "invoke_agent @Boss") {
		for _, e := range s.Events() {
			if e.Name == "approval denied" {
				denied++
			}
		}
	}
	if denied != 1 {
		t.Errorf("%d approval denied events on @Boss's turns, want 1:\n%s", denied, tree(spans))
	}
}
