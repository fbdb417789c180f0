package actor

import (
	"fmt"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

// stopPhase is how far an actor's stop has gone. The actor's goroutine
// alone reads and writes it, and it only moves forward, except that a
// finishing actor that spawned a child goes back to waiting for it.
type stopPhase uint8

const (
	phaseRunning    stopPhase = iota // no stop began
	phaseStopBegun                   // context cancelled, state checkpointed, hook run; no child told yet
	phaseOthersTold                  // the children that are not tools were told to stop; the tools wait for them
	phaseAllTold                     // every child was told, tools last; waiting for them to end
	phaseFinishing                   // no child left: the stop marker is queued
	phaseStopped                     // finish ran: the actor has ended
)

var stopPhaseNames = [...]string{"running", "stop begun", "others told", "all told", "finishing", "stopped"}

func (p stopPhase) String() string {
	if int(p) < len(stopPhaseNames) {
		return stopPhaseNames[p]
	}
	return fmt.Sprintf("stopPhase(%d)", p)
}

// stopRequest is a stop asked for from another goroutine: why, and until
// when the actor waits for its children (zero: as long as they take).
type stopRequest struct {
	cause    error
	deadline time.Time
}

// requestStop asks the actor to stop, from any goroutine: its
// context is cancelled at once and the request is queued behind what is
// already in the mailbox.
func (c *cell) requestStop(cause error, deadline time.Time) {
	var req any = plainStop
	if cause != ErrStopped || !deadline.IsZero() {
		req = stopRequest{cause: cause, deadline: deadline} // boxed: one allocation
	}
	_ = c.enqueue(envelope{kind: envStop, msg: req})
}

// plainStop is the request of System.Stop, boxed once.
var plainStop any = stopRequest{cause: ErrStopped}

// errStopMessage is the cause of a stop requested by a StopRecursively.
var errStopMessage = fmt.Errorf("%w: StopRecursively received", ErrStopped)

func stopCause(env envelope) error {
	switch env.kind {
	case envStop:
		return env.msg.(stopRequest).cause
	case envMsg:
		switch env.msg.(type) {
		case message.StopRecursively, *message.StopRecursively:
			return errStopMessage
		}
	}
	return nil
}

// forceStop is shutdown's reaper: the actor stops receiving at once and
// its stop marker goes to the head of the queue, so that it finishes as soon
// as its blocked handler returns.
func (c *cell) forceStop() {
	c.life.requestStop(ErrShutdown)
	c.life.stopped.Store(true)
	c.mu.Lock()
	c.closed = true
	c.q = append([]envelope{{kind: envFinish}}, c.takeQueued()...)
	wake := c.idle
	c.idle = false
	c.mu.Unlock()
	if wake {
		go c.loop()
	}
}

// beginStop is the one stop path, reached in mailbox order
// on the actor's goroutine, whoever asked: checkpoint the state, run the
// OnStopRequest hook, tell the children to stop (newest first; tools once no
// other child is left) without waiting for them, and queue the stop
// marker once the last child has ended. Messages that arrive meanwhile are
// still handled. With a deadline, children still running when it passes
// are left behind (logged) and the actor ends anyway.
//
// The common case (a leaf with no state and no hook) stays in this small
// frame: an actor's goroutine starts on a small stack, and a deep frame
// here made every leaf's stop grow it (copystack cost SpawnStop ~30%).
func (c *cell) beginStop(cause error, deadline time.Time) {
	if c.phase != phaseRunning {
		return
	}
	c.phase, c.stopCause = phaseStopBegun, cause
	c.life.requestStop(cause)
	if c.state != nil || c.hook != nil {
		c.stopHooks(cause)
	}
	if len(c.children) > 0 || c.root != nil {
		c.stopTree(deadline)
	}
	c.maybeFinish()
}

// stopHooks runs the top-of-stop checkpoint and OnStopRequest.
//
//go:noinline
func (c *cell) stopHooks(cause error) {
	if err := c.checkpoint(); err != nil {
		c.report(err, c.current)
	}
	if c.hook != nil {
		if err := c.protect(func() error { c.hook.OnStopRequest(&c.ctx, cause); return nil }); err != nil {
			c.failure(err, nil)
		}
	}
}

// stopTree tells the children to stop and arms the grace timer.
//
//go:noinline
func (c *cell) stopTree(deadline time.Time) {
	if deadline.IsZero() && c.root != nil && c.rootGrace > 0 {
		deadline = time.Now().Add(c.rootGrace)
	}
	c.deadline = deadline
	c.stopChildren()
	if len(c.children) > 0 && !deadline.IsZero() {
		c.graceTimer = time.AfterFunc(time.Until(deadline), func() { _ = c.enqueue(envelope{kind: envGraceOver}) })
	}
}

// stopChildren tells the children to stop, each once: those that are not
// tools first, newest first; tools once no other child is left. A child
// spawned while the stop is under way is told by spawn itself.
func (c *cell) stopChildren() {
	others := false
	for i := len(c.children) - 1; i >= 0; i-- {
		if !c.children[i].IsTool() {
			others = true
			if c.phase < phaseOthersTold {
				c.stopChild(c.children[i])
			}
		}
	}
	switch {
	case !others && c.phase < phaseAllTold:
		c.phase = phaseAllTold
		for i := len(c.children) - 1; i >= 0; i-- {
			c.stopChild(c.children[i])
		}
	case c.phase < phaseOthersTold:
		c.phase = phaseOthersTold
	}
}

func (c *cell) stopChild(a *message.Address) {
	if cc := cellOf(a); cc != nil {
		cc.requestStop(c.stopCause, c.deadline)
	}
}

// childDone is a child's last word: it leaves the children list, and a
// stopping parent moves on.
func (c *cell) childDone(a *message.Address) {
	for i, ch := range c.children {
		if ch == a {
			c.children = append(c.children[:i], c.children[i+1:]...)
			break
		}
	}
	if c.phase != phaseRunning {
		c.stopChildren()
		c.maybeFinish()
	}
}

// maybeFinish queues the stop marker once no child is left: what was
// queued before it is still handled.
func (c *cell) maybeFinish() {
	if c.phase == phaseRunning || c.phase >= phaseFinishing || len(c.children) > 0 {
		return
	}
	c.phase = phaseFinishing
	_ = c.enqueue(envelope{kind: envFinish})
}

// graceOver ends a stop whose children did not all end in time.
func (c *cell) graceOver() {
	if c.phase >= phaseFinishing || len(c.children) == 0 {
		return
	}
	names := make([]string, 0, len(c.children))
	for _, ch := range c.children {
		names = append(names, ch.Name())
	}
	c.sys.logger.Warn("actor: stop grace expired; forcing teardown",
		"actor", c.self.Name(), "team", c.self.TeamID(), "still_running", strings.Join(names, ", "))
	for _, ch := range c.children {
		c.stopChild(ch)
	}
	c.children = nil
	c.maybeFinish()
}

// answerStop answers an ask that requested a stop once the actor has ended.
func (c *cell) answerStop(reply chan result) {
	if reply == nil {
		return
	}
	if c.phase == phaseStopped {
		reply <- result{}
		return
	}
	c.stopReplies = append(c.stopReplies, reply)
}

// finish is reached at the stop marker: stop receiving, run the
// stop hook, final checkpoint, StopMessage, then fail what is left. Like
// beginStop it keeps the common case in a small frame (see there); what a
// leaf without hooks never needs lives in the noinline helpers below.
func (c *cell) finish() {
	if c.phase == phaseStopped {
		return
	}
	if len(c.children) > 0 && !c.life.stopped.Load() {
		// A child was spawned after the marker was queued: wait for it too.
		// spawn told it to stop, as every child born since the stop began,
		// so there is no one left to tell.
		c.phase = phaseAllTold
		return
	}
	c.life.stopped.Store(true)
	c.mu.Lock()
	c.closed = true
	rest := c.takeQueued()
	c.mu.Unlock()
	left := c.pending[c.pendHead:]
	c.pending, c.pendHead = nil, 0
	c.sys.deregister(c)
	if c.graceTimer != nil || len(c.children) > 0 {
		c.leaveChildren()
	}
	if _, ok := c.actor.(Stopper); ok || c.state != nil || c.emitter != nil {
		c.lastHooks()
	}
	stopAsks := c.stopReplies
	c.stopReplies = nil
	if len(left) > 0 || len(rest) > 0 {
		stopAsks = c.failLeft(left, rest, stopAsks)
	}
	c.phase = phaseStopped
	c.life.release(ErrStopped)
	if c.parent != nil {
		_ = c.parent.enqueue(envelope{kind: envChildDone, msg: c.self})
	}
	close(c.life.done)
	// A stop ask is answered once the actor has ended: after Done closed,
	// so that an asker that then looks at Done(addr) sees it closed.
	for _, r := range stopAsks {
		r <- result{}
	}
}

// leaveChildren stops the grace timer and tells the children still running
// (left behind by an expired grace or the reaper) to stop, never waiting.
//
//go:noinline
func (c *cell) leaveChildren() {
	if c.graceTimer != nil {
		c.graceTimer.Stop()
	}
	for _, ch := range c.children {
		c.stopChild(ch)
	}
	c.children = nil
}

// lastHooks runs OnStop, the final checkpoint and the Stop record.
//
//go:noinline
func (c *cell) lastHooks() {
	if s, ok := c.actor.(Stopper); ok {
		if err := c.protect(func() error { s.OnStop(&c.ctx); return nil }); err != nil {
			c.sys.logger.Error("actor: OnStop failed", "actor", c.self.Name(), "error", err)
			c.report(err, nil)
		}
	}
	if err := c.checkpoint(); err != nil {
		c.report(err, nil)
	}
	c.emit(telemetry.Record{Kind: telemetry.Stop})
}

// failLeft answers what was still queued at the end: a stop ask
// succeeds (returned with stopAsks, answered once Done is closed), another
// ask fails with ErrActorDead, a tell is dropped (and counted in the log).
//
//go:noinline
func (c *cell) failLeft(left, rest []envelope, stopAsks []chan result) []chan result {
	dropped := 0
	for _, q := range [2][]envelope{left, rest} {
		for _, env := range q {
			switch {
			case env.reply != nil && (env.kind == envStop || stopCause(env) != nil):
				stopAsks = append(stopAsks, env.reply) // a stop asked for is what happened
			case env.reply != nil:
				env.reply <- result{err: deadError(c.self)}
			case env.kind == envMsg || env.kind == envCall:
				dropped++
			}
		}
	}
	if dropped > 0 {
		c.sys.logger.Debug("actor: tells queued after the stop marker were dropped",
			"actor", c.self.Name(), "count", dropped)
	}
	return stopAsks
}
