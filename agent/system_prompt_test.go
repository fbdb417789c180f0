package agent_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// managerTurn runs one manager turn answered to @Human and returns the
// system block of its request.
func (h *harness) managerTurn(prompt string) string {
	h.t.Helper()
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "ok")))
	h.say(h.manager, agent.Request, prompt)
	h.expectHuman()
	reqs := h.srv.RequestsFor("@Manager")
	return strings.Join(reqs[len(reqs)-1].SystemTexts(), "\n")
}

// The roster section shows the team as it is at the start of each run,
// whoever changed it: a member another agent hired is on the manager's
// next prompt, and gone from the one after it was fired.
func TestRosterShowsOthersHires(t *testing.T) {
	h := newHarness(t)
	qa := h.spawnAgent(h.config("@QA", "QA"))
	if sys := h.managerTurn("one"); !strings.Contains(sys, "@QA (role: QA)") || strings.Contains(sys, "(role: Developer)") {
		t.Fatalf("first roster:\n%s", sys)
	}
	h.srv.Model("@QA").Enqueue(final(out(agent.Request, "Developer", "Write the tests")))
	h.say(qa, agent.Request, "We need tests")
	dev := h.memberMatching(`^@Developer\d{3}$`)
	h.waitProcessed(dev, h.sub.sentTo(dev.Name())[0].ID)
	if sys := h.managerTurn("two"); !strings.Contains(sys, dev.Name()+" (role: Developer)") {
		t.Fatalf("the QA's hire %s is not on the manager's roster:\n%s", dev.Name(), sys)
	}
	h.say(qa, agent.Request, "/fire_member "+dev.Name())
	h.expectHuman() // the command's answer
	select {        // its Stop record is in the log before Done closes
	case <-actor.Done(dev):
	case <-time.After(actortest.Timeout):
		t.Fatalf("%s did not stop", dev.Name())
	}
	if sys := h.managerTurn("three"); strings.Contains(sys, dev.Name()) {
		t.Fatalf("the fired %s is still on the manager's roster:\n%s", dev.Name(), sys)
	}
}

// The roles section shows the catalog as it is at the start of each run: a
// role registered between two turns appears, and a card replaced for an
// existing role shows its new description and skills.
func TestRolesShowCatalogChanges(t *testing.T) {
	h := newHarness(t)
	if sys := h.managerTurn("one"); !strings.Contains(sys, "QA: QA of the team (Skills: qa)") || strings.Contains(sys, "Designer") {
		t.Fatalf("first roles:\n%s", sys)
	}
	var cards []*orchestrator.AgentCard
	for role, desc := range map[string]string{"Designer": "Draws the screens", "QA": "Quality gate"} {
		card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind, Description: desc,
			Skills: []string{"review", strings.ToLower(role)}, Config: h.config("@"+role, role), CanBeHired: true})
		if err != nil {
			t.Fatal(err)
		}
		cards = append(cards, card)
	}
	if err := h.team.Register(actortest.Context(t), cards...); err != nil {
		t.Fatal(err)
	}
	sys := h.managerTurn("two")
	for _, want := range []string{"Designer: Draws the screens (Skills: review, designer)", "QA: Quality gate (Skills: review, qa)"} {
		if !strings.Contains(sys, want) {
			t.Fatalf("roles after the catalog change lack %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "QA of the team") {
		t.Fatalf("the replaced QA card is still shown:\n%s", sys)
	}
}

// memberMatching returns the team member whose name matches pattern.
func (h *harness) memberMatching(pattern string) *message.Address {
	h.t.Helper()
	members, err := h.team.Members(actortest.Context(h.t))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, m := range members {
		if regexp.MustCompile(pattern).MatchString(m.Name()) {
			return m
		}
	}
	h.t.Fatalf("no member matching %s in %v", pattern, members)
	return nil
}

// "@Name" is routed to the member the run's roster showed only while that
// member is alive; one that stopped during the model call is looked up
// again: gone, the model is told and asked again; replaced by a new
// member of that name, the new one gets it.
func TestRouteAfterTheRosterChanged(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		t.Run(map[bool]string{false: "stopped", true: "replaced"}[replaced], func(t *testing.T) {
			h := newHarness(t)
			old := h.spawnAgent(h.config("@Dev", "Developer"))
			var fresh *message.Address
			step := final(out(agent.Request, "@Dev", "Build it"), out(agent.Response, "@Human", "done"))
			step.Check = func(r *llmtest.Request) error { // on the server, while the manager waits
				if !strings.Contains(strings.Join(r.SystemTexts(), "\n"), "@Dev (role: Developer)") {
					return errors.New("@Dev is not on the roster")
				}
				if err := h.sys.Stop(actortest.Context(t), old); err != nil {
					return err
				}
				if !replaced {
					return nil
				}
				var err error
				fresh, err = h.team.Spawn(actortest.Context(t), &agent.BaseAgent{Env: h.env}, h.config("@Dev", "Developer"))
				return err
			}
			h.srv.Model("@Manager").Enqueue(step)
			if !replaced { // asked again: @Dev is gone
				h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "done")))
			}
			h.say(h.manager, agent.Request, "go")
			if got := h.expectHuman(); got.Content != "done" {
				t.Fatalf("human got %q", got.Content)
			}
			h.barrier()
			sent := h.sub.sentTo("@Dev")
			warns := of[*message.WarningMessage](h.sub, h.manager)
			if !replaced {
				if len(sent) != 0 || len(warns) != 1 || !strings.Contains(warns[0].Content, "no team member is named @Dev") || !strings.Contains(h.lastUser("@Manager", 1), "no team member is named @Dev") {
					t.Fatalf("sent %d to @Dev, warnings %+v; want none sent, one warning, and the model told", len(sent), warns)
				}
				return
			}
			if len(warns) != 0 || len(sent) != 1 || sent[0].Recipient.AgentID() != fresh.AgentID() {
				t.Fatalf("sent %+v, warnings %+v; want it sent to the new @Dev", sent, warns)
			}
			h.waitProcessed(fresh, sent[0].ID)
		})
	}
}
