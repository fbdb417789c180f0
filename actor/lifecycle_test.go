package actor_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/google/uuid"
)

var noop = actor.Func(func(*actor.Context, any) (any, error) { return nil, nil })

type plainAgent struct{ actor.Base }

func (*plainAgent) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

// Scenario 10 (identity defaults, B17, B44).
func TestScenario10IdentityDefaults(t *testing.T) {
	sys, _ := newSystem(t)
	a := spawn(t, sys, &plainAgent{}, nil)
	b := spawn(t, sys, &plainAgent{}, nil)
	if a.AgentID() == b.AgentID() || a.TeamID() == b.TeamID() {
		t.Fatal("two roots share ids")
	}
	if a.Role() != "plainAgent" || a.Name() == "" || a.ActorType() != "plainAgent" {
		t.Fatalf("defaults: %+v", a.Identity())
	}
	id, team := uuid.New(), uuid.New()
	c := spawn(t, sys, noop, actor.Config{Name: "n", Role: "R"}, actor.WithAgentID(id), actor.WithTeamID(team))
	if c.AgentID() != id || c.TeamID() != team || c.Name() != "n" || c.Role() != "R" {
		t.Fatalf("explicit ids not kept: %+v", c.Identity())
	}
	if _, err := sys.Spawn(noop, nil, actor.WithAgentID(id)); err == nil {
		t.Fatal("a second actor with a running agent id was spawned")
	}
	if got := sys.Get(id); !got.Equal(c) {
		t.Fatalf("Get = %v", got)
	}
	if sys.Get(uuid.New()) != nil {
		t.Fatal("Get of an unknown id")
	}
	if _, err := sys.Spawn(nil, nil); err == nil {
		t.Fatal("nil actor spawned")
	}
	if _, err := sys.Spawn(noop, struct{ X int }{}); err == nil {
		t.Fatal("config without actor.Config accepted")
	}
}

// Scenario 11 (team and squad propagation, B19).
func TestScenario11TeamAndSquad(t *testing.T) {
	sys, _ := newSystem(t)
	team, squad, squad2 := uuid.New(), uuid.New(), uuid.New()
	parent := spawn(t, sys, noop, actor.Config{Name: "parent", SquadID: squad}, actor.WithTeamID(team), actor.WithUser("u1", "u@x"))
	child := actortest.Spawn(t, parent, noop, actor.Config{Name: "child"})
	grandchild := actortest.Spawn(t, child, noop, actor.Config{Name: "grandchild"})
	other := actortest.Spawn(t, parent, noop, actor.Config{Name: "other", SquadID: squad2})
	for _, a := range []*message.Address{parent, child, grandchild, other} {
		if a.TeamID() != team {
			t.Fatalf("%s team %v, want %v", a.Name(), a.TeamID(), team)
		}
	}
	if child.SquadID() != squad || grandchild.SquadID() != squad || other.SquadID() != squad2 {
		t.Fatal("squad not propagated / kept")
	}
	root := spawn(t, sys, noop, nil)
	if root.SquadID() == uuid.Nil || root.SquadID() == squad {
		t.Fatal("a root did not get a fresh squad")
	}
	v, _ := actor.Call(ctxT(t), grandchild, func(c *actor.Context, _ actor.Actor) (any, error) {
		return []any{c.Parent(), c.UserID(), c.UserEmail(), c.Orchestrator()}, nil
	})
	got := v.([]any)
	if !got[0].(*message.Address).Equal(child) || got[1] != "u1" || got[2] != "u@x" || got[3].(*message.Address) != nil {
		t.Fatalf("grandchild context: %v", got)
	}
	kids, _ := actor.Call(ctxT(t), parent, func(c *actor.Context, _ actor.Actor) (any, error) { return c.Children(), nil })
	if k := kids.([]*message.Address); len(k) != 2 || !k[0].Equal(child) || !k[1].Equal(other) {
		t.Fatalf("children %v", k)
	}
}

