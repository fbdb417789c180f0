package actor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

type envKind uint8

const (
	envMsg       envKind = iota // a message or raw value: a turn
	envCall                     // a proxy closure: not a turn
	envStop                     // a stop request made from another goroutine; msg is a stopRequest
	envFinish                   // the stop marker: the actor ends when it reaches it
	envChildDone                // a child ended; msg is its address
	envGraceOver                // the grace of this actor's stop ran out
	envWake                     // the team's sink asks for a drain (team roots only)
)

// minQueue is the capacity a mailbox buffer keeps after a burst: enough
// that a steady stream of tells does not regrow it.
const minQueue = 256

// maxIdleQueue is the largest mailbox buffer an actor keeps while it is
// idle.
const maxIdleQueue = 4096

// spinRounds is how many times an idle actor yields, watching its mailbox,
// before it parks.
const spinRounds = 4

type result struct {
	v   any
	err error
}

// envelope is one mailbox entry, stored by value.
type envelope struct {
	msg   any
	fn    func(c *Context, a Actor) (any, error)
	reply chan result // nil for tells
	kind  envKind
}

var replyPool = sync.Pool{New: func() any { return make(chan result, 1) }}

// stopRequest is a stop asked for from another goroutine: why, and until
// when the actor waits for its children (zero: as long as they take).
type stopRequest struct {
	cause    error
	deadline time.Time
}

