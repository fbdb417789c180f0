package actor_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
	"github.com/google/uuid"
)

var noop = actor.Func(func(*actor.Context, any) (any, error) { return nil, nil })

func nop(*actor.Context, any) (any, error) { return nil, nil }

type plainAgent struct{ actor.Base }

func (*plainAgent) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

// waitClosed waits for ch to be closed, failing t after actortest.Timeout.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(actortest.Timeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// stopLog records, in order, whose OnStop ran.
type stopLog struct {
	mu    sync.Mutex
	order []string
}

func (l *stopLog) add(name string) {
	l.mu.Lock()
	l.order = append(l.order, name)
	l.mu.Unlock()
}

func (l *stopLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.order)
}

// hooked is an actor whose hooks the test sets: start runs in OnStart;
// OnStop closes entered (when set), waits for gate (when set), then logs
// its name.
type hooked struct {
	name    string
	log     *stopLog
	recv    actor.Func
	start   func(c *actor.Context)
	entered chan struct{}
	gate    chan struct{}
}

func (h *hooked) OnStart(c *actor.Context) error {
	if h.start != nil {
		h.start(c)
	}
	return nil
}

func (h *hooked) Receive(c *actor.Context, msg any) (any, error) {
	if h.recv != nil {
		return h.recv(c, msg)
	}
	return nil, nil
}

func (h *hooked) OnStop(*actor.Context) {
	if h.entered != nil {
		close(h.entered)
	}
	if h.gate != nil {
		<-h.gate
	}
	h.log.add(h.name)
}

// Spawn defaults an actor's identity: fresh ids, a unique name, the type
// name as role.
func TestSpawnDefaultsIdentity(t *testing.T) {
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

// A child joins its parent's team, squad and user.
func TestChildInheritsTeamAndSquad(t *testing.T) {
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
	got, _ := proxy.Ask(actortest.Context(t), grandchild, func(c *actor.Context, _ actor.Actor) ([]any, error) {
		id, email := c.User()
		return []any{c.Parent(), id, email, c.Orchestrator()}, nil
	})
	if !got[0].(*message.Address).Equal(child) || got[1] != "u1" || got[2] != "u@x" || got[3].(*message.Address) != nil {
		t.Fatalf("grandchild context: %v", got)
	}
	k, _ := proxy.Ask(actortest.Context(t), parent, func(c *actor.Context, _ actor.Actor) ([]*message.Address, error) { return c.Children(), nil })
	if len(k) != 2 || !k[0].Equal(child) || !k[1].Equal(other) {
		t.Fatalf("children %v", k)
	}
}

// An actor collected without being stopped: Alive is false, tell and ask
// fail with ErrActorDead, nothing enqueued; System.Tell/Ask and an actor's
// Context.Send are checked.
func TestCollectedActorIsDead(t *testing.T) {
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
	if err := sys.Tell(addr, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("tell: %v", err)
	}
	if _, err := sys.Ask(actortest.Context(t), addr, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("ask: %v", err)
	}
	sender := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		return nil, c.Send(addr, &textMsg{})
	}), nil)
	if _, err := sys.Ask(actortest.Context(t), sender, &numMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("send from an actor: %v", err)
	}
	if addr.Name() != "ghost" {
		t.Fatal("identity lost after collection")
	}
}

// A decoded address is a snapshot: equal to the live one, never
// deliverable, and so is a stopped record.
func TestSnapshotAddresses(t *testing.T) {
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
	// The address kinds are no longer exported: a snapshot is an address
	// without a delivery handle.
	if !snap.IsAlive() || actor.IsLiveForTest(&snap) || !snap.Equal(live) {
		t.Fatalf("snapshot %+v", snap.Identity())
	}
	sender := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		return nil, c.Send(&snap, &textMsg{})
	}), nil)
	for _, err := range []error{
		sys.Tell(&snap, &textMsg{}),
		func() error { _, err := sys.Ask(actortest.Context(t), &snap, &textMsg{}); return err }(),
		func() error { _, err := sys.Ask(actortest.Context(t), sender, &numMsg{}); return err }(),
		func() error {
			var nilFn func(*actor.Context, actor.Actor) (any, error)
			_, err := proxy.Ask(actortest.Context(t), &snap, nilFn)
			return err
		}(),
		func() error {
			_, err := proxy.Ask(actortest.Context(t), &snap, func(*actor.Context, actor.Actor) (any, error) { return nil, nil })
			return err
		}(),
	} {
		if err == nil || (!errors.Is(err, actor.ErrNotDeliverable) && !strings.Contains(err.Error(), "nil function")) {
			t.Fatalf("snapshot delivery: %v", err)
		}
	}
	if err := sys.Tell(&snap, &textMsg{}); !strings.Contains(err.Error(), "@Writer") {
		t.Fatalf("refusal does not name the address: %v", err)
	}
	if again, _ := json.Marshal(&snap); string(again) != string(data) {
		t.Fatalf("serialize changed: %s, was %s", again, data)
	}
	stopped := live.AsStopped()
	if stopped.IsAlive() || !errors.Is(sys.Tell(stopped, &textMsg{}), actor.ErrNotDeliverable) {
		t.Fatal("stopped record delivers or lives")
	}
}

