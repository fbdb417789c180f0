package actor_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
)

// Regression tests for defects a review of the runtime found (each failed
// before its fix).

func nop(*actor.Context, any) (any, error) { return nil, nil }

// A child spawned by a message queued before the stop marker is stopped
// with its parent, before the parent's end (B20: children first).
func TestChildSpawnedDuringStopIsStopped(t *testing.T) {
	sys, _ := newSystem(t)
	gate, in := make(chan struct{}), make(chan struct{})
	kids := make(chan *message.Address, 1)
	parent, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		switch msg {
		case "block":
			close(in)
			<-gate
		case "spawn":
			k, err := c.Spawn(actor.Func(nop), nil)
			kids <- k
			return nil, err
		}
		return nil, nil
	}), nil)
	_ = sys.Tell(parent, "block")
	<-in
	_ = sys.Tell(parent, message.StopRecursively{}) // the stop runs first...
	_ = sys.Tell(parent, "spawn")                   // ...then this, before the marker
	close(gate)
	kid := <-kids
	<-actor.Done(parent)
	select {
	case <-actor.Done(kid):
	default:
		t.Fatalf("the parent ended with its child %s still running", kid)
	}
}

// StopSelf with children: the children stop before the parent ends.
func TestStopSelfStopsChildren(t *testing.T) {
	sys, _ := newSystem(t)
	kids := make(chan *message.Address, 1)
	parent, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		k, err := c.Spawn(actor.Func(nop), nil)
		if err != nil {
			return nil, err
		}
		kids <- k
		return nil, c.StopSelf()
	}), nil)
	_ = sys.Tell(parent, "go")
	kid := <-kids
	<-actor.Done(parent)
	select {
	case <-actor.Done(kid):
	default:
		t.Fatal("StopSelf left a child running")
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

// A StopRecursively ask queued after the stop marker succeeds (B21).
func TestPendingStopAskSucceeds(t *testing.T) {
	sys, _ := newSystem(t)
	in, gate := make(chan struct{}), make(chan struct{})
	addr, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		if msg == "stop" {
			_ = c.Stop() // the marker is posted
			close(in)
			<-gate
		}
		return nil, nil
	}), nil)
	_ = sys.Tell(addr, "stop")
	<-in
	res := make(chan error, 1)
	go func() {
		_, err := sys.Ask(context.Background(), addr, message.StopRecursively{})
		res <- err
	}()
	for actor.QueuedForTest(addr) < 2 { // the marker, then the ask
		runtime.Gosched()
	}
	close(gate)
	if err := <-res; err != nil {
		t.Fatalf("a stop ask on a stopping actor: %v", err)
	}
}

type nilAgent struct{ actor.Base }

func (*nilAgent) Receive(*actor.Context, any) (any, error) { return nil, nil }

// Typed nil messages and actors are errors, not panics.
func TestTypedNilInputs(t *testing.T) {
	sys, _ := newSystem(t)
	addr, _ := sys.Spawn(actor.Func(nop), nil)
	if err := sys.Tell(addr, (*message.UserMessage)(nil)); err == nil {
		t.Error("System.Tell of a nil message")
	}
	if err := addr.Tell((*message.UserMessage)(nil)); err == nil {
		t.Error("Address.Tell of a nil message")
	}
	if _, err := sys.Ask(context.Background(), addr, (*message.UserMessage)(nil)); err == nil {
		t.Error("Ask of a nil message")
	}
	if _, err := sys.Spawn((*nilAgent)(nil), nil); err == nil {
		t.Error("Spawn of a nil actor")
	}
}

type slowStop struct{ in, gate chan struct{} }

func (s *slowStop) OnStop(*actor.Context) { close(s.in); <-s.gate }
func (s *slowStop) Receive(c *actor.Context, _ any) (any, error) {
	return nil, c.Stop()
}

// System.Stop of an actor whose OnStop is running waits for it (and
// reports its context's end when that comes first), never returns success
// early.
func TestStopWaitsForOnStop(t *testing.T) {
	sys, _ := newSystem(t)
	s := &slowStop{in: make(chan struct{}), gate: make(chan struct{})}
	addr, _ := sys.Spawn(s, nil)
	_ = sys.Tell(addr, "stop")
	<-s.in
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := sys.Stop(ctx, addr); err == nil {
		t.Fatal("System.Stop reported success while OnStop runs")
	}
	close(s.gate)
	if err := sys.Stop(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
}

// panicState panics when it is encoded once Boom is set.
type panicState struct{ Boom bool }

func (s panicState) MarshalJSON() ([]byte, error) {
	if s.Boom {
		panic("state cannot be encoded")
	}
	return []byte(`{}`), nil
}

type panicky struct {
	actor.Agent[actor.Config, panicState]
}

func (p *panicky) OnStart(*actor.Context) error {
	if err := p.InitState(&panicState{}); err != nil {
		return err
	}
	return p.ObserveState()
}

func (p *panicky) Receive(*actor.Context, any) (any, error) {
	p.State().Boom = true // the turn's checkpoint will panic
	return "ok", nil
}

// A panic while checkpointing the state (B37) is a reported failure: the
// actor and the process go on.
func TestCheckpointPanicIsAFailure(t *testing.T) {
	sys, rec, root := actortest.Team(t)
	a := actortest.Spawn(t, root, &panicky{}, actor.Config{Name: "p"})
	if _, err := sys.Ask(context.Background(), a, message.NewUserMessage("x")); err == nil {
		t.Fatal("the ask whose checkpoint panicked succeeded")
	}
	_ = sys.Tell(a, message.NewUserMessage("y"))
	rec.WaitKind(t, actor.RecordError, a, 1)
	if !a.IsAlive() {
		t.Fatal("the actor died of a checkpoint panic")
	}
}
