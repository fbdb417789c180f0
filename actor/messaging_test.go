package actor_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
)

// Hello world: the receiver sees the greeting and a sender
// whose agent id is the greeter's.
type helloCommand struct {
	message.Base
	To *message.Address `json:"to"`
}

func TestHelloWorld(t *testing.T) {
	sys, _ := newSystem(t)
	probe := actortest.NewProbe()
	receiver := spawn(t, sys, probe, actor.Config{Name: "receiver"})
	greeter := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if cmd, ok := msg.(*helloCommand); ok {
			return nil, c.Send(cmd.To, &textMsg{Text: "Hello"})
		}
		return nil, actor.ErrUnhandled
	}), actor.Config{Name: "greeter"})
	if err := sys.Tell(greeter, &helloCommand{To: receiver}); err != nil {
		t.Fatal(err)
	}
	got, r := actortest.Expect[*textMsg](t, probe)
	if got.Text != "Hello" {
		t.Fatalf("text = %q", got.Text)
	}
	if r.Sender.AgentID() != greeter.AgentID() || got.Sender.AgentID() != greeter.AgentID() {
		t.Fatalf("sender = %v, want the greeter %v", r.Sender, greeter)
	}
	if got.Recipient.AgentID() != receiver.AgentID() {
		t.Fatalf("recipient = %v", got.Recipient)
	}
}

// Reply via sender: a calculator replies to each request's
// sender; an agent client and a private context both get their answers.
type calcRequest struct {
	message.Base
	Expr string
}

type calcResult struct {
	message.Base
	Value int
}

func calculator(c *actor.Context, msg any) (any, error) {
	req, ok := msg.(*calcRequest)
	if !ok {
		return nil, actor.ErrUnhandled
	}
	var a, b int
	if _, err := fmt.Sscanf(req.Expr, "%d + %d", &a, &b); err != nil {
		return nil, err
	}
	return a + b, c.Send(c.Sender(), &calcResult{Value: a + b})
}

func TestReplyViaSender(t *testing.T) {
	sys, _ := newSystem(t)
	calc := spawn(t, sys, actor.Func(calculator), actor.Config{Name: "calculator"})
	got := make(chan int, 1)
	client := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		switch m := msg.(type) {
		case *textMsg:
			return nil, c.Send(calc, &calcRequest{Expr: m.Text})
		case *calcResult:
			got <- m.Value
			return nil, nil
		}
		return nil, actor.ErrUnhandled
	}), nil)
	if err := sys.Tell(client, &textMsg{Text: "10 + 5"}); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != 15 {
		t.Fatalf("client got %d, want 15", v)
	}

	p := sys.Private()
	defer p.Close()
	if err := p.Tell(calc, &calcRequest{Expr: "2 + 2"}); err != nil {
		t.Fatal(err)
	}
	reply, err := p.Listen(actortest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := reply.(*calcResult); !ok || r.Value != 4 {
		t.Fatalf("private listen got %#v", reply)
	}
	// Ask returns the handler's value.
	v, err := sys.Ask(actortest.Context(t), calc, &calcRequest{Expr: "1 + 1"})
	if err != nil || v != 2 {
		t.Fatalf("ask = %v, %v", v, err)
	}
}

// An ask that times out fails with a timeout error naming target
// and message type; the message is still handled later, its reply dropped;
// a second ask succeeds.
func TestAskTimeout(t *testing.T) {
	sys, _ := newSystem(t)
	release := make(chan struct{})
	var handled atomic.Int32
	slow := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*textMsg); ok {
			<-release
		}
		handled.Add(1)
		return "done", nil
	}), actor.Config{Name: "slow", Role: "Slow"})

	ctx, cancel := contextWithTimeout(100 * time.Millisecond)
	defer cancel()
	_, err := sys.Ask(ctx, slow, &textMsg{Text: "work"})
	if !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	var te *actor.TimeoutError
	if !errors.As(err, &te) || te.Target.AgentID() != slow.AgentID() || te.MessageType != "textMsg" {
		t.Fatalf("timeout error = %#v", err)
	}
	if !strings.Contains(err.Error(), "slow") || !strings.Contains(err.Error(), "textMsg") {
		t.Fatalf("error text %q does not name target and type", err)
	}
	close(release)
	v, err := sys.Ask(actortest.Context(t), slow, &numMsg{N: 1})
	if err != nil || v != "done" {
		t.Fatalf("second ask = %v, %v", v, err)
	}
	if n := handled.Load(); n != 2 {
		t.Fatalf("handled %d messages, want 2 (the timed-out one too)", n)
	}
}