// A user proxy is detected by kind, whatever its name or role.
type fakeUserProxy struct{ actor.Base }

func (*fakeUserProxy) Receive(*actor.Context, any) (any, error) { return nil, nil }
func (*fakeUserProxy) UserProxyActor()                          {}

type derivedProxy struct{ fakeUserProxy }

func TestUserProxyDetectedByKind(t *testing.T) {
	sys, _ := newSystem(t)
	up := spawn(t, sys, &fakeUserProxy{}, actor.Config{Name: "@Human"})
	worker := spawn(t, sys, &derivedProxy{}, actor.Config{Name: "w", Role: "worker"})
	named := spawn(t, sys, noop, actor.Config{Name: "UserProxy", Role: "UserProxy"})
	if !up.IsUserProxy() || !worker.IsUserProxy() || named.IsUserProxy() {
		t.Fatal("wrong user-proxy detection")
	}
	if err := sys.Stop(actortest.Context(t), worker); err != nil {
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

// The turn bracket and causality: Received, Sent with the turn's message as
// parent, Processed. The recorder sees
// the subscribers' copies: the sent message inside a SentMessage is
// compared by id, not by pointer.
func TestTurnBracketAndCausality(t *testing.T) {
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
	rec.WaitKind(t, kProcessed, b, 1)
	synced(t, root, a)
	sentID := sent.Envelope().ID
	var order []string
	for _, m := range rec.Records() {
		from, env := m.Envelope().Sender, m.Envelope()
		switch r := m.(type) {
		case *message.SentMessage:
			if !from.Equal(a) {
				continue
			}
			if !env.ParentID.Valid || env.ParentID.UUID != x.ID || r.Message.Envelope().ID != sentID || !r.Recipient.Equal(b) {
				t.Fatalf("SentMessage %+v", r)
			}
			order = append(order, "Sent")
		case *message.ReceivedMessage, *message.ProcessedMessage:
			if !from.Equal(b) {
				continue
			}
			id := uuid.Nil
			if rm, ok := r.(*message.ReceivedMessage); ok {
				id = rm.MessageID
			} else {
				id = r.(*message.ProcessedMessage).MessageID
			}
			if id != sentID || env.ParentID.UUID != sentID {
				t.Fatalf("%s about %v parent %v", message.TypeName(m), id, env.ParentID)
			}
			order = append(order, strings.TrimSuffix(message.TypeName(m), "Message"))
		}
	}
	if strings.Join(order, ",") != "Sent,Received,Processed" {
		t.Fatalf("order %v", order)
	}
	env := sent.Envelope()
	if env.ParentID.UUID != x.ID || env.TeamID.UUID != root.TeamID() || !env.Sender.Equal(a) {
		t.Fatalf("stamping: parent %v team %v sender %v", env.ParentID, env.TeamID, env.Sender)
	}
	// The telemetry message.
	tm := recorded[*message.SentMessage](rec, a)[0]
	if tm.Message.Envelope().ID != sentID || tm.Message.(*textMsg).Text != "M" || tm.ParentID.UUID != x.ID || !tm.Sender.Equal(a) {
		t.Fatalf("SentMessage %+v", tm)
	}
}

// Handler errors, warnings and panics on the tell
// path are reported after Processed; the actor goes on.
func TestTellFailuresReportedAfterProcessed(t *testing.T) {
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
	rec.WaitKind(t, kProcessed, agent, len(msgs))
	synced(t, root, agent)
	kinds := rec.Kinds(agent)[1:] // skip Start
	want := []string{
		kReceived, kProcessed, kError,
		kReceived, kProcessed, kWarning,
		kReceived, kProcessed, kError,
		kReceived, kProcessed, kError,
		kReceived, kProcessed,
	}
	if !equalKinds(kinds, want) {
		t.Fatalf("kinds %v\nwant  %v", kinds, want)
	}
	errs, warns := recorded[*message.ErrorMessage](rec, agent), recorded[*message.WarningMessage](rec, agent)
	e := errs[0]
	if e.ContentType != "errorString" || !strings.Contains(e.Content, "critical failure") || e.Traceback == "" ||
		e.CurrentMessage.Envelope().ID != msgs[0].ID || e.ParentID.Valid {
		t.Fatalf("ErrorMessage %+v", e)
	}
	w := warns[0]
	if w.ContentType != "WarningError" || w.Content != "non-critical issue" || w.CurrentMessage.Envelope().ID != msgs[1].ID || w.ParentID.Valid {
		t.Fatalf("WarningMessage %+v", w)
	}
	p := errs[1]
	if p.ContentType != "panic" || p.Content != "panic: boom" || !strings.Contains(p.Traceback, "goroutine") {
		t.Fatalf("panic ErrorMessage %+v", p)
	}
	if pe := errs[2]; pe.ContentType != "errorString" {
		t.Fatalf("panic(error) content type %q", pe.ContentType)
	}
}

// A handler error on the ask path: the caller gets the
// error; one Processed; no ErrorMessage.
func TestAskFailureGoesToTheCaller(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := actortest.Spawn(t, root, actor.Func(func(*actor.Context, any) (any, error) {
		return nil, errors.New("critical failure")
	}), actor.Config{Name: "failing"})
	_, err := sys.Ask(actortest.Context(t), agent, &textMsg{})
	if err == nil || err.Error() != "critical failure" {
		t.Fatalf("ask error %v", err)
	}
	synced(t, root, agent)
	if k := rec.Kinds(agent); !equalKinds(k, []string{kStart, kReceived, kProcessed}) {
		t.Fatalf("kinds %v", k)
	}
}

// A send to a dead recipient fails with ErrActorDead (its Sent record still
// goes out); a tell or an ask to it fails the same way, a stop returns nil.
func TestSendToDeadRecipient(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	dead := actortest.Spawn(t, root, noop, actor.Config{Name: "dead"})
	if err := sys.Stop(actortest.Context(t), dead); err != nil {
		t.Fatal(err)
	}
	var sendErr error
	agent := actortest.Spawn(t, root, actor.Func(func(c *actor.Context, msg any) (any, error) {
		sendErr = c.Send(dead, &textMsg{})
		return nil, sendErr
	}), actor.Config{Name: "sender"})
	_ = sys.Tell(agent, &numMsg{})
	synced(t, root, agent)
	if !errors.Is(sendErr, actor.ErrActorDead) {
		t.Fatalf("send err %v", sendErr)
	}
	k := rec.Kinds(agent)
	if !equalKinds(k, []string{kStart, kReceived, kSent, kProcessed, kError}) {
		t.Fatalf("kinds %v", k)
	}
	if err := sys.Tell(dead, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("tell to dead: %v", err)
	}
	if _, err := sys.Ask(actortest.Context(t), dead, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("ask to dead: %v", err)
	}
	if err := sys.Stop(actortest.Context(t), dead); err != nil {
		t.Fatalf("stopping a dead actor: %v", err)
	}
}

// With no orchestrator a root agent's telemetry goes nowhere
// and nothing fails.
func TestRootAgentWithoutOrchestrator(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := spawn(t, sys, &stateAgent{}, nil)
	_ = sys.Tell(agent, &bump{})
	v, err := proxy.Ask(actortest.Context(t), agent, func(c *actor.Context, _ actor.Actor) (*message.Address, error) {
		c.NotifyEvent("x")
		c.Report(errors.New("nobody hears"))
		return c.Orchestrator(), nil
	})
	if err != nil || v != nil {
		t.Fatalf("orchestrator %v, %v", v, err)
	}
	synced(t, root, agent)
	if k := rec.Kinds(agent); len(k) != 0 {
		t.Fatalf("a root outside the team reached the team's recorder: %v", k)
	}
}

// An OnStart failure is reported and the actor keeps running.
type badStart struct{ actortest.Probe }

func (*badStart) OnStart(*actor.Context) error { return errors.New("cannot start") }

func TestOnStartFailureReported(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	p := &badStart{Probe: *actortest.NewProbe()}
	agent := actortest.Spawn(t, root, p, actor.Config{Name: "bad"})
	rec.WaitKind(t, kError, agent, 1)
	m := &textMsg{}
	_ = sys.Tell(agent, m)
	p.Expect(t)
	synced(t, root, agent)
	// The failure names no current message and closes no turn: the only
	// Processed is the told message's.
	if e := recorded[*message.ErrorMessage](rec, agent)[0]; e.CurrentMessage != nil {
		t.Fatalf("OnStart failure names a current message: %+v", e)
	}
	for _, pm := range recorded[*message.ProcessedMessage](rec, agent) {
		if pm.MessageID != m.ID {
			t.Fatalf("OnStart failure produced a Processed record: %+v", pm)
		}
	}
}

// A self-stop drains: 5 follow-ups queued before the stop
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
		c.Stop()
	}
	return nil, nil
}

