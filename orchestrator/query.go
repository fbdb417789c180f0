package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

// Members returns the team's roster: every actor that started in the
// team and has not stopped, the orchestrator excluded, in join order.
func (t *Team) Members(ctx context.Context) ([]*message.Address, error) {
	return query(ctx, t, func(r reader) ([]*message.Address, error) { return r.roster(), nil })
}

// Member returns the first member named name, or nil.
func (t *Team) Member(ctx context.Context, name string) (*message.Address, error) {
	return query(ctx, t, func(r reader) (*message.Address, error) {
		for _, a := range r.roster() {
			if a.Name() == name {
				return a, nil
			}
		}
		return nil, nil
	})
}

// Filter selects messages of the log. The zero Filter selects all.
type Filter struct {
	// Sender keeps messages whose sender has this agent id.
	Sender uuid.UUID
	// Type keeps messages of this registered type name (message.TypeName),
	// e.g. "SentMessage". "StateChangedMessage" asks for the state changes,
	// which Messages otherwise leaves out: each with its parent id,
	// the message whose turn changed the state.
	Type string
	// States keeps the state changes too, each in its place in the log:
	// with Type "", the whole log in order (a reader that shows the team
	// as it was at some record needs both, read at one moment).
	States bool
}

// states reports whether f asks for the StateChanged records.
func (f Filter) states() bool { return f.States || f.Type == "StateChangedMessage" }

func (f Filter) match(m message.Message) bool {
	if f.Sender != uuid.Nil {
		s := m.Envelope().Sender
		if s == nil || s.AgentID() != f.Sender {
			return false
		}
	}
	return f.Type == "" || message.TypeName(m) == f.Type
}

