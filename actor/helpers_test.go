package actor_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"go.uber.org/goleak"
)

// newSystem returns a system logging into a capture, shut down at cleanup.
func newSystem(t *testing.T) (*actor.System, *actortest.LogCapture) {
	t.Helper()
	logs := actortest.NewLogCapture(t)
	sys := actor.NewSystem(actor.SystemConfig{Logger: logs.Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys) })
	return sys, logs
}

// newTeam returns a system whose team root records telemetry.
func newTeam(t *testing.T) (*actor.System, *actortest.Recorder, *message.Address, *actortest.LogCapture) {
	t.Helper()
	sys, logs := newSystem(t)
	rec := actortest.NewRecorder()
	root, err := sys.Spawn(rec, actor.Config{Name: "orchestrator", Role: "Orchestrator"})
	if err != nil {
		t.Fatal(err)
	}
	return sys, rec, root, logs
}

func spawn(t *testing.T, sys *actor.System, a actor.Actor, cfg any, opts ...actor.SpawnOption) *message.Address {
	t.Helper()
	addr, err := sys.Spawn(a, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), actortest.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// barrier asks addr a no-op proxy call: it returns once everything told to
// addr before it was handled (per-producer FIFO).
func barrier(t *testing.T, addr *message.Address) {
	t.Helper()
	if _, err := actor.Call(ctxT(t), addr, func(*actor.Context, actor.Actor) (any, error) { return nil, nil }); err != nil {
		t.Fatalf("barrier on %s: %v", addr, err)
	}
}

func waitDone(t *testing.T, addr *message.Address) {
	t.Helper()
	select {
	case <-actor.Done(addr):
	case <-time.After(actortest.Timeout):
		t.Fatalf("%s did not stop", addr)
	}
}

// Test messages.

type textMsg struct {
	message.Base
	Text string `json:"text"`
}

type numMsg struct {
	message.Base
	N int `json:"n"`
}

var discard = slog.New(slog.DiscardHandler)

// TestMain checks every test of the package for leaked goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
