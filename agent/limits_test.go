package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// The second run sends the system block, the first exchange and the new
// prompt; the system block is rendered again (a member hired in between is
// on the roster).
func TestContinuityAndFreshSystemBlock(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "first")))
	h.say(h.manager, agent.Request, "one")
	h.expectHuman()
	h.say(h.manager, agent.Request, "/hire_member QA name=@Quinn")
	h.expectHuman()
	h.say(h.manager, agent.Request, "two")
	reqs := h.srv.RequestsFor("@Manager")
	second := reqs[1]
	var roles []string
	for _, m := range second.History() {
		roles = append(roles, m.Role)
	}
	// user one, assistant (JSON), the operator action (its own entry once
	// the history has begun), user two.
	if strings.Join(roles, ",") != "user,assistant,user,user" ||
		!strings.HasPrefix(second.History()[2].Text(), "[Operator action] The human ran \"/hire_member QA name=@Quinn\".") {
		t.Fatalf("second request history %v", roles)
	}
	if a := second.History()[1].Text(); !strings.Contains(a, `"first"`) {
		t.Fatalf("assistant entry %q, want the first answer's JSON", a)
	}
	sys := strings.Join(second.SystemTexts(), "\n")
	if !strings.Contains(sys, "@Quinn (role: QA)") || strings.Contains(strings.Join(reqs[0].SystemTexts(), "\n"), "@Quinn") {
		t.Fatalf("system block not re-rendered:\n%s", sys)
	}
	if !strings.Contains(sys, "The current date is ") || !strings.HasPrefix(second.SystemTexts()[0], "You are @Manager.") {
		t.Fatalf("system block order: %q", second.SystemTexts())
	}
}

// A 429 with Retry-After is retried after the wait; one usage event is
// recorded for the one response.
func TestRateLimitThenSuccess(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(llmtest.RateLimited("1"), final(out(agent.Response, "@Human", "ok")))
	h.say(h.manager, agent.Request, "go")
	if r := h.expectHuman(); r.Content != "ok" {
		t.Fatalf("human got %q", r.Content)
	}
	if n := len(h.srv.RequestsFor("@Manager")); n != 2 {
		t.Fatalf("%d HTTP attempts, want 2", n)
	}
	h.mu.Lock()
	waits := append([]time.Duration(nil), h.waits...)
	h.mu.Unlock()
	if len(waits) != 1 || waits[0] < time.Second {
		t.Fatalf("waits %v, want one of at least the Retry-After", waits)
	}
	h.barrier()
	usage := 0
	for _, ev := range of[*message.EventMessage](h.sub, h.manager) {
		if _, ok := ev.Event.(llm.UsageEvent); ok {
			usage++
		}
	}
	if usage != 1 {
		t.Fatalf("%d usage events, want 1", usage)
	}
}

// A run token limit breaks after the first response; its usage is still
// recorded and the person is told when the tool-free conclusion delivers
// nothing.
func TestRunTokenLimit(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.RunLimits.TotalTokensLimit = new(150) })
	h.srv.Model("@Manager").Enqueue(llmtest.ToolCalls(llmtest.Call("", "team_roles_x", `{}`)).WithUsage(180, 20, 0))
	h.say(h.manager, agent.Request, "go")
	n := h.expectHuman()
	if n.Type != agent.Notification || !strings.Contains(n.Content, "total_tokens_limit of 150") {
		t.Fatalf("notice %q", n.Content)
	}
	// The one request after the breach is the tool-free conclusion;
	// llmtest's default answer sends no message, so the breach escalates.
	if reqs := h.srv.RequestsFor("@Manager"); len(reqs) != 2 || len(reqs[1].Tools) != 0 {
		t.Fatalf("%d requests after the breach, want the tool-free conclusion only", len(reqs)-1)
	}
}

// Lifetime tokens bound where a run may start; a failed run still counts
// against the run budget.
func TestLifetimeTiers(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.AgentLimits.TotalTokensLimit = new(250) })
	for range 4 {
		h.srv.Model("@Manager").Enqueue(final().WithUsage(100, 20, 0))
	}
	for _, s := range []string{"1", "2", "3", "4"} {
		h.say(h.manager, agent.Request, s)
	}
	if n := len(h.srv.RequestsFor("@Manager")); n != 3 {
		t.Fatalf("%d runs executed, want 3 (240 <= 250 when the third starts)", n)
	}
	if n := h.expectHuman(); !strings.Contains(n.Content, "total_tokens_limit of 250") {
		t.Fatalf("notice %q", n.Content)
	}

	f := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.AgentLimits.RequestLimit = new(1) })
	for range 5 {
		f.srv.Model("@Manager").Enqueue(llmtest.ServerError())
	}
	f.say(f.manager, agent.Request, "fails")
	f.say(f.manager, agent.Request, "refused")
	if n := f.expectHuman(); !strings.Contains(n.Content, "agent_request_limit of 1") {
		t.Fatalf("notice %q", n.Content)
	}
}

