package agent_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// The multi-hop: Manager -> Developer -> Human -> Developer ->
// Manager -> Human, each hop decided by a scripted model.
func TestMultiHop(t *testing.T) {
	h := newHarness(t)
	dev := h.spawnAgent(h.config("@Developer", "Developer"))
	h.srv.Model("@Manager").Enqueue(
		final(out(agent.Request, "@Developer", "Build the login page")),
		final(out(agent.Response, "@Human", "Login page done, with OAuth")),
	)
	h.srv.Model("@Developer").Enqueue(
		final(out(agent.Request, "@Human", "Which auth provider?")),
		final(out(agent.Response, "@Manager", "Done: login with OAuth")),
	)
	h.say(h.manager, agent.Request, "We need a login page")
	q := h.expectHuman()
	if q.Content != "Which auth provider?" || q.Sender.Name() != "@Developer" {
		t.Fatalf("question %q from %s", q.Content, q.Sender.Name())
	}
	if err := orchestrator.ProcessHumanInput(actortest.Context(t), h.human, "OAuth", q); err != nil {
		t.Fatal(err)
	}
	final := h.expectHuman()
	if final.Content != "Login page done, with OAuth" || final.Sender.Name() != "@Manager" || final.Type != agent.Response {
		t.Fatalf("final %s %q from %s", final.Type, final.Content, final.Sender.Name())
	}
	// Each hop's prompt named its sender and intent.
	if u := h.lastUser("@Developer", 1); !strings.HasPrefix(u, "You received a response from @Human.") || !strings.HasSuffix(u, "\n\nOAuth") {
		t.Fatalf("developer's second prompt %q", u)
	}
	if u := h.lastUser("@Manager", 1); !strings.HasPrefix(u, "You received a response from @Developer.") {
		t.Fatalf("manager's second prompt %q", u)
	}
	// The manager's second request carries its first exchange.
	if hist := userTexts(h.srv.RequestsFor("@Manager")[1]); len(hist) != 2 {
		t.Fatalf("manager's history users %q", hist)
	}
	h.sync(dev)
}

// A tool call round trip: hire_members runs, its result goes back to the
// model, events share the run id.
func TestToolCallRoundTrip(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA"]}`)),
		final(out(agent.Response, "@Human", "hired")),
	)
	h.say(h.manager, agent.Request, "hire a QA")
	if got := h.expectHuman(); got.Content != "hired" {
		t.Fatalf("human got %q", got.Content)
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	hist := reqs[1].History()
	var toolMsg string
	for _, m := range hist {
		if m.Role == "tool" && m.ToolCallID == "call_1" {
			toolMsg = m.Text()
		}
	}
	if !strings.HasPrefix(toolMsg, "Members hired:") {
		t.Fatalf("tool result %q", toolMsg)
	}
	h.barrier()
	var calls []llm.ToolCallEvent
	runs := map[string]bool{}
	for _, ev := range of[*message.EventMessage](h.sub, h.manager) {
		switch e := ev.Event.(type) {
		case llm.ToolCallEvent:
			calls = append(calls, e)
		case llm.UsageEvent:
			runs[e.RunID] = true
		}
	}
	if len(calls) != 1 || calls[0].ToolName != "hire_members" || calls[0].Arguments != `{"roles":["QA"]}` {
		t.Fatalf("tool call events %+v", calls)
	}
	if len(runs) != 1 {
		t.Fatalf("usage events over %d runs, want 1", len(runs))
	}
	if members, _ := h.team.Members(actortest.Context(t)); len(members) != 3 {
		t.Fatalf("roster %v, want human, manager and the QA", members)
	}
}

// The usage summary aggregates the agent's usage events.
func TestUsageSummary(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("", "team_roles_missing", `{}`)).WithUsage(1000, 100, 0),
		final().WithUsage(2000, 200, 500),
		final().WithUsage(1000, 100, 0).WithModel("gpt-4.1-mini-2025-04-14"),
	)
	h.say(h.manager, agent.Request, "run A")
	h.say(h.manager, agent.Request, "run B")
	sum, err := agent.UsageSummary(actortest.Context(t), h.team, h.manager.AgentID(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.InputTokens != 4000 || sum.OutputTokens != 400 || sum.CacheReadTokens != 500 || sum.Requests != 3 {
		t.Fatalf("summary %+v", sum)
	}
	if len(sum.Runs) != 2 {
		t.Fatalf("runs %+v", sum.Runs)
	}
	if d := sum.Cost - 0.00821; d > 1e-9 || d < -1e-9 {
		t.Fatalf("cost %v, want 0.00821", sum.Cost)
	}
}

// /compact and /clear are built-in commands.
func TestCompactAndClear(t *testing.T) {
	h := newHarness(t)
	h.say(h.manager, agent.Request, "/compact")
	if r := h.expectHuman(); r.Content != "Nothing to compact." {
		t.Fatalf("/compact on a fresh agent: %q", r.Content)
	}
	h.say(h.manager, agent.Request, "one")
	h.say(h.manager, agent.Request, "two")
	h.say(h.manager, agent.Request, "/clear")
	if r := h.expectHuman(); !strings.HasPrefix(r.Content, "Cleared 4 message(s)") {
		t.Fatalf("/clear: %q", r.Content)
	}
	h.say(h.manager, agent.Request, "three")
	reqs := h.srv.RequestsFor("@Manager")
	users := userTexts(reqs[len(reqs)-1])
	if len(users) != 1 || !strings.HasPrefix(users[0], "[Operator action] The human ran \"/clear\".") || !strings.HasSuffix(users[0], "three") {
		t.Fatalf("after /clear the history is %q", users)
	}
	h.barrier()
	cleared := 0
	for _, ev := range of[*message.EventMessage](h.sub, h.manager) {
		if _, ok := ev.Event.(llm.ClearedEvent); ok {
			cleared++
		}
	}
	if cleared != 1 {
		t.Fatalf("%d ClearedEvents", cleared)
	}
}

// A run that fails (invalid outputs past the budget, a server that keeps
// failing) is an ErrorMessage; nothing is sent; the agent lives on.
func TestFailedRuns(t *testing.T) {
	h := newHarness(t)
	bad := llmtest.Final("not json")
	h.srv.Model("@Manager").Enqueue(bad, bad, bad, bad)
	h.say(h.manager, agent.Request, "one")
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) == 1 })
	for range 5 {
		h.srv.Model("@Manager").Enqueue(llmtest.ServerError())
	}
	h.say(h.manager, agent.Request, "two")
	h.sub.waitFor(t, "the second ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) == 2 })
	h.noHuman()
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "back")))
	h.say(h.manager, agent.Request, "three")
	if r := h.expectHuman(); r.Content != "back" {
		t.Fatalf("after failures: %q", r.Content)
	}
}