// Scenario 13 (deallocated, never stopped, B55): is_alive false, tell and
// ask fail with ErrActorDead, nothing enqueued.
func TestScenario13CollectedActor(t *testing.T) {
	sys, _ := newSystem(t)
	addr := actor.NewCollectableAddressForTest()
	for i := 0; i < 10 && !actor.CollectedForTest(addr); i++ {
		runtime.GC()
	}
	if !actor.CollectedForTest(addr) {
		t.Skip("the GC did not collect the cell")
	}
	if addr.IsAlive() {
		t.Fatal("collected actor reports alive")
	}
	if err := addr.Tell(&textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("tell: %v", err)
	}
	if _, err := addr.Ask(ctxT(t), &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("ask: %v", err)
	}
	if err := sys.Tell(addr, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("system tell: %v", err)
	}
	if addr.Name() != "ghost" {
		t.Fatal("identity lost after collection")
	}
}

// Scenario 14 (snapshot addresses, B59, B60).
func TestScenario14SnapshotAddresses(t *testing.T) {
	sys, _ := newSystem(t)
	live := spawn(t, sys, noop, actor.Config{Name: "@Writer", Role: "Writer"})
	data, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	var snap message.Address
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	if !snap.IsAlive() || snap.Kind() != message.Snapshot || !snap.Equal(live) {
		t.Fatalf("snapshot %+v", snap.Identity())
	}
	for _, err := range []error{
		snap.Tell(&textMsg{}),
		sys.Tell(&snap, &textMsg{}),
		func() error { _, err := snap.Ask(ctxT(t), &textMsg{}); return err }(),
		func() error { _, err := actor.Call(ctxT(t), &snap, nil); return err }(),
		func() error {
			_, err := actor.Call(ctxT(t), &snap, func(*actor.Context, actor.Actor) (any, error) { return nil, nil })
			return err
		}(),
	} {
		if err == nil || (!errors.Is(err, actor.ErrNotDeliverable) && !strings.Contains(err.Error(), "nil function")) {
			t.Fatalf("snapshot delivery: %v", err)
		}
	}
	if err := snap.Tell(&textMsg{}); !strings.Contains(err.Error(), "@Writer") {
		t.Fatalf("refusal does not name the address: %v", err)
	}
	if snap.Serialize() != live.Serialize() {
		t.Fatal("serialize changed")
	}
	stopped := live.AsStopped()
	if stopped.IsAlive() || !errors.Is(stopped.Tell(&textMsg{}), actor.ErrNotDeliverable) {
		t.Fatal("stopped record delivers or lives")
	}
}

// Scenario 15 (user-proxy detection by kind, B62).
type fakeUserProxy struct{ actor.Base }

func (*fakeUserProxy) Receive(*actor.Context, any) (any, error) { return nil, nil }
func (*fakeUserProxy) UserProxyActor()                          {}

type derivedProxy struct{ fakeUserProxy }

func TestScenario15UserProxyDetection(t *testing.T) {
	sys, _ := newSystem(t)
	up := spawn(t, sys, &fakeUserProxy{}, actor.Config{Name: "@Human"})
	worker := spawn(t, sys, &derivedProxy{}, actor.Config{Name: "w", Role: "worker"})
	named := spawn(t, sys, noop, actor.Config{Name: "UserProxy", Role: "UserProxy"})
	if !up.IsUserProxy() || !worker.IsUserProxy() || named.IsUserProxy() {
		t.Fatal("wrong user-proxy detection")
	}
	if err := sys.Stop(ctxT(t), worker); err != nil {
		t.Fatal(err)
	}
	if !worker.IsUserProxy() || worker.IsAlive() {
		t.Fatal("identity after stop")
	}
	data, _ := json.Marshal(worker)
	var back message.Address
	_ = json.Unmarshal(data, &back)
	if !back.IsUserProxy() {
		t.Fatal("lost through serialize")
	}
}

