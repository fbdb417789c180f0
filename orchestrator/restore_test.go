package orchestrator_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
	"github.com/akgentic/akgentic-go/proxy"
)

type tallyConfig struct {
	actor.Config
	Step int `json:"step"`
}

type tallyState struct {
	Total int      `json:"total"`
	Seen  []string `json:"seen"`
}

// tally adds its step to its state for every UserMessage and answers the
// new total; it restores its state when recreated by a restore.
type tally struct {
	actor.Agent[tallyConfig, tallyState]
	restored bool
}

func init() { actor.RegisterKind("orchestrator_test.tally", func() actor.Actor { return &tally{} }) }

func (w *tally) OnStart(c *actor.Context) error {
	st := &tallyState{}
	if c.Restoring() {
		s, ok, err := orchestrator.RestoredState[tallyState](context.Background(), c)
		if err != nil {
			return err
		}
		if ok {
			st, w.restored = s, true
		}
	}
	if err := w.InitState(st); err != nil {
		return err
	}
	return w.ObserveState()
}

func (w *tally) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		w.State().Total += w.Config().Step
		w.State().Seen = append(w.State().Seen, m.Content)
		return w.State().Total, nil
	}
	return nil, nil
}

// roundTrip encodes and decodes each message, as a durable log does.

// A team is recreated from its log with the same ids,
// configs and states, and goes on working.
func TestRestoreRecreatesTheTeam(t *testing.T) {
	ctx := actortest.Context(t)
	sys1, team1, _ := actortest.NewTeam(t)
	rec := newSub()
	_ = team1.Subscribe(ctx, rec)
	a := mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 2})
	b := mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "b", Role: "Tally"}, Step: 5})
	gone := mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "gone", Role: "Tally"}, Step: 1})
	child, err := proxy.Ask(ctx, a, func(c *actor.Context, _ actor.Actor) (*message.Address, error) {
		return c.Spawn(&tally{}, &tallyConfig{Config: actor.Config{Name: "a.child", Role: "Tally"}, Step: 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"x", "y"} {
		if _, err := sys1.Ask(ctx, a, message.NewUserMessage(s)); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = sys1.Ask(ctx, b, message.NewUserMessage("z"))
	_ = sys1.Stop(ctx, gone)
	_ = team1.SetMetadata(ctx, map[string]any{"project": "demo"})
	if _, err := team1.Members(ctx); err != nil { // barrier
		t.Fatal(err)
	}
	saved := actortest.Reloaded(t, rec.messages())

	sys2 := newSystem(t)
	watch := newSub()
	team2, err := orchestrator.Restore(ctx, sys2, saved, orchestrator.WithSubscribers(watch))
	if err != nil {
		t.Fatal(err)
	}
	if team2.ID() != team1.ID() || team2.Address().AgentID() != team1.Address().AgentID() {
		t.Fatalf("restored team %s / orchestrator %s, want %s / %s", team2.ID(), team2.Address().AgentID(), team1.ID(), team1.Address().AgentID())
	}
	members, _ := team2.Members(ctx)
	var names []string
	for _, m := range members {
		names = append(names, m.Name())
		if !m.IsAlive() || m.TeamID() != team1.ID() {
			t.Fatalf("member %v: want a live actor of the restored team", m)
		}
	}
	slices.Sort(names)
	if fmt.Sprint(names) != "[a a.child b]" {
		t.Fatalf("restored members %v, want [a a.child b]", names)
	}
	ra := sys2.Get(a.AgentID())
	if ra == nil {
		t.Fatal("a not recreated with its agent id")
	}
	rc := sys2.Get(child.AgentID())
	if rc == nil {
		t.Fatal("a's child not recreated with its agent id")
	}
	// a's child was recreated under a.
	kids, _ := proxy.Ask(ctx, ra, func(c *actor.Context, _ actor.Actor) ([]*message.Address, error) { return c.Children(), nil })
	if len(kids) != 1 || !kids[0].Equal(rc) {
		t.Fatalf("a's children after restore: %v", kids)
	}
	// Config, state and work go on: a had total 4 (2+2); one more makes 6.
	total, err := sys2.Ask(ctx, ra, message.NewUserMessage("w"))
	if err != nil || total != 6 {
		t.Fatalf("restored a answered %v, %v; want 6", total, err)
	}
	if meta, _ := team2.Metadata(ctx); fmt.Sprint(meta) != "map[project:demo]" {
		t.Fatalf("metadata %v", meta)
	}
	// SetRestoring brackets the replay; the replay reaches the subscriber.
	ev := watch.all()
	first, last := -1, -1
	for i, e := range ev {
		if e.hook == "restoring" {
			if e.on {
				first = i
			} else {
				last = i
			}
		}
	}
	if first < 0 || last < first || last-first-1 < len(saved)-1 {
		t.Fatalf("restoring bracket %d..%d around %d replayed messages", first, last, len(saved))
	}
}

// A replay skips the TeamStoppingEvent only; the roster is the
// same as for the log without it. Team.Replay is gone (Restore replays):
// the test replays through an export_test.go hook.
func TestReplay(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	teamID := team.ID()
	addr := func(name string) *message.Address {
		return message.NewSnapshotAddress(message.Identity{AgentID: uuid.New(), Name: name, Role: name, TeamID: teamID})
	}
	k, w := addr("k"), addr("w")
	env := func(m message.Message, from *message.Address) message.Message {
		b := m.Envelope()
		b.ID, b.Sender = uuid.New(), from
		b.TeamID = uuid.NullUUID{UUID: teamID, Valid: true}
		return m
	}
	user := env(message.NewUserMessage("hello"), k)
	log := []message.Message{
		env(&message.StartMessage{}, k),
		env(&message.StartMessage{}, w),
		env(&message.StopMessage{}, w),
		env(&message.SentMessage{Message: user, Recipient: w}, k),
		env(&message.ReceivedMessage{MessageID: user.Envelope().ID}, w),
		env(&message.ProcessedMessage{MessageID: user.Envelope().ID}, w),
		env(&message.EventMessage{Event: message.ClosedNotification{}}, k),
		env(&message.EventMessage{Event: message.TeamStoppingEvent{}}, team.Address()),
	}
	if err := orchestrator.Replay(ctx, team, log); err != nil {
		t.Fatal(err)
	}
	got := sub.messages()
	if len(got) != len(log)-1 {
		t.Fatalf("subscriber got %v, want the log but the announcement", typeNames(got))
	}
	for i := range got {
		if got[i].Envelope().ID != log[i].Envelope().ID {
			t.Fatalf("replayed message %d re-stamped", i)
		}
	}
	if ev, _ := team.Events(ctx, orchestrator.EventFilter{Payload: "TeamStoppingEvent"}); len(ev) != 0 {
		t.Fatal("TeamStoppingEvent replayed")
	}
	if ev, _ := team.Events(ctx, orchestrator.EventFilter{Payload: "ClosedNotification"}); len(ev) != 1 {
		t.Fatal("ClosedNotification not replayed")
	}
	members, _ := team.Members(ctx)
	if len(members) != 1 || members[0].AgentID() != k.AgentID() {
		t.Fatalf("roster %v, want {k}", members)
	}
	// Replay k's stop, and the roster is empty.
	if err := orchestrator.Replay(ctx, team, []message.Message{env(&message.StopMessage{}, k)}); err != nil {
		t.Fatal(err)
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if members, _ := team.Members(ctx); len(members) != 0 {
		t.Fatalf("roster after k's replayed stop: %v", members)
	}
}

// A phantom member (a replayed Start with no actor behind it) stays in the
// roster but can no longer hold the team's stop for the grace: the stop
// waits for the running members, not the roster.
func TestPhantomDoesNotHoldTheStop(t *testing.T) {
	_, team, _ := actortest.NewTeam(t, orchestrator.WithStopGrace(time.Hour))
	ctx := actortest.Context(t)
	phantom := message.NewSnapshotAddress(message.Identity{AgentID: uuid.New(), Name: "phantom", Role: "phantom", TeamID: team.ID()})
	start := &message.StartMessage{Base: message.Base{ID: uuid.New(), Sender: phantom, TeamID: uuid.NullUUID{UUID: team.ID(), Valid: true}}}
	if err := orchestrator.Replay(ctx, team, []message.Message{start}); err != nil {
		t.Fatal(err)
	}
	if m, _ := team.Member(ctx, "phantom"); m == nil {
		t.Fatal("the replayed Start did not join the roster")
	}
	if err := team.Stop(ctx); err != nil { // ctx ends long before the hour
		t.Fatalf("the team's stop waited for a phantom: %v", err)
	}
}

// A log whose actors cannot be recreated still gives a team, with an
// error naming each of them.
func TestRestoreUnknownKind(t *testing.T) {
	ctx := actortest.Context(t)
	_, team1, _ := actortest.NewTeam(t)
	rec := newSub()
	_ = team1.Subscribe(ctx, rec)
	mustSpawn(t, team1, &echo{}, named("unregistered"))
	_, _ = team1.Members(ctx)
	sys2 := newSystem(t)
	team2, err := orchestrator.Restore(ctx, sys2, actortest.Reloaded(t, rec.messages()))
	if team2 == nil || err == nil || !strings.Contains(err.Error(), "unregistered") || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("Restore = %v, %v; want a team and an error naming the actor and its kind", team2, err)
	}
	if _, err := orchestrator.Restore(ctx, sys2, nil); err == nil {
		t.Fatal("Restore of an empty log succeeded")
	}
}

// A team stopped cleanly resumes with the members it had when its stop
// began (the teardown's StopMessages do not count).
func TestRestoreAfterCleanStop(t *testing.T) {
	ctx := actortest.Context(t)
	rec := newSub()
	_, team1, _ := actortest.NewTeam(t, orchestrator.WithSubscribers(rec))
	mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 1})
	gone := mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "gone", Role: "Tally"}, Step: 1})
	if err := stopAddr(ctx, gone); err != nil { // one member leaves before the team stops
		t.Fatal(err)
	}
	<-actor.Done(gone)
	if err := team1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	sys2 := newSystem(t)
	team2, err := orchestrator.Restore(ctx, sys2, actortest.Reloaded(t, rec.messages()))
	if err != nil {
		t.Fatal(err)
	}
	members, _ := team2.Members(ctx)
	if len(members) != 1 || members[0].Name() != "a" || !members[0].IsAlive() {
		t.Fatalf("members after restoring a stopped team: %v", members)
	}
}