func (d *drainer) OnStop(*actor.Context) { d.stops++ }

func TestSelfStopDrainsTheMailbox(t *testing.T) {
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

// Tells and asks queued behind the stop
// marker are not handled; the asks fail with ErrActorDead.
func TestMessagesAfterTheStopMarkerAreNotHandled(t *testing.T) {
	sys, _ := newSystem(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var handled []string
	agent := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		m := msg.(*textMsg)
		handled = append(handled, m.Text)
		if m.Text == "stop" {
			c.Stop()
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
	// The stop marker is ahead of the ask, whenever it is queued: it fails
	// either way.
	close(release)
	if err := <-askErr; !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("late ask: %v", err)
	}
	waitDone(t, agent)
	if len(handled) != 1 {
		t.Fatalf("handled %v after the marker", handled)
	}
	if _, err := sys.Ask(actortest.Context(t), agent, &textMsg{}); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("ask after stop: %v", err)
	}
}

// StopRecursively stops the whole subtree,
// children first.
func TestStopRecursivelyStopsTheSubtree(t *testing.T) {
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
	synced(t, root)
	var order []string
	for _, m := range recorded[*message.StopMessage](rec, nil) {
		order = append(order, m.Sender.Name())
	}
	if strings.Join(order, ",") != "grand,child,parent" {
		t.Fatalf("stop order %v", order)
	}
	if !root.IsAlive() {
		t.Fatal("the root stopped too")
	}
	// An ask of StopRecursively is answered once the actor has ended (the
	// redesign's one stop path; it used to answer once the stop was under
	// way).
	otherLog := &stopLog{}
	other := actortest.Spawn(t, root, &hooked{name: "other", log: otherLog}, actor.Config{Name: "other"})
	if _, err := sys.Ask(actortest.Context(t), other, &message.StopRecursively{}); err != nil {
		t.Fatal(err)
	}
	if other.IsAlive() || !slices.Equal(otherLog.get(), []string{"other"}) {
		t.Fatalf("the StopRecursively ask was answered before the actor ended (OnStop ran: %v)", otherLog.get())
	}
	select {
	case <-actor.Done(other):
	default:
		t.Fatal("the StopRecursively ask was answered before Done closed")
	}
}

// A handler peeks at and consumes what is queued in its mailbox.
func TestMailboxPeekAndConsume(t *testing.T) {
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
	synced(t, root, agent)
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
	handled := recorded[*message.HandledMessage](rec, nil)
	if len(handled) != 1 || handled[0].MessageID != c.ID || !handled[0].Sender.Equal(agent) {
		t.Fatalf("handled records %+v", handled)
	}
	for _, m := range recorded[*message.ReceivedMessage](rec, agent) {
		if m.MessageID == c.ID {
			t.Fatal("consumed message got a ReceivedMessage")
		}
	}
	for _, m := range recorded[*message.ProcessedMessage](rec, agent) {
		if m.MessageID == c.ID {
			t.Fatal("consumed message got a ProcessedMessage")
		}
	}
}

// A consumed ask is answered with ErrConsumed.
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

// A child spawned by a message queued before the stop marker is stopped
// with its parent, before the parent's end (children first).
func TestChildSpawnedDuringStopIsStopped(t *testing.T) {
	sys, _ := newSystem(t)
	gate, in := make(chan struct{}), make(chan struct{})
	kids := make(chan *message.Address, 1)
	parent, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		switch msg {
		case "block":
			close(in)
			<-gate
		case "spawn":
			k, err := c.Spawn(actor.Func(nop), nil)
			kids <- k
			return nil, err
		}
		return nil, nil
	}), nil)
	_ = sys.Tell(parent, "block")
	<-in
	_ = sys.Tell(parent, message.StopRecursively{}) // the stop runs first...
	_ = sys.Tell(parent, "spawn")                   // ...then this, before the marker
	close(gate)
	kid := <-kids
	<-actor.Done(parent)
	select {
	case <-actor.Done(kid):
	default:
		t.Fatalf("the parent ended with its child %s still running", kid)
	}
}

