package actor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
)

// The per-actor context.Context (Context.Context) replaces StopRequested:
// it is cancelled, with a cause, as soon as the actor's stop is requested,
// and in any case once the actor has ended, so that long work in a handler
// ends early. What is queued is still handled before the stop.

// waitCause is a handler that, on a *message.UserMessage, signals entered
// and then waits for its context to be cancelled, sending the cause on
// causes (nil when the wait timed out).
func waitCause(entered chan<- struct{}, causes chan<- error) actor.Func {
	return func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); !ok {
			return nil, nil
		}
		entered <- struct{}{}
		select {
		case <-c.Context().Done():
			causes <- context.Cause(c.Context())
		case <-time.After(actortest.Timeout):
			causes <- nil
		}
		return nil, nil
	}
}

// The context is cancelled as soon as a stop is queued, so that a long
// handler can end early; the stop then completes. It is cancelled for a
// parent's recursive stop too, and stays cancelled when asked for again.
func TestContextCancelledOnStopRequest(t *testing.T) {
	sys, _ := newSystem(t)
	entered, causes := make(chan struct{}, 1), make(chan error, 1)
	addr := spawn(t, sys, waitCause(entered, causes), actor.Config{Name: "long"})
	_ = sys.Tell(addr, message.NewUserMessage("work"))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sys.Stop(ctx, addr); err != nil {
		t.Fatal(err)
	}
	// System.Stop's cause is ErrStopped.
	if cause := <-causes; cause != actor.ErrStopped {
		t.Fatalf("the handler saw cause %v, want ErrStopped", cause)
	}

	// A child sees its parent's stop; the context is the same, still done,
	// when asked for again.
	parentEntered, childSaw := make(chan struct{}), make(chan bool, 1)
	parent, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); ok {
			_, err := c.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
				if _, ok := msg.(*message.UserMessage); ok {
					close(parentEntered)
					<-c.Context().Done()
					<-c.Context().Done() // again: still done
					childSaw <- errors.Is(context.Cause(c.Context()), actor.ErrStopped)
				}
				return nil, nil
			}), actor.Config{Name: "child"})
			if err != nil {
				return nil, err
			}
			return nil, c.Send(c.Children()[0], message.NewUserMessage("go"))
		}
		return nil, nil
	}), actor.Config{Name: "parent"})
	_ = sys.Tell(parent, message.NewUserMessage("start"))
	<-parentEntered
	if err := sys.Stop(ctx, parent); err != nil {
		t.Fatal(err)
	}
	if !<-childSaw {
		t.Fatal("child did not see its parent's stop (cause ErrStopped)")
	}
}

type selfStopper struct {
	actor.Base
	ctx      context.Context
	afterErr error
}

func (s *selfStopper) OnStart(c *actor.Context) error { s.ctx = c.Context(); return nil }
func (s *selfStopper) Receive(c *actor.Context, _ any) (any, error) {
	c.Stop() // the actor decides to stop
	s.afterErr = context.Cause(c.Context())
	return nil, nil
}

// The context is cancelled when an actor stops itself too (a watcher of
// it never leaks), at once, with cause ErrStopped.
func TestContextCancelledOnSelfStop(t *testing.T) {
	sys, _ := newSystem(t)
	a := &selfStopper{}
	addr := spawn(t, sys, a, actor.Config{Name: "s"})
	_ = sys.Tell(addr, "stop")
	<-actor.Done(addr)
	select {
	case <-a.ctx.Done():
	default:
		t.Fatal("the actor stopped and its context is still open")
	}
	if a.afterErr != actor.ErrStopped {
		t.Fatalf("cause right after Context.Stop = %v, want ErrStopped", a.afterErr)
	}
}

// A StopRecursively cancels the context as soon as it is queued, before
// the actor reaches it in its mailbox; the cause wraps ErrStopped.
func TestContextCancelledWhenStopRecursivelyQueued(t *testing.T) {
	sys, _ := newSystem(t)
	entered, causes := make(chan struct{}, 1), make(chan error, 1)
	addr := spawn(t, sys, waitCause(entered, causes), actor.Config{Name: "long"})
	_ = sys.Tell(addr, message.NewUserMessage("work"))
	<-entered
	if err := sys.Tell(addr, message.StopRecursively{}); err != nil {
		t.Fatal(err)
	}
	// The handler is still in the turn before the StopRecursively: the
	// context was cancelled by the enqueue itself.
	if cause := <-causes; !errors.Is(cause, actor.ErrStopped) {
		t.Fatalf("the handler saw cause %v, want one wrapping ErrStopped", cause)
	}
	waitDone(t, addr)
}

// Shutdown cancels every actor's context with cause ErrShutdown, a root's
// and its children's alike.
func TestContextCancelledOnShutdown(t *testing.T) {
	sys := actor.NewSystem(actor.SystemConfig{Logger: actortest.NewLogCapture(t).Logger()})
	entered, causes := make(chan struct{}, 2), make(chan error, 2)
	root := spawn(t, sys, waitCause(entered, causes), actor.Config{Name: "root"})
	child := actortest.Spawn(t, root, waitCause(entered, causes), actor.Config{Name: "child"})
	_ = sys.Tell(root, message.NewUserMessage("work"))
	_ = sys.Tell(child, message.NewUserMessage("work"))
	<-entered
	<-entered
	actortest.Shutdown(t, sys)
	for range 2 {
		if cause := <-causes; cause != actor.ErrShutdown {
			t.Fatalf("cause on shutdown %v, want ErrShutdown", cause)
		}
	}
}

// A context asked for after the stop began (in OnStop) is already
// cancelled, with the stop's cause.
type lateAsker struct {
	actor.Base
	cause chan error
}

func (*lateAsker) Receive(*actor.Context, any) (any, error) { return nil, nil }
func (l *lateAsker) OnStop(c *actor.Context) {
	select {
	case <-c.Context().Done():
		l.cause <- context.Cause(c.Context())
	default:
		l.cause <- nil
	}
}

func TestContextAskedForLateIsCancelled(t *testing.T) {
	sys, _ := newSystem(t)
	l := &lateAsker{cause: make(chan error, 1)}
	addr := spawn(t, sys, l, nil)
	if err := sys.Stop(actortest.Context(t), addr); err != nil {
		t.Fatal(err)
	}
	if cause := <-l.cause; cause != actor.ErrStopped {
		t.Fatalf("context in OnStop: cause %v, want ErrStopped", cause)
	}
}
