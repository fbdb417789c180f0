// Dynamic agents: children spawned at run time.
//
//	go run ./examples/03_dynamic_agents
//
// A manager spawns one worker when it starts (OnStart) and more when asked
// to (c.Spawn in a handler). Children join their parent's team, so the
// roster shows them all. The manager spreads tasks over its workers and
// collects their reports.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Hire asks a manager to spawn N more workers.
type Hire struct {
	message.Base
	N int `json:"n"`
}

// Assign hands tasks to a manager, to spread over its workers.
type Assign struct {
	message.Base
	Tasks []string `json:"tasks"`
}

// Task is one unit of work for a worker.
type Task struct {
	message.Base
	Text string `json:"text"`
}

// TaskDone is a worker's report.
type TaskDone struct {
	message.Base
	Worker string `json:"worker"`
	Parent string `json:"parent"`
	Result string `json:"result"`
}

// Manager owns its workers: its state (workers, pending, reports) is only
// ever touched on its own goroutine, so it needs no lock.
type Manager struct {
	actor.Base
	workers []*message.Address
	pending int
	reports []*TaskDone
	done    chan<- []*TaskDone
}

func (m *Manager) hire(c *actor.Context) error {
	name := fmt.Sprintf("worker-%d", len(m.workers)+1)
	w, err := c.Spawn(&Worker{}, &actor.Config{Name: name, Role: "Worker"})
	if err != nil {
		return err
	}
	m.workers = append(m.workers, w)
	return nil
}

// OnStart runs on the manager's goroutine before its first message: the
// place to spawn the children it always has.
func (m *Manager) OnStart(c *actor.Context) error { return m.hire(c) }

func (m *Manager) Receive(c *actor.Context, msg any) (any, error) {
	switch msg := msg.(type) {
	case *Hire:
		for range msg.N {
			if err := m.hire(c); err != nil {
				return nil, err
			}
		}
		return len(m.workers), nil
	case *Assign:
		for i, t := range msg.Tasks {
			if err := c.Send(m.workers[i%len(m.workers)], &Task{Text: t}); err != nil {
				return nil, err
			}
			m.pending++
		}
		return nil, nil
	case *TaskDone:
		m.reports = append(m.reports, msg)
		if m.pending--; m.pending == 0 {
			m.done <- m.reports
			m.reports = nil
		}
		return nil, nil
	}
	return nil, actor.ErrUnhandled
}

// Worker does a task and reports to the task's sender.
type Worker struct{ actor.Base }

func (*Worker) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *Task:
		return nil, c.Send(c.Sender(), &TaskDone{
			Worker: c.Self().Name(),
			Parent: c.Parent().Name(),
			Result: strings.ToUpper(m.Text),
		})
	}
	return nil, actor.ErrUnhandled
}

func run(ctx context.Context, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { err = errors.Join(err, shutdown(sys)) }()
	team, err := orchestrator.New(sys)
	if err != nil {
		return err
	}
	done := make(chan []*TaskDone, 1)
	manager, err := team.Spawn(ctx, &Manager{done: done}, &actor.Config{Name: "manager", Role: "Manager"})
	if err != nil {
		return err
	}

	// An ask returns once the handler has run, so the new workers are in
	// the team by then (and OnStart ran before the first message).
	n, err := sys.Ask(ctx, manager, &Hire{N: 2})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "the manager has", n, "workers")
	members, err := team.Members(ctx)
	if err != nil {
		return err
	}
	for _, m := range members {
		fmt.Fprintf(out, "member %s: role %s, in the team: %v\n", m.Name(), m.Role(), m.TeamID() == team.ID())
	}

	if err := sys.Tell(manager, &Assign{Tasks: []string{"alpha", "beta", "gamma"}}); err != nil {
		return err
	}
	var reports []*TaskDone
	select {
	case reports = <-done:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the reports: %w", ctx.Err())
	}
	// Workers run in parallel: reports arrive in any order. Sort them.
	slices.SortFunc(reports, func(a, b *TaskDone) int { return strings.Compare(a.Worker, b.Worker) })
	for _, r := range reports {
		fmt.Fprintf(out, "%s (child of %s): %s\n", r.Worker, r.Parent, r.Result)
	}
	return nil
}

// shutdown stops every agent and joins every goroutine of the system,
// giving up after five seconds.
func shutdown(sys *actor.System) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sys.Shutdown(ctx)
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dynamic agents:", err)
		os.Exit(1)
	}
}