// An actor that stops itself (Context.Stop) with children: the
// children stop before the parent ends.
func TestSelfStopStopsChildren(t *testing.T) {
	sys, _ := newSystem(t)
	kids := make(chan *message.Address, 1)
	parent, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		k, err := c.Spawn(actor.Func(nop), nil)
		if err != nil {
			return nil, err
		}
		kids <- k
		c.Stop()
		return nil, nil
	}), nil)
	_ = sys.Tell(parent, "go")
	kid := <-kids
	<-actor.Done(parent)
	select {
	case <-actor.Done(kid):
	default:
		t.Fatal("a self-stop left a child running")
	}
}

// A StopRecursively ask queued after the stop marker succeeds.
func TestPendingStopAskSucceeds(t *testing.T) {
	sys, _ := newSystem(t)
	in, gate := make(chan struct{}), make(chan struct{})
	addr, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		if msg == "stop" {
			c.Stop() // no children: the marker is posted at once
			close(in)
			<-gate
		}
		return nil, nil
	}), nil)
	_ = sys.Tell(addr, "stop")
	<-in
	res := make(chan error, 1)
	go func() {
		_, err := sys.Ask(context.Background(), addr, message.StopRecursively{})
		res <- err
	}()
	for actor.QueuedForTest(addr) < 2 { // the marker, then the ask
		runtime.Gosched()
	}
	close(gate)
	if err := <-res; err != nil {
		t.Fatalf("a stop ask on a stopping actor: %v", err)
	}
}

