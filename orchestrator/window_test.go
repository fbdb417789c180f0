package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// The in-memory window: a team's ledger keeps a bounded number
// of records by default, the indexes keep what queries need, and history
// older than the window comes from an Archive or is reported missing.

// tellMany tells e n user messages and waits until it handled them all.
func tellMany(t *testing.T, sys *actor.System, e *message.Address, n int) {
	t.Helper()
	for range n {
		if err := sys.Tell(e, message.NewUserMessage("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sys.Ask(actortest.Context(t), e, message.NewUserMessage("last")); err != nil {
		t.Fatal(err)
	}
}

// The default window bounds the ledger without any option: a team that
// handled more messages than the window holds keeps about the window.
func TestDefaultWindowIsBounded(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	e := mustSpawn(t, team, &echo{}, named("e"))
	n := orchestrator.DefaultRetention/2 + 1000 // Received + Processed each
	tellMany(t, sys, e, n)
	kept, released, err := orchestrator.Retained(ctx, team)
	if err != nil {
		t.Fatal(err)
	}
	if released == 0 || kept > orchestrator.DefaultRetention+512 {
		t.Fatalf("after %d messages the ledger keeps %d records and released %d; want at most about %d kept",
			n, kept, released, orchestrator.DefaultRetention)
	}
}

// emitter publishes one event per message it handles.
type emitter struct{ actor.Base }

type tick struct{ N int }

func (*emitter) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		c.NotifyEvent(tick{N: len(m.Content)})
	}
	return nil, nil
}

// Events are an index, not part of the window: every one of them is
// still there, by agent, long after its records left the window.
func TestEventsOutliveTheWindow(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithRetention(50))
	ctx := actortest.Context(t)
	ev := mustSpawn(t, team, &emitter{}, named("ev"))
	other := mustSpawn(t, team, &echo{}, named("other"))
	tellMany(t, sys, ev, 300)
	tellMany(t, sys, other, 300)
	evs, err := team.Events(ctx, orchestrator.EventFilter{Agent: ev.AgentID()})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 301 {
		t.Fatalf("agent's events after the window moved: %d, want 301", len(evs))
	}
	for i := 1; i < len(evs); i++ {
		if !evs[i].Sender.Equal(ev) || evs[i].Timestamp.Before(evs[i-1].Timestamp) {
			t.Fatalf("event %d: sender %v, out of order", i, evs[i].Sender)
		}
	}
	again, _ := team.Events(ctx, orchestrator.EventFilter{Agent: ev.AgentID()})
	if again[0].ID != evs[0].ID {
		t.Fatal("an event materialized twice has two ids")
	}
	if all, _ := team.Events(ctx, orchestrator.EventFilter{}); len(all) != 301 {
		t.Fatalf("all events: %d, want 301", len(all))
	}
	_ = team.Stop(ctx)
	if after, _ := team.Events(ctx, orchestrator.EventFilter{Agent: ev.AgentID()}); len(after) != 301 {
		t.Fatalf("events after the stop: %d, want 301", len(after))
	}
}

// archive is an Archive kept in memory: what a durable log would write.
type archive struct {
	mu   sync.Mutex
	msgs []message.Message
}

func (a *archive) OnMessage(m message.Message) {
	a.mu.Lock()
	a.msgs = append(a.msgs, m)
	a.mu.Unlock()
}

func (a *archive) ReadHistory(context.Context) ([]message.Message, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.msgs), nil
}