// Scenario 17 (turn bracket and causality, B8-B10, B32).
func TestScenario17TurnBracket(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	b := actortest.Spawn(t, root, actortest.NewProbe(), actor.Config{Name: "B"})
	var sent message.Message
	a := actortest.Spawn(t, root, actor.Func(func(c *actor.Context, msg any) (any, error) {
		m := &textMsg{Text: "M"}
		sent = m
		return nil, c.Send(b, m)
	}), actor.Config{Name: "A"})
	x := &textMsg{Text: "X"}
	_ = sys.Tell(a, x)
	rec.WaitKind(t, actor.RecordProcessed, b, 1)
	barrier(t, a)
	var order []string
	for _, r := range rec.Records() {
		switch {
		case r.Kind == actor.RecordSent && r.Emitter.Equal(a):
			if r.Parent != message.Message(x) || r.Message != sent || !r.Recipient.Equal(b) {
				t.Fatalf("Sent record %+v", r)
			}
			order = append(order, "Sent")
		case r.Emitter.Equal(b) && (r.Kind == actor.RecordReceived || r.Kind == actor.RecordProcessed):
			if r.Message != sent || r.Parent != sent {
				t.Fatalf("%s record about %v parent %v", r.Kind, r.Message, r.Parent)
			}
			order = append(order, r.Kind.String())
		}
	}
	if strings.Join(order, ",") != "Sent,Received,Processed" {
		t.Fatalf("order %v", order)
	}
	env := sent.Envelope()
	if env.Parent() != x.ID || env.Team() != root.TeamID() || !env.Sender.Equal(a) {
		t.Fatalf("stamping: parent %v team %v sender %v", env.Parent(), env.Team(), env.Sender)
	}
	// The record renders as the telemetry message (B10).
	tm := rec.Of(actor.RecordSent)[0].ToMessage().(*message.SentMessage)
	if tm.Message != sent || tm.Envelope().Parent() != x.ID || !tm.Sender.Equal(a) {
		t.Fatalf("SentMessage %+v", tm)
	}
}

// Scenarios 18, 19 and B37: handler errors, warnings and panics on the tell
// path are reported after Processed; the actor goes on.
func TestScenario18And19Failures(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := actortest.Spawn(t, root, actor.Func(func(c *actor.Context, msg any) (any, error) {
		switch m := msg.(type) {
		case *textMsg:
			switch m.Text {
			case "error":
				return nil, errors.New("critical failure")
			case "warning":
				return nil, actor.NewWarning("non-critical issue")
			case "panic":
				panic("boom")
			case "panic-error":
				panic(context.Canceled)
			}
		}
		return nil, nil
	}), actor.Config{Name: "failing"})
	msgs := []*textMsg{{Text: "error"}, {Text: "warning"}, {Text: "panic"}, {Text: "panic-error"}, {Text: "ok"}}
	for _, m := range msgs {
		_ = sys.Tell(agent, m)
	}
	rec.WaitKind(t, actor.RecordProcessed, agent, len(msgs))
	barrier(t, agent)
	kinds := rec.Kinds(agent)[1:] // skip Start
	want := []actor.RecordKind{
		actor.RecordReceived, actor.RecordProcessed, actor.RecordError,
		actor.RecordReceived, actor.RecordProcessed, actor.RecordWarning,
		actor.RecordReceived, actor.RecordProcessed, actor.RecordError,
		actor.RecordReceived, actor.RecordProcessed, actor.RecordError,
		actor.RecordReceived, actor.RecordProcessed,
	}
	if !equalKinds(kinds, want) {
		t.Fatalf("kinds %v\nwant  %v", kinds, want)
	}
	errs, warns := rec.Of(actor.RecordError), rec.Of(actor.RecordWarning)
	e := errs[0].ToMessage().(*message.ErrorMessage)
	if e.ContentType != "errorString" || !strings.Contains(e.Content, "critical failure") || e.Traceback == "" ||
		e.CurrentMessage != message.Message(msgs[0]) || e.ParentID.Valid {
		t.Fatalf("ErrorMessage %+v", e)
	}
	w := warns[0].ToMessage().(*message.WarningMessage)
	if w.ContentType != "WarningError" || w.Content != "non-critical issue" || w.CurrentMessage != message.Message(msgs[1]) || w.ParentID.Valid {
		t.Fatalf("WarningMessage %+v", w)
	}
	p := errs[1].Value.(*message.ErrorMessage)
	if p.ContentType != "panic" || p.Content != "panic: boom" || !strings.Contains(p.Traceback, "goroutine") {
		t.Fatalf("panic ErrorMessage %+v", p)
	}
	if pe := errs[2].Value.(*message.ErrorMessage); pe.ContentType != "errorString" {
		t.Fatalf("panic(error) content type %q", pe.ContentType)
	}
}

