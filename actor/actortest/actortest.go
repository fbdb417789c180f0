// Package actortest is a test kit for code built on the actor runtime: a
// Recorder that subscribes to a team and records every telemetry message
// (with typed waits, WaitFor, and Settle to wait until the team is quiet),
// a Probe actor that records what it receives, and a slog capture bound to
// a test.
//
// Waits are bounded by Timeout and driven by notifications, never by
// sleeping.
package actortest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// Timeout bounds every wait in this package.
var Timeout = 10 * time.Second

// Recorder is a team subscriber that records every telemetry message of
// the team, in ledger order (the subscriber's copies: snapshot addresses).
// Team makes a team with one.
type Recorder struct {
	mu      sync.Mutex
	msgs    []message.Message
	changed chan struct{}
}

var _ orchestrator.Subscriber = (*Recorder)(nil)

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{changed: make(chan struct{})}
}

// OnMessage implements orchestrator.Subscriber.
func (r *Recorder) OnMessage(m message.Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	ch := r.changed
	r.changed = make(chan struct{})
	r.mu.Unlock()
	close(ch)
}

// Records returns a copy of the messages so far.
func (r *Recorder) Records() []message.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]message.Message(nil), r.msgs...)
}

// Kinds returns the type names (message.TypeName, e.g. "SentMessage") of
// the messages so far, optionally only those sent by from.
func (r *Recorder) Kinds(from *message.Address) []string {
	var out []string
	for _, m := range r.Records() {
		if from == nil || m.Envelope().Sender.Equal(from) {
			out = append(out, message.TypeName(m))
		}
	}
	return out
}

// waitFor waits until cond holds for the messages, failing t after Timeout.
// It returns the messages cond accepted.
func (r *Recorder) waitFor(t testing.TB, what string, cond func([]message.Message) bool) []message.Message {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		msgs := append([]message.Message(nil), r.msgs...)
		ch := r.changed
		r.mu.Unlock()
		if cond(msgs) {
			return msgs
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("actortest: timed out after %v waiting for %s; messages: %s", Timeout, what, Describe(msgs))
			return nil
		}
	}
}

// WaitKind waits until at least n messages of the type named kind (e.g.
// "ProcessedMessage") were sent by from (anyone when from is nil), and
// returns all the messages so far.
func (r *Recorder) WaitKind(t testing.TB, kind string, from *message.Address, n int) []message.Message {
	t.Helper()
	return r.waitFor(t, fmt.Sprintf("%d %s(s)", n, kind), func(msgs []message.Message) bool {
		c := 0
		for _, m := range msgs {
			if message.TypeName(m) == kind && (from == nil || m.Envelope().Sender.Equal(from)) {
				c++
			}
		}
		return c >= n
	})
}

// WaitFor waits until r holds a message of type T that match accepts (any
// T when match is nil) and returns the first one, failing t after Timeout.
// The typed form of WaitKind:
//
//	errMsg := actortest.WaitFor(t, rec, func(m *message.ErrorMessage) bool {
//		return m.Sender.Equal(worker)
//	})
func WaitFor[T message.Message](t testing.TB, r *Recorder, match func(T) bool) T {
	t.Helper()
	var found T
	r.waitFor(t, "a "+fmt.Sprintf("%T", found)+" that matches", func(msgs []message.Message) bool {
		for _, m := range msgs {
			if v, ok := m.(T); ok && (match == nil || match(v)) {
				found = v
				return true
			}
		}
		return false
	})
	return found
}

// Settle waits until the team at root is quiet: every message delivered
// to its members, and every message those turns sent in turn, has been
// handled, and every record they emitted (Processed, Error, Warning…) is
// in r. It runs a no-op call on every member (a call runs after what is
// already in the mailbox) and a team sync, again and again, until a round
// adds no record to r. A member that never stops sending never settles:
// ctx bounds the wait.
func (r *Recorder) Settle(ctx context.Context, root *message.Address) error {
	team := orchestrator.Of(root)
	last := -1
	for {
		members, err := team.Members(ctx)
		if err != nil {
			return fmt.Errorf("actortest: settle: %w", err)
		}
		for _, m := range members {
			err := proxy.Do(ctx, m, func(*actor.Context, actor.Actor) error { return nil })
			if err != nil && !errors.Is(err, actor.ErrActorDead) {
				return fmt.Errorf("actortest: settle: %s: %w", m.Name(), err)
			}
		}
		if err := team.Sync(ctx); err != nil {
			return fmt.Errorf("actortest: settle: %w", err)
		}
		r.mu.Lock()
		n := len(r.msgs)
		r.mu.Unlock()
		if n == last {
			return nil
		}
		last = n
	}
}