type slowStop struct{ in, gate chan struct{} }

func (s *slowStop) OnStop(*actor.Context) { close(s.in); <-s.gate }
func (s *slowStop) Receive(c *actor.Context, _ any) (any, error) {
	c.Stop()
	return nil, nil
}

// System.Stop of an actor whose OnStop is running waits for it (and
// reports its context's end when that comes first), never returns success
// early.
func TestStopWaitsForOnStop(t *testing.T) {
	sys, _ := newSystem(t)
	s := &slowStop{in: make(chan struct{}), gate: make(chan struct{})}
	addr, _ := sys.Spawn(s, nil)
	_ = sys.Tell(addr, "stop")
	<-s.in
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := sys.Stop(ctx, addr); err == nil {
		t.Fatal("System.Stop reported success while OnStop runs")
	}
	close(s.gate)
	if err := sys.Stop(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
}

// Nothing blocks a parent's goroutine on a child's stop: the children are told to stop together, not one after
// another; the parent keeps handling messages while they stop, and its
// OnStop runs only after every child's OnStop.
func TestParentHandlesMessagesWhileChildrenStop(t *testing.T) {
	sys, _ := newSystem(t)
	log := &stopLog{}
	gate := make(chan struct{})
	parent := spawn(t, sys, &hooked{name: "parent", log: log, recv: func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*numMsg); ok {
			return len(c.Children()), nil
		}
		return nil, nil
	}}, actor.Config{Name: "parent"})
	kids := []*hooked{
		{name: "c1", log: log, entered: make(chan struct{}), gate: gate},
		{name: "c2", log: log, entered: make(chan struct{}), gate: gate},
	}
	for _, k := range kids {
		actortest.Spawn(t, parent, k, actor.Config{Name: k.name})
	}
	if err := sys.Tell(parent, message.StopRecursively{}); err != nil {
		t.Fatal(err)
	}
	// Both children are in their OnStop at once: neither waits for the
	// other (a blocking stop in list order would never reach c1's).
	for _, k := range kids {
		waitClosed(t, k.entered, k.name+"'s OnStop")
	}
	// The parent still answers; its children have not ended yet.
	v, err := sys.Ask(actortest.Context(t), parent, &numMsg{})
	if err != nil || v != 2 {
		t.Fatalf("ask to the stopping parent = %v, %v; want 2 running children", v, err)
	}
	if got := log.get(); len(got) != 0 {
		t.Fatalf("OnStop ran before the children were released: %v", got)
	}
	close(gate)
	waitDone(t, parent)
	got := log.get()
	if len(got) != 3 || got[2] != "parent" || !slices.Contains(got, "c1") || !slices.Contains(got, "c2") {
		t.Fatalf("OnStop order %v; want both children, then the parent", got)
	}
}

