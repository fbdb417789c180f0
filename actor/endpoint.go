package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/akgentic/akgentic-go/message"
)

// Endpoint is a place outside the actor world that tells and asks actors and
// receives the replies sent back to it (the Python ExecutionContext and its
// listener). System has one; System.Private makes more (B49). Safe for
// concurrent use.
type Endpoint struct {
	sys  *System
	addr *message.Address

	mu     sync.Mutex
	q      []any
	closed bool
	signal chan struct{}
}

func (s *System) newEndpoint() *Endpoint {
	e := &Endpoint{sys: s, signal: make(chan struct{}, 1)}
	e.addr = message.NewLiveAddress(message.Identity{
		AgentID: message.NewID(),
		Name:    "@ActorSystem",
		Role:    "ActorSystem",
		TeamID:  message.NewID(),
		Type:    "ActorSystem",
	}, (*endpointHandle)(e))
	return e
}

// Address returns the endpoint's address (B48): name "@ActorSystem", role
// "ActorSystem", its own agent and team ids, no squad.
func (e *Endpoint) Address() *message.Address { return e.addr }

// prepare stamps a message told from outside (B45): sender = this endpoint,
// team = the recipient's, parent untouched.
func (e *Endpoint) prepare(to *message.Address, msg any) any {
	m, ok := msg.(message.Message)
	if !ok {
		return msg
	}
	return claim(m, e.addr, to, to.TeamID())
}

// Tell delivers msg to the actor at to without waiting; no telemetry (B45).
func (e *Endpoint) Tell(to *message.Address, msg any) error {
	if to == nil {
		return errors.New("actor: Tell to a nil address")
	}
	if err := nilMessage(msg); err != nil {
		return err
	}
	msg = e.prepare(to, msg)
	if h, ok := to.Handle().(*handle); ok {
		c := h.cell()
		if c == nil {
			return deadError(to)
		}
		return c.enqueue(envelope{msg: msg})
	}
	return to.Tell(msg)
}

// Ask delivers msg and waits for the handler's result, or for ctx (B46). A
// handler error comes back as the error. When ctx's deadline passes first
// the error is a *TimeoutError (errors.Is ErrTimeout) naming the target and
// message type; the message is still handled later and its reply dropped.
func (e *Endpoint) Ask(ctx context.Context, to *message.Address, msg any) (any, error) {
	if to == nil {
		return nil, errors.New("actor: Ask to a nil address")
	}
	if err := nilMessage(msg); err != nil {
		return nil, err
	}
	msg = e.prepare(to, msg)
	if h, ok := to.Handle().(*handle); ok {
		return h.ask(ctx, envelope{msg: msg})
	}
	return to.Ask(ctx, msg)
}

// Listen returns the next value delivered to this endpoint, in arrival
// order, waiting until one arrives or ctx is done (B47). A listen that gives
// up leaves nothing behind: a value arriving later goes to the next Listen.
func (e *Endpoint) Listen(ctx context.Context) (any, error) {
	for {
		e.mu.Lock()
		if len(e.q) > 0 {
			v := e.q[0]
			e.q[0] = nil
			e.q = e.q[1:]
			more := len(e.q) > 0
			e.mu.Unlock()
			if more {
				e.notify()
			}
			return v, nil
		}
		closed := e.closed
		e.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("actor: listen on a closed endpoint: %w", ErrShutdown)
		}
		select {
		case <-e.signal:
		case <-ctx.Done():
			return nil, waitError(ctx, "listen", nil, nil)
		}
	}
}

func (e *Endpoint) notify() {
	select {
	case e.signal <- struct{}{}:
	default:
	}
}

// Close closes the endpoint: its address stops receiving and Listen fails
// once the queue is empty. Closing twice is harmless.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.notify()
	return nil
}

// endpointHandle is the delivery side of an endpoint's address.
type endpointHandle Endpoint

func (h *endpointHandle) Alive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.closed
}

func (h *endpointHandle) Tell(msg any) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return deadError(h.addr)
	}
	h.q = append(h.q, msg)
	h.mu.Unlock()
	(*Endpoint)(h).notify()
	return nil
}

func (h *endpointHandle) Ask(context.Context, any) (any, error) {
	return nil, fmt.Errorf("actor: %s is a listener and cannot answer an ask: %w", h.addr, ErrNotDeliverable)
}
