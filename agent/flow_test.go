package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
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
	if err := orchestrator.ProcessHumanInput(h.ctx(), h.human, "OAuth", q); err != nil {
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
	// The manager's second request carries its first exchange (A20).
	if hist := userTexts(h.srv.RequestsFor("@Manager")[1]); len(hist) != 2 {
		t.Fatalf("manager's history users %q", hist)
	}
	h.sync(dev)
}

// S25, A22, A48: a tool call round trip: hire_members runs, its result
// goes back to the model, events share the run id.
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
	if members, _ := h.team.Members(h.ctx()); len(members) != 3 {
		t.Fatalf("roster %v, want human, manager and the QA", members)
	}
}

// S46, A46-A47: the usage summary aggregates the agent's usage events.
func TestUsageSummary(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("", "team_roles_missing", `{}`)).WithUsage(1000, 100, 0),
		final().WithUsage(2000, 200, 500),
		final().WithUsage(1000, 100, 0).WithModel("gpt-4.1-mini-2025-04-14"),
	)
	h.say(h.manager, agent.Request, "run A")
	h.say(h.manager, agent.Request, "run B")
	sum, err := agent.UsageSummary(h.ctx(), h.team, h.manager.AgentID(), true, nil)
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

// A37, A51, issue item 8: a restored agent gets its LLM context and its
// lifetime counters back from the replayed log.
func TestRestoreAgentContext(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.AgentLimits.RequestLimit = new(3) })
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "first answer")))
	h.say(h.manager, agent.Request, "first question")
	h.expectHuman()
	h.say(h.manager, agent.Request, "second question")
	h.barrier()
	saved := roundTrip(t, h.sub.all())

	sys2 := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys2.Shutdown(context.Background()) }()
	// Recreated agents have no hirer to inherit an Env from: the restore
	// gives it (it was a process-wide default before the redesign).
	team2, err := orchestrator.Restore(h.ctx(), sys2, saved, agent.WithEnv(h.env))
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := team2.Member(h.ctx(), "@Manager")
	if m2 == nil || m2.AgentID() != h.manager.AgentID() {
		t.Fatalf("restored manager %v", m2)
	}
	got, _ := proxy.Ask(h.ctx(), m2, func(_ *actor.Context, a *agent.BaseAgent) ([]int, error) {
		if a.Env != h.env {
			t.Error("the restored agent did not get the restore's Env")
		}
		runs, _, _ := a.Runner().AgentUsage()
		return []int{len(a.Runner().History()), runs}, nil
	})
	if got[0] != 4 || got[1] != 2 { // two exchanges of user + assistant; two runs
		t.Fatalf("restored history %d entries, %d runs; want 4 and 2", got[0], got[1])
	}
	// The lifetime limit of 3 leaves one run.
	before := len(h.srv.RequestsFor("@Manager"))
	if _, err := sys2.Ask(h.ctx(), m2, agent.NewRequest("third")); err != nil {
		t.Fatal(err)
	}
	if _, err := sys2.Ask(h.ctx(), m2, agent.NewRequest("fourth")); err == nil || !strings.Contains(err.Error(), "agent_request_limit of 3") {
		t.Fatalf("fourth run: %v", err)
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != before+1 {
		t.Fatalf("%d new requests, want 1", len(reqs)-before)
	}
	if users := userTexts(reqs[len(reqs)-1]); len(users) != 3 || !strings.HasSuffix(users[0], "first question") {
		t.Fatalf("restored request history %q", users)
	}
}

func roundTrip(t *testing.T, msgs []message.Message) []message.Message {
	t.Helper()
	out := make([]message.Message, 0, len(msgs))
	for _, m := range msgs {
		data, err := message.Marshal(m)
		if err != nil {
			t.Fatalf("marshal %s: %v", message.TypeName(m), err)
		}
		back, err := message.UnmarshalMessage(data)
		if err != nil {
			t.Fatalf("unmarshal %s: %v\n%s", message.TypeName(m), err, data)
		}
		out = append(out, back)
	}
	return out
}

// S50, A56-A57: /compact and /clear are built-in commands.
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

// S30, S35: a run that fails (invalid outputs past the budget, a server
// that keeps failing) is an ErrorMessage; nothing is sent; the agent
// lives on.
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
