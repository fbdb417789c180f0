package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// Issue 14 (stretch), A51: a team restored from a log cut by a crash in
// the middle of an agent's turn (the model answered, the answer was not
// routed yet), whose message is then sent again (as a durable inbox does,
// at least once): the agent replays the model's logged answers instead of
// paying for them again (the fake server gets no request), runs the tool
// again, routes the answer, and keeps the run once in its history.
func TestRestoredCutTurnReplaysTheModel(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(
		final(out(agent.Response, "@Human", "first answer")),
		llmtest.ToolCalls(llmtest.Call("call_1", "team_roles_missing", `{}`)),
		final(out(agent.Response, "@Human", "second answer")),
	)
	h.say(h.manager, agent.Request, "first question")
	second := h.say(h.manager, agent.Request, "second question")
	h.barrier()
	paid := len(h.srv.RequestsFor("@Manager"))

	// The crash: the log ends before the manager sent its second answer.
	all := roundTrip(t, h.sub.all())
	cut := slices.IndexFunc(all, func(m message.Message) bool {
		s, ok := m.(*message.SentMessage)
		return ok && s.Sender.Name() == "@Manager" && s.Message.Envelope().ParentID.UUID == second.ID
	})
	if cut < 0 {
		t.Fatal("no answer to the second question in the log")
	}
	sys2 := actor.NewSystem(actor.SystemConfig{Logger: h.logs.Logger()})
	t.Cleanup(func() { _ = sys2.Shutdown(context.Background()) })
	answers := make(chan *agent.AgentMessage, 4)
	team2, err := orchestrator.Restore(h.ctx(), sys2, all[:cut], agent.WithEnv(h.env),
		agent.WithHumanDelivery(func(m *agent.AgentMessage) { answers <- m }))
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := team2.Member(h.ctx(), "@Manager")
	human2, _ := team2.Member(h.ctx(), "@Human")
	if m2 == nil || human2 == nil {
		t.Fatal("the restored team lacks its members")
	}
	if err := agent.Say(h.ctx(), human2, m2, &agent.AgentMessage{Type: agent.Request, Content: "second question"}); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		if a.Content != "second answer" {
			t.Fatalf("the rerun answered %q; want the logged \"second answer\"", a.Content)
		}
	case <-h.ctx().Done():
		t.Fatal("no answer to the rerun")
	}
	if n := len(h.srv.RequestsFor("@Manager")); n != paid {
		t.Fatalf("%d model requests after the rerun; want %d (the answers were replayed from the log)", n, paid)
	}
	hist, err := proxy.Ask(h.ctx(), m2, func(_ *actor.Context, a *agent.BaseAgent) (string, error) {
		var b strings.Builder
		for _, m := range a.Runner().History() {
			b.WriteString(m.Role + ":" + m.Content + "\n")
		}
		return b.String(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(hist, "second question"); n != 1 || strings.Contains(hist, "aborted") {
		t.Fatalf("history after the rerun (the second question %d times):\n%s", n, hist)
	}
}