// A team stop ends a model call in flight: the agent's turn ends with a
// warning and the team stops well before its grace.
func TestStopInterruptsModelCall(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(llmtest.Hang())
	m := agent.NewRequest("think hard")
	if err := agent.Say(actortest.Context(t), h.human, h.manager, m); err != nil {
		t.Fatal(err)
	}
	h.sub.waitFor(t, "the manager's turn", func(ms []message.Message) bool {
		for _, x := range ms {
			if r, ok := x.(*message.ReceivedMessage); ok && r.MessageID == m.ID {
				return true
			}
		}
		return false
	})
	start := time.Now()
	if err := h.team.Stop(actortest.Context(t)); err != nil { // the harness's grace is a minute
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("stop took %v", d)
	}
	warns := of[*message.WarningMessage](h.sub, h.manager)
	if len(warns) != 1 || !strings.Contains(warns[0].Content, "the agent is stopping") {
		t.Fatalf("warnings %+v", warns)
	}
}

// A run that hits its run request limit on a tool round gets one more
// request, without tools, whose answer is delivered; no escalation.
func TestConclusionWithoutToolsAfterRunLimit(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.RunLimits.RequestLimit = new(1) })
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "no_such_tool", `{}`)),
		final(out(agent.Response, "@Human", "what I have so far")),
	)
	h.say(h.manager, agent.Request, "go")
	if r := h.expectHuman(); r.Type != agent.Response || r.Content != "what I have so far" {
		t.Fatalf("human got %s %q, want the concluded answer", r.Type, r.Content)
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want the run's one and the conclusion", len(reqs))
	}
	last := reqs[1]
	if len(last.Tools) != 0 || len(reqs[0].Tools) == 0 {
		t.Fatalf("tools: %d on the run's request, %d on the conclusion (want none)", len(reqs[0].Tools), len(last.Tools))
	}
	if u := h.lastUser("@Manager", 1); !strings.Contains(u, "run_request_limit of 1") || !strings.Contains(u, "Tools are no longer available") {
		t.Fatalf("conclusion prompt %q", u)
	}
	if got := roles(last); got != "user,assistant,tool,user" {
		t.Fatalf("conclusion history %s", got)
	}
	h.barrier()
	if w := of[*message.WarningMessage](h.sub, h.manager); len(w) != 0 {
		t.Fatalf("warnings %+v, want none: the conclusion answered", w)
	}
	h.noHuman()
	// The conclusion's request is counted: two usage events for the run.
	sum, err := agent.UsageSummary(actortest.Context(t), h.team, h.manager.AgentID(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != 2 || len(sum.Runs) != 1 {
		t.Fatalf("summary %+v, want 2 requests in 1 run", sum)
	}
}

// When the tool-free request fails, the breach escalates as before: the
// person is told and the turn ends with a warning.
func TestConclusionFailsThenEscalates(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *agent.AgentConfig) {
		c.RunLimits.RequestLimit = new(1)
		c.Runtime.HTTP.MaxAttempts = 1
	})
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "no_such_tool", `{}`)),
		llmtest.ServerError(),
	)
	h.say(h.manager, agent.Request, "go")
	n := h.expectHuman()
	if n.Type != agent.Notification || !strings.Contains(n.Content, "run_request_limit of 1") {
		t.Fatalf("human got %s %q, want the escalation", n.Type, n.Content)
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != 2 || len(reqs[1].Tools) != 0 {
		t.Fatalf("%d requests, want the run's one and a tool-free conclusion", len(reqs))
	}
	waitFrom[*message.WarningMessage](h, h.manager, "the turn's warning")
	h.barrier()
	if w := of[*message.WarningMessage](h.sub, h.manager); len(w) != 1 || !strings.Contains(w[0].Content, "LLM usage limit exceeded") {
		t.Fatalf("warnings %+v", w)
	}
}
