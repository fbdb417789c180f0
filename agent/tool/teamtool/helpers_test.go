package teamtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// worker is the agent kind of every test card: it handles nothing.
type worker struct{}

func (*worker) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

const workerKind = "teamtool_test.worker"

func init() { actor.RegisterKind(workerKind, func() actor.Actor { return &worker{} }) }

// catalog is the test catalog: a role with skills, one with a space in its
// name and none.
func catalog(t testing.TB) []*orchestrator.AgentCard {
	t.Helper()
	var out []*orchestrator.AgentCard
	for _, c := range []orchestrator.AgentCard{
		{AgentClass: workerKind, Description: "Writes code", Skills: []string{"go", "review"},
			Config: &actor.Config{Name: "template", Role: "Developer"}, CanBeHired: true},
		{AgentClass: workerKind, Description: "Analyses data",
			Config: &actor.Config{Role: "Data Scientist"}, CanBeHired: true},
	} {
		card, err := orchestrator.NewAgentCard(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, card)
	}
	return out
}

// env is a team with the test catalog and an owner agent, "@Manager", with
// a TeamTool card attached.
type env struct {
	t     *testing.T
	ctx   context.Context
	sys   *actor.System
	team  *orchestrator.Team
	owner *message.Address
	o     *tool.Owner
	caps  tool.Capabilities
}

// newSystem starts an actor system shut down when the test ends.
func newSystem(t *testing.T) *actor.System {
	sys := actor.NewSystem(actor.SystemConfig{Logger: actortest.NewLogCapture(t).Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys) })
	return sys
}

// newTeam starts a team in sys, with the given catalog.
func newTeam(t *testing.T, sys *actor.System, cards ...*orchestrator.AgentCard) *orchestrator.Team {
	t.Helper()
	team, err := orchestrator.New(sys)
	if err != nil {
		t.Fatal(err)
	}
	if len(cards) > 0 {
		if err := team.Register(actortest.Context(t), cards...); err != nil {
			t.Fatal(err)
		}
	}
	return team
}

func newEnv(t *testing.T, card *teamtool.Card) *env {
	t.Helper()
	e := &env{t: t, ctx: actortest.Context(t), sys: newSystem(t)}
	e.team = newTeam(t, e.sys, catalog(t)...)
	owner, err := e.team.Spawn(e.ctx, &worker{}, &actor.Config{Name: "@Manager", Role: "Manager"})
	if err != nil {
		t.Fatal(err)
	}
	e.owner = owner
	caps, err := e.attach(card, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.caps = caps
	return e
}

// attach attaches card to the owner as an agent does (cards.Attach), with the owner's
// team, or with team when it is not nil.
func (e *env) attach(card tool.Card, team *orchestrator.Team) (tool.Capabilities, error) {
	return proxy.Ask(e.ctx, e.owner, func(c *actor.Context, _ actor.Actor) (tool.Capabilities, error) {
		o := &tool.Owner{Agent: c, Team: team, Registry: command.NewRegistry()}
		if team == nil {
			o.Team = orchestrator.Of(c.Orchestrator())
		}
		caps, err := cards.Attach(e.ctx, o, []tool.Card{card})
		if err == nil {
			e.o = o
		}
		return caps, err
	})
}

// on runs fn on the owner's goroutine, as the agent runs its commands.
func on[R any](e *env, fn func() (R, error)) (R, error) {
	e.t.Helper()
	return proxy.Ask(e.ctx, e.owner, func(*actor.Context, actor.Actor) (R, error) { return fn() })
}

// hire calls hire_member through the typed surface, as the agent's router
// does.
func (e *env) hire(args ...any) (*message.Address, error) {
	return on(e, func() (*message.Address, error) {
		return command.Call[*message.Address](e.ctx, e.o.Registry, "hire_member", args...)
	})
}

// cmd calls a string command through the typed surface.
func (e *env) cmd(name string, args ...any) (string, error) {
	return on(e, func() (string, error) { return command.Call[string](e.ctx, e.o.Registry, name, args...) })
}

// dispatch runs typed text, as a person's slash command.
func (e *env) dispatch(text string) string {
	e.t.Helper()
	s, err := on(e, func() (string, error) { return e.o.Registry.Dispatch(e.ctx, text) })
	if err != nil {
		e.t.Fatalf("dispatch %q: %v", text, err)
	}
	return s
}

// tool returns the attached model tool called name, or nil.
func (e *env) tool(name string) *llm.Tool { return findTool(e.caps, name) }

func findTool(caps tool.Capabilities, name string) *llm.Tool {
	for _, t := range caps.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// call calls the model tool called name with args encoded as JSON, on the
// owner's goroutine (the tools are Serial).
func (e *env) call(name string, args any) (string, error) {
	e.t.Helper()
	tl := e.tool(name)
	if tl == nil {
		e.t.Fatalf("no tool %s", name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	v, err := on(e, func() (any, error) { return tl.Call(e.ctx, raw) })
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// names returns the names of the team's roster.
func (e *env) names() []string {
	e.t.Helper()
	members, err := e.team.Members(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, m := range members {
		out = append(out, m.Name())
	}
	return out
}

// children returns the owner's children.
func (e *env) children() []*message.Address {
	e.t.Helper()
	v, err := proxy.Ask(e.ctx, e.owner, func(c *actor.Context, _ actor.Actor) ([]*message.Address, error) { return c.Children(), nil })
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// waitStopped waits for the actor at addr to stop.
func (e *env) waitStopped(addr *message.Address) {
	e.t.Helper()
	select {
	case <-actor.Done(addr):
	case <-e.ctx.Done():
		e.t.Fatalf("%s did not stop", addr)
	}
}

// retryMessage returns err's retry message, failing t when err is not a
// retry error.
func retryMessage(t *testing.T, err error) string {
	t.Helper()
	var r *llm.RetryError
	if !errors.As(err, &r) {
		t.Fatalf("want a retry error, got %v", err)
	}
	return r.Message
}

// fixed returns a Rand that always answers n.
func fixed(n int) func(int) int { return func(int) int { return n } }
