package actor_test

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
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

// newTeam returns a system with a team (a real orchestrator, the team root)
// whose telemetry a Recorder subscribed from the start records. The
// orchestrator's own StartMessage is the first record (sender = root).
func newTeam(t *testing.T) (*actor.System, *actortest.Recorder, *message.Address, *actortest.LogCapture) {
	t.Helper()
	sys, logs := newSystem(t)
	rec := actortest.NewRecorder()
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(rec))
	if err != nil {
		t.Fatal(err)
	}
	return sys, rec, team.Address(), logs
}

func spawn(t *testing.T, sys *actor.System, a actor.Actor, cfg any, opts ...actor.SpawnOption) *message.Address {
	t.Helper()
	addr, err := sys.Spawn(a, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// barrier asks addr a no-op proxy call: it returns once everything told to
// addr before it was handled (per-producer FIFO).
func barrier(t *testing.T, addr *message.Address) {
	t.Helper()
	if err := proxy.Do(actortest.Context(t), addr, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
		t.Fatalf("barrier on %s: %v", addr, err)
	}
}

// synced is the telemetry barrier: after a barrier on each of addrs, it
// waits until the team at root has fanned out everything emitted so far,
// so the Recorder holds it (telemetry reaches subscribers on the
// orchestrator's goroutine, after the emitter moved on).
func synced(t *testing.T, root *message.Address, addrs ...*message.Address) {
	t.Helper()
	for _, a := range addrs {
		barrier(t, a)
	}
	if err := orchestrator.Of(root).Sync(actortest.Context(t)); err != nil {
		t.Fatalf("sync of the team at %s: %v", root, err)
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

// Telemetry helpers over the Recorder's messages.

// Kind names of the telemetry messages, as Recorder.Kinds reports them.
const (
	kStart        = "StartMessage"
	kStop         = "StopMessage"
	kSent         = "SentMessage"
	kReceived     = "ReceivedMessage"
	kProcessed    = "ProcessedMessage"
	kHandled      = "HandledMessage"
	kError        = "ErrorMessage"
	kWarning      = "WarningMessage"
	kStateChanged = "StateChangedMessage"
)

// recorded returns the recorded telemetry messages of type T, optionally
// only those sent by from.
func recorded[T message.Message](rec *actortest.Recorder, from *message.Address) []T {
	var out []T
	for _, m := range orchestrator.Select[T](rec.Records()) {
		if from == nil || m.Envelope().Sender.Equal(from) {
			out = append(out, m)
		}
	}
	return out
}

// kindsOf returns the kinds of the messages sent by who, after the first
// from of them.
func kindsOf(rec *actortest.Recorder, who *message.Address, from int) []string {
	k := rec.Kinds(who)
	if from > len(k) {
		return nil
	}
	return k[from:]
}

func equalKinds(a, b []string) bool { return slices.Equal(a, b) }

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