// Concurrent tells: 8 producers x 500 messages: all handled,
// never two at once, each producer's in order; 100,000 tells to a blocked
// actor all return and are all handled after release.
func TestConcurrentTells(t *testing.T) {
	sys, _ := newSystem(t)
	const producers, each = 8, 500
	type seqMsg struct {
		message.Base
		P, I int
	}
	var inHandler, maxIn, total atomic.Int32
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	var orderErr error
	done := make(chan struct{})
	agent := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		n := inHandler.Add(1)
		defer inHandler.Add(-1)
		if n > maxIn.Load() {
			maxIn.Store(n)
		}
		m := msg.(*seqMsg)
		if m.I != last[m.P]+1 && orderErr == nil {
			orderErr = fmt.Errorf("producer %d: got %d after %d", m.P, m.I, last[m.P])
		}
		last[m.P] = m.I
		if total.Add(1) == producers*each {
			close(done)
		}
		return nil, nil
	}), nil)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := sys.Tell(agent, &seqMsg{P: p, I: i}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	<-done
	barrier(t, agent)
	if orderErr != nil {
		t.Fatal(orderErr)
	}
	if maxIn.Load() != 1 || total.Load() != producers*each {
		t.Fatalf("max concurrent %d, total %d", maxIn.Load(), total.Load())
	}

	// Blocked actor: tells never block.
	release := make(chan struct{})
	entered := make(chan struct{})
	var count atomic.Int32
	const flood = 100000
	all := make(chan struct{})
	blocked := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*textMsg); ok {
			close(entered)
			<-release
			return nil, nil
		}
		if count.Add(1) == flood {
			close(all)
		}
		return nil, nil
	}), nil)
	_ = sys.Tell(blocked, &textMsg{})
	<-entered
	for i := 0; i < flood; i++ {
		if err := sys.Tell(blocked, &numMsg{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	<-all
}

// Two actors telling each other 100,000 times while one is blocked: no
// deadlock, nothing dropped.
func TestMutualFloodNoDeadlock(t *testing.T) {
	sys, _ := newSystem(t)
	const n = 100000
	release := make(chan struct{})
	entered := make(chan struct{})
	var aGot, bGot atomic.Int32
	done := make(chan struct{}, 2)
	var a, b *message.Address
	a = spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		switch msg.(type) {
		case *textMsg: // start: block, then flood b
			close(entered)
			<-release
			return nil, nil
		case string:
			for i := 0; i < n; i++ {
				if err := c.Send(b, &numMsg{N: i}); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
		if aGot.Add(1) == n {
			done <- struct{}{}
		}
		return nil, nil
	}), nil)
	b = spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(string); ok {
			for i := 0; i < n; i++ {
				if err := c.Send(a, &numMsg{N: i}); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
		if bGot.Add(1) == n {
			done <- struct{}{}
		}
		return nil, nil
	}), nil)
	_ = sys.Tell(a, &textMsg{})
	<-entered
	_ = sys.Tell(b, "go") // b floods a while a is blocked
	_ = sys.Tell(a, "go") // queued behind the block: a floods b afterwards
	barrier(t, b)
	close(release)
	<-done
	<-done
	if aGot.Load() != n || bGot.Load() != n {
		t.Fatalf("a got %d, b got %d, want %d each", aGot.Load(), bGot.Load(), n)
	}
}

// Unknown and derived messages: a handler for an interface
// ("base class") receives derived messages; an unrelated type logs "Unknown
// message", reports no error, still closes its ledger entry.
type shape interface {
	message.Message
	Area() float64
}

type square struct {
	message.Base
	Side float64
}

func (s *square) Area() float64 { return s.Side * s.Side }

type unrelated struct{ message.Base }

func TestUnknownAndDerivedMessages(t *testing.T) {
	sys, rec, root, logs := newTeam(t)
	areas := make(chan float64, 1)
	agent := actortest.Spawn(t, root, actor.Func(func(c *actor.Context, msg any) (any, error) {
		switch m := msg.(type) {
		case shape:
			areas <- m.Area()
			return nil, nil
		}
		return nil, actor.ErrUnhandled
	}), actor.Config{Name: "shapes"})
	_ = sys.Tell(agent, &square{Side: 3})
	if a := <-areas; a != 9 {
		t.Fatalf("area %v", a)
	}
	u := &unrelated{}
	_ = sys.Tell(agent, u)
	_ = sys.Tell(agent, &square{Side: 2})
	if a := <-areas; a != 4 {
		t.Fatalf("area %v", a)
	}
	rec.WaitKind(t, kProcessed, agent, 3)
	synced(t, root, agent)
	if n := logs.Count(slog.LevelWarn, "Unknown message unrelated from"); n != 1 {
		t.Fatalf("want one 'Unknown message' warning, logs:\n%s", logs.Text())
	}
	if len(recorded[*message.ErrorMessage](rec, nil)) != 0 || len(recorded[*message.WarningMessage](rec, nil)) != 0 {
		t.Fatalf("unknown message reported as failure: %s", actortest.Describe(rec.Records()))
	}
	found := false
	for _, m := range recorded[*message.ProcessedMessage](rec, agent) {
		if m.MessageID == u.ID {
			found = true
		}
	}
	if !found {
		t.Fatal("no ProcessedMessage for the unknown message")
	}
}

