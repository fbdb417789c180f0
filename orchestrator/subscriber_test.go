package orchestrator_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// The roster excludes the orchestrator, finds by name, shrinks
// when a member stops; a user proxy counts as a member.
func TestRoster(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	var addrs []*message.Address
	for _, n := range []string{"a", "b", "c"} {
		addrs = append(addrs, mustSpawn(t, team, &echo{}, named(n)))
	}
	up := mustSpawn(t, team, &orchestrator.UserProxy{}, named("human"))
	members, err := team.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 4 {
		t.Fatalf("roster = %v, want 4 members", members)
	}
	for _, m := range members {
		if m.AgentID() == team.Address().AgentID() {
			t.Fatal("the orchestrator is in its own roster")
		}
	}
	if got, _ := team.Member(ctx, "human"); got == nil || !got.Equal(up) || !got.IsUserProxy() {
		t.Fatalf("Member(human) = %v, want the user proxy", got)
	}
	if got, _ := team.Member(ctx, "nobody"); got != nil {
		t.Fatalf("Member(nobody) = %v, want nil", got)
	}
	if err := sys.Stop(ctx, addrs[1]); err != nil {
		t.Fatal(err)
	}
	if members, _ = team.Members(ctx); len(members) != 3 {
		t.Fatalf("after a stop roster = %v, want 3", members)
	}
	// A member spawned by a member is in the roster too (whole tree).
	child, err := actortest.SpawnIn(ctx, addrs[0], &echo{}, named("grandchild"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := team.Member(ctx, "grandchild"); got == nil || !got.Equal(child) {
		t.Fatalf("grandchild not in the roster: %v", got)
	}
}

// A subscriber gets each logged message once, in order,
// with snapshot addresses, while the log keeps live ones.
func TestSubscriberFanOut(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sub := newSub()
	if err := team.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	relayOnce(t, sys, team)
	log, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// The query waited for the subscriber to be given every record before
	// it; the relays' turns may still close after it (an actor's Processed
	// record comes when it parks), so the subscriber can hold more.
	got := sub.messages()
	want := log[1:] // the orchestrator's own Start predates the subscription
	if len(got) < len(want) {
		t.Fatalf("subscriber got %v, log has %v", typeNames(got), typeNames(want))
	}
	sawNested := false
	for i := range want {
		if got[i].Envelope().ID != want[i].Envelope().ID || message.TypeName(got[i]) != message.TypeName(want[i]) {
			t.Fatalf("message %d: subscriber %s %s, log %s %s", i, message.TypeName(got[i]), got[i].Envelope().ID,
				message.TypeName(want[i]), want[i].Envelope().ID)
		}
		if s := got[i].Envelope().Sender; !isSnapshot(s) {
			t.Fatalf("subscriber's message %d sender %v: want a snapshot", i, s)
		}
		if s := want[i].Envelope().Sender; !orchestrator.IsLive(s) && s.AgentID() != team.Address().AgentID() {
			t.Fatalf("log message %d sender %v: want live", i, s)
		}
		if sm, ok := got[i].(*message.SentMessage); ok {
			sawNested = true
			nb := sm.Message.Envelope()
			if !isSnapshot(nb.Sender) || !isSnapshot(sm.Recipient) {
				t.Fatalf("nested addresses %v -> %v: want snapshots", nb.Sender, sm.Recipient)
			}
			if lm := want[i].(*message.SentMessage); !orchestrator.IsLive(lm.Message.Envelope().Sender) {
				t.Fatal("the log's nested sender was replaced")
			}
		}
	}
	if !sawNested {
		t.Fatal("no SentMessage reached the subscriber")
	}
}

// After Unsubscribe nothing more arrives; unknown is a no-op.
func TestUnsubscribe(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sub, other := newSub(), newSub()
	if err := team.Unsubscribe(ctx, other); err != nil { // not attached: no-op
		t.Fatal(err)
	}
	_ = team.Subscribe(ctx, sub)
	mustSpawn(t, team, &echo{}, named("a"))
	_ = team.Unsubscribe(ctx, sub)
	mustSpawn(t, team, &echo{}, named("b"))
	if _, err := team.Members(ctx); err != nil { // barrier
		t.Fatal(err)
	}
	msgs := sub.messages()
	if len(msgs) != 1 || msgs[0].Envelope().Sender.Name() != "a" {
		t.Fatalf("subscriber got %v, want only a's StartMessage", typeNames(msgs))
	}
}

// panicky panics in the hooks named in its set.
type panicky struct{ in map[string]bool }

func (p panicky) OnMessage(message.Message) {
	if p.in["message"] {
		panic("boom in OnMessage")
	}
}
func (p panicky) SetRestoring(uuid.UUID, bool) {
	if p.in["restoring"] {
		panic("boom in SetRestoring")
	}
}
func (p panicky) OnStopRequest(uuid.UUID) {
	if p.in["stop_request"] {
		panic("boom in OnStopRequest")
	}
}
func (p panicky) OnStop(uuid.UUID) {
	if p.in["stop"] {
		panic("boom in OnStop")
	}
}

// A subscriber that panics in any hook is logged and skipped;
// the next subscriber and the ledger lose nothing.
func TestSubscriberPanicsInEveryHook(t *testing.T) {
	for _, hook := range []string{"message", "restoring", "stop_request", "stop"} {
		t.Run(hook, func(t *testing.T) {
			_, team, logs := actortest.NewTeam(t)
			ctx := actortest.Context(t)
			bad := panicky{in: map[string]bool{hook: true}}
			good := newSub()
			_ = team.Subscribe(ctx, bad)
			_ = team.Subscribe(ctx, good)
			// Team.SetRestoring is gone (Restore brackets its replay with
			// it): the export_test.go hook drives the fan-out.
			_ = orchestrator.SetRestoring(ctx, team, true)
			_ = orchestrator.SetRestoring(ctx, team, false)
			mustSpawn(t, team, &echo{}, named("a"))
			if err := team.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(good.hooks("restoring")); n != 2 {
				t.Fatalf("good subscriber got %d SetRestoring calls, want 2", n)
			}
			if n := len(good.hooks("stop_request")); n != 1 {
				t.Fatalf("good subscriber got %d OnStopRequest, want 1", n)
			}
			if n := len(good.hooks("stop")); n != 1 {
				t.Fatalf("good subscriber got %d OnStop, want 1", n)
			}
			// Start(a) and the TeamStoppingEvent.
			if msgs := good.messages(); len(msgs) != 2 {
				t.Fatalf("good subscriber got %v", typeNames(msgs))
			}
			if n := logs.Count(slog.LevelError, "subscriber hook panicked"); n == 0 {
				t.Fatal("the panic was not logged")
			}
			log, _ := team.Messages(ctx, orchestrator.Filter{})
			if len(log) < 3 {
				t.Fatalf("ledger lost records: %v", typeNames(log))
			}
		})
	}
}

// A subscriber with only OnMessage is skipped silently by
// the lifecycle hooks.
func TestMinimalSubscriber(t *testing.T) {
	_, team, logs := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	var n int
	_ = team.Subscribe(ctx, onMessageFunc(func(message.Message) { n++ }))
	_ = orchestrator.SetRestoring(ctx, team, true)
	mustSpawn(t, team, &echo{}, named("a"))
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n != 2 { // Start(a), TeamStoppingEvent; read after the stop: no race
		t.Fatalf("OnMessage called %d times, want 2", n)
	}
	if logs.Count(slog.LevelError, "") != 0 {
		t.Fatalf("errors logged for missing hooks:\n%s", logs.Text())
	}
}

// Emit stamps the orchestrator as sender and its
// team; events filter by agent and payload; metadata replaces wholesale.
func TestEmitEventsMetadata(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	foreign := message.NewUserMessage("injected")
	foreign.TeamID = uuid.NullUUID{UUID: uuid.New(), Valid: true}
	if err := team.Emit(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	got := sub.messages()
	if len(got) != 1 {
		t.Fatalf("subscriber got %v", typeNames(got))
	}
	if b := got[0].Envelope(); b.TeamID.UUID != team.ID() || b.Sender.AgentID() != team.Address().AgentID() || b.ParentID.Valid {
		t.Fatalf("emitted envelope %+v: want the team's id, the orchestrator as sender, no parent", b)
	}

	// Events from two agents with two payload types.
	ev := func(name string) *message.Address {
		return mustSpawn(t, team, actor.Func(func(c *actor.Context, msg any) (any, error) {
			if p, ok := msg.(*message.UserMessage); ok {
				if p.Content == "closed" {
					c.NotifyEvent(message.ClosedNotification{})
				} else {
					c.NotifyEvent(map[string]any{"k": p.Content})
				}
			}
			return nil, nil
		}), named(name))
	}
	a, b := ev("a"), ev("b")
	for _, to := range []*message.Address{a, b} {
		for _, s := range []string{"closed", "other"} {
			if _, err := sys.Ask(ctx, to, message.NewUserMessage(s)); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, _ := team.Events(ctx, orchestrator.EventFilter{})
	byA, _ := team.Events(ctx, orchestrator.EventFilter{Agent: a.AgentID()})
	closed, _ := team.Events(ctx, orchestrator.EventFilter{Payload: "ClosedNotification"})
	both, _ := team.Events(ctx, orchestrator.EventFilter{Agent: b.AgentID(), Payload: "ClosedNotification"})
	if len(all) != 4 || len(byA) != 2 || len(closed) != 2 || len(both) != 1 {
		t.Fatalf("events all=%d byA=%d closed=%d both=%d, want 4 2 2 1", len(all), len(byA), len(closed), len(both))
	}

	// Metadata: replace, not merge; nil clears; no StateChanged; survives churn.
	before, _ := team.States(ctx)
	_ = team.SetMetadata(ctx, map[string]any{"a": 1})
	_ = team.SetMetadata(ctx, []string{"b"})
	if m, _ := team.Metadata(ctx); len(m.([]string)) != 1 {
		t.Fatalf("metadata = %v, want [b]", m)
	}
	hired := mustSpawn(t, team, &echo{}, named("hired"))
	if err := sys.Stop(ctx, hired); err != nil {
		t.Fatal(err)
	}
	if m, _ := team.Metadata(ctx); m == nil {
		t.Fatal("metadata lost after hire and fire")
	}
	_ = team.SetMetadata(ctx, nil)
	if m, _ := team.Metadata(ctx); m != nil {
		t.Fatalf("metadata = %v after nil", m)
	}
	after, _ := team.States(ctx)
	if len(after) != len(before) {
		t.Fatal("metadata touched the states")
	}
	log, _ := team.Messages(ctx, orchestrator.Filter{Type: "TeamMetadataChanged"})
	if len(log) != 0 {
		t.Fatal("metadata changes are in the log")
	}
}

// recordSub is a RecordSubscriber: it notes every record's type and keeps
// the message of the SentMessage records only.
type recordSub struct {
	types []string
	sent  []message.Message
	panic bool
}

func (r *recordSub) OnMessage(message.Message) {}

func (r *recordSub) OnRecord(rec *orchestrator.Record) {
	r.types = append(r.types, rec.Type())
	if rec.Type() == "SentMessage" {
		r.sent = append(r.sent, rec.Message())
	}
	if r.panic {
		panic("record subscriber")
	}
}

// A RecordSubscriber sees every record, in order, as a
// view whose Type needs no message and whose Message is the message an
// OnMessage subscriber gets (the same id and type, made on its own
// goroutine); a panicking one is skipped like any other.
func TestRecordSubscriber(t *testing.T) {
	sys, team, logs := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	plain, rec, bad := newSub(), &recordSub{}, &recordSub{panic: true}
	for _, s := range []orchestrator.Subscriber{bad, plain, rec} {
		if err := team.Subscribe(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	relayOnce(t, sys, team)
	// The stop waits for every subscriber's goroutine: their fields are
	// read after the last record (a relay's turn may still be ending now).
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	got := plain.messages()
	if len(rec.types) != len(got) {
		t.Fatalf("record subscriber saw %d records, the message subscriber %d", len(rec.types), len(got))
	}
	var sent []message.Message
	for i, m := range got {
		if rec.types[i] != message.TypeName(m) {
			t.Fatalf("record %d: Type %q, message %s", i, rec.types[i], message.TypeName(m))
		}
		if _, ok := m.(*message.SentMessage); ok {
			sent = append(sent, m)
		}
	}
	if len(sent) == 0 || len(sent) != len(rec.sent) {
		t.Fatalf("sent: %d, record subscriber kept %d", len(sent), len(rec.sent))
	}
	for i := range sent {
		if sent[i].Envelope().ID != rec.sent[i].Envelope().ID || message.TypeName(rec.sent[i]) != "SentMessage" {
			t.Fatalf("SentMessage %d: the record subscriber got %s %s, the message subscriber %s", i,
				message.TypeName(rec.sent[i]), rec.sent[i].Envelope().ID, sent[i].Envelope().ID)
		}
	}
	if len(bad.types) != len(got) || logs.Count(slog.LevelError, "subscriber hook panicked") == 0 || !strings.Contains(logs.Text(), "OnRecord") {
		t.Fatalf("the panicking record subscriber saw %d records (want %d) or was not logged", len(bad.types), len(got))
	}
}

// relayOnce spawns a relay a and an echo b, tells a one message and waits
// for b's answer to come back through it: Sent, Received and Processed
// records from three actors.
func relayOnce(t *testing.T, sys *actor.System, team *orchestrator.Team) {
	t.Helper()
	b := mustSpawn(t, team, &echo{}, named("b"))
	r := &relay{target: b, results: make(chan string, 1)}
	a := mustSpawn(t, team, r, named("a"))
	if err := sys.Tell(a, message.NewUserMessage("x")); err != nil {
		t.Fatal(err)
	}
	<-r.results
}