// Scenario 21 (handler error on the ask path, B35): the caller gets the
// error; one Processed; no ErrorMessage.
func TestScenario21AskFailure(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := actortest.Spawn(t, root, actor.Func(func(*actor.Context, any) (any, error) {
		return nil, errors.New("critical failure")
	}), actor.Config{Name: "failing"})
	_, err := sys.Ask(ctxT(t), agent, &textMsg{})
	if err == nil || err.Error() != "critical failure" {
		t.Fatalf("ask error %v", err)
	}
	barrier(t, agent)
	if k := rec.Kinds(agent); !equalKinds(k, []actor.RecordKind{actor.RecordStart, actor.RecordReceived, actor.RecordProcessed}) {
		t.Fatalf("kinds %v", k)
	}
}

// Scenario 22 (send to a dead recipient, B39).
func TestScenario22SendToDead(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	dead := actortest.Spawn(t, root, noop, actor.Config{Name: "dead"})
	if err := sys.Stop(ctxT(t), dead); err != nil {
		t.Fatal(err)
	}
	var sendErr error
	agent := actortest.Spawn(t, root, actor.Func(func(c *actor.Context, msg any) (any, error) {
		sendErr = c.Send(dead, &textMsg{})
		return nil, sendErr
	}), actor.Config{Name: "sender"})
	_ = sys.Tell(agent, &numMsg{})
	barrier(t, agent)
	if !errors.Is(sendErr, actor.ErrActorDead) {
		t.Fatalf("send err %v", sendErr)
	}
	k := rec.Kinds(agent)
	if !equalKinds(k, []actor.RecordKind{actor.RecordStart, actor.RecordReceived, actor.RecordSent, actor.RecordProcessed, actor.RecordError}) {
		t.Fatalf("kinds %v", k)
	}
	if err := sys.Tell(dead, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("tell to dead: %v", err)
	}
	if _, err := dead.Ask(ctxT(t), &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("ask to dead: %v", err)
	}
	if err := sys.Stop(ctxT(t), dead); err != nil {
		t.Fatalf("stopping a dead actor: %v", err)
	}
}

// Scenario 23 (no orchestrator, B6): a root agent's telemetry goes nowhere
// and nothing fails.
func TestScenario23NoOrchestrator(t *testing.T) {
	sys, _, _, _ := newTeam(t)
	agent := spawn(t, sys, &stateAgent{}, nil)
	_ = sys.Tell(agent, &bump{})
	v, err := actor.Call(ctxT(t), agent, func(c *actor.Context, _ actor.Actor) (any, error) {
		c.NotifyEvent("x")
		c.Report(errors.New("nobody hears"))
		return c.Orchestrator(), nil
	})
	if err != nil || v.(*message.Address) != nil {
		t.Fatalf("orchestrator %v, %v", v, err)
	}
}

// B18: an OnStart failure is reported and the actor keeps running.
type badStart struct{ actortest.Probe }

func (*badStart) OnStart(*actor.Context) error { return errors.New("cannot start") }

func TestOnStartFailureReported(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	p := &badStart{Probe: *actortest.NewProbe()}
	agent := actortest.Spawn(t, root, p, actor.Config{Name: "bad"})
	errs := rec.WaitKind(t, actor.RecordError, agent, 1)
	_ = errs
	_ = sys.Tell(agent, &textMsg{})
	p.Expect(t)
	for _, r := range rec.Records() {
		if r.Kind == actor.RecordProcessed && r.Message == nil {
			t.Fatal("OnStart failure produced a Processed record")
		}
	}
}

// Scenario 25 (self-stop drains, B21): 5 follow-ups queued before the stop
// are handled in order, then OnStop once, then nothing.
type drainer struct {
	mu     sync.Mutex
	seen   []int
	stops  int
	target int
}

func (d *drainer) Receive(c *actor.Context, msg any) (any, error) {
	m := msg.(*numMsg)
	d.mu.Lock()
	d.seen = append(d.seen, m.N)
	d.mu.Unlock()
	if m.N == 0 {
		for i := 1; i <= 5; i++ {
			if err := c.Send(c.Self(), &numMsg{N: i}); err != nil {
				return nil, err
			}
		}
		return nil, c.Stop()
	}
	return nil, nil
}

func (d *drainer) OnStop(*actor.Context) { d.stops++ }

