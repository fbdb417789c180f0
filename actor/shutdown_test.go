package actor_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/google/uuid"
)

// stopHooked records the causes its OnStopRequest hook was called with.
type stopHooked struct {
	actor.Base
	causes chan error
}

func (*stopHooked) Receive(*actor.Context, any) (any, error) { return nil, nil }
func (s *stopHooked) OnStopRequest(_ *actor.Context, cause error) {
	s.causes <- cause
}

// teamWatcher counts the team's stop announcements.
type teamWatcher struct {
	requests atomic.Int32
	stops    atomic.Int32
}

func (*teamWatcher) OnMessage(message.Message) {}
func (w *teamWatcher) OnStopRequest(uuid.UUID) { w.requests.Add(1) }
func (w *teamWatcher) OnStop(uuid.UUID)        { w.stops.Add(1) }

// Shutdown stops team roots and every other root, each with its
// subtree, and returns once every goroutine ended. The team root's
// GracefulStop hook is gone: a team root's stop is announced (its
// subscribers get OnStopRequest once, then OnStop once), and any actor
// with a StopRequestHook hears the cause, ErrShutdown.
func TestShutdownStopsEverything(t *testing.T) {
	logs := actortest.NewLogCapture(t)
	sys := actor.NewSystem(actor.SystemConfig{Logger: logs.Logger()})
	w := &teamWatcher{}
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(w))
	if err != nil {
		t.Fatal(err)
	}
	rootAddr := team.Address()
	member := actortest.Spawn(t, rootAddr, &stateAgent{}, actor.Config{Name: "member"})
	hooks := &stopHooked{causes: make(chan error, 2)}
	loner, _ := sys.Spawn(hooks, nil)
	if o, a := sys.Stats(); o != 1 || a != 2 {
		t.Fatalf("stats: %d orchestrators, %d agents", o, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), actortest.Timeout)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*message.Address{rootAddr, member, loner} {
		if a.IsAlive() {
			t.Fatalf("%s alive after shutdown", a.Name())
		}
	}
	if w.requests.Load() != 1 || w.stops.Load() != 1 {
		t.Fatalf("team stop announced %d times, OnStop %d times; want 1 and 1", w.requests.Load(), w.stops.Load())
	}
	if len(hooks.causes) != 1 {
		t.Fatalf("OnStopRequest called %d times", len(hooks.causes))
	}
	if cause := <-hooks.causes; cause != actor.ErrShutdown {
		t.Fatalf("OnStopRequest cause %v, want ErrShutdown", cause)
	}
	if o, a := sys.Stats(); o != 0 || a != 0 {
		t.Fatalf("stats after shutdown: %d orchestrators, %d agents", o, a)
	}
	if _, err := sys.Spawn(noop, nil); !errors.Is(err, actor.ErrShutdown) {
		t.Fatalf("spawn after shutdown: %v", err)
	}
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

// A handler that blocks during shutdown is reported and shutdown honours
// its context; once released, the goroutine still ends (goleak checks).
func TestShutdownHonoursContext(t *testing.T) {
	logs := actortest.NewLogCapture(t)
	sys := actor.NewSystem(actor.SystemConfig{Logger: logs.Logger()})
	entered, release := make(chan struct{}), make(chan struct{})
	wedged, _ := sys.Spawn(actor.Func(func(*actor.Context, any) (any, error) {
		close(entered)
		<-release
		return nil, nil
	}), actor.Config{Name: "wedged"})
	parent, _ := sys.Spawn(noop, actor.Config{Name: "parent"})
	child := actortest.Spawn(t, parent, actor.Func(func(c *actor.Context, msg any) (any, error) {
		<-release
		return nil, nil
	}), actor.Config{Name: "stuck-child"})
	_ = sys.Tell(wedged, &textMsg{})
	_ = sys.Tell(child, &textMsg{})
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := sys.Shutdown(ctx)
	if !errors.Is(err, actor.ErrTimeout) || !strings.Contains(err.Error(), "wedged") {
		t.Fatalf("shutdown error %v", err)
	}
	if wedged.IsAlive() || child.IsAlive() {
		t.Fatal("a stuck actor still reports alive after shutdown gave up")
	}
	if err := sys.Tell(wedged, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("tell to a reaped actor: %v", err)
	}
	if !strings.Contains(logs.Text(), "did not stop") {
		t.Fatalf("no warning listing the stuck actors:\n%s", logs.Text())
	}
	close(release)
	// The goroutines end on their own now; a later Shutdown joins them.
	if err := sys.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitDone(t, wedged)
	waitDone(t, parent)
}

// System.Stop with a context that ends first reports a timeout.
func TestStopTimeout(t *testing.T) {
	sys, _ := newSystem(t)
	entered, release := make(chan struct{}), make(chan struct{})
	busy := spawn(t, sys, actor.Func(func(*actor.Context, any) (any, error) {
		close(entered)
		<-release
		return nil, nil
	}), actor.Config{Name: "busy"})
	_ = sys.Tell(busy, &textMsg{})
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := sys.Stop(ctx, busy); !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("stop: %v", err)
	}
	close(release)
	waitDone(t, busy)
	snap := busy.Snapshot()
	if err := sys.Stop(actortest.Context(t), snap); !errors.Is(err, actor.ErrNotDeliverable) {
		t.Fatalf("stop of a snapshot: %v", err)
	}
	select {
	case <-actor.Done(snap):
	default:
		t.Fatal("Done of a snapshot is not closed")
	}
}

type startBlock struct {
	gate chan struct{}
	f    actor.Func
}

func (s *startBlock) OnStart(*actor.Context) error                 { <-s.gate; return nil }
func (s *startBlock) Receive(c *actor.Context, m any) (any, error) { return s.f(c, m) }

// An actor the reaper stopped handles nothing more once its blocked
// handler returns, even messages already taken from its queue.
func TestReapedActorStopsAtOnce(t *testing.T) {
	sys := actor.NewSystem(actor.SystemConfig{Logger: discard})
	startGate, in, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var handled atomic.Int32
	addr, _ := sys.Spawn(&startBlock{gate: startGate, f: func(c *actor.Context, msg any) (any, error) {
		handled.Add(1)
		if msg == 1 {
			close(in)
			<-release
		}
		return nil, nil
	}}, nil)
	for i := 1; i <= 3; i++ {
		_ = sys.Tell(addr, i)
	}
	close(startGate) // the first batch holds 1, 2 and 3
	<-in
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sys.Shutdown(ctx); err == nil {
		t.Fatal("a shutdown out of time reported success")
	}
	close(release)
	<-actor.Done(addr)
	if n := handled.Load(); n != 1 {
		t.Fatalf("the reaped actor handled %d messages, want 1", n)
	}
	if err := sys.Shutdown(context.Background()); err != nil { // joins the rest
		t.Fatal(err)
	}
}

// A second Shutdown honours its context.
func TestSecondShutdownHonoursContext(t *testing.T) {
	sys := actor.NewSystem(actor.SystemConfig{Logger: discard})
	in, release := make(chan struct{}), make(chan struct{})
	addr, _ := sys.Spawn(actor.Func(func(*actor.Context, any) (any, error) {
		close(in)
		<-release
		return nil, nil
	}), nil)
	_ = sys.Tell(addr, "x")
	<-in
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = sys.Shutdown(ctx)
	if err := sys.Shutdown(ctx); err == nil {
		t.Fatal("a second shutdown out of time reported success")
	}
	close(release)
	if err := sys.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
