package actor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// A CancelMessage cancels the context of the turn
// running when it is sent, at once (not when the actor reaches it in its
// mailbox); the cause is a context.Canceled naming the sender and the
// reason; the CancelMessage itself is then handled in its own turn (one
// Processed record), and what was queued behind is not lost.

// canceller is a handler that, on a textMsg "wait", signals entered and
// waits for its turn's context; it reports every message it handles on
// seen (the cause for "wait", the type name otherwise).
type canceller struct {
	entered chan struct{}
	seen    chan string
	ctxs    chan context.Context
}

func newCanceller() *canceller {
	return &canceller{entered: make(chan struct{}, 1), seen: make(chan string, 10), ctxs: make(chan context.Context, 10)}
}

func (a *canceller) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*textMsg); ok && m.Text == "wait" {
		ctx := c.Context()
		a.ctxs <- ctx
		a.entered <- struct{}{}
		<-ctx.Done()
		a.seen <- context.Cause(ctx).Error()
		return nil, nil
	}
	if m, ok := msg.(*textMsg); ok {
		a.ctxs <- c.Context()
		a.seen <- m.Text
		return nil, nil
	}
	a.seen <- message.TypeName(msg)
	return nil, nil
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-actortest.Context(t).Done():
		t.Fatal("timed out waiting for the actor")
		return ""
	}
}

func TestCancelMessageCancelsRunningTurn(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	a := newCanceller()
	addr := actortest.Spawn(t, root, a, actor.Config{Name: "@worker"})
	ep := actortest.Spawn(t, root, actor.Func(func(*actor.Context, any) (any, error) { return nil, nil }), actor.Config{Name: "@Boss"})
	if err := sys.Tell(addr, &textMsg{Text: "wait"}); err != nil {
		t.Fatal(err)
	}
	<-a.entered
	// Queued behind the blocked turn, before the cancel: not lost.
	if err := sys.Tell(addr, &textMsg{Text: "queued"}); err != nil {
		t.Fatal(err)
	}
	cancelMsg := &message.CancelMessage{Reason: "changed my mind"}
	if err := proxy.Do(actortest.Context(t), ep, func(c *actor.Context, _ actor.Actor) error { return c.Send(addr, cancelMsg) }); err != nil {
		t.Fatal(err)
	}
	if got := next(t, a.seen); got != "turn cancelled by @Boss: changed my mind" {
		t.Fatalf("the blocked turn ended with cause %q", got)
	}
	if got := next(t, a.seen); got != "queued" {
		t.Fatalf("next turn handled %q, want the queued message", got)
	}
	if got := next(t, a.seen); got != "CancelMessage" {
		t.Fatalf("then %q, want the CancelMessage in its own turn", got)
	}
	// The cancelled turn's context was the first; the next turn got a
	// fresh one, not cancelled (the cancel was for the running turn only).
	first, second := <-a.ctxs, <-a.ctxs
	if !errors.Is(context.Cause(first), context.Canceled) {
		t.Fatalf("cause %v is not a context.Canceled", context.Cause(first))
	}
	if first == second {
		t.Fatal("two turns shared one context")
	}
	// A turn's context ends with its turn.
	if second.Err() == nil {
		t.Fatal("the context of an ended turn is still live")
	}
	if strings.Contains(context.Cause(second).Error(), "cancelled") {
		t.Fatalf("the queued turn's context ended with %v: cancelled too", context.Cause(second))
	}
	synced(t, root, addr)
	processed := 0
	for _, p := range recorded[*message.ProcessedMessage](rec, addr) {
		if p.MessageID == cancelMsg.ID {
			processed++
		}
	}
	if processed != 1 {
		t.Fatalf("%d ProcessedMessages for the CancelMessage, want 1", processed)
	}
}

// A cancel that arrives before the handler asks for its context still
// cancels it (the context is made already cancelled); a cancel sent while
// the actor is idle cancels nothing, not even the next turn.
func TestCancelBeforeContextAndWhileIdle(t *testing.T) {
	sys, _ := newSystem(t)
	gate, entered, causes := make(chan struct{}), make(chan struct{}), make(chan error, 2)
	addr := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if m, ok := msg.(*textMsg); ok {
			if m.Text == "gated" {
				entered <- struct{}{}
				<-gate // the cancel comes while the turn has no context yet
			}
			causes <- context.Cause(c.Context())
		}
		return nil, nil
	}), actor.Config{Name: "w"})
	_ = sys.Tell(addr, &textMsg{Text: "gated"})
	<-entered
	if err := sys.Tell(addr, &message.CancelMessage{}); err != nil {
		t.Fatal(err)
	}
	close(gate)
	var cause error
	select {
	case cause = <-causes:
	case <-actortest.Context(t).Done():
		t.Fatal("timed out")
	}
	if cause == nil || !errors.Is(cause, context.Canceled) || !strings.HasPrefix(cause.Error(), "turn cancelled by ") {
		t.Fatalf("cause %v, want a turn cancellation", cause)
	}
	barrier(t, addr) // idle now: the CancelMessage's turn is over
	if err := sys.Tell(addr, &message.CancelMessage{}); err != nil {
		t.Fatal(err)
	}
	barrier(t, addr)
	_ = sys.Tell(addr, &textMsg{Text: "fresh"})
	select {
	case cause = <-causes:
	case <-actortest.Context(t).Done():
		t.Fatal("timed out")
	}
	if cause != nil {
		t.Fatalf("a turn after an idle cancel started cancelled: %v", cause)
	}
}
