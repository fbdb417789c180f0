package actor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

func (c *cell) process(env envelope) {
	switch env.kind {
	case envMsg:
		switch env.msg.(type) {
		case message.StopRecursively, *message.StopRecursively: // a stop message: no telemetry
			if c.held != nil {
				c.flushHeld()
			}
			c.beginStop(errStopMessage, time.Time{})
			c.answerStop(env.reply)
			return
		}
		c.turn(env)
	case envCall:
		c.call(env)
	case envStop:
		req := env.msg.(stopRequest)
		c.beginStop(req.cause, req.deadline)
		c.answerStop(env.reply)
	case envChildDone:
		c.childDone(env.msg.(*message.Address))
	case envGraceOver:
		c.graceOver()
	case envWake:
		if err := c.protect(func() error { c.root.Drain(); return nil }); err != nil {
			c.sys.logger.Error("actor: telemetry drain failed", "actor", c.self.Name(), "error", err)
		}
	case envFinish:
		c.finish()
	}
}

func (c *cell) dispatch(msg any) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return c.actor.Receive(&c.ctx, msg)
}

// turn runs one message through the turn bracket.
func (c *cell) turn(env envelope) {
	m, isMsg := env.msg.(message.Message)
	// A cancel that came before now was for an earlier turn; one that
	// comes once the Received record is out is for this one (a follower of
	// the records that sees the turn begin can cancel it).
	c.life.beginTurn()
	if isMsg {
		c.current = m
		c.emitAfterHeld(telemetry.Record{Kind: telemetry.Received, Parent: m, Message: m})
	} else if c.held != nil {
		c.flushHeld()
	}
	c.inTurn = true
	res, err := c.dispatch(env.msg)
	c.inTurn = false
	if c.turnCtx != nil { // the handler asked for its context: release it
		c.turnCtx = nil
		c.life.endTurn()
	}
	if err != nil && errors.Is(err, ErrUnhandled) {
		c.sys.logger.Warn(fmt.Sprintf("Unknown message %s from %s", message.TypeName(env.msg), c.ctx.Sender()),
			"actor", c.self.Name())
		res, err = nil, nil
	}
	if err != nil {
		if env.reply != nil { // the ask path: the caller owns the error
			if isMsg {
				c.emitProcessed(m)
				c.current = nil
			}
			env.reply <- result{err: err}
			return
		}
		c.failure(err, nil)
		return
	}
	if isMsg && env.reply == nil && c.state == nil && c.emitter != nil {
		// Kept back until the actor's next record, which takes it along
		// (one step into the sink instead of two): the next turn's
		// Received, or any record, or the actor's next envelope that is
		// not a turn, or its parking (next), whichever comes first. No
		// user code runs meanwhile, so nothing can have seen the turn end.
		c.hold(m)
		c.current = nil
		return
	}
	if isMsg {
		c.emitProcessed(m)
		cerr := c.checkpoint()
		c.current = nil
		if cerr != nil {
			if env.reply != nil {
				env.reply <- result{err: cerr}
				return
			}
			c.report(cerr, m)
		}
	}
	if env.reply != nil {
		env.reply <- result{v: res}
	}
}

func (c *cell) emitProcessed(m message.Message) {
	c.emit(telemetry.Record{Kind: telemetry.Processed, Parent: m, Message: m})
}

// call runs a proxy closure: not a turn, no telemetry, no checkpoint.
func (c *cell) call(env envelope) {
	var res any
	err := c.protect(func() error {
		var err error
		res, err = env.fn(&c.ctx, c.actor)
		return err
	})
	if env.reply != nil {
		env.reply <- result{v: res, err: err}
		return
	}
	if err != nil {
		c.sys.logger.Error("actor: proxy tell failed", "actor", c.self.Name(), "error", err)
	}
}