// With an Archive attached from the start, Messages past the window reads
// the whole log from it, filtered like the in-memory one.
func TestMessagesOutsideTheWindowFromArchive(t *testing.T) {
	arch := &archive{}
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithRetention(40), orchestrator.WithSubscribers(arch))
	ctx := actortest.Context(t)
	e := mustSpawn(t, team, &echo{}, named("e"))
	tellMany(t, sys, e, 200)
	all, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// Start of the orchestrator and of e, then per message Received, the
	// echo's reply (Sent) and Processed.
	if want := 2 + 3*201; len(all) != want {
		t.Fatalf("Messages outside the window: %d, want %d", len(all), want)
	}
	if _, ok := all[0].(*message.StartMessage); !ok {
		t.Fatalf("first message %s, want the orchestrator's StartMessage", message.TypeName(all[0]))
	}
	received, err := team.Messages(ctx, orchestrator.Filter{Type: "ReceivedMessage"})
	if err != nil || len(received) != 201 {
		t.Fatalf("filtered: %d, %v; want 201", len(received), err)
	}
	_ = team.Stop(ctx)
	if _, err := team.Messages(ctx, orchestrator.Filter{}); err != nil {
		t.Fatalf("after the stop: %v", err)
	}
}

type failingArchive struct{ archive }

func (*failingArchive) ReadHistory(context.Context) ([]message.Message, error) {
	return nil, errors.New("disk gone")
}

// An archive that cannot be read is an error naming it, not a silent
// window.
func TestMessagesArchiveError(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithRetention(20), orchestrator.WithSubscribers(&failingArchive{}))
	e := mustSpawn(t, team, &echo{}, named("e"))
	tellMany(t, sys, e, 100)
	// The window keeps what a lossless subscriber has not been given yet:
	// once it has, the next query's drain releases the older records.
	if err := team.Sync(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	msgs, err := team.Messages(actortest.Context(t), orchestrator.Filter{})
	if !errors.Is(err, orchestrator.ErrOutsideWindow) || len(msgs) == 0 {
		t.Fatalf("Messages with a failing archive: %d messages, err %v; want the window and ErrOutsideWindow", len(msgs), err)
	}
	if !strings.Contains(err.Error(), "disk gone") || !strings.Contains(err.Error(), "failingArchive") {
		t.Fatalf("error %q does not name the archive and its failure", err)
	}
}

// gateSub blocks in OnMessage until its gate opens, then counts.
type gateSub struct {
	gate chan struct{}
	n    int
}

func (g *gateSub) OnMessage(message.Message) {
	<-g.gate
	g.n++
}

// No drop, bounded memory: a subscriber that stops consuming makes members
// wait once MaxBacklog records are pending, instead of the ledger growing;
// once it resumes, it sees every record. (The loop below polls the
// ledger's state until a member waits: that is the state under test.)
func TestSlowSubscriberBackpressure(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sink := mustSpawn(t, team, actor.Func(func(*actor.Context, any) (any, error) { return nil, nil }), named("sink"))
	src := mustSpawn(t, team, actor.Func(func(*actor.Context, any) (any, error) { return nil, nil }), named("src"))
	g := &gateSub{gate: make(chan struct{})}
	if err := team.Subscribe(ctx, g); err != nil {
		t.Fatal(err)
	}
	var open sync.Once
	release := func() { open.Do(func() { close(g.gate) }) }
	t.Cleanup(release) // a failed test must still let the team stop
	// The sender's Sent records alone are twice the backlog: it must wait
	// whatever the receiver does.
	n := 2 * orchestrator.MaxBacklog
	done := sendMany(ctx, src, sink, n)
	awaitBackpressure(ctx, t, team, done)
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Ask(ctx, sink, message.NewUserMessage("barrier")); err != nil {
		t.Fatal(err)
	}
	_ = team.Sync(ctx)
	// Every record of the n messages reached the subscriber: Sent,
	// Received, Processed each, plus the barrier's Received and Processed.
	if want := 3*n + 2; g.n < want {
		t.Fatalf("subscriber saw %d records, want at least %d", g.n, want)
	}
}

