package planning_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// owner is a bare team member the cards are attached to.
type owner struct{ actor.Base }

func (*owner) Receive(*actor.Context, any) (any, error) { return nil, nil }

func init() { actor.RegisterKind("planning_test.owner", func() actor.Actor { return &owner{} }) }

func spawnOwner(t testing.TB, team *orchestrator.Team, name string) *message.Address {
	t.Helper()
	addr, err := team.Spawn(actortest.Context(t), &owner{}, &actor.Config{Name: name, Role: "Member"})
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// agent is an owner with cards attached.
type agent struct {
	t    testing.TB
	addr *message.Address
	reg  *command.Registry
	caps tool.Capabilities
}

// attach attaches cs to the owner at addr, on its goroutine, as an agent
// does.
func attach(t testing.TB, addr *message.Address, cs ...tool.Card) (*agent, error) {
	t.Helper()
	ctx := actortest.Context(t)
	a := &agent{t: t, addr: addr, reg: command.NewRegistry()}
	err := proxy.Do(ctx, addr, func(c *actor.Context, _ actor.Actor) error {
		o := &tool.Owner{Agent: c, Team: orchestrator.Of(c.Orchestrator()), Registry: a.reg}
		var err error
		a.caps, err = cards.Attach(ctx, o, cs)
		return err
	})
	return a, err
}

func mustAttach(t testing.TB, addr *message.Address, cs ...tool.Card) *agent {
	t.Helper()
	a, err := attach(t, addr, cs...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// onOwner runs fn on the owner's goroutine, as commands and system prompts
// run.
func (a *agent) onOwner(fn func(ctx context.Context) string) string {
	a.t.Helper()
	ctx := actortest.Context(a.t)
	v, err := proxy.Ask(ctx, a.addr, func(*actor.Context, actor.Actor) (string, error) { return fn(ctx), nil })
	if err != nil {
		a.t.Fatal(err)
	}
	return v
}

// dispatch runs a slash command on the owner's goroutine.
func (a *agent) dispatch(text string) string {
	a.t.Helper()
	return a.onOwner(func(ctx context.Context) string {
		out, err := a.reg.Dispatch(ctx, text)
		if err != nil {
			return "dispatch error: " + err.Error()
		}
		return out
	})
}

// prompt evaluates the system-prompt sections on the owner's goroutine.
func (a *agent) prompt() string {
	a.t.Helper()
	return a.onOwner(func(ctx context.Context) string {
		var parts []string
		for _, p := range a.caps.SystemPrompts {
			parts = append(parts, p(ctx))
		}
		return strings.Join(parts, "\n---\n")
	})
}

func (a *agent) toolNames() []string {
	var names []string
	for _, tl := range a.caps.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func (a *agent) tool(name string) *llm.Tool {
	a.t.Helper()
	for _, tl := range a.caps.Tools {
		if tl.Name == name {
			return tl
		}
	}
	a.t.Fatalf("no tool %s among %v", name, a.toolNames())
	return nil
}

// call runs a tool from the calling goroutine, as the loop's parallel
// tool calls do.
func (a *agent) call(name, args string) (any, error) {
	a.t.Helper()
	return a.tool(name).Call(actortest.Context(a.t), json.RawMessage(args))
}

// mustCall runs a tool that must succeed with a string.
func (a *agent) mustCall(name, args string) string {
	a.t.Helper()
	v, err := a.call(name, args)
	if err != nil {
		a.t.Fatalf("%s(%s): %v", name, args, err)
	}
	s, ok := v.(string)
	if !ok {
		a.t.Fatalf("%s(%s) = %T %v, want a string", name, args, v, v)
	}
	return s
}

// retryText runs a tool that must fail with a retry error, and returns its
// text.
func (a *agent) retryText(name, args string) string {
	a.t.Helper()
	_, err := a.call(name, args)
	var r *llm.RetryError
	if !errors.As(err, &r) {
		a.t.Fatalf("%s(%s): error %v, want a retry error", name, args, err)
	}
	return r.Message
}

func (a *agent) commandNames() []string {
	var names []string
	for _, d := range a.reg.Descriptors() {
		if d.ToolCard == "PlanningTool" {
			names = append(names, d.Name)
		}
	}
	return names
}

// boards returns the members named #PlanningTool.
func boards(t testing.TB, team *orchestrator.Team) []*message.Address {
	t.Helper()
	members, err := team.Members(actortest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []*message.Address
	for _, m := range members {
		if m.Name() == "#PlanningTool" {
			out = append(out, m)
		}
	}
	return out
}

// recorder is a subscriber keeping the team's log.
type recorder struct {
	mu   sync.Mutex
	msgs []message.Message
}

func (r *recorder) OnMessage(m message.Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
}

// saved returns the log encoded and decoded, as a durable log gives it back.
func (r *recorder) saved(t testing.TB) []message.Message {
	t.Helper()
	r.mu.Lock()
	msgs := slices.Clone(r.msgs)
	r.mu.Unlock()
	return actortest.Reloaded(t, msgs)
}