// failure reports a failed turn on the tell path: guarded checkpoint,
// log, Processed for the current message, then WarningMessage or
// ErrorMessage. cur overrides the current message when non-nil.
func (c *cell) failure(err error, cur message.Message) {
	if c.state != nil {
		if cerr := c.checkpoint(); cerr != nil {
			c.sys.logger.Warn("actor: state checkpoint failed while reporting a failure",
				"actor", c.self.Name(), "error", cerr)
		}
	}
	if cur == nil {
		cur = c.current
	}
	if _, warn := IsWarning(err); warn {
		// A WarningError (a usage limit reached, say) is not a failure of
		// the handler: a warning record and a warning line.
		c.sys.logger.Warn("actor: handler ended with a warning", "actor", c.self.Name(),
			"message", message.TypeName(cur), "warning", err)
	} else {
		c.sys.logger.Error("actor: handler failed", "actor", c.self.Name(),
			"message", message.TypeName(cur), "error", err)
	}
	if c.current != nil {
		c.emitProcessed(c.current)
		c.current = nil
	}
	c.report(err, cur)
}

// report emits the WarningMessage or ErrorMessage for err (parent nil).
func (c *cell) report(err error, cur message.Message) {
	if c.emitter == nil {
		return
	}
	ct, text := contentType(err), err.Error()
	if _, ok := IsWarning(err); ok {
		w := &message.WarningMessage{}
		w.ContentType, w.Content, w.CurrentMessage = ct, text, cur
		c.emit(telemetry.Record{Kind: telemetry.Warning, Message: cur, Value: w})
		return
	}
	e := &message.ErrorMessage{Traceback: traceback(err)}
	e.ContentType, e.Content, e.CurrentMessage = ct, text, cur
	c.emit(telemetry.Record{Kind: telemetry.Error, Message: cur, Value: e})
}

// traceback is the stack of a panic, or the chain of wrapped errors.
func traceback(err error) string {
	var p *PanicError
	if errors.As(err, &p) {
		return p.Stack
	}
	var b strings.Builder
	b.WriteString("error chain:\n")
	for e := err; e != nil; e = errors.Unwrap(e) {
		fmt.Fprintf(&b, "  %T: %v\n", e, e)
	}
	return b.String()
}

func (c *cell) checkpoint() error {
	if c.state == nil {
		return nil
	}
	// A state's MarshalJSON or an observer may panic: a failure like any
	// other, never the process's end.
	return c.protect(c.state.checkpoint)
}

// cancelTurn cancels the turn running now (none: nothing) with a cause
// naming m's sender.
func (c *cell) cancelTurn(m *message.CancelMessage) {
	by := "the program"
	if s := m.Sender; s != nil {
		by = s.Name()
	}
	c.life.cancelTurn(&turnCancelled{by: by, reason: m.Reason})
}

// beginTurn forgets a cancel that came before the turn began.
func (l *lifecycle) beginTurn() {
	if l.cancelled.Load() {
		l.mu.Lock()
		l.cancelCause = nil
		l.cancelled.Store(false)
		l.mu.Unlock()
	}
}

// turnContext makes the running turn's context, a child of the actor's:
// cancelled at once when a CancelMessage came since the turn began.
func (l *lifecycle) turnContext() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithCancelCause(l.actorContext())
	l.turnCancel = cancel
	if l.cancelCause != nil {
		cancel(l.cancelCause)
	}
	return ctx
}

// cancelTurn cancels the running turn with cause: now if its context
// exists, else when it is made; a turn that begins later clears it.
func (l *lifecycle) cancelTurn(cause error) {
	l.mu.Lock()
	l.cancelCause = cause
	l.cancelled.Store(true)
	if l.turnCancel != nil {
		l.turnCancel(cause)
	}
	l.mu.Unlock()
}

// endTurn releases the context of the turn that just ended.
func (l *lifecycle) endTurn() {
	l.mu.Lock()
	l.turnCancel(errTurnEnded)
	l.turnCancel = nil
	l.mu.Unlock()
}

// errTurnEnded is the cause a turn's context ends with when its handler
// returned.
var errTurnEnded = errors.New("actor: the turn ended")

// turnCancelled is the cause of a turn cancelled by a CancelMessage: it
// names the sender, and is a context.Canceled.
type turnCancelled struct {
	by, reason string
}

func (e *turnCancelled) Error() string {
	if e.reason == "" {
		return "turn cancelled by " + e.by
	}
	return "turn cancelled by " + e.by + ": " + e.reason
}

func (e *turnCancelled) Unwrap() error { return context.Canceled }