// Every subscriber receives its own copy of a record's message, made on
// its own goroutine: the same id, type and sender for all, and the copies
// of the members' records are distinct values (no subscriber's goroutine
// reads another's).
func TestSubscribersGetTheirOwnCopy(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	first, second := &archive{}, &archive{}
	_ = team.Subscribe(ctx, first)
	_ = team.Subscribe(ctx, second)
	e := mustSpawn(t, team, &echo{}, named("e"))
	tellMany(t, sys, e, 3)
	_ = team.Sync(ctx)
	a, _ := first.ReadHistory(ctx)
	b, _ := second.ReadHistory(ctx)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("subscribers saw %d and %d messages", len(a), len(b))
	}
	distinct := 0
	for i := range a {
		if a[i].Envelope().ID != b[i].Envelope().ID || message.TypeName(a[i]) != message.TypeName(b[i]) ||
			!a[i].Envelope().Sender.Equal(b[i].Envelope().Sender) {
			t.Fatalf("message %d: %s %s and %s %s", i, message.TypeName(a[i]), a[i].Envelope().ID, message.TypeName(b[i]), b[i].Envelope().ID)
		}
		if a[i] != b[i] {
			distinct++
		}
	}
	if distinct == 0 {
		t.Fatal("the subscribers share their messages: want a copy each")
	}
}

// The roster-and-catalog version an agent caches its roster and
// roles sections by moves with every join, leave and card registration,
// and with nothing else; a stopped team has none.
func TestRosterVersion(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	v0, ok := orchestrator.Version(orchestrator.Of(team.Address()))
	if !ok {
		t.Fatal("a running team has no version")
	}
	e := mustSpawn(t, team, &echo{}, named("e"))
	v1, _ := orchestrator.Version(team)
	if v1 == v0 {
		t.Fatal("a member joined and the version did not move")
	}
	tellMany(t, sys, e, 10)
	if v, _ := orchestrator.Version(team); v != v1 {
		t.Fatal("plain messages moved the version")
	}
	card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: "UserProxy", Description: "d", Config: &actor.Config{Role: "Clerk"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := team.Register(ctx, card); err != nil {
		t.Fatal(err)
	}
	v2, _ := orchestrator.Version(team)
	if v2 == v1 {
		t.Fatal("a card was registered and the version did not move")
	}
	if err := sys.Stop(ctx, e); err != nil {
		t.Fatal(err)
	}
	if v, _ := orchestrator.Version(team); v == v2 {
		t.Fatal("a member left and the version did not move")
	}
	_ = team.Stop(ctx)
	if _, ok := orchestrator.Version(team); ok {
		t.Fatal("a stopped team still has a version")
	}
}

// An Archive subscribed after the team began has missed its first records:
// it is not used, and the answer says what is missing instead of giving a
// silently partial history.
func TestLateArchiveIsNotUsed(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithRetention(40))
	ctx := actortest.Context(t)
	e := mustSpawn(t, team, &echo{}, named("e"))
	tellMany(t, sys, e, 100)
	late := &archive{}
	_ = team.Subscribe(ctx, late)
	tellMany(t, sys, e, 100)
	msgs, err := team.Messages(ctx, orchestrator.Filter{})
	if !errors.Is(err, orchestrator.ErrOutsideWindow) {
		t.Fatalf("a late archive: %d messages, err %v; want ErrOutsideWindow", len(msgs), err)
	}
}