// lifecycle is the part of an actor its handles hold strongly: it outlives
// the cell, so liveness stays truthful after the cell is collected.
// It also owns the actor's context, cancelled with the cause of its stop.
type lifecycle struct {
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

// turnCancelled is the cause of a turn cancelled by a CancelMessage
// it names the sender, and is a context.Canceled.
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

// target is what a live address delivers to: an actor or an endpoint.
type target interface {
	link.Handle
	put(env envelope) error
}

var addrs = link.Address[message.Identity, message.Address, message.Message]()

// targetOf returns where a message to a goes, or why it cannot go there.
func targetOf(a *message.Address) (target, error) {
	if a == nil {
		return nil, fmt.Errorf("actor: nil address: %w", ErrNotDeliverable)
	}
	switch h := addrs.HandleOf(a).(type) { // concrete cases: no itab lookup
	case *handle:
		return h, nil
	case *endpointHandle:
		return h, nil
	}
	return nil, fmt.Errorf("actor: %s: %w", a, ErrNotDeliverable)
}

// cellOf returns the running actor at a, nil when there is none.
func cellOf(a *message.Address) *cell {
	if h, ok := addrs.HandleOf(a).(*handle); ok {
		return h.cell()
	}
	return nil
}

// origin is who sends: an actor (with the message it is handling, the
// parent of what it sends) or an endpoint outside the actor world.
type origin struct {
	c      *cell
	parent message.Message
	ep     *Endpoint
}

// send is the one path every message takes: System and
// Endpoint Tell/Ask, Context.Send/SendFor/Ask are a few lines over it. It
// stamps a Message once (a message sent before is cloned first),
// records its SentMessage once when the sender is a team member,
// and enqueues it; any other value is delivered as it is. A dead recipient
// fails with ErrActorDead (after the SentMessage went out), a snapshot
// address with ErrNotDeliverable.
func send(from origin, to *message.Address, msg any, reply chan result) error {
	if to == nil {
		return errors.New("actor: send to a nil address")
	}
	if err := nilMessage(msg); err != nil {
		return err
	}
	if m, ok := msg.(message.Message); ok {
		msg = from.stamp(m, to)
	}
	t, err := targetOf(to)
	if err != nil {
		return err
	}
	return t.put(envelope{msg: msg, reply: reply})
}

// ask sends msg with a reply channel and waits for the handler's result.
func ask(ctx context.Context, from origin, to *message.Address, msg any) (any, error) {
	return await(ctx, "ask", to, msg, func(r chan result) error { return send(from, to, msg, r) })
}

// await gives put a pooled reply channel and waits for the answer or ctx:
// the waiting half of ask and of a proxy call.
func await(ctx context.Context, op string, to *message.Address, msg any, put func(r chan result) error) (any, error) {
	r := replyPool.Get().(chan result)
	if err := put(r); err != nil {
		replyPool.Put(r)
		return nil, err
	}
	select {
	case res := <-r:
		replyPool.Put(r)
		return res.v, res.err
	case <-ctx.Done():
		// The late reply lands in r's buffer and r is dropped with it.
		return nil, waitError(ctx, op, to, msg)
	}
}

// stamp takes m for one send (the message itself the first time, a fresh
// shallow copy when it was sent before) and sets its envelope: an actor
// stamps itself, its team and its parent; an endpoint stamps
// itself and the recipient's team, and leaves the parent.
func (f origin) stamp(m message.Message, to *message.Address) message.Message {
	if !addrs.Claim(m) {
		m = addrs.Clone(m)
		addrs.Claim(m)
	}
	b := m.Envelope()
	b.Recipient = to
	if f.c == nil {
		b.Sender = f.ep.addr
		team := to.TeamID()
		b.TeamID.UUID, b.TeamID.Valid = team, team != [16]byte{}
	} else {
		b.Sender = f.c.self
		team := f.c.self.TeamID()
		b.TeamID.UUID, b.TeamID.Valid = team, team != [16]byte{}
		if f.parent != nil {
			b.ParentID.UUID, b.ParentID.Valid = f.parent.Envelope().ID, true
		} else {
			b.ParentID.UUID, b.ParentID.Valid = [16]byte{}, false
		}
	}
	if b.ID == [16]byte{} {
		b.ID = message.NewID()
	}
	if b.Timestamp.IsZero() {
		b.Timestamp = clock.Now()
	}
	if f.c != nil && f.c.emitter != nil {
		f.c.emitter.Emit(telemetry.Record{Kind: telemetry.Sent, Time: clock.UnixNano(), Emitter: f.c.self, Parent: f.parent, Message: m, Recipient: to})
	}
	return m
}

// nilMessage refuses a nil pointer in a Message interface: it has no
// envelope to stamp.
func nilMessage(msg any) error {
	if m, ok := msg.(message.Message); ok {
		if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && v.IsNil() {
			return fmt.Errorf("actor: cannot send a nil %T", m)
		}
	}
	return nil
}

// cell is a running actor: its mailbox, its goroutine's state and its place
// in the tree.
type cell struct {
	// mailbox: producers append to q under mu; the actor swaps q with its
	// private pending slice, one lock per batch.
	mu     sync.Mutex
	q      []envelope
	idle   bool
	closed bool
	wake   chan struct{}
	queued atomic.Int32 // 1 while q is non-empty; read without the lock when spinning

	// Producers write the fields above on every tell; keep the actor's own
	// fields below off their cache lines (false sharing doubles a tell).
	_ [64]byte

	// Owned by the actor goroutine (and by the creator before it starts).
	pending  []envelope
	pendHead int
	current  message.Message
	ctx      Context
	finished bool
	inTurn   bool            // a handler's Receive is running
	turnCtx  context.Context // the running turn's context, once asked for

	// The stop, in order: stopping once it began (children told), tools
	// told once no other child is left, finishing once the marker is queued.
	stopping    bool
	othersTold  bool
	toolsTold   bool
	finishing   bool
	stopCause   error
	deadline    time.Time
	graceTimer  *time.Timer
	stopReplies []chan result

	sys       *System
	actor     Actor
	life      *lifecycle
	self      *message.Address
	parent    *cell
	parentA   *message.Address
	orch      *message.Address // the team's orchestrator (nil outside a team)
	sink      telemetry.Sink   // the team's telemetry sink (nil outside a team)
	emitter   telemetry.Emitter
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

// enqueue appends env to the mailbox; it never blocks. A stop
// request (a StopRecursively, a stop asked from outside) also cancels the
// actor's context at once, and a CancelMessage the context of the turn
// running now, so that a handler doing long work ends early;
// both are still queued and handled in order.
func (c *cell) enqueue(env envelope) error {
	if cause := stopCause(env); cause != nil {
		c.life.requestStop(cause)
	} else if m, ok := env.msg.(*message.CancelMessage); ok && env.kind == envMsg {
		c.cancelTurn(m)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return deadError(c.self)
	}
	c.q = append(c.q, env)
	if len(c.q) == 1 {
		c.queued.Store(1)
	}
	wake := c.idle
	c.idle = false
	c.mu.Unlock()
	if wake {
		c.wake <- struct{}{}
	}
	return nil
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

// forceStop is shutdown's reaper: the actor stops receiving at once and
// its stop marker goes to the head of the queue, so that it finishes as soon
// as its blocked handler returns.
func (c *cell) forceStop() {
	c.life.requestStop(ErrShutdown)
	c.life.stopped.Store(true)
	c.mu.Lock()
	c.closed = true
	c.q = append([]envelope{{kind: envFinish}}, c.q...)
	wake := c.idle
	c.idle = false
	c.mu.Unlock()
	if wake {
		c.wake <- struct{}{}
	}
}

// next returns the next envelope, blocking while the mailbox is empty.
func (c *cell) next() envelope {
	if c.life.stopped.Load() && !c.finished { // reaped (forceStop): finish now, fail the rest
		return envelope{kind: envFinish}
	}
	if c.pendHead < len(c.pending) {
		e := c.pending[c.pendHead]
		c.pending[c.pendHead] = envelope{}
		c.pendHead++
		return e
	}
	spare := c.pending[:0]
	if cap(spare) > 4096 && len(c.pending) < cap(spare)/8 {
		spare = make([]envelope, 0, minQueue) // the burst is over: give its memory back
	}
	c.pendHead = 0
	c.mu.Lock()
	for len(c.q) == 0 {
		c.mu.Unlock()
		// Spin briefly before parking: a sender that is about to enqueue
		// is far cheaper to wait for than a park and a wake-up.
		for i := 0; i < spinRounds && c.queued.Load() == 0; i++ {
			runtime.Gosched()
		}
		c.mu.Lock()
		if len(c.q) > 0 {
			break
		}
		if cap(c.q) > maxIdleQueue || cap(spare) > maxIdleQueue {
			// Parking after a burst: an idle actor keeps no burst-sized
			// buffers.
			c.q = make([]envelope, 0, minQueue)
			spare = make([]envelope, 0, minQueue)
			c.pending = nil
		}
		c.idle = true
		c.mu.Unlock()
		<-c.wake
		c.mu.Lock()
	}
	c.queued.Store(0)
	c.pending, c.q = c.q, spare
	c.mu.Unlock()
	e := c.pending[0]
	c.pending[0] = envelope{}
	c.pendHead = 1
	return e
}

// pull moves everything queued into the private pending slice, so the actor
// can peek at or consume it.
func (c *cell) pull() {
	c.mu.Lock()
	if len(c.q) > 0 {
		if c.pendHead > 0 {
			n := copy(c.pending, c.pending[c.pendHead:])
			clear(c.pending[n:])
			c.pending = c.pending[:n]
			c.pendHead = 0
		}
		c.pending = append(c.pending, c.q...)
		clear(c.q)
		c.q = c.q[:0]
	}
	c.mu.Unlock()
}

func (c *cell) run() {
	defer c.sys.wg.Done()
	c.start()
	for !c.finished {
		// The end of an actor's life runs in run's frame, not in process's
		// larger one: a goroutine starts with a 2 KiB stack, and growing it
		// (copystack) at every actor's finish cost SpawnStop ~15%.
		if env := c.next(); env.kind == envFinish {
			c.finish()
		} else {
			c.process(env)
		}
	}
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

func (c *cell) process(env envelope) {
	switch env.kind {
	case envMsg:
		switch env.msg.(type) {
		case message.StopRecursively, *message.StopRecursively: // a stop message: no telemetry
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

// protect runs f, turning a panic into a *PanicError.
func (c *cell) protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return f()
}

func (c *cell) dispatch(msg any) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return c.actor.Receive(&c.ctx, msg)
}

func (c *cell) emit(r telemetry.Record) {
	if c.emitter != nil {
		r.Time = clock.UnixNano()
		r.Emitter = c.self
		c.emitter.Emit(r)
	}
}

// turn runs one message through the turn bracket.
func (c *cell) turn(env envelope) {
	m, isMsg := env.msg.(message.Message)
	if isMsg {
		c.current = m
		c.emit(telemetry.Record{Kind: telemetry.Received, Parent: m, Message: m})
	}
	c.life.beginTurn()
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
	if c.stopping {
		return
	}
	c.stopping, c.stopCause = true, cause
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
			if !c.othersTold {
				c.stopChild(c.children[i])
			}
		}
	}
	c.othersTold = true
	if !others && !c.toolsTold {
		c.toolsTold = true
		for i := len(c.children) - 1; i >= 0; i-- {
			c.stopChild(c.children[i])
		}
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
	if c.stopping {
		c.stopChildren()
		c.maybeFinish()
	}
}

// maybeFinish queues the stop marker once no child is left: what was
// queued before it is still handled.
func (c *cell) maybeFinish() {
	if !c.stopping || c.finishing || len(c.children) > 0 {
		return
	}
	c.finishing = true
	_ = c.enqueue(envelope{kind: envFinish})
}

// graceOver ends a stop whose children did not all end in time.
func (c *cell) graceOver() {
	if c.finishing || len(c.children) == 0 {
		return
	}
	names := make([]string, 0, len(c.children))
	for _, ch := range c.children {
		names = append(names, ch.Name())
	}
	c.sys.logger.Warn("actor: stop grace expired; forcing teardown",
		"actor", c.self.Name(), "team", c.self.TeamID(), "still_running", strings.Join(names, ", "))
	c.toolsTold = true
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
	if c.finished {
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
	if c.finished {
		return
	}
	if len(c.children) > 0 && !c.life.stopped.Load() {
		// A child was spawned after the marker was queued: wait for it too.
		c.finishing = false
		c.stopping = true
		c.stopChildren()
		return
	}
	c.life.stopped.Store(true)
	c.mu.Lock()
	c.closed = true
	rest := c.q
	c.q = nil
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
	c.finished = true
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