func TestScenario25SelfStopDrains(t *testing.T) {
	sys, _ := newSystem(t)
	d := &drainer{}
	agent := spawn(t, sys, d, nil)
	_ = sys.Tell(agent, &numMsg{N: 0})
	waitDone(t, agent)
	if len(d.seen) != 6 || d.stops != 1 {
		t.Fatalf("seen %v, stops %d", d.seen, d.stops)
	}
	for i, n := range d.seen {
		if n != i {
			t.Fatalf("order %v", d.seen)
		}
	}
	if agent.IsAlive() {
		t.Fatal("alive after stop")
	}
	if err := sys.Tell(agent, &numMsg{N: 9}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("tell after stop: %v", err)
	}
}

// Scenario 26 (after the marker, B21): tells and asks queued behind the stop
// marker are not handled; the asks fail with ErrActorDead.
func TestScenario26AfterTheMarker(t *testing.T) {
	sys, _ := newSystem(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var handled []string
	agent := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		m := msg.(*textMsg)
		handled = append(handled, m.Text)
		if m.Text == "stop" {
			if err := c.Stop(); err != nil {
				return nil, err
			}
			close(entered)
			<-release
		}
		return nil, nil
	}), nil)
	_ = sys.Tell(agent, &textMsg{Text: "stop"})
	<-entered
	_ = sys.Tell(agent, &textMsg{Text: "late tell"})
	askErr := make(chan error, 1)
	go func() {
		_, err := sys.Ask(context.Background(), agent, &textMsg{Text: "late ask"})
		askErr <- err
	}()
	// The ask is queued once Mailbox... wait for it through a proxy-free
	// check: the stop marker is ahead of it, so it fails either way.
	close(release)
	if err := <-askErr; !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("late ask: %v", err)
	}
	waitDone(t, agent)
	if len(handled) != 1 {
		t.Fatalf("handled %v after the marker", handled)
	}
	if _, err := sys.Ask(ctxT(t), agent, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("ask after stop: %v", err)
	}
}

// Scenario 27 (StopRecursively, B20, B25): stops the whole subtree,
// children first.
func TestScenario27StopRecursively(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	parent := actortest.Spawn(t, root, noop, actor.Config{Name: "parent"})
	child := actortest.Spawn(t, parent, noop, actor.Config{Name: "child"})
	grand := actortest.Spawn(t, child, noop, actor.Config{Name: "grand"})
	if err := sys.Tell(parent, message.StopRecursively{}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, parent)
	for _, a := range []*message.Address{parent, child, grand} {
		if a.IsAlive() {
			t.Fatalf("%s alive", a.Name())
		}
	}
	var order []string
	for _, r := range rec.Of(actor.RecordStop) {
		order = append(order, r.Emitter.Name())
	}
	if strings.Join(order, ",") != "grand,child,parent" {
		t.Fatalf("stop order %v", order)
	}
	if !root.IsAlive() {
		t.Fatal("the root stopped too")
	}
	// Asking StopRecursively answers once the stop is under way.
	other := actortest.Spawn(t, root, noop, actor.Config{Name: "other"})
	if _, err := sys.Ask(ctxT(t), other, &message.StopRecursively{}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, other)
}

