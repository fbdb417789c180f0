// Package actor is the runtime of akgentic for Go: actors that exchange
// typed messages through unbounded mailboxes, one goroutine each.
//
//	sys := actor.NewSystem(actor.SystemConfig{})
//	addr, err := sys.Spawn(&Greeter{}, actor.Config{Name: "greeter", Role: "Greeter"})
//	err = sys.Tell(addr, &Greet{Text: "Akgentic"})
//	reply, err := sys.Ask(ctx, addr, &Greet{Text: "you"})
//	err = sys.Shutdown(ctx) // drains, stops everything, joins every goroutine
//
// An actor implements Receive(c *Context, msg any) (any, error) and
// dispatches with a type switch; returning ErrUnhandled reports the message
// as unknown, never eaten. Optional hooks: Starter (OnStart), Stopper
// (OnStop, exactly once, after the mailbox drained). Embed Agent[C, S] for a
// typed config C and a typed state S that is published to the team at turn
// boundaries when it changed.
//
// Addresses (*message.Address) are weak handles: holding one never keeps a
// stopped actor alive; Tell and Ask on a dead actor fail with ErrActorDead.
// Tell never blocks and never drops. A handler's error or panic is reported
// (an ErrorMessage, or a WarningMessage for a WarningError) and the actor
// goes on with its next message. Stop is recursive (children first) and
// drains the mailbox before OnStop.
//
// Telemetry: an actor whose value implements Sink is a team root (the
// orchestrator package's Orchestrator); every actor spawned under it emits
// Start, Sent, Received, Processed, Handled, Error, Warning, StateChanged,
// Event and Stop records to it through a per-actor Emitter, with no
// allocation on the message path.
//
// Context is valid only on the actor's goroutine. Call and Cast (and the
// proxy package over them) run a function there from outside; RegisterKind
// names an actor kind so that a restored team can recreate it.
package actor
