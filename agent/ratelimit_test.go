package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// fakeClock is a rate limiter's clock that moves only when the test
// advances it: a waiter blocks until then, or until its context ends.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters map[chan struct{}]time.Time
	waiting chan time.Duration // one per wait that starts: its length
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		waiters: map[chan struct{}]time.Time{}, waiting: make(chan time.Duration, 100)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	ch := make(chan struct{})
	f.mu.Lock()
	f.waiters[ch] = f.now.Add(d)
	f.mu.Unlock()
	f.waiting <- d
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		delete(f.waiters, ch)
		f.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the clock by d and wakes the waiters that are due.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	for ch, at := range f.waiters {
		if !at.After(f.now) {
			close(ch)
			delete(f.waiters, ch)
		}
	}
}

// nextWait returns the length of the next wait that starts.
func (f *fakeClock) nextWait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-f.waiting:
		return d
	case <-time.After(actortest.Timeout):
		t.Fatal("timed out waiting for a rate-limit wait")
		return 0
	}
}

// rateLimitedTeam is the harness with a rate limiter on a fake clock
// shared by the team (Guards), and a @Developer besides the @Manager.
func rateLimitedTeam(t *testing.T) (*harness, *fakeClock, *message.Address) {
	clock := newFakeClock()
	limiter, err := llm.NewRateLimiter(nil, clock.Now, clock.Sleep)
	if err != nil {
		t.Fatal(err)
	}
	guards := &agent.Guards{RateLimiter: limiter}
	h := newHarness(t, func(h *harness, _ *agent.AgentConfig) { h.env.Guards = guards })
	dev := h.spawnAgent(h.config("@Developer", "Developer"))
	// The manager's call is answered 429 with Retry-After 30 s; its own
	// retry (Env.Sleep, which does not wait here) then succeeds.
	h.srv.Model("@Manager").Enqueue(llmtest.RateLimited("30"), final(out(agent.Response, "@Human", "manager done")))
	h.say(h.manager, agent.Request, "go")
	if n := h.expectHuman(); n.Content != "manager done" {
		t.Fatalf("manager answered %q", n.Content)
	}
	return h, clock, dev
}

// A 429 with Retry-After on one agent holds back the other agents' calls
// to that model until then, on the limiter's clock.
func TestRateLimit429PausesTheTeam(t *testing.T) {
	h, clock, dev := rateLimitedTeam(t)
	h.srv.Model("@Developer").Enqueue(final(out(agent.Response, "@Human", "developer done")))
	if err := agent.Say(actortest.Context(t), h.human, dev, agent.NewRequest("work")); err != nil {
		t.Fatal(err)
	}
	if d := clock.nextWait(t); d != 30*time.Second {
		t.Fatalf("the developer waits %v, want the manager's Retry-After of 30s", d)
	}
	clock.Advance(29 * time.Second) // not yet due: the developer still waits
	if n := len(h.srv.RequestsFor("@Developer")); n != 0 {
		t.Fatalf("the developer made %d calls during the pause", n)
	}
	clock.Advance(time.Second)
	if n := h.expectHuman(); n.Content != "developer done" {
		t.Fatalf("developer answered %q", n.Content)
	}
	if n := len(h.srv.RequestsFor("@Developer")); n != 1 {
		t.Fatalf("the developer made %d calls, want 1 after the pause", n)
	}
}

// Stopping an agent ends its rate-limit wait at once: no call is made and
// its turn ends with the stop's warning.
func TestRateLimitWaitEndsOnStop(t *testing.T) {
	h, clock, dev := rateLimitedTeam(t)
	if err := agent.Say(actortest.Context(t), h.human, dev, agent.NewRequest("work")); err != nil {
		t.Fatal(err)
	}
	clock.nextWait(t)
	if err := h.sys.Stop(actortest.Context(t), dev); err != nil { // the clock never moves
		t.Fatal(err)
	}
	h.barrier()
	warns := of[*message.WarningMessage](h.sub, dev)
	if len(warns) != 1 || !strings.Contains(warns[0].Content, "the agent is stopping") {
		t.Fatalf("warnings %+v", warns)
	}
	if n := len(h.srv.RequestsFor("@Developer")); n != 0 {
		t.Fatalf("the developer made %d calls", n)
	}
}
