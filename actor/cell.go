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
	"weak"

	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/message"
	"github.com/google/uuid"
)

type envKind uint8

const (
	envMsg      envKind = iota // a message or raw value: a turn
	envCall                    // a proxy closure: not a turn (B36)
	envStop                    // the stop marker at the tail of the mailbox (B21)
	envStopTree                // run the recursive stop (B20, B25)
	envGraceful                // shutdown's stop: GracefulStop if implemented
)

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

// lifecycle is the part of an actor its handles hold strongly: it outlives
// the cell, so liveness stays truthful after the cell is collected (B55).
type lifecycle struct {
	stopped atomic.Bool
	done    chan struct{}

	// A stop was requested (StopRecursively or a parent's stop queued, or
	// the reaper); reqCh, made on first use, is closed then.
	reqMu sync.Mutex
	req   bool
	reqCh chan struct{}
}

// requestStop records that a stop is on its way and wakes the waiters.
func (l *lifecycle) requestStop() {
	l.reqMu.Lock()
	if !l.req {
		l.req = true
		if l.reqCh != nil {
			close(l.reqCh)
		}
	}
	l.reqMu.Unlock()
}

// stopRequested returns a channel closed once a stop is requested.
func (l *lifecycle) stopRequested() <-chan struct{} {
	l.reqMu.Lock()
	defer l.reqMu.Unlock()
	if l.reqCh == nil {
		l.reqCh = make(chan struct{})
		if l.req {
			close(l.reqCh)
		}
	}
	return l.reqCh
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

// Alive reports whether the actor can still receive (B55).
func (h *handle) Alive() bool { return h.cell() != nil }

// Tell enqueues msg without stamping it (B56).
func (h *handle) Tell(msg any) error {
	if err := nilMessage(msg); err != nil {
		return err
	}
	c := h.cell()
	if c == nil {
		return deadError(h.addr)
	}
	if m, ok := msg.(message.Message); ok {
		msg = prepareUnstamped(m)
	}
	return c.enqueue(envelope{msg: msg})
}

// Ask enqueues msg and waits for the handler's result (B56).
func (h *handle) Ask(ctx context.Context, msg any) (any, error) {
	if err := nilMessage(msg); err != nil {
		return nil, err
	}
	if m, ok := msg.(message.Message); ok {
		msg = prepareUnstamped(m)
	}
	return h.ask(ctx, envelope{msg: msg})
}

func (h *handle) ask(ctx context.Context, env envelope) (any, error) {
	c := h.cell()
	if c == nil {
		return nil, deadError(h.addr)
	}
	r := replyPool.Get().(chan result)
	env.reply = r
	if err := c.enqueue(env); err != nil {
		replyPool.Put(r)
		return nil, err
	}
	select {
	case res := <-r:
		replyPool.Put(r)
		return res.v, res.err
	case <-ctx.Done():
		// The late reply lands in r's buffer and r is dropped with it.
		return nil, waitError(ctx, "ask", h.addr, env.msg)
	}
}

// claim takes m for one send: m itself the first time, a fresh shallow copy
// when m was sent before (a sent message never changes, B4). It stamps the
// sender, recipient and team, and fills a zero id and timestamp; the parent
// is the caller's to set.
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

func claim(m message.Message, from, to *message.Address, team uuid.UUID) message.Message {
	if !message.Claim(m) {
		m = message.Clone(m)
		message.Claim(m)
	}
	b := m.Envelope()
	b.Sender, b.Recipient = from, to
	b.TeamID = uuid.NullUUID{UUID: team, Valid: team != uuid.Nil}
	if b.ID == uuid.Nil {
		b.ID = message.NewID()
	}
	if b.Timestamp.IsZero() {
		b.Timestamp = clock.Now()
	}
	return m
}

// prepareUnstamped fills a fresh message's id and timestamp without touching
// its causal fields; a message sent before is passed on as it is.
func prepareUnstamped(m message.Message) message.Message {
	if message.Claim(m) {
		b := m.Envelope()
		if b.ID == uuid.Nil {
			b.ID = message.NewID()
		}
		if b.Timestamp.IsZero() {
			b.Timestamp = clock.Now()
		}
	}
	return m
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
	stopping bool
	finished bool

	sys       *System
	actor     Actor
	life      *lifecycle
	self      *message.Address
	parent    *cell
	parentA   *message.Address
	orch      *message.Address // the team's orchestrator (nil outside a team)
	sink      Sink             // the team's telemetry sink
	emitter   Emitter
	childOrch *message.Address
	childSink Sink
	children  []*message.Address
	cfg       any
	state     stateHolder
	logger    *slog.Logger // the system's, with the actor's name; made on first use
	userID    string
	userEmail string
	restoring bool
}

// enqueue appends env to the mailbox; it never blocks (B38a). A stop
// request (StopRecursively, a parent's stop) is also signalled at once to
// a handler that watches Context.StopRequested.
func (c *cell) enqueue(env envelope) error {
	if isStopRequest(env) {
		c.life.requestStop()
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

func isStopRequest(env envelope) bool {
	switch env.kind {
	case envStopTree, envGraceful:
		return true
	case envMsg:
		switch env.msg.(type) {
		case message.StopRecursively, *message.StopRecursively:
			return true
		}
	}
	return false
}

// forceStop is shutdown's reaper: the actor stops receiving at once and
// its stop marker goes to the head of the queue, so that it finishes as soon
// as its blocked handler returns.
func (c *cell) forceStop() {
	c.life.requestStop()
	c.life.stopped.Store(true)
	c.mu.Lock()
	c.closed = true
	c.q = append([]envelope{{kind: envStop}}, c.q...)
	wake := c.idle
	c.idle = false
	c.mu.Unlock()
	if wake {
		c.wake <- struct{}{}
	}
}

// next returns the next envelope, blocking while the mailbox is empty.
func (c *cell) next() envelope {
	if c.life.stopped.Load() { // reaped (forceStop): finish now, fail the rest
		return envelope{kind: envStop}
	}
	if c.pendHead < len(c.pending) {
		e := c.pending[c.pendHead]
		c.pending[c.pendHead] = envelope{}
		c.pendHead++
		return e
	}
	spare := c.pending[:0]
	if cap(spare) > 4096 && len(c.pending) < cap(spare)/8 {
		spare = nil // the burst is over: give its memory back
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
// can peek at or consume it (B40, B41).
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
		c.process(c.next())
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
		case message.StopRecursively, *message.StopRecursively:
			err := c.rawStop()
			if env.reply != nil {
				env.reply <- result{err: err}
			} else if err != nil {
				c.failure(err, nil)
			}
			return
		}
		c.turn(env)
	case envCall:
		c.call(env)
	case envStopTree:
		err := c.rawStop()
		if env.reply != nil {
			env.reply <- result{err: err}
		}
	case envGraceful:
		if g, ok := c.actor.(GracefulStopper); ok {
			grace, _ := env.msg.(graceValue)
			err := c.protect(func() error { g.GracefulStop(&c.ctx, grace.d); return nil })
			if err != nil {
				c.failure(err, nil)
			}
		} else if err := c.stopTree(); err != nil {
			c.failure(err, nil)
		}
	case envStop:
		c.finish()
	}
}

// protect runs f, turning a panic into a *PanicError (B37).
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

// turn runs one message through the turn bracket (B32).
func (c *cell) turn(env envelope) {
	m, isMsg := env.msg.(message.Message)
	if isMsg {
		c.current = m
		if c.emitter != nil {
			c.emitter.Emit(Record{Kind: RecordReceived, Time: clock.UnixNano(), Emitter: c.self, Parent: m, Message: m})
		}
	}
	res, err := c.dispatch(env.msg)
	if err != nil && errors.Is(err, ErrUnhandled) {
		c.sys.logger.Warn(fmt.Sprintf("Unknown message %s from %s", message.TypeName(env.msg), c.ctx.Sender()),
			"actor", c.self.Name())
		res, err = nil, nil
	}
	if err != nil {
		if env.reply != nil { // the ask path: the caller owns the error (B35)
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
	if c.emitter != nil {
		c.emitter.Emit(Record{Kind: RecordProcessed, Time: clock.UnixNano(), Emitter: c.self, Parent: m, Message: m})
	}
}

// call runs a proxy closure: not a turn, no telemetry, no checkpoint (B36).
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

// failure reports a failed turn on the tell path (B33): guarded checkpoint,
// log, Processed for the current message, then WarningMessage or
// ErrorMessage. cur overrides the current message when non-nil.
func (c *cell) failure(err error, cur message.Message) {
	if c.state != nil {
		if cerr := c.state.checkpoint(); cerr != nil {
			c.sys.logger.Warn("actor: state checkpoint failed while reporting a failure",
				"actor", c.self.Name(), "error", cerr)
		}
	}
	if cur == nil {
		cur = c.current
	}
	c.sys.logger.Error("actor: handler failed", "actor", c.self.Name(),
		"message", message.TypeName(cur), "error", err)
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
		c.emitter.Emit(Record{Kind: RecordWarning, Time: clock.UnixNano(), Emitter: c.self, Message: cur, Value: w})
		return
	}
	e := &message.ErrorMessage{Traceback: traceback(err)}
	e.ContentType, e.Content, e.CurrentMessage = ct, text, cur
	c.emitter.Emit(Record{Kind: RecordError, Time: clock.UnixNano(), Emitter: c.self, Message: cur, Value: e})
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
	// other (B37), never the process's end.
	return c.protect(c.state.checkpoint)
}

// rawStop is a stop that is not the team's graceful stop: StopRecursively,
// a parent's stop, System.Stop. A team root (RawStopper) stops without
// blocking on its members, which may be asking it; anything else runs the
// recursive stop.
func (c *cell) rawStop() error {
	if r, ok := c.actor.(RawStopper); ok {
		if c.stopping {
			return nil
		}
		return c.protect(func() error { r.RawStop(&c.ctx); return nil })
	}
	return c.stopTree()
}

// stopTree is the recursive stop (B20): checkpoint, stop children one by one
// (each completely) in creation order, then post the stop marker.
func (c *cell) stopTree() error {
	if c.stopping {
		return nil
	}
	if err := c.checkpoint(); err != nil {
		c.report(err, c.current)
	}
	for len(c.children) > 0 {
		child := c.children[0]
		if err := c.stopChild(child); err != nil {
			return err
		}
		c.children = c.children[1:]
	}
	c.children = nil
	return c.stopSelf()
}

func (c *cell) stopSelf() error {
	if c.stopping {
		return nil
	}
	c.stopping = true
	c.life.requestStop()
	if err := c.enqueue(envelope{kind: envStop}); err != nil {
		return err
	}
	return nil
}

func (c *cell) stopChild(child *message.Address) error {
	h, ok := child.Handle().(*handle)
	if !ok {
		return nil
	}
	if cc := h.cell(); cc != nil {
		_ = cc.enqueue(envelope{kind: envStopTree}) // refused when it is already finishing
	}
	select { // wait for its end either way (its OnStop may be running)
	case <-h.life.done:
		return nil
	case <-c.sys.abandon:
		return fmt.Errorf("actor: stop %s: child %s did not stop before the system gave up", c.self, child)
	}
}

// finish is reached at the stop marker (B21-B23): stop receiving, run the
// stop hook, final checkpoint, StopMessage, then fail what is left.
func (c *cell) finish() {
	c.life.requestStop()
	c.life.stopped.Store(true)
	c.mu.Lock()
	c.closed = true
	rest := c.q
	c.q = nil
	c.mu.Unlock()
	left := append(c.pending[c.pendHead:], rest...)
	c.pending, c.pendHead = nil, 0
	c.sys.deregister(c)
	// Children still running (spawned after the recursive stop, or left by
	// a StopSelf) are stopped before OnStop, children first as always; a
	// team root only tells them (its stop never blocks on a member, and a
	// wedged one is the reaper's).
	_, root := c.actor.(RawStopper)
	for _, ch := range c.children {
		if root {
			if h, ok := ch.Handle().(*handle); ok {
				if cc := h.cell(); cc != nil {
					_ = cc.enqueue(envelope{kind: envStopTree})
				}
			}
			continue
		}
		if err := c.stopChild(ch); err != nil {
			c.sys.logger.Warn("actor: a child did not stop before its parent", "actor", c.self.Name(), "error", err)
		}
	}
	c.children = nil

	if s, ok := c.actor.(Stopper); ok {
		if err := c.protect(func() error { s.OnStop(&c.ctx); return nil }); err != nil {
			c.sys.logger.Error("actor: OnStop failed", "actor", c.self.Name(), "error", err)
			c.report(err, nil)
		}
	}
	if err := c.checkpoint(); err != nil {
		c.report(err, nil)
	}
	if c.emitter != nil {
		c.emitter.Emit(Record{Kind: RecordStop, Time: clock.UnixNano(), Emitter: c.self})
		c.emitter.Close()
	}
	dropped := 0
	for _, env := range left {
		switch {
		case env.reply != nil && (env.kind == envStopTree || env.kind == envStop || isStopRequest(env)):
			env.reply <- result{} // a stop asked for is what happened (B21)
		case env.reply != nil:
			env.reply <- result{err: deadError(c.self)}
		case env.kind == envMsg || env.kind == envCall:
			dropped++
		}
	}
	if dropped > 0 {
		c.sys.logger.Debug("actor: tells queued after the stop marker were dropped",
			"actor", c.self.Name(), "count", dropped)
	}
	c.finished = true
	close(c.life.done)
}
