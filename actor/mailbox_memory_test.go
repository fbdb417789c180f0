package actor_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// An actor that parks after a burst keeps no burst-sized mailbox buffers
// (a ten-million-message burst once left its envelopes' buffers behind an
// idle receiver).
func TestIdleActorDropsBurstBuffers(t *testing.T) {
	sys := quietSystem()
	defer shutdown(t, sys)
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	a, err := sys.Spawn(actor.Func(func(_ *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); ok {
			select {
			case started <- struct{}{}:
			default:
			}
			<-gate // the first message holds the actor while the burst queues
		}
		return nil, nil
	}), actor.Config{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Tell(a, message.NewUserMessage("hold")); err != nil {
		t.Fatal(err)
	}
	<-started
	for i := range 50_000 { // queued behind the held turn: a burst
		if err := sys.Tell(a, &benchMsg{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	if _, err := sys.Ask(context.Background(), a, &benchMsg{N: -1}); err != nil {
		t.Fatal(err)
	}
	for { // until the actor has parked (it spins briefly first)
		small, idle, spare := actor.QueueCapsForTest(a)
		if idle {
			if !small || spare > 4096 {
				t.Fatalf("parked with burst-sized buffers: queue small %v, spare %d", small, spare)
			}
			return
		}
		runtime.Gosched()
	}
}