// stopAddr asks the actor at a to stop itself (Context.Stop) and returns
// at once.
func stopAddr(ctx context.Context, a *message.Address) error {
	return proxy.Do(ctx, a, func(c *actor.Context, _ actor.Actor) error { c.Stop(); return nil })
}

// A log restored once (after a clean stop) and then crashed restores with
// the second session's members, live, and no phantom.
func TestRestoreAfterRestoreThenCrash(t *testing.T) {
	ctx := actortest.Context(t)
	path := filepath.Join(t.TempDir(), "team.log")
	// Session 1: member a, clean stop.
	sys1 := newSystem(t)
	teamID := uuid.New()
	w1, err := eventlog.Create(path, teamID, eventlog.Options{Sync: eventlog.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	team1, _ := orchestrator.New(sys1, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(w1))
	mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 1})
	if err := team1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// Session 2: restore, hire b, then crash (the file is read while it runs).
	log1, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := eventlog.Append(path, eventlog.Options{Sync: eventlog.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	sys2 := newSystem(t)
	team2, err := orchestrator.Restore(ctx, sys2, log1.Messages, orchestrator.WithSubscribers(w2))
	if err != nil {
		t.Fatal(err)
	}
	mustSpawn(t, team2, &tally{}, &tallyConfig{Config: actor.Config{Name: "b", Role: "Tally"}, Step: 1})
	if err := team2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Session 3: restore from the crashed log.
	log2, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sys3 := newSystem(t)
	team3, err := orchestrator.Restore(ctx, sys3, log2.Messages)
	if err != nil {
		t.Fatal(err)
	}
	members, _ := team3.Members(ctx)
	var names []string
	for _, m := range members {
		names = append(names, m.Name())
		if !orchestrator.IsLive(m) {
			t.Errorf("member %s is in the roster but was not recreated", m.Name())
		}
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "a,b" {
		t.Fatalf("members %v, want a and b", names)
	}
}

// Restore skips nil entries instead of panicking.
func TestRestoreNilEntry(t *testing.T) {
	sys := newSystem(t)
	if _, err := orchestrator.Restore(actortest.Context(t), sys, []message.Message{nil}); err == nil {
		t.Fatal("a log of nil restored a team")
	}
}

// Tools (actor.Config.Tool) are recreated before the other members (the
// restore's half of "tools stop last"), so that an agent starting finds its
// team's tools; each keeps its tool mark.
func TestRestoreToolsFirst(t *testing.T) {
	ctx := actortest.Context(t)
	rec := newSub()
	_, team1, _ := actortest.NewTeam(t, orchestrator.WithSubscribers(rec))
	mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 1})
	mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "board", Role: "Board", Tool: true}, Step: 1})
	mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "b", Role: "Tally"}, Step: 1})
	if err := team1.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	saved := actortest.Reloaded(t, rec.messages())

	sys2 := newSystem(t)
	team2, err := orchestrator.Restore(ctx, sys2, saved)
	if err != nil {
		t.Fatal(err)
	}
	starts, _ := team2.Messages(ctx, orchestrator.Filter{Type: "StartMessage"})
	var recreated []string // the Starts of the live actors, after the replayed ones
	for _, m := range starts {
		if s := m.Envelope().Sender; orchestrator.IsLive(s) && s.AgentID() != team2.Address().AgentID() {
			recreated = append(recreated, s.Name())
		}
	}
	if fmt.Sprint(recreated) != "[board a b]" {
		t.Fatalf("recreated in the order %v, want the tool first: [board a b]", recreated)
	}
	board, _ := team2.Member(ctx, "board")
	a, _ := team2.Member(ctx, "a")
	if board == nil || !board.IsTool() || a == nil || a.IsTool() {
		t.Fatalf("restored board %v (tool %v), a %v", board, board.IsTool(), a)
	}
}
