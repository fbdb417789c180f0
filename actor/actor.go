package actor

import (
	"time"
)

// Actor is the one-method contract every actor implements. Receive handles
// one message at a time on the actor's own goroutine and returns the result
// an asker gets. Dispatch with a type switch, most specific cases first
// (interfaces stand in for base classes), and end it with
// `default: return nil, actor.ErrUnhandled` so an unknown message is
// reported rather than silently eaten (B28-B30):
//
//	func (g *Greeter) Receive(c *actor.Context, msg any) (any, error) {
//		switch m := msg.(type) {
//		case *GreetMessage:
//			fmt.Printf("Hello, %s!\n", m.Text)
//			return nil, nil
//		}
//		return nil, actor.ErrUnhandled
//	}
//
// A returned error or a panic is recovered and reported (B33-B37); the actor
// goes on with its next message.
type Actor interface {
	Receive(c *Context, msg any) (any, error)
}

// Func adapts a function to Actor, for stateless actors and tests.
type Func func(c *Context, msg any) (any, error)

// Receive calls f.
func (f Func) Receive(c *Context, msg any) (any, error) { return f(c, msg) }

// Starter is implemented by actors with an initialisation hook. OnStart runs
// on the actor's goroutine before any message (B18): create state, attach
// observers and spawn children here. An error is reported as an
// ErrorMessage and the actor keeps running.
type Starter interface {
	OnStart(c *Context) error
}

// Stopper is implemented by actors with a stop hook. OnStop runs exactly
// once, on the actor's goroutine, after its mailbox was drained and after it
// stopped receiving (B21-B23); the runtime then takes the final state
// checkpoint and emits the StopMessage.
type Stopper interface {
	OnStop(c *Context)
}

// UserProxyActor is implemented by user-proxy actors (the orchestrator
// package's UserProxy and everything embedding it); their addresses report
// IsUserProxy, whatever their name or role (B62).
type UserProxyActor interface {
	Actor
	UserProxyActor()
}

// GracefulStopper is implemented by team roots whose stop must not block
// (the orchestrator): System.Shutdown calls GracefulStop on the actor's
// goroutine instead of the default recursive stop. It must eventually lead
// to Context.StopSelf.
type GracefulStopper interface {
	GracefulStop(c *Context, grace time.Duration)
}

// RawStopper is implemented by team roots whose stop must never block on a
// member (a member may be asking the root while it stops, spec §4 item 2):
// StopRecursively, a parent's stop and System.Stop call RawStop on the
// actor's goroutine instead of the blocking recursive stop. It must
// eventually lead to Context.StopSelf.
type RawStopper interface {
	RawStop(c *Context)
}
