package actor

import (
	"context"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/akgentic/akgentic-go/message"
)

// lifecycle is the part of an actor its handles hold strongly: it outlives
// the cell, so liveness stays truthful after the cell is collected.
// It also owns the actor's context, cancelled with the cause of its stop.
type lifecycle struct {
	// stopped: the actor receives no more. Read by any goroutine and set by
	// the reaper's too, so it is not the cell's phase, which only the actor's
	// goroutine touches.
	stopped atomic.Bool
	done    chan struct{}

	mu     sync.Mutex
	cause  error // why the stop was requested; nil while none was
	ctx    context.Context
	cancel context.CancelCauseFunc

	// The running turn's context, made only when its handler asks for it
	// (Context.Context), and the cancel a CancelMessage asked for since the
	// turn began: a turn clears a cancel left from before it (one that
	// came between two turns cancels neither), so the turn's hot path reads
	// one flag and takes no lock.
	turnCancel  context.CancelCauseFunc // nil unless the running turn made its context
	cancelCause error                   // a *turnCancelled; nil while none came
	cancelled   atomic.Bool             // cancelCause != nil, read without the lock
}

// requestStop records the first stop cause and cancels the context.
func (l *lifecycle) requestStop(cause error) {
	l.mu.Lock()
	if l.cause == nil {
		l.cause = cause
		if l.cancel != nil {
			l.cancel(cause)
		}
	}
	l.mu.Unlock()
}

// context returns the actor's context, made on first use: most actors never
// ask for it, and a context costs allocations at every spawn.
func (l *lifecycle) context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.actorContext()
}

// actorContext is context with l.mu held.
func (l *lifecycle) actorContext() context.Context {
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(context.Background())
		if l.cause != nil {
			l.cancel(l.cause)
		}
	}
	return l.ctx
}

// release cancels the context once the actor has ended.
func (l *lifecycle) release(cause error) {
	l.requestStop(cause)
}

// handle is the delivery side of a live address: a weak pointer to the cell.
type handle struct {
	w    weak.Pointer[cell]
	life *lifecycle
	addr *message.Address
}

func (h *handle) cell() *cell {
	if h.life.stopped.Load() {
		return nil
	}
	return h.w.Value()
}

// Alive reports whether the actor can still receive.
func (h *handle) Alive() bool { return h.cell() != nil }

func (h *handle) put(env envelope) error {
	c := h.cell()
	if c == nil {
		return deadError(h.addr)
	}
	return c.enqueue(env)
}
