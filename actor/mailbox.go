package actor

import (
	"runtime"
	"sync"

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
	envPark                     // next's answer when the mailbox is empty: the goroutine ends until the next enqueue
)

// minQueue is the capacity a mailbox buffer keeps after a burst: enough
// that a steady stream of tells does not regrow it.
const minQueue = 256

// maxIdleQueue is the largest mailbox buffer an actor keeps while it is
// idle.
const maxIdleQueue = 4096

// spinRounds is how many times an idle actor yields, watching its mailbox,
// before it parks: its goroutine ends, and the next enqueue starts another
// (an idle actor holds no goroutine, so no stack).
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
	if len(c.q) == cap(c.q) && cap(c.q) >= minQueue {
		// A full segment: it joins the queue's older part as it is and a
		// fresh one takes the tail, so a burst never copies the queue
		// (under the lock the actor needs to take its next batch).
		c.over = append(c.over, c.q)
		c.q = c.segment()
	}
	c.q = append(c.q, env)
	if len(c.q) == 1 {
		c.queued.Store(1)
	}
	wake := c.idle
	c.idle = false
	c.mu.Unlock()
	if wake {
		go c.loop()
	}
	return nil
}

// next returns the next envelope; when the mailbox stays empty, envPark:
// the actor is idle, and its goroutine must end (the next enqueue starts
// another).
func (c *cell) next() envelope {
	if c.life.stopped.Load() && c.phase != phaseStopped { // reaped (forceStop): finish now, fail the rest
		return envelope{kind: envFinish}
	}
	if c.pendHead < len(c.pending) {
		e := c.pending[c.pendHead]
		c.pending[c.pendHead] = envelope{}
		c.pendHead++
		return e
	}
	spare := c.pending[:0]
	if cap(spare) > maxIdleQueue && len(c.pending) < cap(spare)/8 {
		spare = make([]envelope, 0, minQueue) // the burst is over: give its memory back
	}
	c.pendHead = 0
	c.mu.Lock()
	if len(c.over) > 0 {
		return c.takeSegment(spare)
	}
	for len(c.q) == 0 {
		c.mu.Unlock()
		// Spin briefly before parking: a sender that is about to enqueue
		// is far cheaper to wait for than a park and a wake-up.
		for i := 0; i < spinRounds && c.queued.Load() == 0; i++ {
			runtime.Gosched()
		}
		if c.held != nil {
			// Parking, unless mail came: the record kept back goes out
			// first, never under the mailbox's lock (the sink may make a
			// member wait, and a tell must not wait on that).
			c.flushHeld()
		}
		c.mu.Lock()
		if len(c.over) > 0 { // the sender filled segments meanwhile
			return c.takeSegment(spare)
		}
		if len(c.q) > 0 {
			break
		}
		if cap(c.q) > maxIdleQueue || cap(spare) > maxIdleQueue {
			// Parking after a burst: an idle actor keeps no burst-sized
			// buffers.
			c.q = make([]envelope, 0, minQueue)
			spare = make([]envelope, 0, minQueue)
		}
		c.pending = spare // empty: the next loop starts from the queue
		c.idle = true
		c.mu.Unlock()
		return envelope{kind: envPark}
	}
	c.queued.Store(0)
	c.pending, c.q = c.q, spare
	c.mu.Unlock()
	e := c.pending[0]
	c.pending[0] = envelope{}
	c.pendHead = 1
	return e
}

// takeSegment makes the oldest full segment the pending one, gives the
// handled one (spare) back to the pool and returns the first envelope; c.mu is
// held, and released.
func (c *cell) takeSegment(spare []envelope) envelope {
	if cap(spare) == minQueue {
		segments.Put((*[minQueue]envelope)(spare[:minQueue]))
	}
	c.pending = c.over[0]
	c.over[0] = nil
	c.over = c.over[1:]
	if len(c.over) == 0 {
		c.over = nil
	}
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
	if len(c.q) > 0 || len(c.over) > 0 {
		if c.pendHead > 0 {
			n := copy(c.pending, c.pending[c.pendHead:])
			clear(c.pending[n:])
			c.pending = c.pending[:n]
			c.pendHead = 0
		}
		for _, seg := range c.over {
			c.pending = append(c.pending, seg...)
		}
		c.over = nil
		c.pending = append(c.pending, c.q...)
		clear(c.q)
		c.q = c.q[:0]
	}
	c.mu.Unlock()
}

// segment returns an empty mailbox segment for the queue's tail, from
// the pool; c.mu is held.
func (c *cell) segment() []envelope {
	return segments.Get().(*[minQueue]envelope)[:0]
}

// segments holds handled mailbox segments (every entry zero) for any
// actor's next burst: a burst's memory is reused by the next one, and
// the garbage collector empties the pool when nobody needs it.
var segments = sync.Pool{New: func() any { return new([minQueue]envelope) }}

// takeQueued removes and returns everything queued, oldest first; c.mu is
// held.
func (c *cell) takeQueued() []envelope {
	if len(c.over) == 0 {
		q := c.q
		c.q = nil
		return q
	}
	var all []envelope
	for _, seg := range c.over {
		all = append(all, seg...)
	}
	all = append(all, c.q...)
	c.over, c.q = nil, nil
	return all
}
