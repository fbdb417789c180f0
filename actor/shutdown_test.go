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
)

// gracefulRoot is a team root with a non-blocking stop, like the
// orchestrator: it stops its children without waiting and then itself.
type gracefulRoot struct {
	actortest.Recorder
	graces atomic.Int32
}

func (g *gracefulRoot) GracefulStop(c *actor.Context, grace time.Duration) {
	g.graces.Add(1)
	for _, ch := range c.Children() {
		_ = ch.Tell(message.StopRecursively{})
	}
	_ = c.StopSelf()
}

// B53: shutdown stops team roots gracefully and every other actor
// recursively, and returns once every goroutine ended.
func TestShutdownStopsEverything(t *testing.T) {
	logs := actortest.NewLogCapture(t)
	sys := actor.NewSystem(actor.SystemConfig{Logger: logs.Logger()})
	root := &gracefulRoot{Recorder: *actortest.NewRecorder()}
	rootAddr, _ := sys.Spawn(root, actor.Config{Name: "orch"})
	member := actortest.Spawn(t, rootAddr, &stateAgent{}, actor.Config{Name: "member"})
	loner, _ := sys.Spawn(noop, nil)
	if st := sys.Stats(); st.Orchestrators != 1 || st.Agents != 2 {
		t.Fatalf("stats %+v", st)
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
	if root.graces.Load() != 1 {
		t.Fatalf("GracefulStop called %d times", root.graces.Load())
	}
	if st := sys.Stats(); st != (actor.Stats{}) {
		t.Fatalf("stats after shutdown %+v", st)
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
	if err := wedged.Tell(&textMsg{}); !errors.Is(err, actor.ErrActorDead) {
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
	if err := sys.Stop(ctxT(t), snap); !errors.Is(err, actor.ErrNotDeliverable) {
		t.Fatalf("stop of a snapshot: %v", err)
	}
	select {
	case <-actor.Done(snap):
	default:
		t.Fatal("Done of a snapshot is not closed")
	}
}
