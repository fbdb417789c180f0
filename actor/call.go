package actor

import (
	"context"
	"errors"
	"time"

	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

func init() {
	link.InstallRuntime(link.RuntimeFuncs[*Context, Actor, *message.Address, message.Message, SpawnOption, telemetry.Sink]{
		Call: call,
		Cast: cast,
		WithSink: func(s telemetry.Sink, grace time.Duration) SpawnOption {
			return func(o *spawnOptions) { o.sink, o.grace = s, grace }
		},
		Restoring: func() SpawnOption { return func(o *spawnOptions) { o.restoring = true } },
		SendFor: func(c *Context, cause message.Message, to *message.Address, msg any) error {
			return send(origin{c: c.cell, parent: cause}, to, msg, nil)
		},
		Resolve: func(c *Context, a *message.Address) *message.Address {
			if addrs.HandleOf(a) != nil {
				return a
			}
			return c.cell.sys.Get(a.AgentID())
		},
		NewKind:      newKind,
		DecodeConfig: decodeConfig,
		Stop: func(addr *message.Address, cause error) error {
			t, err := targetOf(addr)
			if err != nil {
				return err
			}
			return t.put(envelope{kind: envStop, msg: stopRequest{cause: cause}})
		},
	})
}

// call runs fn on the goroutine of the actor at addr, with its Context and
// its Actor value, and returns fn's result: the primitive under the proxy
// package's typed calls. A call is not a turn: no telemetry, no
// state checkpoint; a panic in fn comes back as a *PanicError.
func call(ctx context.Context, addr *message.Address, fn func(c *Context, a Actor) (any, error)) (any, error) {
	if fn == nil {
		return nil, errors.New("actor: call with a nil function")
	}
	t, err := targetOf(addr)
	if err != nil {
		return nil, err
	}
	return await(ctx, "call", addr, callMarker{}, func(r chan result) error {
		return t.put(envelope{kind: envCall, fn: fn, msg: callMarker{}, reply: r})
	})
}

// cast is call without waiting: fn runs later on the actor's goroutine; an
// error or panic it returns is logged at error level.
func cast(addr *message.Address, fn func(c *Context, a Actor) error) error {
	if fn == nil {
		return errors.New("actor: cast with a nil function")
	}
	t, err := targetOf(addr)
	if err != nil {
		return err
	}
	return t.put(envelope{kind: envCall, msg: callMarker{}, fn: func(c *Context, a Actor) (any, error) {
		return nil, fn(c, a)
	}})
}

// callMarker names proxy calls in timeout errors.
type callMarker struct{}
