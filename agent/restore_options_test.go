package agent_test

import (
	"context"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Issue 13: a restored HumanProxy gets its delivery hook from the restore
// call (WithHumanDelivery), together with the agents' Env (WithEnv): the
// two restore options compose, and the person's next answer reaches the
// new hook.
func TestRestoreGivesTheHumanItsHook(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "first answer")))
	h.say(h.manager, agent.Request, "first question")
	h.expectHuman()
	h.barrier()
	saved := roundTrip(t, h.sub.all())

	sys2 := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys2.Shutdown(context.Background()) }()
	delivered := make(chan *agent.AgentMessage, 1)
	team2, err := orchestrator.Restore(h.ctx(), sys2, saved, agent.WithEnv(h.env),
		agent.WithHumanDelivery(func(m *agent.AgentMessage) { delivered <- m }))
	if err != nil {
		t.Fatal(err)
	}
	human2, _ := team2.Member(h.ctx(), "@Human")
	manager2, _ := team2.Member(h.ctx(), "@Manager")
	if human2 == nil || manager2 == nil {
		t.Fatal("the restored team lacks @Human or @Manager")
	}
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "second answer")))
	if err := agent.Say(h.ctx(), human2, manager2, agent.NewRequest("second question")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-delivered:
		if m.Content != "second answer" {
			t.Fatalf("the hook got %q", m.Content)
		}
	case <-h.ctx().Done():
		t.Fatal("the restored person's hook got nothing")
	}
}
