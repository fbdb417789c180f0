package actor

import (
	"context"

	"fmt"
	"log/slog"
	"time"

	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
	"github.com/google/uuid"
)

// Context is what a handler, a hook or a proxy closure gets: the actor's
// view of itself and the runtime. It is valid only on the actor's own
// goroutine, during the call it was passed to; do not keep it or hand it
// to another goroutine (Context.Context is the exception: the
// context.Context it returns may go anywhere).
type Context struct {
	cell *cell
}

// Self returns the actor's own address.
func (c *Context) Self() *message.Address { return c.cell.self }

// Context returns the actor's context.Context: cancelled, with the cause
// (context.Cause), as soon as the actor's stop is requested (a
// StopRecursively or a stop asked from outside is queued, its parent stops,
// the system shuts down) and in any case once the actor has ended. Long work
// in a handler (a model call, a tool, a wait) should use it, so that a stop
// does not wait for it. What is queued is still handled before the stop, as
// always.
//
// In a handler (Receive) it is the turn's context, a child of the actor's:
// also cancelled as soon as a message.CancelMessage is sent to the actor
// while this turn runs (the cause, a context.Canceled, names the
// CancelMessage's sender and reason), and once the handler returns, like an
// http.Request's. The CancelMessage is then handled in its turn as any
// message; a cancel sent while no turn runs cancels nothing. In OnStart,
// OnStop, hooks and proxy calls it is the actor's context.
func (c *Context) Context() context.Context {
	cl := c.cell
	if !cl.inTurn {
		return cl.life.context()
	}
	if cl.turnCtx == nil { // made on first use: most handlers never ask
		cl.turnCtx = cl.life.turnContext()
	}
	return cl.turnCtx
}

// Sender returns the sender of the message being handled (nil for raw
// values, proxy calls and messages told without a sender).
func (c *Context) Sender() *message.Address {
	// Read from the message only when asked: a handler that does not look
	// spares the receiving core a read of the sender's freshly written
	// envelope.
	if m := c.cell.current; m != nil {
		return m.Envelope().Sender
	}
	return nil
}

// Message returns the message whose turn is running (nil outside a turn and
// for raw values).
func (c *Context) Message() message.Message { return c.cell.current }

// Logger returns the actor's logger (the system's, with the actor's name).
func (c *Context) Logger() *slog.Logger {
	cl := c.cell
	if cl.logger == nil {
		cl.logger = cl.sys.logger.With("actor", cl.self.Name())
	}
	return cl.logger
}

// Config returns the actor's own copy of its config: a pointer to the config
// type it was spawned with (*Config when none was given).
func (c *Context) Config() any { return c.cell.cfg }

// Parent returns the address of the actor that spawned this one (nil for a
// root actor).
func (c *Context) Parent() *message.Address { return c.cell.parentA }

// Orchestrator returns the team's orchestrator (nil outside a team; the
// orchestrator gets itself).
func (c *Context) Orchestrator() *message.Address {
	if c.cell.root != nil {
		return c.cell.self
	}
	return c.cell.orch
}

// Restoring reports whether the actor was spawned as part of a restore.
func (c *Context) Restoring() bool { return c.cell.restoring }

// User returns the user id and email the actor was spawned with (WithUser;
// inherited by children).
func (c *Context) User() (id, email string) { return c.cell.userID, c.cell.userEmail }

// Children returns the addresses of the actor's running children, in
// creation order.
func (c *Context) Children() []*message.Address {
	return append([]*message.Address(nil), c.cell.children...)
}

// Spawn creates a child actor: it joins this actor's team, reports to
// the same orchestrator, inherits the squad unless its config names one, and
// is appended to Children. cfg is copied; see System.Spawn. A child spawned
// while this actor is stopping is told to stop at once.
func (c *Context) Spawn(a Actor, cfg any, opts ...SpawnOption) (*message.Address, error) {
	return c.cell.sys.spawn(c.cell, a, cfg, opts)
}

// Send sends msg to the actor at to. A message is stamped (sender =
// this actor, its team, parent = the current message) and a SentMessage is
// emitted before delivery; any other value is delivered as it is. It fails
// with ErrActorDead when the recipient cannot receive (after the
// SentMessage went out) and with ErrNotDeliverable for a snapshot address.
func (c *Context) Send(to *message.Address, msg any) error {
	return send(origin{c: c.cell, parent: c.cell.current}, to, msg, nil)
}

// Ask sends msg like Send and waits for the recipient's handler to return,
// or for ctx. Asking oneself fails at once with ErrSelfAsk (it would
// deadlock).
func (c *Context) Ask(ctx context.Context, to *message.Address, msg any) (any, error) {
	if to != nil && to.AgentID() == c.cell.self.AgentID() {
		return nil, fmt.Errorf("%w: %s", ErrSelfAsk, to)
	}
	return ask(ctx, origin{c: c.cell, parent: c.cell.current}, to, msg)
}

// Stop starts this actor's stop and returns at once: its context is
// cancelled with ErrStopped, its children are told to stop, and once they
// have all ended the actor ends after what is already queued (OnStop runs
// once). Calling it again does nothing.
func (c *Context) Stop() { c.cell.beginStop(ErrStopped, time.Time{}) }

// Mailbox returns the messages waiting in the mailbox, in queue order,
// without removing them: never the one being handled, never raw
// values, proxy calls or control entries.
func (c *Context) Mailbox() []message.Message {
	cl := c.cell
	cl.pull()
	var out []message.Message
	for _, env := range cl.pending[cl.pendHead:] {
		if env.kind != envMsg {
			continue
		}
		if m, ok := env.msg.(message.Message); ok {
			out = append(out, m)
		}
	}
	return out
}

// ConsumeMailbox removes the waiting messages whose ids are listed and
// returns them in queue order. Ids not queued are ignored. Each removed
// message gets one HandledMessage and never a turn of its own; an ask
// among them is answered with ErrConsumed.
func (c *Context) ConsumeMailbox(ids ...uuid.UUID) []message.Message {
	if len(ids) == 0 {
		return nil
	}
	want := make(map[uuid.UUID]struct{}, len(ids))
	for _, id := range ids {
		want[id] = struct{}{}
	}
	cl := c.cell
	cl.pull()
	var out []message.Message
	keep := cl.pending[:cl.pendHead]
	for _, env := range cl.pending[cl.pendHead:] {
		m, ok := env.msg.(message.Message)
		if ok && env.kind == envMsg {
			if _, hit := want[m.Envelope().ID]; hit {
				out = append(out, m)
				if env.reply != nil {
					env.reply <- result{err: fmt.Errorf("%w: %s", ErrConsumed, message.TypeName(m))}
				}
				continue
			}
		}
		keep = append(keep, env)
	}
	clear(cl.pending[len(keep):])
	cl.pending = keep
	for _, m := range out {
		cl.emit(telemetry.Record{Kind: telemetry.Handled, Parent: cl.current, Message: m})
	}
	return out
}

// NotifyEvent emits an EventMessage carrying ev to the orchestrator.
func (c *Context) NotifyEvent(ev any) {
	c.cell.emit(telemetry.Record{Kind: telemetry.Event, Parent: c.cell.current, Value: ev})
}

// Report emits err as the runtime reports a failed handler: a WarningMessage
// for a WarningError, an ErrorMessage otherwise, naming the current message.
// The actor goes on.
func (c *Context) Report(err error) {
	if err != nil {
		c.cell.report(err, c.cell.current)
	}
}