// The history read from an Archive past the window is the history a team
// keeping everything in memory answers: same messages, same order, with
// metadata changes (subscriber-only) left out and the members' Stop
// records of the team's stop (recorded, not fanned out) in.
func TestArchiveHistoryMatchesMemory(t *testing.T) {
	run := func(opts ...orchestrator.Option) []string {
		sys, team, _ := actortest.NewTeam(t, opts...)
		ctx := actortest.Context(t)
		e := mustSpawn(t, team, &echo{}, named("e"))
		tellMany(t, sys, e, 60)
		if err := team.SetMetadata(ctx, map[string]any{"k": "v"}); err != nil {
			t.Fatal(err)
		}
		tellMany(t, sys, e, 60)
		if err := team.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		msgs, err := team.Messages(ctx, orchestrator.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, m := range msgs {
			kinds = append(kinds, message.TypeName(m)+" "+m.Envelope().Sender.Name())
		}
		return kinds
	}
	whole := run(orchestrator.WithRetention(math.MaxInt))
	windowed := run(orchestrator.WithRetention(30), orchestrator.WithSubscribers(&archive{}))
	if !slices.Equal(whole, windowed) {
		t.Fatalf("history from the archive differs from memory:\nmemory  %v\narchive %v", whole, windowed)
	}
	if !slices.Contains(whole, "StopMessage e") {
		t.Fatal("the member's Stop record is not in the history")
	}
}

// A subscriber hook that never returns (against its contract) does not
// freeze the members for good: after the stall timeout they go on past
// the bound, the stall is logged once, and once the hook returns every
// record still reaches the subscriber.
func TestStalledSubscriberDoesNotFreezeMembers(t *testing.T) {
	defer orchestrator.SetStallTimeout(20 * time.Millisecond)()
	sys, team, logs := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sink := mustSpawn(t, team, actor.Func(func(*actor.Context, any) (any, error) { return nil, nil }), named("sink"))
	src := mustSpawn(t, team, actor.Func(func(*actor.Context, any) (any, error) { return nil, nil }), named("src"))
	g := &gateSub{gate: make(chan struct{})}
	var open sync.Once
	release := func() { open.Do(func() { close(g.gate) }) }
	t.Cleanup(release)
	if err := team.Subscribe(ctx, g); err != nil {
		t.Fatal(err)
	}
	n := 2 * orchestrator.MaxBacklog
	err := proxy.Do(ctx, src, func(c *actor.Context, _ actor.Actor) error {
		for range n {
			if err := c.Send(sink, message.NewUserMessage("x")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil { // returned with the subscriber still stuck
		t.Fatal(err)
	}
	if logs.Count(slog.LevelWarn, "backlog has been full") == 0 { // once per stall
		t.Fatalf("the stall was not logged:\n%s", logs.Text())
	}
	release()
	if _, err := sys.Ask(ctx, sink, message.NewUserMessage("barrier")); err != nil { // after the n tells
		t.Fatal(err)
	}
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if g.n < 3*n { // Sent, Received and Processed of each
		t.Fatalf("subscriber saw %d records after the stall, want at least %d", g.n, 3*n)
	}
}

// A restored team has its roster-and-catalog version too (agents cache by
// it), under the orchestrator's recorded id.
func TestRosterVersionAfterRestore(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	mustSpawn(t, team, &echo{}, named("e"))
	log, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	restored, err := orchestrator.Restore(ctx, sys, log)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Address().AgentID() != team.Address().AgentID() {
		t.Fatal("the restored orchestrator has a new id")
	}
	if _, ok := orchestrator.Version(orchestrator.Of(restored.Address())); !ok {
		t.Fatal("a restored team has no version")
	}
	_ = restored.Stop(ctx)
}

// Messages leaves the state changes out, unless the
// filter asks for them; then each comes with its parent, the message whose
// turn changed the state.
func TestStateChangesWithTheirParents(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	nb := mustSpawn(t, team, &Notebook{}, named("nb"))
	var sent []*message.UserMessage
	for _, text := range []string{"one", "two"} {
		m := message.NewUserMessage(text)
		sent = append(sent, m)
		if _, err := sys.Ask(ctx, nb, m); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := team.Messages(ctx, orchestrator.Filter{})
	if n := len(orchestrator.Select[*message.StateChangedMessage](all)); n != 0 {
		t.Fatalf("the zero filter returned %d state changes", n)
	}
	got, err := team.Messages(ctx, orchestrator.Filter{Type: "StateChangedMessage", Sender: nb.AgentID()})
	if err != nil {
		t.Fatal(err)
	}
	changes := orchestrator.Select[*message.StateChangedMessage](got)
	if len(changes) < len(sent) {
		t.Fatalf("%d state changes, want at least %d", len(changes), len(sent))
	}
	last := changes[len(changes)-len(sent):]
	for i, sc := range last {
		if !sc.ParentID.Valid || sc.ParentID.UUID != sent[i].ID {
			t.Fatalf("state change %d: parent %v, want the message %q (%s)", i, sc.ParentID, sent[i].Content, sent[i].ID)
		}
	}
}

// Filter.States lists the state changes among the other records, each in
// its place in the log: the order the subscribers got them in, the state
// change after the Received record of the message whose turn changed it
// and before the next message's. So from the in-memory window, from the
// Archive once the window is passed, and in a team restored from that log
// (its own new records first, then the log replayed in its order).
func TestStatesInTheirPlaces(t *testing.T) {
	for _, retention := range []int{0, 20} {
		t.Run(fmt.Sprintf("retention=%d", retention), func(t *testing.T) {
			arch := &archive{}
			opts := []orchestrator.Option{orchestrator.WithSubscribers(arch)}
			if retention > 0 {
				opts = append(opts, orchestrator.WithRetention(retention))
			}
			sys, team, _ := actortest.NewTeam(t, opts...)
			ctx := actortest.Context(t)
			nb := mustSpawn(t, team, &Notebook{}, named("nb"))
			var sent []*message.UserMessage
			for i := range 10 {
				m := message.NewUserMessage(fmt.Sprintf("note %d", i))
				sent = append(sent, m)
				if _, err := sys.Ask(ctx, nb, m); err != nil {
					t.Fatal(err)
				}
			}
			all, err := team.Messages(ctx, orchestrator.Filter{States: true})
			if err != nil {
				t.Fatal(err)
			}
			plain, err := team.Messages(ctx, orchestrator.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			changes := orchestrator.Select[*message.StateChangedMessage](all)
			if len(all)-len(changes) != len(plain) || len(changes) < len(sent) {
				t.Fatalf("%d records with the states, %d state changes, %d without", len(all), len(changes), len(plain))
			}
			got := make([]uuid.UUID, len(all))
			for i, m := range all {
				got[i] = m.Envelope().ID
			}
			if err := team.Sync(ctx); err != nil { // the subscriber has had every record
				t.Fatal(err)
			}
			arch.mu.Lock()
			var want []uuid.UUID // what the subscriber got, in its order
			for _, m := range arch.msgs {
				switch m.(type) {
				case *orchestrator.MetadataChanged, *orchestrator.CatalogChanged:
				default:
					want = append(want, m.Envelope().ID)
				}
			}
			arch.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Fatalf("the log with its states is not in the subscriber's order:\n got %v\nwant %v", got, want)
			}
			received := func(m *message.UserMessage) int {
				return slices.IndexFunc(all, func(r message.Message) bool {
					x, ok := r.(*message.ReceivedMessage)
					return ok && x.MessageID == m.ID
				})
			}
			for i, m := range sent {
				changed := slices.IndexFunc(all, func(r message.Message) bool {
					x, ok := r.(*message.StateChangedMessage)
					return ok && x.ParentID.UUID == m.ID
				})
				next := len(all)
				if i+1 < len(sent) {
					next = received(sent[i+1])
				}
				if at := received(m); !(at >= 0 && at < changed && changed < next) {
					t.Errorf("%q: received at %d, its state change at %d, the next message received at %d", m.Content, at, changed, next)
				}
			}
			if retention > 0 {
				return
			}
			if err := team.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			restored, err := orchestrator.Restore(ctx, sys, all)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = restored.Stop(ctx) }()
			again, err := restored.Messages(ctx, orchestrator.Filter{States: true})
			if err != nil {
				t.Fatal(err)
			}
			i := 0 // the log's records, in order, among the restored team's
			for _, m := range again {
				if i < len(got) && m.Envelope().ID == got[i] {
					i++
				}
			}
			if i < len(got) {
				t.Errorf("the restored team's log with its states has the log's records in order up to %d of %d", i, len(got))
			}
			if n := len(orchestrator.Select[*message.StateChangedMessage](again)); n < len(changes) {
				t.Errorf("the restored team's log has %d state changes; the log it was restored from %d", n, len(changes))
			}
		})
	}
}
