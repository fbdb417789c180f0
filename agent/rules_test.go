package agent_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// roles lists the roles of a recorded request's history.
func roles(r *llmtest.Request) string {
	var out []string
	for _, m := range r.History() {
		out = append(out, m.Role)
	}
	return strings.Join(out, ",")
}

// A58: compaction_cfg.max_messages sends only the last N history entries,
// extended backwards so that a tool reply keeps the assistant message that
// called it (llmtest answers 400 on an orphan tool message, which would end
// the run with an error instead of the answer).
func TestSlidingWindowMaxMessages(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.Compaction.MaxMessages = 2 })
	h.srv.Model("@Manager").Enqueue(
		final(),
		llmtest.ToolCalls(llmtest.Call("call_a", "no_such_tool_a", `{}`), llmtest.Call("call_b", "no_such_tool_b", `{}`)),
		final(out(agent.Response, "@Human", "done")),
	)
	h.say(h.manager, agent.Request, "one")
	h.say(h.manager, agent.Request, "two")
	if r := h.expectHuman(); r.Content != "done" {
		t.Fatalf("human got %q", r.Content)
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	// The last 2 of [user, assistant, user, assistant(2 calls), tool, tool]
	// are the two replies: the window grows back to their call.
	for i, want := range []string{"user", "assistant,user", "assistant,tool,tool"} {
		if got := roles(reqs[i]); got != want {
			t.Errorf("request %d history %s, want %s", i, got, want)
		}
	}
	if sys := reqs[2].SystemTexts(); len(sys) == 0 || !strings.HasPrefix(sys[0], "You are @Manager.") {
		t.Errorf("the system block is not part of the window: %q", sys)
	}
}

// A58: max_messages together with live auto-compaction is a config error
// naming both settings; with auto_trigger off it is accepted.
func TestSlidingWindowExclusiveWithAutoCompaction(t *testing.T) {
	cfg := agent.NewConfig("@A", "A")
	cfg.Model.ContextLength = 100000
	cfg.Compaction.MaxMessages = 10
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "max_messages") || !strings.Contains(err.Error(), "auto_trigger") {
		t.Fatalf("Validate = %v, want an error naming max_messages and auto_trigger", err)
	}
	cfg.Compaction.AutoTrigger = false
	if err := cfg.Validate(); err != nil {
		t.Fatalf("max_messages with auto_trigger off: %v", err)
	}
}

// A40: a run that hits its run request limit on a tool round gets one more
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
	sum, err := agent.UsageSummary(h.ctx(), h.team, h.manager.AgentID(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != 2 || len(sum.Runs) != 1 {
		t.Fatalf("summary %+v, want 2 requests in 1 run", sum)
	}
}

// A40, A38: when the tool-free request fails, the breach escalates as
// before: the person is told and the turn ends with a warning.
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

// A25: end_strategy defaults to exhaustive; an unknown value is a config
// error naming it; early is accepted and, in native structured-output mode,
// changes nothing (A21): a response with tool calls still runs them all
// and the run goes on to the final answer.
func TestEndStrategy(t *testing.T) {
	if got := agent.NewConfig("@A", "A").Runtime.EndStrategy; got != "exhaustive" {
		t.Fatalf("default end_strategy %q, want exhaustive", got)
	}
	bad := agent.NewConfig("@A", "A")
	bad.Runtime.EndStrategy = "late"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "EndStrategy") || !strings.Contains(err.Error(), "late") {
		t.Fatalf("Validate = %v, want an error naming EndStrategy and late", err)
	}
	for _, strategy := range []string{"early", "exhaustive"} {
		h := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.Runtime.EndStrategy = strategy })
		h.srv.Model("@Manager").Enqueue(
			llmtest.ToolCalls(llmtest.Call("call_a", "no_such_tool_a", `{}`), llmtest.Call("call_b", "no_such_tool_b", `{}`)),
			final(out(agent.Response, "@Human", "done")),
		)
		h.say(h.manager, agent.Request, "go")
		if r := h.expectHuman(); r.Content != "done" {
			t.Fatalf("%s: human got %q", strategy, r.Content)
		}
		reqs := h.srv.RequestsFor("@Manager")
		if len(reqs) != 2 || roles(reqs[1]) != "user,assistant,tool,tool" {
			t.Fatalf("%s: %d requests, last history %s", strategy, len(reqs), roles(reqs[len(reqs)-1]))
		}
	}
}

// C4, B109: work (a request or an instruction) handed to a member whose
// role the agent's card does not route to fails the turn with an error
// naming routes_to; what came before it was delivered, what comes after it
// is not. A notification goes anywhere, and answering the sender of the
// message being handled is never refused. The next turn runs.
func TestRoutesToEnforcedC4(t *testing.T) {
	h := newHarness(t) // the Manager's card routes to Developer and QA
	designer := h.spawnAgent(h.config("@Designer", "Designer"))
	h.srv.Model("@Designer").Enqueue(final(out(agent.Request, "@Manager", "review my mockup")))
	h.srv.Model("@Manager").Enqueue(
		// Handling @Designer's request: asking the sender back is allowed.
		final(out(agent.Request, "@Designer", "which screen?")),
		// Handling @Human's request: a notification passes, a request is refused.
		final(out(agent.Notification, "@Designer", "fyi"), out(agent.Request, "@Designer", "draw it"), out(agent.Response, "@Human", "never sent")),
		final(out(agent.Response, "@Human", "next")),
	)
	h.srv.Model("@Designer").Enqueue(final(), final(), final())
	h.say(designer, agent.Request, "start")
	h.sub.waitFor(t, "the manager's question to @Designer", func([]message.Message) bool { return len(h.sub.sentTo("@Designer")) == 2 })

	h.say(h.manager, agent.Request, "go")
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	errs := of[*message.ErrorMessage](h.sub, h.manager)
	if len(errs) != 1 || !strings.Contains(errs[0].Content, "routes_to allows only Developer, QA") || !strings.Contains(errs[0].Content, "@Designer (role Designer)") {
		t.Fatalf("errors %+v, want one naming routes_to and the member", errs)
	}
	var got []string
	for _, m := range h.sub.sentTo("@Designer") {
		got = append(got, string(m.Type)+":"+m.Content)
	}
	if want := "request:start,request:which screen?,notification:fyi"; strings.Join(got, ",") != want {
		t.Fatalf("to @Designer %v, want %s", got, want)
	}
	h.say(h.manager, agent.Request, "again")
	if got := h.expectHuman(); got.Content != "next" {
		t.Fatalf("after the refusal human got %q", got.Content)
	}
	h.noHuman()
}

// C4, B106: a bare role whose card is not hireable, or outside the
// hirer's routes_to, is not hired: the turn fails naming the rule.
func TestHireRulesThroughRoutingC4(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Request, "Manager", "help")))
	h.say(h.manager, agent.Request, "go")
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	if errs := of[*message.ErrorMessage](h.sub, h.manager); !strings.Contains(errs[0].Content, "can_be_hired is false") {
		t.Fatalf("error %q does not name can_be_hired", errs[0].Content)
	}
	if members, _ := h.team.Members(h.ctx()); len(members) != 2 {
		t.Fatalf("members after a refused hire: %v", members)
	}
}
