package agent_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// Routing to @Name keeps content and intent; the receiver's prompt names
// the sender; several outputs go in order.
func TestRouteToMembers(t *testing.T) {
	h := newHarness(t)
	dev := h.spawnAgent(h.config("@Developer", "Developer"))
	qa := h.spawnAgent(h.config("@QA1", "QA"))
	raw := "\n# Tests\n- write them *all* — ünïcödé ✓"
	h.srv.Model("@Manager").Enqueue(final(
		out(agent.Instruction, "@Developer", raw),
		out(agent.Request, "@QA1", "Check it"),
		out(agent.Response, "@Human", "On it"),
	))
	h.say(h.manager, agent.Request, "Go")
	if got := h.expectHuman(); got.Content != "On it" {
		t.Fatalf("human got %q", got.Content)
	}
	h.sync(dev)
	h.sync(qa)
	toDev := h.sub.sentTo("@Developer")
	if len(toDev) != 1 || toDev[0].Content != raw || toDev[0].Type != agent.Instruction {
		t.Fatalf("to @Developer: %+v", toDev)
	}
	var order []string
	for _, s := range of[*message.SentMessage](h.sub, h.manager) {
		order = append(order, s.Recipient.Name())
	}
	if strings.Join(order, ",") != "@Developer,@QA1,@Human" {
		t.Fatalf("send order %v", order)
	}
	h.waitProcessed(dev, toDev[0].ID)
	wantDev := "You received an instruction from @Manager. Carry out the task, then acknowledge to @Manager if requested.\n\n" + raw
	if u := h.lastUser("@Developer", 0); u != wantDev {
		t.Fatalf("developer prompt %q", u)
	}
	h.waitProcessed(qa, h.sub.sentTo("@QA1")[0].ID)
	if u := h.lastUser("@QA1", 0); !strings.HasPrefix(u, "You received a request from @Manager. Carry out the task, then respond to @Manager.") {
		t.Fatalf("qa prompt %q", u)
	}
}

// A bare role hires a member (child of the hirer, same team), which
// receives the message.
func TestHireByRole(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Request, "Developer", "Build login")))
	h.say(h.manager, agent.Request, "Need a login page")
	var dev *message.Address
	members, _ := h.team.Members(actortest.Context(t))
	for _, m := range members {
		if matched, _ := regexp.MatchString(`^@Developer\d{3}$`, m.Name()); matched {
			dev = m
		}
	}
	if dev == nil {
		t.Fatalf("no @DeveloperNNN in %v", members)
	}
	if dev.TeamID() != h.team.ID() {
		t.Fatal("hired member in another team")
	}
	kids, _ := proxy.Ask(actortest.Context(t), h.manager, func(c *actor.Context, _ actor.Actor) ([]*message.Address, error) { return c.Children(), nil })
	if k := kids; len(k) != 1 || !k[0].Equal(dev) {
		t.Fatalf("manager's children %v, want the hire", k)
	}
	got := h.sub.sentTo(dev.Name())
	if len(got) != 1 || got[0].Content != "Build login" {
		t.Fatalf("hire got %+v", got)
	}
	env, _ := proxy.Ask(actortest.Context(t), dev, func(_ *actor.Context, a *agent.BaseAgent) (*agent.Env, error) { return a.Env, nil })
	if env != h.env {
		t.Fatal("the hire did not inherit its hirer's Env")
	}
	h.waitProcessed(dev, got[0].ID)
	if n := len(h.srv.RequestsFor(dev.Name())); n != 1 {
		t.Fatalf("hire made %d model requests", n)
	}
}

