package akotel_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
)

// feed builds records of one team by hand, at times it chooses: the cases
// a live team produces only by chance.
type feed struct {
	team uuid.UUID
	t0   time.Time
}

func newFeed() *feed {
	return &feed{team: uuid.New(), t0: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
}

func (f *feed) member(name, role string) *message.Address {
	return message.NewSnapshotAddress(message.Identity{AgentID: uuid.New(), Name: name, Role: role, TeamID: f.team, Type: "Probe"})
}

// base is a record's envelope: from who, at ms milliseconds.
func (f *feed) base(who *message.Address, ms int) message.Base {
	return message.Base{ID: uuid.New(), TeamID: uuid.NullUUID{UUID: f.team, Valid: true},
		Timestamp: f.t0.Add(time.Duration(ms) * time.Millisecond), Sender: who}
}

// msg is a user message sent by from while it handles parent (nil: none).
func (f *feed) msg(from, to *message.Address, parent *message.UserMessage) *message.UserMessage {
	m := message.NewUserMessage("hello")
	m.ID, m.Sender, m.Recipient = uuid.New(), from, to
	m.TeamID = uuid.NullUUID{UUID: f.team, Valid: true}
	if parent != nil {
		m.ParentID = uuid.NullUUID{UUID: parent.ID, Valid: true}
	}
	return m
}

func (f *feed) sent(m *message.UserMessage, ms int) message.Message {
	return &message.SentMessage{Base: f.base(m.Sender, ms), Message: m, Recipient: m.Recipient}
}

func (f *feed) received(who *message.Address, m *message.UserMessage, ms int) message.Message {
	return &message.ReceivedMessage{Base: f.base(who, ms), MessageID: m.ID}
}

func (f *feed) processed(who *message.Address, m *message.UserMessage, ms int) message.Message {
	return &message.ProcessedMessage{Base: f.base(who, ms), MessageID: m.ID}
}

func (f *feed) failed(who *message.Address, m *message.UserMessage, ms int) message.Message {
	e := &message.ErrorMessage{}
	e.Base, e.ContentType, e.Content, e.CurrentMessage = f.base(who, ms), "error", "it broke", m
	return e
}

// The Error record of a turn that comes more than 1 s (record
// time) after its Processed record finds the turn's span ended by then (a
// later record of the team settled it): it shows as an "error" span under
// that turn, with the Error status; the turn kept its real end.
func TestLateErrorIsAChildSpan(t *testing.T) {
	tel := newTelemetry(t, false)
	f := newFeed()
	a, b := f.member("@A", "Worker"), f.member("@B", "Worker")
	m, other := f.msg(nil, a, nil), f.msg(nil, b, nil)
	for _, r := range []message.Message{
		f.received(a, m, 0), f.processed(a, m, 5),
		f.received(b, other, 1006), // 1.001 s after A's Processed: A's turn is settled
		f.failed(a, m, 1007),
	} {
		tel.sub.OnMessage(r)
	}
	spans := tel.ended()
	turn := named(spans, "turn @A")
	errs := named(spans, "error")
	if len(turn) != 1 || len(errs) != 1 {
		t.Fatalf("spans:\n%s", tree(spans))
	}
	if got := turn[0].EndTime().Sub(turn[0].StartTime()); got != 5*time.Millisecond {
		t.Errorf("turn lasted %v, want its 5 ms", got)
	}
	if errs[0].Parent().SpanID() != turn[0].SpanContext().SpanID() || errs[0].Status().Code != codes.Error {
		t.Errorf("late error span: parent %v status %v", errs[0].Parent(), errs[0].Status())
	}
	if n, _ := sum(tel.metrics(t), "akgentic.errors"); n != 1 {
		t.Errorf("errors %v, want 1", n)
	}
}

// A turn's span waits for the actor's next record after its
// Processed one, which may be that turn's Error; a message consumed by a
// running turn (Handled) is an event of it, linked to its sender's turn.
func TestTurnEndsOnNextRecord(t *testing.T) {
	tel := newTelemetry(t, false)
	f := newFeed()
	a, b := f.member("@A", "Worker"), f.member("@B", "Worker")
	first := f.msg(nil, a, nil)
	toB := f.msg(a, b, first)    // sent by A's turn on first
	queued := f.msg(a, b, first) // consumed by B's turn on toB
	for _, r := range []message.Message{
		f.received(a, first, 0), f.sent(toB, 1), f.sent(queued, 1), f.processed(a, first, 2),
		f.received(b, toB, 2),
		&message.HandledMessage{Base: f.base(b, 3), MessageID: queued.ID},
		f.processed(b, toB, 3),
	} {
		tel.sub.OnMessage(r)
	}
	if n := len(tel.ended()); n != 0 {
		t.Fatalf("%d spans ended before the next record:\n%s", n, tree(tel.ended()))
	}
	tel.sub.OnMessage(f.failed(b, toB, 3)) // B's next record: the failure of its turn
	spans := tel.ended()
	bt := named(spans, "turn @B")
	if len(bt) != 1 || bt[0].Status().Code != codes.Error {
		t.Fatalf("B's turn: %v", bt)
	}
	tel.sub.OnStop(f.team) // ends A's turn, still waiting
	spans = tel.ended()
	at := named(spans, "turn @A")
	if len(at) != 1 || at[0].Status().Code != codes.Unset || at[0].EndTime() != f.t0.Add(2*time.Millisecond) {
		t.Fatalf("A's turn: %v", at)
	}
	if bt[0].Parent().SpanID() != at[0].SpanContext().SpanID() {
		t.Error("B's turn is not a child of the turn that sent its message")
	}
	if ev := bt[0].Events(); len(ev) < 1 || ev[0].Name != "akgentic.message.handled" {
		t.Errorf("B's events %v, want akgentic.message.handled first", ev)
	}
	if l := bt[0].Links(); len(l) != 1 || l[0].SpanContext.SpanID() != at[0].SpanContext().SpanID() {
		t.Errorf("B's links %v, want A's turn", l)
	}
}

// A member that stops mid-turn, or a team that stops with a turn
// open, ends its span with an Error status; the team's bookkeeping and its
// live-members series go with it.
func TestUnfinishedTurns(t *testing.T) {
	tel := newTelemetry(t, false)
	f := newFeed()
	a, b := f.member("@A", "Worker"), f.member("@B", "Worker")
	ma, mb := f.msg(nil, a, nil), f.msg(nil, b, nil)
	for _, r := range []message.Message{
		&message.StartMessage{Base: f.base(a, 0)}, &message.StartMessage{Base: f.base(b, 0)},
		f.received(a, ma, 1), f.received(b, mb, 1),
		&message.StopMessage{Base: f.base(a, 4)},
		&message.StopMessage{Base: f.base(f.member("@Early", "Worker"), 4)}, // started before the subscriber came
	} {
		tel.sub.OnMessage(r)
	}
	team := attribute.String("akgentic.team.id", f.team.String())
	if n, _ := sum(tel.metrics(t), "akgentic.team.members", team); n != 1 {
		t.Errorf("live members %v, want 1", n)
	}
	tel.sub.OnStop(f.team)
	spans := tel.ended()
	if len(spans) != 2 {
		t.Fatalf("spans:\n%s", tree(spans))
	}
	for _, s := range spans {
		if s.Status().Code != codes.Error {
			t.Errorf("%s: status %v, want Error (unfinished)", s.Name(), s.Status())
		}
	}
	if _, found := sum(tel.metrics(t), "akgentic.team.members"); found {
		t.Error("a stopped team still reports live members")
	}
}

// One subscriber serves several teams at once (its hooks run on
// each team's goroutine): live members per team, a team's series gone at
// its stop, the last stop unregistering the callback.
func TestTeamsShareASubscriber(t *testing.T) {
	tel := newTelemetry(t, false)
	feeds := []*feed{newFeed(), newFeed()}
	done := make(chan struct{})
	for i, f := range feeds {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range i + 2 { // 2 members in the first team, 3 in the second
				a := f.member(fmt.Sprintf("@M%d", j), "Worker")
				m := f.msg(nil, a, nil)
				for _, r := range []message.Message{&message.StartMessage{Base: f.base(a, 0)},
					f.received(a, m, 1), f.processed(a, m, 2)} {
					tel.sub.OnMessage(r)
				}
			}
		}()
	}
	<-done
	<-done
	live := func(f *feed) float64 {
		n, _ := sum(tel.metrics(t), "akgentic.team.members", attribute.String("akgentic.team.id", f.team.String()))
		return n
	}
	if a, b := live(feeds[0]), live(feeds[1]); a != 2 || b != 3 {
		t.Fatalf("live members %v and %v, want 2 and 3", a, b)
	}
	tel.sub.OnStop(feeds[0].team)
	if a, b := live(feeds[0]), live(feeds[1]); a != 0 || b != 3 {
		t.Fatalf("after the first team's stop: live members %v and %v, want none and 3", a, b)
	}
	tel.sub.OnStop(feeds[1].team)
	if _, found := sum(tel.metrics(t), "akgentic.team.members"); found {
		t.Fatal("live members reported after every team stopped")
	}
	if n := len(tel.ended()); n != 5 {
		t.Fatalf("%d turn spans, want 5", n)
	}
	tel.sub.SetRestoring(feeds[0].team, true) // a team seen again registers the callback again
	tel.sub.SetRestoring(feeds[0].team, false)
	if n, found := sum(tel.metrics(t), "akgentic.team.members"); !found || n != 0 {
		t.Fatalf("a team seen again: live members %v (found %v), want 0", n, found)
	}
}

