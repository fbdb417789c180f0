package teamtool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// register adds cards to e's catalog: c with the given role, hireable or
// not, routing to routes.
func (e *env) register(role string, hireable bool, routes ...string) {
	e.t.Helper()
	card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: workerKind, Description: role + " of the team",
		Config: &actor.Config{Role: role}, CanBeHired: hireable, RoutesTo: routes})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.team.Register(e.ctx, card); err != nil {
		e.t.Fatal(err)
	}
}

// A hire needs a hireable card, and a role the hirer's own card routes to;
// the refusal names the rule and hires nothing.
func TestHireRefusesUnhireableAndUnroutedRoles(t *testing.T) {
	e := newEnv(t, teamtool.New())
	e.register("Auditor", false)
	e.register("Manager", false, "Developer", "Auditor") // the owner's own card

	_, err := e.hire("Auditor")
	if msg := retryMessage(t, err); msg != `role "Auditor" cannot be hired: its card does not allow hiring (can_be_hired is false)` {
		t.Errorf("hire of an unhireable card: %q", msg)
	}
	_, err = e.hire("Data Scientist", "@Dana")
	if msg := retryMessage(t, err); msg != "you (@Manager, role Manager) cannot hire a Data Scientist: your card's routes_to allows only Developer, Auditor" {
		t.Errorf("hire outside routes_to: %q", msg)
	}
	if n := len(e.children()); n != 0 {
		t.Fatalf("%d children after refused hires, want none", n)
	}
	if m, _ := e.team.Member(e.ctx, "@Dana"); m != nil {
		t.Fatal("a refused hire's name joined the roster")
	}
	if _, err := e.hire("Developer", "@Dana"); err != nil { // the refused name was released
		t.Fatalf("hire within the rules: %v", err)
	}

	// hire_members: the hired, the unknown and the refused, each said once.
	_, err = e.call("hire_members", map[string]any{"roles": []string{"Developer", "Auditor", "Astronaut", "Auditor"}})
	msg := retryMessage(t, err)
	for _, want := range []string{"Members hired: [@Developer", "Unknown roles: Astronaut. Available roles: ", "can_be_hired is false"} {
		if !strings.Contains(msg, want) {
			t.Errorf("hire_members error %q lacks %q", msg, want)
		}
	}
	if strings.Count(msg, "can_be_hired") != 1 {
		t.Errorf("hire_members repeats a refusal: %q", msg)
	}
}

// An owner whose role has no card in the catalog (a member the program
// spawned) may hire any hireable role; a card with an empty routes_to
// routes to any role.
func TestHireUnrestrictedWithoutOwnCardOrRoutes(t *testing.T) {
	e := newEnv(t, teamtool.New())
	if _, err := e.hire("Data Scientist"); err != nil {
		t.Fatalf("owner without a card: %v", err)
	}
	e.register("Manager", false)
	if _, err := e.hire("Developer"); err != nil {
		t.Fatalf("owner whose card has an empty routes_to: %v", err)
	}
}

// OnHire and OnFire run on the owner's goroutine after each hire and fire,
// from the commands and the model tools alike; a failed hire calls
// nothing.
func TestHireAndFireHooks(t *testing.T) {
	var events []string // appended on the owner's goroutine, read after its calls returned
	card := teamtool.New()
	card.OnHire = func(ctx context.Context, a *message.Address) {
		if ctx.Err() != nil || !a.IsAlive() {
			t.Errorf("OnHire(%s): ctx %v, alive %v", a.Name(), ctx.Err(), a.IsAlive())
		}
		events = append(events, "hire "+a.Name()+" "+a.Role())
	}
	card.OnFire = func(ctx context.Context, a *message.Address) {
		events = append(events, "fire "+a.Name())
	}
	e := newEnv(t, card)
	if _, err := e.hire("Developer", "@Ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hire("Astronaut"); err == nil {
		t.Fatal("hire of an unknown role succeeded")
	}
	if _, err := e.call("hire_members", map[string]any{"roles": []string{"Data Scientist"}}); err != nil {
		t.Fatal(err)
	}
	ds := e.children()
	if len(ds) != 2 {
		t.Fatalf("children %v, want two", ds)
	}
	if _, err := e.cmd("fire_member", "@Ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call("fire_members", map[string]any{"names": []string{ds[1].Name(), "@Nobody"}}); err == nil {
		t.Fatal("fire_members with an unknown name did not say so")
	}
	// The hooks ran inside the owner's calls, which have all returned.
	want := []string{"hire @Ada Developer", "hire " + ds[1].Name() + " Data Scientist", "fire @Ada", "fire " + ds[1].Name()}
	if strings.Join(events, "|") != strings.Join(want, "|") {
		t.Fatalf("hook calls %q, want %q", events, want)
	}
}
