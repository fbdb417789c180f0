// Package actor is the runtime of akgentic for Go: actors that exchange
// typed messages through unbounded mailboxes, one goroutine each while it
// has mail: an idle actor holds no goroutine (its goroutine ends when its
// mailbox stays empty, and the next message starts another), so a team of
// idle members costs its cells and mailboxes only, about 1 KB a member.
//
//	sys := actor.NewSystem(actor.SystemConfig{})
//	addr, err := sys.Spawn(&Greeter{}, actor.Config{Name: "greeter", Role: "Greeter"})
//	err = sys.Tell(addr, &Greet{Text: "Akgentic"})
//	reply, err := sys.Ask(ctx, addr, &Greet{Text: "you"})
//	err = sys.Shutdown(ctx) // drains, stops everything, joins every goroutine
//
// An actor implements Receive(c *Context, msg any) (any, error) and
// dispatches with a type switch; returning ErrUnhandled reports the message
// as unknown, never eaten.
//
// Declining: Go has no virtual dispatch, so a type that embeds another
// actor (agent.BaseAgent, say) and handles some messages itself calls the
// embedded Receive for the rest. A specific handler that wants to pass on
// a message it looked at returns ErrUnhandled, and the outer Receive then
// falls back to the embedded base:
//
//	func (s *Shouter) Receive(c *actor.Context, msg any) (any, error) {
//		if text, ok := msg.(string); ok {
//			res, err := s.shout(text) // ErrUnhandled: not for me
//			if !errors.Is(err, actor.ErrUnhandled) {
//				return res, err
//			}
//		}
//		return s.Echo.Receive(c, msg) // the embedded base
//	}
//
// (Example_decline runs it.) Optional hooks: Starter (OnStart), Stopper
// (OnStop, exactly once, after the mailbox drained). Embed Agent[C, S] for a
// typed config C and a typed state S that is published to the team at turn
// boundaries when it changed.
//
// Addresses (*message.Address) are weak handles: holding one never keeps a
// stopped actor alive; a send to a dead actor fails with ErrActorDead. Every
// send, from System.Tell/Ask, an Endpoint or Context.Send/Ask, takes one
// path: stamped once, recorded once (a SentMessage, inside a team), queued.
// A send never waits for its receiver and never drops (inside a team, a
// member may wait for its own orchestrator when a subscriber is far
// behind: see package orchestrator). A handler's error or panic is
// reported (an ErrorMessage, or a WarningMessage for a WarningError) and the
// actor goes on with its next message.
//
// Stopping has one path too: a stop request (Context.Stop, System.Stop, a
// StopRecursively, a parent's stop, Shutdown) cancels the actor's
// Context.Context with its cause at once; when the request is reached in the
// mailbox the optional StopRequestHook runs, the children are told to stop
// (tools, Config.Tool, last) without blocking, and once they have all ended
// the actor drains what was queued and runs OnStop, exactly once. A
// message.CancelMessage cancels only the running turn, the same way: in a
// handler Context.Context is the turn's own context, cancelled at once
// when one is sent to the actor.
//
// Telemetry: every actor spawned in a team (orchestrator.New creates one)
// reports Start, Sent, Received, Processed, Handled, Error, Warning,
// StateChanged, Event and Stop to the team's orchestrator, with no
// allocation on the message path; users see it as messages, through the
// orchestrator's subscribers and queries.
//
// Context is valid only on the actor's goroutine; the proxy package runs a
// function there from outside. RegisterKind names an actor kind so that a
// restored team can recreate it. ARCHITECTURE.md at the repository's root
// traces one message and one stop through this package.
package actor
