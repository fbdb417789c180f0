package actor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

var replyPool = sync.Pool{New: func() any { return make(chan result, 1) }}

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
