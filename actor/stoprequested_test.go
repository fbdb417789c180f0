package actor_test

import (
	"testing"

	"github.com/akgentic/akgentic-go/actor"
)

type selfStopper struct {
	actor.Base
	req <-chan struct{}
}

func (s *selfStopper) OnStart(c *actor.Context) error { s.req = c.StopRequested(); return nil }
func (s *selfStopper) Receive(c *actor.Context, _ any) (any, error) {
	return nil, c.Stop() // the actor decides to stop (B20)
}

// StopRequested is closed when an actor stops itself too (a watcher of it
// never leaks).
func TestStopRequestedOnSelfStop(t *testing.T) {
	sys, _ := newSystem(t)
	a := &selfStopper{}
	addr := spawn(t, sys, a, actor.Config{Name: "s"})
	_ = addr.Tell("stop")
	<-actor.Done(addr)
	select {
	case <-a.req:
	default:
		t.Fatal("the actor stopped and StopRequested is still open")
	}
}
