package agent_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// Errors carry the provider's words: a 400 context_length_exceeded with
// compaction off (nothing to compact, so no retry: it fails fast) ends the
// turn with an ErrorMessage whose text keeps OpenAI's status, code and
// message.
func TestContextLengthErrorKeepsProviderWords(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(llmtest.ContextLengthExceeded())
	h.say(h.manager, agent.Request, "a long story")
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	errs := of[*message.ErrorMessage](h.sub, h.manager)
	if len(errs) != 1 {
		t.Fatalf("%d ErrorMessages, want 1", len(errs))
	}
	for _, want := range []string{"context_length_exceeded", "maximum context length is 128000 tokens", "400"} {
		if !strings.Contains(errs[0].Content, want) {
			t.Errorf("ErrorMessage %q lacks %q", errs[0].Content, want)
		}
	}
}

// A usage-limit breach ends the turn with a WarningMessage (no
// ErrorMessage) whose text gives the reason once: "LLM usage limit
// exceeded: <reason>"; a log line carrying it says it once too.
func TestUsageLimitBreachIsAWarning(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.RunLimits.RequestLimit = new(1) })
	h.srv.Model("@Manager").Enqueue(llmtest.ToolCalls(llmtest.Call("", "team_roles_nope", `{}`)))
	h.say(h.manager, agent.Request, "loop")
	h.expectHuman() // the person is told
	const reason = "The next request would exceed the run_request_limit of 1"
	h.sub.waitFor(t, "the WarningMessage", func([]message.Message) bool { return len(of[*message.WarningMessage](h.sub, h.manager)) > 0 })
	warns := of[*message.WarningMessage](h.sub, h.manager)
	if len(warns) != 1 || warns[0].Content != "LLM usage limit exceeded: "+reason {
		t.Fatalf("warnings %+v, want one saying %q", warns, "LLM usage limit exceeded: "+reason)
	}
	if errs := of[*message.ErrorMessage](h.sub, h.manager); len(errs) != 0 {
		t.Fatalf("error records %+v, want none", errs)
	}
	lines := 0
	for _, r := range h.logs.Records() {
		line := r.Message
		r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
		if n := strings.Count(line, reason); n > 1 {
			t.Errorf("the reason is repeated: %s", line)
		} else if n == 1 {
			lines++
			if r.Level != slog.LevelWarn || strings.Contains(line, "handler failed") {
				t.Errorf("the breach is logged at %v as %q; want a warning line", r.Level, r.Message)
			}
		}
	}
	if lines != 1 {
		t.Errorf("%d log lines give the reason, want 1", lines)
	}
}