// Messages returns the team's log in ledger order: every telemetry
// message except StateChanged (those update States; Filter.Type
// "StateChangedMessage" or Filter.States asks for them), filtered by f.
// Addresses in it are live where the actor is; the slice is the caller's.
//
// The team keeps a window of its most recent records in memory (4,096 by
// default; WithRetention changes it). While the whole log fits in it,
// Messages reads memory. Once older records have left it, Messages reads
// the whole log from the team's Archive subscriber (eventlog.Writer) when
// one is attached (its messages carry snapshot addresses, as a
// subscriber's do); without one it returns the window's messages and an
// error wrapping ErrOutsideWindow that says how many records are missing.
// Events are never outside the window (Events).
func (t *Team) Messages(ctx context.Context, f Filter) ([]message.Message, error) {
	// The window is read on the orchestrator's goroutine; the archive, if
	// needed, on the caller's.
	type answer struct {
		window  []message.Message // the window's messages, filtered
		first   uuid.UUID         // id of the window's oldest record (any kind)
		dropped int64             // records that left the window
		arch    Archive
		synced  <-chan struct{} // closed once the archive has been given the window's start
		limit   int
	}
	a, err := query(ctx, t, func(r reader) (answer, error) {
		var out answer
		v := r.log()
		eachMessage(v, f.states(), func(m message.Message) {
			if f.match(m) {
				out.window = append(out.window, m)
			}
		})
		if v.base > 0 && v.n > v.base {
			e, id := v.at(v.base)
			out.first = e.message(id).Envelope().ID
		}
		out.dropped = v.base
		out.arch, out.synced, out.limit = r.history()
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	if a.dropped == 0 {
		return a.window, nil
	}
	if a.arch == nil {
		return a.window, fmt.Errorf("orchestrator: %w: the %d oldest records left the in-memory window of %d records (WithRetention) and no Archive was attached with WithSubscribers; the %d messages returned are the window's",
			ErrOutsideWindow, a.dropped, a.limit, len(a.window))
	}
	if err := awaitBarrier(ctx, a.synced); err != nil {
		return a.window, fmt.Errorf("orchestrator: %w: %w; the %d messages returned are the window's", ErrOutsideWindow, err, len(a.window))
	}
	hist, herr := a.arch.ReadHistory(ctx)
	if herr != nil && len(hist) == 0 {
		return a.window, fmt.Errorf("orchestrator: %w: reading the records before the in-memory window from %T: %w; the %d messages returned are the window's",
			ErrOutsideWindow, a.arch, herr, len(a.window))
	}
	// The archive up to the window's oldest record, then the window: the
	// window's messages keep their live addresses, and records the
	// subscribers never got (members' Stop records during the team's stop)
	// are there.
	var out []message.Message
	found := a.first == uuid.Nil // the window is empty: the whole archive
	for _, m := range hist {
		if m.Envelope().ID == a.first && !found {
			found = true
			break
		}
		switch m.(type) {
		case *MetadataChanged, *CatalogChanged: // not log messages
			continue
		case *message.StateChangedMessage: // only when asked for
			if !f.states() {
				continue
			}
		}
		if f.match(m) {
			out = append(out, m)
		}
	}
	if !found {
		return a.window, fmt.Errorf("orchestrator: %w: the Archive %T does not reach the in-memory window (its record %s is missing); the %d messages returned are the window's",
			ErrOutsideWindow, a.arch, a.first, len(a.window))
	}
	out = append(out, a.window...)
	if herr != nil {
		return out, fmt.Errorf("orchestrator: the Archive %T reported an error (its history may lack records): %w", a.arch, herr)
	}
	return out, nil
}

// ErrOutsideWindow is wrapped by the error of a query whose answer lies
// partly outside the team's in-memory window with no Archive to read it
// from (Messages).
var ErrOutsideWindow = errors.New("history outside the in-memory window")

// Archive is a Subscriber that keeps the team's whole log durably, such as
// eventlog.Writer: when the in-memory window no longer holds a team's
// oldest records, Messages reads them from the first Archive attached with
// WithSubscribers (one subscribed later has missed the team's beginning
// and is not used).
type Archive interface {
	Subscriber
	// ReadHistory returns every message written so far, in order (and an
	// error when some could not be written or read). It is called on the
	// goroutine of the Messages call, concurrently with OnMessage, and
	// after the team stopped.
	ReadHistory(ctx context.Context) ([]message.Message, error)
}

// eachMessage calls fn for every log message of v in order, StateChanged
// excluded unless states.
func eachMessage(v logView, states bool, fn func(m message.Message)) {
	v.each(func(e *entry, id uint64) {
		if states || e.rec.Kind != telemetry.StateChanged {
			fn(e.message(id))
		}
	})
}

// Select returns the messages of type T, in order: the typed form of
// Filter.Type.
func Select[T message.Message](msgs []message.Message) []T {
	var out []T
	for _, m := range msgs {
		if t, ok := m.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// EventFilter selects events. The zero EventFilter selects all.
type EventFilter struct {
	// Agent keeps events emitted by the agent with this id.
	Agent uuid.UUID
	// Payload keeps events whose payload has this registered type name
	// (message.TypeName), e.g. "ClosedNotification".
	Payload string
}

// Events returns the EventMessages of the log, filtered; an event
// that is message.Ephemeral (a streamed answer's text deltas) reached the
// subscribers only and is not among them.
func (t *Team) Events(ctx context.Context, f EventFilter) ([]*message.EventMessage, error) {
	return query(ctx, t, func(r reader) ([]*message.EventMessage, error) {
		var out []*message.EventMessage
		r.eventLog().each(f.Agent, func(ev *message.EventMessage) {
			if f.Payload == "" || message.TypeName(ev.Event) == f.Payload {
				out = append(out, ev)
			}
		})
		return out, nil
	})
}

// States returns the latest published state of every agent that published
// one, by agent id. Each call returns new copies.
func (t *Team) States(ctx context.Context) (map[uuid.UUID]any, error) {
	return query(ctx, t, func(r reader) (map[uuid.UUID]any, error) {
		states := r.stateMap()
		out := make(map[uuid.UUID]any, len(states))
		for k, v := range states {
			out[k] = copyState(v)
		}
		return out, nil
	})
}

// copyState returns an independent copy of a published state: a JSON round
// trip into a new value of the same type (raw JSON is copied as bytes).
func copyState(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return append(json.RawMessage(nil), x...)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v // a state that was published could be encoded: not reached
	}
	t := reflect.TypeOf(v)
	ptr := t.Kind() == reflect.Pointer
	if ptr {
		t = t.Elem()
	}
	p := reflect.New(t)
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		return v
	}
	if ptr {
		return p.Interface()
	}
	return p.Elem().Interface()
}
