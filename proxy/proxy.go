// Package proxy makes typed method calls on an actor, run on the actor's own
// goroutine: the Go form of akgentic-core's proxy_ask and proxy_tell.
//
// A call submits a closure to the actor's mailbox; when its turn comes the
// closure gets the actor's Context and its value, typed as T, so it can call
// any method of the actor safely, since nothing else runs on that actor
// meanwhile:
//
//	n, err := proxy.Ask(ctx, counter, func(c *actor.Context, k *Counter) (int, error) {
//		return k.n, nil
//	})
//
// A proxy call is not a message: it is not stamped, emits no telemetry and
// takes no state checkpoint. Prefer messages (System.Tell, Context.Send) for
// anything that belongs in the team's log; a proxy call holds the actor for
// as long as the closure runs.
package proxy

import (
	"context"
	"fmt"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

var rt = link.Runtime[*actor.Context, actor.Actor, *message.Address, message.Message, actor.SpawnOption, telemetry.Sink]()

// TypeError is returned when the actor at an address is not a T.
type TypeError struct {
	Addr *message.Address
	Got  string // the actor's Go type
	Want string // T
}

// Error describes the failure.
func (e *TypeError) Error() string {
	return fmt.Sprintf("proxy: %s is a %s, not a %s", e.Addr, e.Got, e.Want)
}

// Ask runs fn on the goroutine of the actor at addr and returns its result,
// waiting until it returns or ctx ends. The actor must be a T (a
// *TypeError otherwise). A panic in fn comes back as an *actor.PanicError;
// a dead actor as actor.ErrActorDead; a passed deadline as an
// *actor.TimeoutError.
func Ask[T any, R any](ctx context.Context, addr *message.Address, fn func(c *actor.Context, a T) (R, error)) (R, error) {
	var zero R
	v, err := rt.Call(ctx, addr, func(c *actor.Context, a actor.Actor) (any, error) {
		t, ok := a.(T)
		if !ok {
			return nil, typeError[T](addr, a)
		}
		return fn(c, t)
	})
	if err != nil {
		return zero, err
	}
	r, _ := v.(R)
	return r, nil
}

// Do is Ask for a call with no result.
func Do[T any](ctx context.Context, addr *message.Address, fn func(c *actor.Context, a T) error) error {
	_, err := Ask(ctx, addr, func(c *actor.Context, a T) (struct{}, error) { return struct{}{}, fn(c, a) })
	return err
}

// Tell runs fn on the goroutine of the actor at addr later, without waiting
// (proxy_tell). It fails at once only when the actor cannot receive; an
// error, a panic or a type mismatch met when fn's turn comes is logged at
// error level by the runtime, since no caller is waiting for it.
func Tell[T any](addr *message.Address, fn func(c *actor.Context, a T) error) error {
	return rt.Cast(addr, func(c *actor.Context, a actor.Actor) error {
		t, ok := a.(T)
		if !ok {
			return typeError[T](addr, a)
		}
		return fn(c, t)
	})
}

func typeError[T any](addr *message.Address, a actor.Actor) error {
	var want T
	return &TypeError{Addr: addr, Got: fmt.Sprintf("%T", a), Want: fmt.Sprintf("%T", any(&want))[1:]}
}