// An output naming an unknown @Name is not sent at all: the model is told
// which names are unknown and which members exist, and its next answer is
// delivered. Nothing of the first answer reaches anyone; the log has a
// warning saying why.
func TestUnknownMemberIsGivenBackToTheModel(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(
		final(out(agent.Response, "@Human", "first"), out(agent.Request, "@Ghost", "x")),
		final(out(agent.Response, "@Human", "fixed")),
	)
	h.say(h.manager, agent.Request, "go")
	if got := h.expectHuman(); got.Content != "fixed" {
		t.Fatalf("human got %q, want the fixed answer only", got.Content)
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	fb := h.lastUser("@Manager", 1)
	for _, want := range []string{"None of your messages was sent", "no team member is named @Ghost", "@Human (Human)"} {
		if !strings.Contains(fb, want) {
			t.Errorf("the feedback lacks %q: %q", want, fb)
		}
	}
	if strings.Contains(fb, "@Manager (") {
		t.Errorf("the feedback lists the agent itself: %q", fb)
	}
	if n := len(of[*message.ErrorMessage](h.sub, h.manager)); n != 0 {
		t.Fatalf("%d ErrorMessages", n)
	}
	if warns := of[*message.WarningMessage](h.sub, h.manager); len(warns) != 1 || !strings.Contains(warns[0].Content, "@Ghost") || !strings.Contains(warns[0].Content, "asked again (retry 1 of 3)") {
		t.Fatalf("warnings %+v; want one saying @Ghost is unknown and the model is asked again", warns)
	}
	h.noHuman()
}

// When the model keeps naming an unknown member past its retries, the
// turn fails with an error naming it, and the person is told (not left
// waiting for an answer that will not come).
func TestUnknownMemberRetriesSpentTellsThePerson(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Otherwise(final(out(agent.Request, "@Ghost", "x")))
	h.say(h.manager, agent.Request, "go")
	told := h.expectHuman()
	if told.Type != agent.Notification || !strings.Contains(told.Content, "@Ghost, who is not in the team") || !strings.Contains(told.Content, "@Human (Human)") {
		t.Fatalf("the person was told %s %q", told.Type, told.Content)
	}
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	if errs := of[*message.ErrorMessage](h.sub, h.manager); !strings.Contains(errs[0].Content, "no team member is named @Ghost") {
		t.Fatalf("errors %+v", errs)
	}
	if n, want := len(h.srv.RequestsFor("@Manager")), agent.NewConfig("@M", "M").Runtime.Retries+1; n != want {
		t.Fatalf("%d model requests, want %d (the first and each retry)", n, want)
	}
}

// An unknown role fails the turn after what was already sent; the agent
// goes on.
func TestUnknownRoleFailsTheTurn(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(
		final(out(agent.Response, "@Human", "a"), out(agent.Request, "Astronaut", "b"), out(agent.Response, "@Human", "c")),
		final(out(agent.Response, "@Human", "next")),
	)
	h.say(h.manager, agent.Request, "go")
	if got := h.expectHuman(); got.Content != "a" {
		t.Fatalf("human got %q", got.Content)
	}
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	errs := of[*message.ErrorMessage](h.sub, h.manager)
	if len(errs) != 1 || !strings.Contains(errs[0].Content, "Astronaut") || !strings.Contains(errs[0].Content, "Developer") {
		t.Fatalf("errors %+v, want one naming Astronaut and the roles", errs)
	}
	h.say(h.manager, agent.Request, "again")
	if got := h.expectHuman(); got.Content != "next" {
		t.Fatalf("after the failure human got %q", got.Content)
	}
	h.noHuman()
}

// Work (a request or an instruction) handed to a member whose role the
// agent's card does not route to fails the turn with an error naming
// routes_to; what came before it was delivered, what comes after it is
// not. A notification goes anywhere, and answering the sender of the
// message being handled is never refused. The next turn runs.
func TestRouteRefusedOutsideRoutesTo(t *testing.T) {
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

// A bare role whose card is not hireable, or outside the hirer's
// routes_to, is not hired: the turn fails naming the rule.
func TestHireByRoleRefusedWhenNotHireable(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Request, "Manager", "help")))
	h.say(h.manager, agent.Request, "go")
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	if errs := of[*message.ErrorMessage](h.sub, h.manager); !strings.Contains(errs[0].Content, "can_be_hired is false") {
		t.Fatalf("error %q does not name can_be_hired", errs[0].Content)
	}
	if members, _ := h.team.Members(actortest.Context(t)); len(members) != 2 {
		t.Fatalf("members after a refused hire: %v", members)
	}
}

// With TeamTool's hire capability off, routing to a role fails with an
// error naming the missing command; @Name routing still works.
func TestRouteToARoleFailsWithoutHire(t *testing.T) {
	h := newHarness(t, withTools(&teamtool.Card{Hire: tool.Capability{Disabled: true}}))
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "hi"), out(agent.Request, "Developer", "x")))
	h.say(h.manager, agent.Request, "go")
	if r := h.expectHuman(); r.Content != "hi" {
		t.Fatalf("human got %q", r.Content)
	}
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	if e := of[*message.ErrorMessage](h.sub, h.manager)[0]; !strings.Contains(e.Content, "hire_member command not available") {
		t.Fatalf("error %q", e.Content)
	}
	v, _ := proxy.Ask(actortest.Context(t), h.manager, func(_ *actor.Context, a *agent.BaseAgent) (bool, error) {
		reg := a.Registry()
		return reg.Has("hire_member") || !reg.Has("fire_member"), nil
	})
	if v {
		t.Fatal("registry does not follow the TeamTool config")
	}
}
