package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// warningsSaying returns the manager's warnings that contain s.
func (h *harness) warningsSaying(s string) []*message.WarningMessage {
	var out []*message.WarningMessage
	for _, w := range of[*message.WarningMessage](h.sub, h.manager) {
		if strings.Contains(w.Content, s) {
			out = append(out, w)
		}
	}
	return out
}

// An answer of 10,000 messages to the person sends 50: a warning names
// the limit and the person is told.
func TestAnswerMessagesHeldToLimit(t *testing.T) {
	h := newHarness(t)
	msgs := make([]agent.OutboundRequest, 10_000)
	for i := range msgs {
		msgs[i] = out(agent.Response, "@Human", "spam")
	}
	h.srv.Model("@Manager").Enqueue(final(msgs...))
	h.say(h.manager, agent.Request, "go")
	h.barrier()
	want := "the answer of @Manager has 10000 messages, more than the team's MaxMessagesPerAnswer (50): the last 9950 were not sent"
	if w := h.warningsSaying(want); len(w) != 1 {
		t.Errorf("warnings %+v, want one saying %q", of[*message.WarningMessage](h.sub, h.manager), want)
	}
	sent := h.sub.sentTo("@Human")
	if len(sent) != 51 || sent[50].Type != agent.Notification || !strings.Contains(sent[50].Content, want) {
		t.Fatalf("%d messages to the person, want 50 and a notification", len(sent))
	}
}

// A message larger than MaxMessageBytes is cut, saying so, with a warning.
func TestAnswerMessageBytesCut(t *testing.T) {
	h := newHarness(t)
	h.env.Guards = &agent.Guards{MaxMessageBytes: 1 << 10}
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", strings.Repeat("x", 64<<10))))
	h.say(h.manager, agent.Request, "go")
	got := h.expectHuman()
	if len(got.Content) > 1<<10+100 || !strings.HasSuffix(got.Content, "\n[... message cut at 1024 bytes of 65536 ...]") {
		t.Errorf("the person got %d bytes ending %q", len(got.Content), got.Content[max(0, len(got.Content)-80):])
	}
	h.barrier()
	if w := h.warningsSaying("output message 0 has 65536 bytes, more than the team's MaxMessageBytes (1024): cut"); len(w) != 1 {
		t.Errorf("warnings %+v", of[*message.WarningMessage](h.sub, h.manager))
	}
}

// A hire_members call of 3,000 roles hires 10: the model is told why the
// rest were refused, and one warning names the limit.
func TestHiresPerTurnHeldToLimit(t *testing.T) {
	h := newHarness(t)
	roles, _ := json.Marshal(map[string][]string{"roles": slicesRepeat("QA", 3000)})
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", string(roles))),
		final(out(agent.Response, "@Human", "hired")),
	)
	h.say(h.manager, agent.Request, "hire")
	if got := h.expectHuman(); got.Content != "hired" {
		t.Fatalf("human got %q", got.Content)
	}
	if members, _ := h.team.Members(actortest.Context(t)); len(members) != 12 {
		t.Errorf("%d members, want the person, the manager and 10 hired", len(members))
	}
	why := "hire refused: at most 10 members may be hired in one turn (the team's MaxHiresPerTurn)"
	if tool := toolMessage(t, h, "call_1"); !strings.Contains(tool, why) {
		t.Errorf("the model got %q, want it to say %q", tool[:min(len(tool), 300)], why)
	}
	h.barrier()
	if w := h.warningsSaying(why); len(w) != 1 {
		t.Errorf("%d warnings saying %q, want 1", len(w), why)
	}
}

// A team of MaxMembers members refuses the next hire.
func TestMembersPerTeamHeldToLimit(t *testing.T) {
	h := newHarness(t, func(h *harness, _ *agent.AgentConfig) {
		h.env.Guards = &agent.Guards{MaxMembers: 4, MaxHiresPerTurn: -1}
	})
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA","QA","QA","QA"]}`)),
		final(out(agent.Response, "@Human", "hired")),
	)
	h.say(h.manager, agent.Request, "hire")
	h.expectHuman()
	if members, _ := h.team.Members(actortest.Context(t)); len(members) != 4 {
		t.Errorf("%d members, want 4", len(members))
	}
	if tool := toolMessage(t, h, "call_1"); !strings.Contains(tool, "hire refused: the team has 4 members, its limit (the team's MaxMembers)") {
		t.Errorf("the model got %q", tool)
	}
}

// toolMessage returns the manager's tool message answering call id.
func toolMessage(t *testing.T, h *harness, id string) string {
	t.Helper()
	reqs := h.srv.RequestsFor("@Manager")
	for _, m := range reqs[len(reqs)-1].History() {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Text()
		}
	}
	t.Fatalf("no tool message for %s", id)
	return ""
}

func slicesRepeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
