package actor

import (
	"context"
	"errors"
	"fmt"

	"github.com/akgentic/akgentic-go/message"
)

// Call runs fn on the goroutine of the actor at addr, with its Context and
// its Actor value, and returns fn's result: the primitive under the proxy
// package's typed calls (B36, B50). A call is not a turn: no telemetry, no
// state checkpoint; a panic in fn comes back as a *PanicError. It fails
// with ErrActorDead when the actor cannot receive, and with a
// *TimeoutError when ctx's deadline passes first.
func Call(ctx context.Context, addr *message.Address, fn func(c *Context, a Actor) (any, error)) (any, error) {
	if fn == nil {
		return nil, errors.New("actor: Call with a nil function")
	}
	h, err := liveHandle(addr)
	if err != nil {
		return nil, err
	}
	return h.ask(ctx, envelope{kind: envCall, fn: fn, msg: callMarker{}})
}

// Cast is Call without waiting: fn runs later on the actor's goroutine; an
// error or panic it returns is logged at error level (nobody else sees it).
func Cast(addr *message.Address, fn func(c *Context, a Actor) error) error {
	if fn == nil {
		return errors.New("actor: Cast with a nil function")
	}
	h, err := liveHandle(addr)
	if err != nil {
		return err
	}
	c := h.cell()
	if c == nil {
		return deadError(addr)
	}
	return c.enqueue(envelope{kind: envCall, msg: callMarker{}, fn: func(c *Context, a Actor) (any, error) {
		return nil, fn(c, a)
	}})
}

// callMarker names proxy calls in timeout errors.
type callMarker struct{}

func liveHandle(addr *message.Address) (*handle, error) {
	if addr == nil {
		return nil, fmt.Errorf("actor: nil address: %w", ErrNotDeliverable)
	}
	h, ok := addr.Handle().(*handle)
	if !ok {
		if addr.Kind() == message.Live {
			return nil, fmt.Errorf("actor: %s is not an actor of this runtime: %w", addr, ErrNotDeliverable)
		}
		return nil, fmt.Errorf("actor: %s: %w", addr, ErrNotDeliverable)
	}
	return h, nil
}
