// Package actortest is a test kit for code built on the actor runtime: a
// Recorder that is a team root recording every telemetry record, a Probe
// actor that records what it receives, and a slog capture bound to a test.
//
// Waits are bounded by Timeout and driven by notifications, never by
// sleeping.
package actortest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// Timeout bounds every wait in this package.
var Timeout = 10 * time.Second

// Recorder is a team root that records every telemetry record of the
// actors spawned under it, in arrival order. Spawn it from a System; spawn
// the team under it with Spawn. It handles no messages itself.
type Recorder struct {
	mu      sync.Mutex
	records []actor.Record
	changed chan struct{}
}

var (
	_ actor.Actor = (*Recorder)(nil)
	_ actor.Sink  = (*Recorder)(nil)
)

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{changed: make(chan struct{})}
}

// Receive answers nothing: every message is unhandled.
func (r *Recorder) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

// Attach implements actor.Sink.
func (r *Recorder) Attach(*message.Address) actor.Emitter { return recorderEmitter{r} }

type recorderEmitter struct{ r *Recorder }

func (e recorderEmitter) Emit(rec actor.Record) {
	r := e.r
	r.mu.Lock()
	r.records = append(r.records, rec)
	ch := r.changed
	r.changed = make(chan struct{})
	r.mu.Unlock()
	close(ch)
}

func (recorderEmitter) Close() {}

// Records returns a copy of the records so far.
func (r *Recorder) Records() []actor.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]actor.Record(nil), r.records...)
}

// Kinds returns the kinds of the records so far, optionally only those
// emitted by from.
func (r *Recorder) Kinds(from *message.Address) []actor.RecordKind {
	var out []actor.RecordKind
	for _, rec := range r.Records() {
		if from == nil || rec.Emitter.Equal(from) {
			out = append(out, rec.Kind)
		}
	}
	return out
}

// Of returns the records of one kind.
func (r *Recorder) Of(kind actor.RecordKind) []actor.Record {
	var out []actor.Record
	for _, rec := range r.Records() {
		if rec.Kind == kind {
			out = append(out, rec)
		}
	}
	return out
}

// WaitFor waits until cond holds for the records, failing t after Timeout.
// It returns the records cond accepted.
func (r *Recorder) WaitFor(t testing.TB, what string, cond func([]actor.Record) bool) []actor.Record {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		recs := append([]actor.Record(nil), r.records...)
		ch := r.changed
		r.mu.Unlock()
		if cond(recs) {
			return recs
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("actortest: timed out after %v waiting for %s; records: %s", Timeout, what, Describe(recs))
			return nil
		}
	}
}

// WaitKind waits until at least n records of kind were emitted by from (any
// emitter when from is nil).
func (r *Recorder) WaitKind(t testing.TB, kind actor.RecordKind, from *message.Address, n int) []actor.Record {
	t.Helper()
	return r.WaitFor(t, fmt.Sprintf("%d %s record(s)", n, kind), func(recs []actor.Record) bool {
		c := 0
		for _, rec := range recs {
			if rec.Kind == kind && (from == nil || rec.Emitter.Equal(from)) {
				c++
			}
		}
		return c >= n
	})
}

// Describe renders records one per line, for failure messages.
func Describe(recs []actor.Record) string {
	s := ""
	for _, r := range recs {
		s += fmt.Sprintf("\n  %s from %s about %s", r.Kind, r.Emitter.Name(), message.TypeName(r.Message))
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
	v, err := actor.Call(ctx, parent, func(c *actor.Context, _ actor.Actor) (any, error) {
		return c.Spawn(a, cfg, opts...)
	})
	if err != nil {
		return nil, err
	}
	return v.(*message.Address), nil
}

// Team starts a system with a Recorder as team root, and shuts it down when
// the test ends. The system's logs go to the test's log.
func Team(t testing.TB) (*actor.System, *Recorder, *message.Address) {
	t.Helper()
	sys := actor.NewSystem(actor.SystemConfig{Logger: NewLogCapture(t).Logger()})
	rec := NewRecorder()
	root, err := sys.Spawn(rec, actor.Config{Name: "orchestrator", Role: "Orchestrator"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Shutdown(t, sys) })
	return sys, rec, root
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
