package actor

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/akgentic/akgentic-go/internal/telemetry"
)

// NoState is the state type of an actor that keeps none.
type NoState struct{}

// Base is Agent with the plain Config and no state.
type Base = Agent[Config, NoState]

// StateObserver is told about every state publication with a detached copy
// of the state.
type StateObserver interface {
	StateChanged(state any)
}

// stateHolder is how the runtime reaches an embedded Agent.
type stateHolder interface {
	bind(c *cell, cfg any) error
	checkpoint() error
}

// Agent is the base an actor embeds for a typed config C (a struct embedding
// Config) and a typed state S (any JSON-serializable struct), the Go form of
// akgentic-core's Akgent[ConfigType, StateType]:
//
//	type Worker struct {
//		actor.Agent[WorkerConfig, WorkerState]
//	}
//
//	func (w *Worker) OnStart(c *actor.Context) error {
//		w.InitState(&WorkerState{})
//		w.ObserveState() // publish to the orchestrator from now on
//		return nil
//	}
//
// Once observed, the state is published (a StateChangedMessage with a
// detached copy) at four boundaries when its JSON differs from what was last
// published: the end of each message turn, a failed turn, the top of a
// recursive stop, and the stop hook. Mutate State() directly; call
// NotifyStateChange to publish mid-turn. An unobserved state costs nothing.
//
// Agent's methods must be called on the actor's goroutine.
type Agent[C any, S any] struct {
	cell     *cell
	cfg      *C
	state    *S
	observer StateObserver
	baseline []byte
	stamped  bool
}

func (a *Agent[C, S]) newConfig() any { return new(C) }

func (a *Agent[C, S]) bind(c *cell, cfg any) error {
	p, ok := cfg.(*C)
	if !ok {
		return fmt.Errorf("actor: %s takes a config of type %T, got %T", kindOf(c.actor), new(C), cfg)
	}
	a.cell, a.cfg = c, p
	return nil
}

// Config returns the actor's own copy of its config.
func (a *Agent[C, S]) Config() *C { return a.cfg }

// State returns the live state (nil before InitState).
func (a *Agent[C, S]) State() *S { return a.state }

// InitState installs s as the state: it keeps the current observer,
// stamps the baseline and, when observed, publishes unconditionally.
func (a *Agent[C, S]) InitState(s *S) error {
	a.state = s
	return a.NotifyStateChange()
}

// ObserveState attaches the agent itself as the state's observer, so state
// changes reach the orchestrator as StateChangedMessages; it stamps the
// baseline and publishes once.
func (a *Agent[C, S]) ObserveState() error {
	return a.SetStateObserver(agentObserver{a.cell})
}

// SetStateObserver replaces the observer; later publications go to o.
// Attaching stamps the baseline and publishes once; attaching nil stamps
// only.
func (a *Agent[C, S]) SetStateObserver(o StateObserver) error {
	a.observer = o
	return a.NotifyStateChange()
}

// NotifyStateChange publishes now: it re-stamps the baseline, even
// with no observer, then notifies the observer if there is one. The next
// boundary checkpoint stays silent unless the state changes again.
func (a *Agent[C, S]) NotifyStateChange() error {
	data, err := a.serialize()
	if err != nil {
		return err
	}
	a.baseline, a.stamped = data, true
	if a.observer != nil {
		a.notify(data)
	}
	return nil
}

// UpdateState merges updates over the state's JSON form, decodes the result
// into a new S (validated by S's Validate() error method when it has one)
// and installs it with InitState. On failure the state is unchanged,
// an ErrorMessage naming the decoder's error type is reported, and the error
// is returned (already reported: a handler need not return it).
func (a *Agent[C, S]) UpdateState(updates map[string]any) error {
	next, err := a.merged(updates)
	if err != nil {
		err = fmt.Errorf("actor: update_state: %w", err)
		if a.cell != nil {
			a.cell.report(err, a.cell.current)
		}
		return err
	}
	return a.InitState(next)
}

func (a *Agent[C, S]) merged(updates map[string]any) (*S, error) {
	fields := map[string]any{}
	if a.state != nil {
		data, err := json.Marshal(a.state)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &fields); err != nil {
			return nil, err
		}
	}
	for k, v := range updates {
		fields[k] = v
	}
	data, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	next := new(S)
	if err := json.Unmarshal(data, next); err != nil {
		return nil, err
	}
	if v, ok := any(next).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// checkpoint publishes when observed and the state's JSON changed since the
// last publication, or nothing was published yet.
func (a *Agent[C, S]) checkpoint() error {
	if a.observer == nil {
		return nil
	}
	data, err := a.serialize()
	if err != nil {
		return err
	}
	if a.stamped && bytes.Equal(data, a.baseline) {
		return nil
	}
	a.baseline, a.stamped = data, true
	a.notify(data)
	return nil
}

func (a *Agent[C, S]) serialize() ([]byte, error) {
	data, err := json.Marshal(a.state)
	if err != nil {
		return nil, fmt.Errorf("actor: serialize state %T: %w", a.state, err)
	}
	return data, nil
}

// notify hands the observer a detached copy decoded from data.
func (a *Agent[C, S]) notify(data []byte) {
	var cp any
	if a.state != nil {
		s := new(S)
		if err := json.Unmarshal(data, s); err == nil {
			cp = s
		}
	}
	a.observer.StateChanged(cp)
}

// agentObserver publishes StateChangedMessages to the team's orchestrator.
type agentObserver struct{ c *cell }

func (o agentObserver) StateChanged(state any) {
	if c := o.c; c != nil {
		c.emit(telemetry.Record{Kind: telemetry.StateChanged, Parent: c.current, Value: state})
	}
}
