package actor

// Actor is the one-method contract every actor implements. Receive handles
// one message at a time on the actor's own goroutine and returns the result
// an asker gets. Dispatch with a type switch, most specific cases first
// (interfaces stand in for base classes), and end it with
// `default: return nil, actor.ErrUnhandled` so an unknown message is
// reported rather than silently eaten:
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
// A returned error or a panic is recovered and reported; the actor
// goes on with its next message.
type Actor interface {
	Receive(c *Context, msg any) (any, error)
}

// Func adapts a function to Actor, for stateless actors and tests.
type Func func(c *Context, msg any) (any, error)

// Receive calls f.
func (f Func) Receive(c *Context, msg any) (any, error) { return f(c, msg) }

// Starter is implemented by actors with an initialisation hook. OnStart runs
// on the actor's goroutine before any message: create state, attach
// observers and spawn children here. An error is reported as an
// ErrorMessage and the actor keeps running.
type Starter interface {
	OnStart(c *Context) error
}

// Stopper is implemented by actors with a stop hook. OnStop runs exactly
// once, on the actor's goroutine, after its mailbox was drained and after it
// stopped receiving; the runtime then takes the final state
// checkpoint and emits the StopMessage.
type Stopper interface {
	OnStop(c *Context)
}

// UserProxyActor is implemented by user-proxy actors (the orchestrator
// package's UserProxy and everything embedding it); their addresses report
// IsUserProxy, whatever their name or role.
type UserProxyActor interface {
	Actor
	UserProxyActor()
}

// StopRequestHook is implemented by actors that want to know that their
// stop has begun. OnStopRequest runs once, on the actor's goroutine, when
// the stop request is reached in the mailbox, after the state checkpoint and
// before the children are told to stop; cause says why (ErrStopped,
// ErrShutdown, or the cause a stop was given). The actor keeps handling
// messages until its children have ended; then OnStop runs.
type StopRequestHook interface {
	OnStopRequest(c *Context, cause error)
}
