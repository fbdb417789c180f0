package actortest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// Received is one message a Probe received, with its sender.
type Received struct {
	Msg    any
	Sender *message.Address
}

// Probe is an actor that records every message it receives and answers
// asks with Reply (nil by default). Use Expect to wait for the next one.
type Probe struct {
	// Reply, when set, computes the answer to every message.
	Reply func(c *actor.Context, msg any) (any, error)

	mu  sync.Mutex
	got []Received
	ch  chan struct{}
}

var _ actor.Actor = (*Probe)(nil)

// NewProbe returns an empty probe.
func NewProbe() *Probe { return &Probe{ch: make(chan struct{})} }

// Receive records msg.
func (p *Probe) Receive(c *actor.Context, msg any) (any, error) {
	p.mu.Lock()
	p.got = append(p.got, Received{Msg: msg, Sender: c.Sender()})
	ch := p.ch
	p.ch = make(chan struct{})
	p.mu.Unlock()
	close(ch)
	if p.Reply != nil {
		return p.Reply(c, msg)
	}
	return nil, nil
}

// Expect waits for the next message not yet returned by Expect, failing t
// after Timeout.
func (p *Probe) Expect(t testing.TB) Received {
	t.Helper()
	r, err := p.next(context.Background())
	if err != nil {
		t.Fatalf("actortest: probe: %v", err)
	}
	return r
}

// next waits for the next message not yet taken, up to Timeout or ctx.
func (p *Probe) next(ctx context.Context) (Received, error) {
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		if len(p.got) > 0 {
			r := p.got[0]
			p.got = p.got[1:]
			p.mu.Unlock()
			return r, nil
		}
		ch := p.ch
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Received{}, ctx.Err()
		case <-deadline.C:
			return Received{}, fmt.Errorf("no message within %v", Timeout)
		}
	}
}

// ExpectNone fails t if a message arrived that Expect has not taken. It
// does not wait: make it follow a barrier (an ask to the probe, or to the
// sender, after the sends that must not reach it).
func (p *Probe) ExpectNone(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) > 0 {
		t.Fatalf("actortest: probe got unexpected %s", message.TypeName(p.got[0].Msg))
	}
}

// Expect waits for the next message of the probe and checks it is a T.
func Expect[T any](t testing.TB, p *Probe) (T, Received) {
	t.Helper()
	r := p.Expect(t)
	v, ok := r.Msg.(T)
	if !ok {
		var zero T
		t.Fatalf("actortest: probe got %T, want %T", r.Msg, zero)
	}
	return v, r
}