// A non-Message value is dispatched with no
// sender and produces no telemetry, even when it mutates observed state.
func TestRawValues(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	s := &stateAgent{}
	agent := actortest.Spawn(t, root, s, actor.Config{Name: "raw"})
	rec.WaitKind(t, kStateChanged, agent, 1) // the attach publication
	synced(t, root, agent)
	before := len(rec.Records())
	v, err := sys.Ask(actortest.Context(t), agent, rawBump{})
	if err != nil {
		t.Fatal(err)
	}
	if v != "no sender" {
		t.Fatalf("raw value sender: %v", v)
	}
	synced(t, root, agent)
	if after := rec.Records(); len(after) != before {
		t.Fatalf("raw value produced telemetry: %s", actortest.Describe(after[before:]))
	}
}

// An actor asking itself fails at once instead of deadlocking.
func TestSelfAskFailsFast(t *testing.T) {
	sys, _ := newSystem(t)
	agent := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*textMsg); ok {
			_, err := c.Ask(actortest.Context(t), c.Self(), &numMsg{})
			return nil, err
		}
		return nil, nil
	}), nil)
	_, err := sys.Ask(actortest.Context(t), agent, &textMsg{})
	if !errors.Is(err, actor.ErrSelfAsk) {
		t.Fatalf("err = %v, want ErrSelfAsk", err)
	}
}

// Actor-to-actor ask returns the handler's value.
func TestContextAsk(t *testing.T) {
	sys, _ := newSystem(t)
	calc := spawn(t, sys, actor.Func(func(*actor.Context, any) (any, error) { return 42, nil }), nil)
	asker := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		return c.Ask(actortest.Context(t), calc, &numMsg{})
	}), nil)
	v, err := sys.Ask(actortest.Context(t), asker, &textMsg{})
	if err != nil || v != 42 {
		t.Fatalf("ask = %v, %v", v, err)
	}
}

// Listen and private endpoints: each private endpoint gets only
// its own replies; a listen that times out loses nothing.
func TestListenAndPrivateEndpoints(t *testing.T) {
	sys, _ := newSystem(t)
	echo := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		m := msg.(*textMsg)
		return nil, c.Send(c.Sender(), &textMsg{Text: "echo " + m.Text})
	}), nil)
	p1, p2 := sys.Private(), sys.Private()
	defer p1.Close()
	defer p2.Close()
	_ = p1.Tell(echo, &textMsg{Text: "one"})
	_ = p2.Tell(echo, &textMsg{Text: "two"})
	r1, err1 := p1.Listen(actortest.Context(t))
	r2, err2 := p2.Listen(actortest.Context(t))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if r1.(*textMsg).Text != "echo one" || r2.(*textMsg).Text != "echo two" {
		t.Fatalf("got %q, %q", r1.(*textMsg).Text, r2.(*textMsg).Text)
	}

	ctx, cancel := contextWithTimeout(50 * time.Millisecond)
	defer cancel()
	if _, err := sys.Listen(ctx); !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("empty listen: %v", err)
	}
	_ = sys.Tell(echo, &textMsg{Text: "late"})
	r, err := sys.Listen(actortest.Context(t))
	if err != nil || r.(*textMsg).Text != "echo late" {
		t.Fatalf("listen after a timeout: %v, %v", r, err)
	}
	// The listener's identity.
	a := sys.Address()
	if a.Name() != "@ActorSystem" || a.Role() != "ActorSystem" || a.SquadID() != [16]byte{} {
		t.Fatalf("listener identity %+v", a.Identity())
	}
	if _, err := sys.Ask(actortest.Context(t), a, &textMsg{}); !errors.Is(err, actor.ErrNotDeliverable) {
		t.Fatalf("ask to a listener: %v", err)
	}
	// A closed endpoint refuses.
	p1.Close()
	if _, err := p1.Listen(actortest.Context(t)); !errors.Is(err, actor.ErrShutdown) {
		t.Fatalf("listen on closed endpoint: %v", err)
	}
	if err := sys.Tell(p1.Address(), &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("tell to a closed endpoint: %v", err)
	}
}

type nilAgent struct{ actor.Base }

func (*nilAgent) Receive(*actor.Context, any) (any, error) { return nil, nil }

// Typed nil messages and actors are errors, not panics. (Address.Tell is
// gone: an actor's Context.Send is the other send path checked.)
func TestTypedNilInputs(t *testing.T) {
	sys, _ := newSystem(t)
	addr, _ := sys.Spawn(actor.Func(nop), nil)
	if err := sys.Tell(addr, (*message.UserMessage)(nil)); err == nil {
		t.Error("System.Tell of a nil message")
	}
	sender, _ := sys.Spawn(actor.Func(func(c *actor.Context, _ any) (any, error) {
		return nil, c.Send(addr, (*message.UserMessage)(nil))
	}), nil)
	if _, err := sys.Ask(context.Background(), sender, "send"); err == nil {
		t.Error("Context.Send of a nil message")
	}
	if _, err := sys.Ask(context.Background(), addr, (*message.UserMessage)(nil)); err == nil {
		t.Error("Ask of a nil message")
	}
	if _, err := sys.Spawn((*nilAgent)(nil), nil); err == nil {
		t.Error("Spawn of a nil actor")
	}
}
