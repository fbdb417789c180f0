package agent_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// roles lists the roles of a recorded request's history.
func roles(r *llmtest.Request) string {
	var out []string
	for _, m := range r.History() {
		out = append(out, m.Role)
	}
	return strings.Join(out, ",")
}

// compaction_cfg.max_messages sends only the last N history entries,
// extended backwards so that a tool reply keeps the assistant message that
// called it (llmtest answers 400 on an orphan tool message, which would
// end the run with an error instead of the answer).
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

// max_messages together with live auto-compaction is a config error naming
// both settings; with auto_trigger off it is accepted.
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

// end_strategy defaults to exhaustive; an unknown value is a config error
// naming it; early is accepted and, in native structured-output mode,
// changes nothing: a response with tool calls still runs them all and the
// run goes on to the final answer.
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
