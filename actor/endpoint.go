package actor

import (
	"context"
	"fmt"
	"sync"

	"github.com/akgentic/akgentic-go/message"
)

// Endpoint is a place outside the actor world that tells and asks actors and
// receives the replies sent back to it (the Python ExecutionContext and its
// listener). System has one; System.Private makes more. Safe for
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
	e.addr = addrs.NewLive(message.Identity{
		AgentID: message.NewID(),
		Name:    "@ActorSystem",
		Role:    "ActorSystem",
		TeamID:  message.NewID(),
		Type:    "ActorSystem",
	}, (*endpointHandle)(e))
	return e
}

// Address returns the endpoint's address: name "@ActorSystem", role
// "ActorSystem", its own agent and team ids, no squad.
func (e *Endpoint) Address() *message.Address { return e.addr }

// Tell delivers msg to the actor at to without waiting: a message is
// stamped with this endpoint as its sender and the recipient's team, its
// parent untouched; no telemetry.
func (e *Endpoint) Tell(to *message.Address, msg any) error {
	return send(origin{ep: e}, to, msg, nil)
}

// Ask delivers msg like Tell and waits for the handler's result, or for ctx.
// A handler error comes back as the error. When ctx's deadline
// passes first the error is a *TimeoutError (errors.Is ErrTimeout) naming
// the target and message type; the message is still handled later and its
// reply dropped.
func (e *Endpoint) Ask(ctx context.Context, to *message.Address, msg any) (any, error) {
	return ask(ctx, origin{ep: e}, to, msg)
}

// Listen returns the next value delivered to this endpoint, in arrival
// order, waiting until one arrives or ctx is done. A listen that gives
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

// put queues a message for Listen; an endpoint answers no ask and runs no
// proxy call.
func (h *endpointHandle) put(env envelope) error {
	if env.reply != nil || env.kind != envMsg {
		return fmt.Errorf("actor: %s is a listener and cannot answer an ask or run a call: %w", h.addr, ErrNotDeliverable)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return deadError(h.addr)
	}
	h.q = append(h.q, env.msg)
	h.mu.Unlock()
	(*Endpoint)(h).notify()
	return nil
}
