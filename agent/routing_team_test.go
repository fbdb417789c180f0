package agent_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// rosterSections are the two ways a manager finds members by name: the
// roster its prompt showed (the default), and, with the roster section
// off, the team's roster routing reads itself. model is the key of the
// manager's scripted model: with no roster in its prompt the server gives
// its requests to the default model.
var rosterSections = []struct {
	name, model string
	opts        []option
}{
	{"roster shown", "@Manager", nil},
	{"roster not shown", "", []option{withTools(&teamtool.Card{Roster: tool.Capability{Disabled: true}})}},
}

// holdOrchestrator keeps the team's orchestrator busy on its own goroutine
// (it answers no query) until the returned release is called; release is
// also called when the test ends.
func (h *harness) holdOrchestrator() (release func()) {
	h.t.Helper()
	held, free, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- proxy.Do(actortest.Context(h.t), h.team.Address(), func(*actor.Context, actor.Actor) error {
			close(held)
			<-free
			return nil
		})
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(free)
			if err := <-done; err != nil {
				h.t.Errorf("holding the orchestrator: %v", err)
			}
		})
	}
	h.t.Cleanup(release) // before the harness's shutdown: cleanups run last in, first out
	select {
	case <-held:
	case <-time.After(actortest.Timeout):
		h.t.Fatal("the orchestrator was not held")
	}
	return release
}

// A turn whose team did not change since the last one asks the
// orchestrator nothing: the roster and roles of its prompt, the members it
// routes to by name and its own card's routes_to are what it kept. It runs
// to its end, a request delivered to a member and an answer to the
// person, while the orchestrator is held and answers no query.
func TestTurnOfAnUnchangedTeamAsksTheOrchestratorNothing(t *testing.T) {
	for _, tc := range rosterSections {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts...)
			dev := h.spawnAgent(h.config("@Dev", "Developer"))
			h.srv.Model("@Dev").Enqueue(final(), final())
			turn := final(out(agent.Request, "@Dev", "Build it"), out(agent.Response, "@Human", "on it"))
			h.srv.Model(tc.model).Enqueue(turn, turn)
			h.say(h.manager, agent.Request, "one")
			h.expectHuman()
			h.waitProcessed(dev, h.sub.sentTo("@Dev")[0].ID) // @Dev's own turn has read the team too

			release := h.holdOrchestrator()
			if err := agent.Say(actortest.Context(t), h.human, h.manager, agent.NewRequest("two")); err != nil {
				t.Fatal(err)
			}
			if got := h.expectHuman(); got.Content != "on it" {
				t.Fatalf("human got %q", got.Content)
			}
			release()
			h.sub.waitFor(t, "the second request to @Dev", func([]message.Message) bool { return len(h.sub.sentTo("@Dev")) == 2 })
			h.waitProcessed(dev, h.sub.sentTo("@Dev")[1].ID)
			if errs := of[*message.ErrorMessage](h.sub, nil); len(errs) != 0 {
				t.Fatalf("errors: %+v", errs)
			}
		})
	}
}

// What a turn kept of its team is read again once the team changed: a
// member hired between two turns is routed to by the next one; a member
// stopped between two turns is not (the model is told no member has that
// name and asked again, as for any unknown name); a card registered
// between two turns that takes a role out of the agent's routes_to makes
// the next request to that role's member refused.
func TestRoutingSeesTheTeamChangedBetweenTurns(t *testing.T) {
	for _, tc := range rosterSections {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts...)
			dev := h.spawnAgent(h.config("@Dev", "Developer"))
			h.srv.Model("@Dev").Enqueue(final())
			h.srv.Model(tc.model).Enqueue(final(out(agent.Request, "@Dev", "Build it"), out(agent.Response, "@Human", "one")))
			h.say(h.manager, agent.Request, "one")
			h.expectHuman()
			h.waitProcessed(dev, h.sub.sentTo("@Dev")[0].ID)

			// Hired between two turns: routed to.
			qa := h.spawnAgent(h.config("@QA2", "QA"))
			h.srv.Model("@QA2").Enqueue(final())
			h.srv.Model(tc.model).Enqueue(final(out(agent.Request, "@QA2", "Test it"), out(agent.Response, "@Human", "two")))
			h.say(h.manager, agent.Request, "two")
			if got := h.expectHuman(); got.Content != "two" {
				t.Fatalf("human got %q", got.Content)
			}
			h.barrier()
			if sent := h.sub.sentTo("@QA2"); len(sent) != 1 || sent[0].Content != "Test it" {
				t.Fatalf("to the member hired between the turns: %+v", sent)
			}
			h.waitProcessed(qa, h.sub.sentTo("@QA2")[0].ID)

			// Stopped between two turns: not routed to; the model is asked again.
			if err := h.sys.Stop(actortest.Context(t), dev); err != nil {
				t.Fatal(err)
			}
			h.srv.Model(tc.model).Enqueue(final(out(agent.Request, "@Dev", "More")), final(out(agent.Response, "@Human", "three")))
			h.say(h.manager, agent.Request, "three")
			if got := h.expectHuman(); got.Content != "three" {
				t.Fatalf("human got %q", got.Content)
			}
			h.barrier()
			if sent := h.sub.sentTo("@Dev"); len(sent) != 1 {
				t.Fatalf("the stopped @Dev was sent %d messages, want the one before its stop", len(sent))
			}
			if !strings.Contains(h.lastUser(tc.model, 3), "no team member is named @Dev") {
				t.Fatalf("the model was not told @Dev is gone: %q", h.lastUser(tc.model, 3))
			}

			// A card registered between two turns: the manager's routes_to
			// no longer has QA, so work for @QA2 is refused.
			mcfg := h.config("@Manager", "Manager")
			card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind, Description: "Manager of the team",
				Skills: []string{"manager"}, Config: mcfg, RoutesTo: []string{"Developer"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := h.team.Register(actortest.Context(t), card); err != nil {
				t.Fatal(err)
			}
			h.srv.Model(tc.model).Enqueue(final(out(agent.Response, "@Human", "four"), out(agent.Request, "@QA2", "Again")))
			h.say(h.manager, agent.Request, "four")
			if got := h.expectHuman(); got.Content != "four" {
				t.Fatalf("human got %q", got.Content)
			}
			waitFrom[*message.ErrorMessage](h, h.manager, "the refusal")
			if errs := of[*message.ErrorMessage](h.sub, h.manager); len(errs) != 1 || !strings.Contains(errs[0].Content, "routes_to allows only Developer") {
				t.Fatalf("errors %+v, want one refusal naming routes_to", errs)
			}
			if sent := h.sub.sentTo("@QA2"); len(sent) != 1 {
				t.Fatalf("@QA2 was sent %d messages after the refusal, want 1", len(sent))
			}
		})
	}
}
