package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// address stands in for an actor address: a native value with a String form
// (`<ActorAddress <role> <name> (<agent_id>)>`, as in akgentic).
type address struct{ Role, Name, ID string }

func (a address) String() string {
	return fmt.Sprintf("<ActorAddress %s %s (%s)>", a.Role, a.Name, a.ID)
}

// errRetry stands in for the agent's retry-kind error (what hire_member returns
// for an unknown role).
var errRetry = errors.New("retry")

// team is a fake TeamTool/PlanningTool: it records every hire, so tests can
// assert that nothing was invoked.
type team struct {
	mu    sync.Mutex
	hired []address
	calls []string // "search_planning query=… mode=… top_k=…"
}

func (tm *team) hire(role, name string) (address, error) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if role != "Developer" && role != "QA" {
		return address{}, fmt.Errorf("%w: no role %q; available roles: Developer, QA", errRetry, role)
	}
	if name == "" {
		name = fmt.Sprintf("@%s%d", role, 100+len(tm.hired))
	}
	a := address{Role: role, Name: name, ID: fmt.Sprintf("id-%d", len(tm.hired))}
	tm.hired = append(tm.hired, a)
	return a, nil
}

func (tm *team) record(s string) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.calls = append(tm.calls, s)
}

func (tm *team) reset() {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.hired, tm.calls = nil, nil
}

func (tm *team) hires() []address {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return slices.Clone(tm.hired)
}

// teamCommands are the TeamTool commands of the README table.
func (tm *team) teamCommands() []*Command {
	role := NewParam[string]("role", "Role to hire, e.g. Developer")
	name := NewParam[string]("name", "Name for the new member, e.g. @Ada").Optional()
	hire := New("hire_member", "Hire a new team member by role.\nReturns the new member's address.",
		func(_ context.Context, in Args) (address, error) {
			n, _ := name.Lookup(in)
			return tm.hire(role.Get(in), n)
		}, role, name)

	who := NewParam[string]("name", "Name of the member to fire")
	fire := New("fire_member", "Fire a member by name.", func(_ context.Context, in Args) (string, error) {
		return "Member " + who.Get(in) + " has been fired.", nil
	}, who)

	members := New("team_members", "Current team roster.", func(context.Context, Args) (string, error) {
		var b strings.Builder
		b.WriteString("Team members:")
		for _, a := range tm.hires() {
			fmt.Fprintf(&b, "\n%s (role: %s)", a.Name, a.Role)
		}
		return b.String(), nil
	})
	return []*Command{hire, fire, members}
}

// planningCommands are the PlanningTool commands, with the wide signature of
// search_planning.
func (tm *team) planningCommands() []*Command {
	id := NewParam[int]("task_id", "Task ID")
	get := New("get_planning_task", "Single planning task by ID.", func(_ context.Context, in Args) (string, error) {
		if id.Get(in) == 2 {
			return "Task 2: fix #urgent bug [pending]", nil
		}
		return "No task with that ID.", nil
	}, id)

	query := NewParam[string]("query", "Text to look for").Optional()
	mode := Enum("mode", "Search mode", "keyword", "vector", "hybrid").Default("keyword")
	status := Enum("status", "Task status", "pending", "started", "completed", "abort").Optional()
	owner := NewParam[string]("owner", "Owner name; empty matches unassigned").Optional()
	creator := NewParam[string]("creator", "Creator name").Optional()
	topK := NewParam[int]("top_k", "Maximum results").Default(10)
	threshold := NewParam[float64]("score_threshold", "Minimum score").Default(0.5)
	search := New("search_planning", "Search the shared task board.", func(_ context.Context, in Args) (string, error) {
		q, _ := query.Lookup(in)
		s, _ := status.Lookup(in)
		o, hasOwner := owner.Lookup(in)
		c, _ := creator.Lookup(in)
		tm.record(fmt.Sprintf("search_planning query=%q mode=%s status=%q owner=%q/%v creator=%q top_k=%d score_threshold=%g",
			q, mode.Get(in), s, o, hasOwner, c, topK.Get(in), threshold.Get(in)))
		var out []string
		for _, task := range []string{"Task 1: fix #urgent bug", "Task 2: docs"} {
			if strings.Contains(task, q) {
				out = append(out, task)
			}
		}
		return strings.Join(out, "\n"), nil
	}, query, mode, status, owner, creator, topK, threshold)

	summary := New("planning_summary", "Full team planning text.", func(context.Context, Args) (string, error) {
		return "No current team planning.", nil
	})
	return []*Command{summary, get, search}
}

