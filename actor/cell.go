package actor

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

// cell is a running actor: its mailbox, its goroutine's state and its place
// in the tree.
type cell struct {
	// mailbox: producers append to q under mu; the actor swaps q with its
	// private pending slice, one lock per batch.
	mu     sync.Mutex
	q      []envelope   // the queue's tail
	over   [][]envelope // full segments queued before q, oldest first
	idle   bool         // parked: no goroutine runs the actor; the next enqueue starts one
	closed bool         // no more enqueues; set by finish or by the reaper's goroutine, so not part of phase
	queued atomic.Int32 // 1 while q is non-empty; read without the lock when spinning

	// Producers write the fields above on every tell; keep the actor's own
	// fields below off their cache lines (false sharing doubles a tell).
	_ [64]byte

	// Owned by the actor goroutine (and by the creator before it starts).
	pending  []envelope
	pendHead int
	current  message.Message
	ctx      Context
	phase    stopPhase       // how far the actor's stop has gone
	inTurn   bool            // a handler's Receive is running: not a stop phase
	turnCtx  context.Context // the running turn's context, once asked for

	// What the stop needs once it began: why, until when the children are
	// waited for, the grace timer, and the stop asks answered at the end.
	stopCause   error
	deadline    time.Time
	graceTimer  *time.Timer
	stopReplies []chan result

	sys     *System
	actor   Actor
	life    *lifecycle
	self    *message.Address
	parent  *cell
	parentA *message.Address
	orch    *message.Address // the team's orchestrator (nil outside a team)
	sink    telemetry.Sink   // the team's telemetry sink (nil outside a team)
	emitter telemetry.Emitter
	// held is the message of a tell's turn whose Processed record (made
	// at heldAt) is kept back until the actor's next record or envelope
	// (see turn): it goes to the sink with the next turn's Received record,
	// in one step. Nil when nothing is held.
	held      message.Message
	heldAt    int64
	root      telemetry.Sink // set on a team root: the sink it drains
	rootGrace time.Duration  // a team root's default stop grace
	children  []*message.Address
	cfg       any
	state     stateHolder
	hook      StopRequestHook // the actor's, nil when it has none
	logger    *slog.Logger    // the system's, with the actor's name; made on first use
	userID    string
	userEmail string
	restoring bool
}

// run is the actor's first goroutine: its start, then its mail.
func (c *cell) run() {
	c.start()
	c.loop()
}

// loop handles the actor's mail until the mailbox is empty (next parks the
// actor: the goroutine ends, and the enqueue that finds the actor idle
// starts loop again) or the actor has stopped. Only one loop runs at a
// time: the enqueue that starts one is the one that found the actor idle.
func (c *cell) loop() {
	for c.phase != phaseStopped {
		// The end of an actor's life runs in loop's frame, not in process's
		// larger one: a goroutine starts with a 2 KiB stack, and growing it
		// (copystack) at every actor's finish cost SpawnStop ~15%.
		env := c.next()
		if env.kind == envPark { // next emitted what was held before parking
			return
		}
		if c.held != nil && env.kind != envMsg {
			c.flushHeld()
		}
		switch env.kind {
		case envFinish:
			c.finish()
		default:
			c.process(env)
		}
	}
	c.sys.wg.Done()
}

func (c *cell) start() {
	s, ok := c.actor.(Starter)
	if !ok {
		return
	}
	if err := c.protect(func() error { return s.OnStart(&c.ctx) }); err != nil {
		c.failure(err, nil)
	}
}

// protect runs f, turning a panic into a *PanicError.
func (c *cell) protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return f()
}

func (c *cell) emit(r telemetry.Record) {
	if c.emitter != nil {
		if c.held != nil {
			c.flushHeld()
		}
		r.Time = clock.UnixNano()
		r.Emitter = c.self
		c.emitter.Emit(r)
	}
}

// hold keeps m's Processed record back until the next record (see held).
func (c *cell) hold(m message.Message) {
	c.held, c.heldAt = m, clock.UnixNano()
}

// heldRecord returns the record kept back and forgets it.
func (c *cell) heldRecord() telemetry.Record {
	m := c.held
	c.held = nil
	return telemetry.Record{Kind: telemetry.Processed, Time: c.heldAt, Emitter: c.self, Parent: m, Message: m}
}

// flushHeld emits the record kept back.
func (c *cell) flushHeld() {
	c.emitter.Emit(c.heldRecord())
}

// emitAfterHeld emits r, with the record kept back before it in one step
// when there is one.
func (c *cell) emitAfterHeld(r telemetry.Record) {
	if c.held == nil {
		c.emit(r)
		return
	}
	r.Time = clock.UnixNano()
	r.Emitter = c.self
	c.emitter.EmitPair(c.heldRecord(), r)
}