// Describe renders messages one per line, for failure messages.
func Describe(msgs []message.Message) string {
	s := ""
	for _, m := range msgs {
		s += fmt.Sprintf("\n  %s from %s", message.TypeName(m), m.Envelope().Sender.Name())
	}
	return s
}

// Spawn spawns a child of the actor at parent, on the parent's goroutine,
// as the parent itself would. It fails t on error.
func Spawn(t testing.TB, parent *message.Address, a actor.Actor, cfg any, opts ...actor.SpawnOption) *message.Address {
	t.Helper()
	addr, err := SpawnIn(context.Background(), parent, a, cfg, opts...)
	if err != nil {
		t.Fatalf("actortest: spawn under %s: %v", parent, err)
	}
	return addr
}

// SpawnIn is Spawn returning the error.
func SpawnIn(ctx context.Context, parent *message.Address, a actor.Actor, cfg any, opts ...actor.SpawnOption) (*message.Address, error) {
	return proxy.Ask(ctx, parent, func(c *actor.Context, _ actor.Actor) (*message.Address, error) {
		return c.Spawn(a, cfg, opts...)
	})
}

// Team starts a system and a team (orchestrator.New) with a Recorder
// subscribed from the start, and shuts the system down when the test ends.
// The system's logs go to the test's log. Spawn members with Spawn under
// the returned team root, or with the Team handle's Spawn.
func Team(t testing.TB) (*actor.System, *Recorder, *message.Address) {
	t.Helper()
	sys := actor.NewSystem(actor.SystemConfig{Logger: NewLogCapture(t).Logger()})
	rec := NewRecorder()
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(rec))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Shutdown(t, sys) })
	return sys, rec, team.Address()
}

// NewTeam starts a system whose logs go to a LogCapture bound to t, and a
// team on it made with opts (orchestrator.New), and shuts the system down
// when the test ends. Team is the same with a Recorder subscribed.
func NewTeam(t testing.TB, opts ...orchestrator.Option) (*actor.System, *orchestrator.Team, *LogCapture) {
	t.Helper()
	logs := NewLogCapture(t)
	sys := actor.NewSystem(actor.SystemConfig{Logger: logs.Logger()})
	t.Cleanup(func() { Shutdown(t, sys) })
	team, err := orchestrator.New(sys, opts...)
	if err != nil {
		t.Fatalf("actortest: new team: %v", err)
	}
	return sys, team, logs
}

// Context returns a context that ends after Timeout or when the test's
// cleanup runs, whichever is first, so that a wait that hangs fails its
// test rather than the whole test binary. Unlike t.Context, it is still
// live while cleanups registered before it run.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// Reloaded returns msgs encoded and decoded one by one (message.Marshal,
// message.UnmarshalMessage), as a durable log gives them back: feed it to
// orchestrator.Restore to test that a team restores from what was written,
// not from the live values. A message that does not round-trip fails t.
func Reloaded(t testing.TB, msgs []message.Message) []message.Message {
	t.Helper()
	out := make([]message.Message, 0, len(msgs))
	for _, m := range msgs {
		data, err := message.Marshal(m)
		if err != nil {
			t.Fatalf("actortest: marshal %s: %v", message.TypeName(m), err)
		}
		back, err := message.UnmarshalMessage(data)
		if err != nil {
			t.Fatalf("actortest: unmarshal %s: %v\n%s", message.TypeName(m), err, data)
		}
		out = append(out, back)
	}
	return out
}

// Shutdown shuts sys down within Timeout, failing t on error.
func Shutdown(t testing.TB, sys *actor.System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Errorf("actortest: shutdown: %v", err)
	}
}