// agentCommands are BaseAgent's own extras, plus commands that fail in
// each way a handler can.
func agentCommands() []*Command {
	compact := New("compact", "Compact the conversation context.", func(context.Context, Args) (string, error) {
		return "Nothing to compact.", nil
	})
	clear := New("clear", "Clear the conversation context.", func(context.Context, Args) (string, error) {
		return "Cleared 0 message(s).", nil
	})
	return []*Command{compact, clear}
}

// kitCommands exercise every parameter type, failures and rendering.
func kitCommands() []*Command {
	text := NewParam[string]("text", "Note text")
	note := New("note", "Echo a note.", func(_ context.Context, in Args) (string, error) {
		return "note: " + text.Get(in), nil
	}, text)

	n := NewParam[int]("n", "an int")
	f := NewParam[float64]("f", "a float").Default(1.5)
	b := NewParam[bool]("b", "a bool").Default(false)
	d := NewParam[time.Duration]("d", "a duration").Default(30 * time.Second)
	l := NewParam[[]string]("l", "a list").Default([]string{"x"})
	typed := New("typed", "Echo every typed value.", func(_ context.Context, in Args) (string, error) {
		list := l.Get(in)
		list = append(list[:0:0], list...)
		if got := l.Get(in); len(got) > 0 {
			got[0] = "changed" // a handler changing its list must not change the default
		}
		return fmt.Sprintf("n=%d f=%g b=%v d=%s l=%q", n.Get(in), f.Get(in), b.Get(in), d.Get(in), list), nil
	}, n, f, b, d, l)

	boom := New("boom", "Always panics.", func(context.Context, Args) (string, error) {
		panic("kaboom")
	})
	fail := New("fail", "Always fails.", func(context.Context, Args) (string, error) {
		return "", errors.New("disk on fire")
	})
	stray := NewParam[int]("stray", "not declared on the command that reads it")
	undeclared := New("undeclared", "Reads a parameter it did not declare.", func(_ context.Context, in Args) (int, error) {
		return stray.Get(in), nil
	})
	pair := New("pair", "Returns a struct, rendered as JSON.", func(context.Context, Args) (struct {
		A string `json:"a"`
		B int    `json:"b"`
	}, error) {
		return struct {
			A string `json:"a"`
			B int    `json:"b"`
		}{"<x&y>", 2}, nil
	})
	internal := New("_expand_media_refs", "Internal: expand media references.", func(_ context.Context, in Args) ([]string, error) {
		return []string{text.Get(in)}, nil
	}, text)
	return []*Command{note, typed, boom, fail, undeclared, pair, internal}
}

// discard is a logger for tests that provoke panics.
var discard = slog.New(slog.DiscardHandler)

// newTestRegistry builds the registry an agent with TeamTool and
// PlanningTool would have, plus the test kit.
func newTestRegistry(t testing.TB) (*Registry, *team) {
	t.Helper()
	tm := &team{}
	r := NewRegistry()
	r.Logger = discard
	for _, step := range []struct {
		owner string
		cmds  []*Command
	}{
		{"TeamTool", tm.teamCommands()},
		{"PlanningTool", tm.planningCommands()},
		{"BaseAgent", agentCommands()},
		{"Kit", kitCommands()},
	} {
		if err := r.Register(step.owner, step.cmds...); err != nil {
			t.Fatalf("Register(%s): %v", step.owner, err)
		}
	}
	return r, tm
}