// With Config.Tool, a tool child is told to stop only once its non-tool
// siblings have ended, so a sibling still inside a handler can call it
// during the teardown.
func TestToolChildStopsAfterItsSiblings(t *testing.T) {
	sys, _ := newSystem(t)
	log := &stopLog{}
	parent := spawn(t, sys, &hooked{name: "parent", log: log}, actor.Config{Name: "parent"})
	toolCtx := make(chan context.Context, 1)
	tool := actortest.Spawn(t, parent, &hooked{name: "tool", log: log,
		start: func(c *actor.Context) { toolCtx <- c.Context() },
		recv: func(c *actor.Context, msg any) (any, error) {
			// Answering a sibling: not told to stop yet.
			return c.Context().Err() == nil, nil
		},
	}, actor.Config{Name: "tool", Tool: true})
	if !tool.IsTool() {
		t.Fatal("Config.Tool did not mark the address")
	}
	entered := make(chan struct{})
	answer := make(chan any, 1)
	askCtx := actortest.Context(t)
	worker := actortest.Spawn(t, parent, &hooked{name: "worker", log: log,
		recv: func(c *actor.Context, msg any) (any, error) {
			if _, ok := msg.(*textMsg); !ok {
				return nil, nil
			}
			close(entered)
			<-c.Context().Done() // the teardown has begun for this worker...
			v, err := c.Ask(askCtx, tool, &numMsg{})
			if err != nil {
				v = err
			}
			answer <- v // ...and the tool still answers
			return nil, nil
		},
	}, actor.Config{Name: "worker"})
	actortest.Spawn(t, parent, &hooked{name: "idle", log: log}, actor.Config{Name: "idle"})
	tctx := <-toolCtx
	_ = sys.Tell(worker, &textMsg{})
	waitClosed(t, entered, "the worker's handler")
	_ = sys.Tell(parent, message.StopRecursively{})
	select {
	case v := <-answer:
		if v != true {
			t.Fatalf("the tool answered the stopping worker with %v; want true (not yet told to stop)", v)
		}
	case <-time.After(actortest.Timeout):
		t.Fatal("the worker got no answer from the tool")
	}
	waitDone(t, parent)
	got := log.get()
	if len(got) != 4 || got[2] != "tool" || got[3] != "parent" {
		t.Fatalf("OnStop order %v; want worker and idle, then the tool, then the parent", got)
	}
	if !errors.Is(context.Cause(tctx), actor.ErrStopped) {
		t.Fatalf("tool context cause %v", context.Cause(tctx))
	}
}

// A stop with a deadline (here the team's stop grace) ends when the
// deadline passes even though a child is wedged: "forcing teardown" is
// logged with the children still running, and the wedged child is left to
// end on its own (it was told to stop).
func TestStopGraceForcesTeardown(t *testing.T) {
	sys, logs := newSystem(t)
	release := make(chan struct{})
	var once sync.Once
	unwedge := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unwedge) // runs before the shutdown registered by newSystem
	team, err := orchestrator.New(sys, orchestrator.WithStopGrace(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	wedged := actortest.Spawn(t, team.Address(), actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*textMsg); ok {
			close(entered)
			<-release // ignores its context
		}
		return nil, nil
	}), actor.Config{Name: "wedged"})
	calm := actortest.Spawn(t, team.Address(), noop, actor.Config{Name: "calm"})
	_ = sys.Tell(wedged, &textMsg{})
	waitClosed(t, entered, "the wedged handler")
	if err := team.Stop(actortest.Context(t)); err != nil {
		t.Fatalf("team stop: %v", err)
	}
	if !wedged.IsAlive() {
		t.Fatal("the wedged child ended while its handler blocks")
	}
	waitDone(t, calm)
	if n := logs.Count(slog.LevelWarn, "forcing teardown"); n != 1 {
		t.Fatalf("%d 'forcing teardown' warnings, want 1:\n%s", n, logs.Text())
	}
	var running string
	for _, r := range logs.Records() {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "still_running" {
				running = a.Value.String()
			}
			return true
		})
	}
	if !strings.Contains(running, "wedged") {
		t.Fatalf("still_running = %q, want it to name the wedged child", running)
	}
	unwedge()
	waitDone(t, wedged)
}
