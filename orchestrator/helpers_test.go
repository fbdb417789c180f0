package orchestrator_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// event is one hook call seen by a recordingSub.
type event struct {
	hook string
	msg  message.Message
	team uuid.UUID
	on   bool
}

// recordingSub records every hook call in order.
type recordingSub struct {
	mu     sync.Mutex
	events []event
	change chan struct{}
}

var (
	_ orchestrator.Subscriber            = (*recordingSub)(nil)
	_ orchestrator.RestoringSubscriber   = (*recordingSub)(nil)
	_ orchestrator.StopRequestSubscriber = (*recordingSub)(nil)
	_ orchestrator.StopSubscriber        = (*recordingSub)(nil)
)

func newSub() *recordingSub { return &recordingSub{change: make(chan struct{}, 1)} }

func (s *recordingSub) add(e event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	select {
	case s.change <- struct{}{}:
	default:
	}
}

func (s *recordingSub) OnMessage(m message.Message) { s.add(event{hook: "message", msg: m}) }
func (s *recordingSub) SetRestoring(team uuid.UUID, on bool) {
	s.add(event{hook: "restoring", team: team, on: on})
}
func (s *recordingSub) OnStopRequest(team uuid.UUID) { s.add(event{hook: "stop_request", team: team}) }
func (s *recordingSub) OnStop(team uuid.UUID)        { s.add(event{hook: "stop", team: team}) }

func (s *recordingSub) all() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event(nil), s.events...)
}

func (s *recordingSub) messages() []message.Message {
	var out []message.Message
	for _, e := range s.all() {
		if e.hook == "message" {
			out = append(out, e.msg)
		}
	}
	return out
}

func (s *recordingSub) hooks(name string) []event {
	var out []event
	for _, e := range s.all() {
		if e.hook == name {
			out = append(out, e)
		}
	}
	return out
}

// waitFor waits until cond holds over the recorded events.
func (s *recordingSub) waitFor(t testing.TB, what string, cond func([]event) bool) []event {
	t.Helper()
	deadline := time.NewTimer(actortest.Timeout)
	defer deadline.Stop()
	for {
		ev := s.all()
		if cond(ev) {
			return ev
		}
		select {
		case <-s.change:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; got %d events", what, len(ev))
		}
	}
}

func typeNames(msgs []message.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = message.TypeName(m)
	}
	return out
}

// echo replies to every UserMessage with a ResultMessage to its sender.
type echo struct{ actor.Base }

func (*echo) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		return nil, c.Send(c.Sender(), message.NewResultMessage("echo: "+m.Content))
	}
	return nil, nil
}

// relay forwards each UserMessage's content to a target as a new
// UserMessage, and reports results it gets back on a channel.
type relay struct {
	actor.Base
	target  *message.Address
	results chan string
}

func (r *relay) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *message.UserMessage:
		return nil, c.Send(r.target, message.NewUserMessage(m.Content))
	case *message.ResultMessage:
		r.results <- m.Content
	}
	return nil, nil
}

// blocker blocks its handler until release is closed; entered is signalled
// when a handler starts.
type blocker struct {
	actor.Base
	entered chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocker) Receive(c *actor.Context, msg any) (any, error) {
	b.entered <- struct{}{}
	<-b.release
	return nil, nil
}

// newSystem returns a system logging to the test's log, shut down when the
// test ends: the system a team is restored on.
func newSystem(t testing.TB) *actor.System {
	t.Helper()
	sys := actor.NewSystem(actor.SystemConfig{Logger: actortest.NewLogCapture(t).Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys) })
	return sys
}

func named(name string) *actor.Config { return &actor.Config{Name: name, Role: name} }

func mustSpawn(t testing.TB, team *orchestrator.Team, a actor.Actor, cfg any, opts ...actor.SpawnOption) *message.Address {
	t.Helper()
	addr, err := team.Spawn(actortest.Context(t), a, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func mustCard(c orchestrator.AgentCard) *orchestrator.AgentCard {
	card, err := orchestrator.NewAgentCard(c)
	if err != nil {
		panic(err)
	}
	return card
}

type onMessageFunc func(message.Message)

func (f onMessageFunc) OnMessage(m message.Message) { f(m) }

// held is a subscriber that blocks the orchestrator in its OnStop (or, with
// inMessage, in its first OnMessage) until released.
type held struct {
	entered, release chan struct{}
	inMessage        bool
}

func (h *held) OnMessage(message.Message) {
	if h.inMessage {
		h.inMessage = false
		close(h.entered)
		<-h.release
	}
}

func (h *held) OnStop(uuid.UUID) {
	if !h.inMessage && h.entered != nil {
		select {
		case <-h.entered:
		default:
			close(h.entered)
			<-h.release
		}
	}
}

// isSnapshot reports whether a is a snapshot address: not the runtime's
// live kind, and alive (a stopped record is not).
func isSnapshot(a *message.Address) bool { return a != nil && !orchestrator.IsLive(a) && a.IsAlive() }
