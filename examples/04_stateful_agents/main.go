// Stateful agents: a typed config and a typed state, published to the team.
//
//	go run ./examples/04_stateful_agents
//
// actor.Agent[C, S] gives an agent a config of type C (the one it was
// spawned with) and a state of type S. Once observed, the state is
// published to the team whenever a turn changed it, so the team always
// knows every agent's latest state.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// CounterConfig is the counter's typed config: actor.Config (name, role)
// plus its own fields.
type CounterConfig struct {
	actor.Config
	MaxIncrement int    `json:"max_increment"`
	Prefix       string `json:"prefix"`
}

// CounterState is the counter's typed state.
type CounterState struct {
	Count   int      `json:"count"`
	History []string `json:"history"`
}

// Increment adds By to the count, clamped to the config's MaxIncrement.
type Increment struct {
	message.Base
	By int `json:"by"`
}

// ResetCount sets the count back to zero.
type ResetCount struct{ message.Base }

// Counter keeps a count and its history.
type Counter struct {
	actor.Agent[CounterConfig, CounterState]
}

// OnStart sets the first state and starts publishing it.
func (a *Counter) OnStart(c *actor.Context) error {
	if err := a.InitState(&CounterState{History: []string{}}); err != nil {
		return err
	}
	return a.ObserveState()
}

func (a *Counter) Receive(c *actor.Context, msg any) (any, error) {
	cfg, s := a.Config(), a.State()
	prefix := "[" + cfg.Prefix + "] "
	switch m := msg.(type) {
	case *Increment:
		by := min(m.By, cfg.MaxIncrement)
		s.Count += by // a direct change: published at the end of the turn
		entry := fmt.Sprintf("%s+%d", prefix, by)
		if by != m.By {
			entry += fmt.Sprintf(" (asked %d, max %d)", m.By, cfg.MaxIncrement)
		}
		s.History = append(s.History, entry)
		return s.Count, nil
	case *ResetCount:
		// UpdateState merges fields (by JSON name) into a new state and
		// publishes it at once.
		if err := a.UpdateState(map[string]any{"count": 0, "history": append(s.History, prefix+"reset")}); err != nil {
			return nil, err
		}
		return a.State().Count, nil
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
	// Spawn with the typed config: the counter reads it with a.Config().
	counter, err := team.Spawn(ctx, &Counter{}, &CounterConfig{
		Config:       actor.Config{Name: "counter", Role: "Counter"},
		MaxIncrement: 5,
		Prefix:       "DEMO",
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "counter with max increment 5")

	steps := []message.Message{&Increment{By: 5}, &Increment{By: 3}, &Increment{By: 10}, &ResetCount{}, &Increment{By: 10}}
	for _, m := range steps {
		n, err := sys.Ask(ctx, counter, m)
		if err != nil {
			return err
		}
		if inc, ok := m.(*Increment); ok {
			fmt.Fprintf(out, "increment by %d -> count %d\n", inc.By, n)
		} else {
			fmt.Fprintf(out, "reset -> count %d\n", n)
		}
	}

	// A turn's state is published before its ask is answered, so the team
	// already has the latest one.
	states, err := team.States(ctx)
	if err != nil {
		return err
	}
	s, ok := states[counter.AgentID()].(*CounterState)
	if !ok {
		return fmt.Errorf("the team has no state for %s", counter.Name())
	}
	fmt.Fprintln(out, "the team's copy of the state: count", s.Count)
	for _, h := range s.History {
		fmt.Fprintln(out, " ", h)
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
		fmt.Fprintln(os.Stderr, "stateful agents:", err)
		os.Exit(1)
	}
}
