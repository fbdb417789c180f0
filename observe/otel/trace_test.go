package akotel_test

import (
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// Issue 15: person -> manager -> developer -> manager -> person is one
// trace; the manager's first model call is a 429 then a success, and its
// first tool call fails (an unknown tool: feedback the model acts on).
func TestConversationIsOneTrace(t *testing.T) {
	tel := newTelemetry(t, false)
	tm := newTeam(t, tel.sub)
	tm.srv.Model("@Manager").Enqueue(
		llmtest.RateLimited("1"),
		llmtest.ToolCalls(llmtest.Call("call_1", "no_such_tool", `{}`)).WithUsage(100, 10, 0),
		final(agent.Request, "Developer", "Estimate the login page.").WithUsage(120, 20, 0),
		final(agent.Response, "@Human", "Login page: 3 days.").WithUsage(200, 30, 0),
	)
	tm.srv.Model("@Developer100").Enqueue(final(agent.Response, "@Manager", "3 days.").WithUsage(50, 5, 0))
	if got := tm.ask("Plan the sprint."); got.Content != "Login page: 3 days." {
		t.Fatalf("the person got %q", got.Content)
	}
	tm.stop()
	spans := tel.ended()
	t.Logf("\n%s", tree(spans))
}