// An actor of another kind than BaseAgent whose turn calls a model is an
// agent too: its turn's span becomes an invoke_agent span, with the
// agent's attributes and the provider of the call.
func TestTurnCallingAModelIsAnAgentInvocation(t *testing.T) {
	tel := newTelemetry(t, false)
	f := newFeed()
	a := f.member("@A", "Worker")
	m := f.msg(nil, a, nil)
	usage := &message.EventMessage{Base: f.base(a, 2), Event: llm.UsageEvent{
		ModelName: "gpt-4.1", RequestModel: "gpt-4.1", ProviderName: "azure.ai.openai", InputTokens: 10, OutputTokens: 1, Requests: 1}}
	for _, r := range []message.Message{f.received(a, m, 0), usage, f.processed(a, m, 3)} {
		tel.sub.OnMessage(r)
	}
	tel.sub.OnStop(a.TeamID())
	spans := tel.ended()
	turns := named(spans, "invoke_agent @A")
	if len(turns) != 1 || len(named(spans, "chat gpt-4.1")) != 1 {
		t.Fatalf("spans:\n%s", tree(spans))
	}
	for _, want := range []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName("@A"),
		semconv.GenAIAgentID(a.AgentID().String()), semconv.GenAIConversationID(a.TeamID().String()),
		semconv.GenAIProviderNameKey.String("azure.ai.openai")} {
		if got := attr(turns[0], string(want.Key)); got != want.Value {
			t.Errorf("%s = %v, want %v", want.Key, got.Emit(), want.Value.Emit())
		}
	}
}