// Scenario 54 (mailbox peek and consume, B40-B42).
func TestScenario54MailboxPeekConsume(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	entered, release := make(chan struct{}), make(chan struct{})
	type result struct {
		peek1, peek2, consumed, again []message.Message
	}
	var res result
	m1, c, m3 := &textMsg{Text: "m1"}, &message.CancelMessage{Reason: "stop"}, &textMsg{Text: "m3"}
	var turns []string
	agent := actortest.Spawn(t, root, actor.Func(func(ctx *actor.Context, msg any) (any, error) {
		switch m := msg.(type) {
		case *numMsg:
			close(entered)
			<-release
			res.peek1 = ctx.Mailbox()
			res.peek2 = ctx.Mailbox()
			res.consumed = ctx.ConsumeMailbox(c.ID, uuid.New())
			res.again = ctx.ConsumeMailbox(c.ID)
		case *textMsg:
			turns = append(turns, m.Text)
		case *message.CancelMessage:
			turns = append(turns, "cancel")
		}
		return nil, nil
	}), actor.Config{Name: "runner"})
	_ = sys.Tell(agent, &numMsg{})
	<-entered
	_ = sys.Tell(agent, m1)
	_ = sys.Tell(agent, c)
	_ = sys.Tell(agent, m3)
	_ = sys.Tell(agent, "raw values are not listed")
	close(release)
	barrier(t, agent)
	ids := func(ms []message.Message) []uuid.UUID {
		var out []uuid.UUID
		for _, m := range ms {
			out = append(out, m.Envelope().ID)
		}
		return out
	}
	want := []uuid.UUID{m1.ID, c.ID, m3.ID}
	if !slices.Equal(ids(res.peek1), want) || !slices.Equal(ids(res.peek2), want) {
		t.Fatalf("peek %v / %v, want %v", ids(res.peek1), ids(res.peek2), want)
	}
	if !slices.Equal(ids(res.consumed), []uuid.UUID{c.ID}) || len(res.again) != 0 {
		t.Fatalf("consumed %v, again %v", ids(res.consumed), ids(res.again))
	}
	if strings.Join(turns, ",") != "m1,m3" {
		t.Fatalf("turns %v", turns)
	}
	handled := rec.Of(actor.RecordHandled)
	if len(handled) != 1 || handled[0].Message != message.Message(c) {
		t.Fatalf("handled records %s", actortest.Describe(handled))
	}
	hm := handled[0].ToMessage().(*message.HandledMessage)
	if hm.MessageID != c.ID {
		t.Fatalf("HandledMessage %+v", hm)
	}
	for _, r := range rec.Records() {
		if (r.Kind == actor.RecordReceived || r.Kind == actor.RecordProcessed) && r.Message == message.Message(c) {
			t.Fatal("consumed message got a turn record")
		}
	}
}

// A consumed ask is answered with ErrConsumed (B41).
func TestConsumedAskIsAnswered(t *testing.T) {
	sys, _ := newSystem(t)
	entered, release := make(chan struct{}), make(chan struct{})
	asked := &textMsg{Text: "asked"}
	agent := spawn(t, sys, actor.Func(func(ctx *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*numMsg); ok {
			close(entered)
			<-release
			for len(ctx.Mailbox()) == 0 {
				runtime.Gosched() // the ask is on its way
			}
			ctx.ConsumeMailbox(ctx.Mailbox()[0].Envelope().ID)
		}
		return nil, nil
	}), nil)
	_ = sys.Tell(agent, &numMsg{})
	<-entered
	errc := make(chan error, 1)
	go func() { _, err := sys.Ask(context.Background(), agent, asked); errc <- err }()
	close(release)
	if err := <-errc; !errors.Is(err, actor.ErrConsumed) {
		t.Fatalf("consumed ask: %v", err)
	}
}

// StopRequested fires as soon as a stop is queued, so that a long handler
// can end early; the stop then completes. It fires for a parent's
// recursive stop too, and is closed for a channel asked for afterwards.
func TestStopRequested(t *testing.T) {
	sys, _ := newSystem(t)
	entered := make(chan struct{})
	var sawStop bool
	addr, err := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); ok {
			close(entered)
			select {
			case <-c.StopRequested():
				sawStop = true
			case <-time.After(10 * time.Second):
			}
		}
		return nil, nil
	}), actor.Config{Name: "long"})
	if err != nil {
		t.Fatal(err)
	}
	_ = sys.Tell(addr, message.NewUserMessage("work"))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sys.Stop(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if !sawStop { // read after the stop completed: no race
		t.Fatal("the handler did not see the stop request")
	}

	// A child sees its parent's stop; a late asker gets a closed channel.
	parentEntered, childSaw := make(chan struct{}), make(chan bool, 1)
	parent, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); ok {
			_, err := c.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
				if _, ok := msg.(*message.UserMessage); ok {
					close(parentEntered)
					<-c.StopRequested()
					<-c.StopRequested() // again: still closed
					childSaw <- true
				}
				return nil, nil
			}), actor.Config{Name: "child"})
			if err != nil {
				return nil, err
			}
			return nil, c.Send(c.Children()[0], message.NewUserMessage("go"))
		}
		return nil, nil
	}), actor.Config{Name: "parent"})
	_ = sys.Tell(parent, message.NewUserMessage("start"))
	<-parentEntered
	if err := sys.Stop(ctx, parent); err != nil {
		t.Fatal(err)
	}
	if !<-childSaw {
		t.Fatal("child did not see its parent's stop")
	}
}
