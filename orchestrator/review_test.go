package orchestrator_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// Regression tests for defects a review found (each failed before its fix).

// Queries after the team stopped, from several goroutines, do not race.
func TestConcurrentQueriesAfterStop(t *testing.T) {
	ctx := ctxT(t)
	_, team, _ := newTeam(t)
	mustSpawn(t, team, &echo{}, named("a"))
	if err := team.StopAndWait(ctx, waitTimeout); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if msgs, err := team.Messages(ctx, orchestrator.Filter{}); err != nil || len(msgs) == 0 {
					t.Errorf("after stop: %d messages, %v", len(msgs), err)
				}
			}
		})
	}
	wg.Wait()
}

// A log restored once (after a clean stop) and then crashed restores with
// the second session's members, live, and no phantom.
func TestRestoreAfterRestoreThenCrash(t *testing.T) {
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "team.log")
	shut := func(sys *actor.System) {
		t.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	}
	// Session 1: member a, clean stop.
	sys1 := actor.NewSystem(actor.SystemConfig{})
	shut(sys1)
	teamID := uuid.New()
	w1, err := eventlog.Create(path, teamID, eventlog.Options{Sync: eventlog.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	team1, _ := orchestrator.New(sys1, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(w1))
	mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 1})
	if err := team1.StopAndWait(ctx, waitTimeout); err != nil {
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
	sys2 := actor.NewSystem(actor.SystemConfig{})
	shut(sys2)
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
	sys3 := actor.NewSystem(actor.SystemConfig{})
	shut(sys3)
	team3, err := orchestrator.Restore(ctx, sys3, log2.Messages)
	if err != nil {
		t.Fatal(err)
	}
	members, _ := team3.Members(ctx)
	var names []string
	for _, m := range members {
		names = append(names, m.Name())
		if m.Kind() != message.Live {
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
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys.Shutdown(context.Background()) }()
	if _, err := orchestrator.Restore(ctxT(t), sys, []message.Message{nil}); err == nil {
		t.Fatal("a log of nil restored a team")
	}
}

// States returns copies: editing one changes nothing in the team.
func TestStatesAreCopies(t *testing.T) {
	ctx := ctxT(t)
	sys, team, _ := newTeam(t)
	a := mustSpawn(t, team, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 1})
	if _, err := sys.Ask(ctx, a, message.NewUserMessage("x")); err != nil {
		t.Fatal(err)
	}
	s1, _ := team.States(ctx)
	s1[a.AgentID()].(*tallyState).Total = 999
	s2, _ := team.States(ctx)
	if got := s2[a.AgentID()].(*tallyState).Total; got != 1 {
		t.Fatalf("state after a caller's edit: %d, want 1", got)
	}
}

// held blocks its OnStop (or OnMessage) until released.
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

// A query made while the orchestrator runs its last hooks waits and answers
// from the final state, instead of failing with a dead actor.
func TestQueryDuringFinalStop(t *testing.T) {
	ctx := ctxT(t)
	_, team, _ := newTeam(t)
	h := &held{entered: make(chan struct{}), release: make(chan struct{})}
	_ = team.Subscribe(ctx, h)
	mustSpawn(t, team, &echo{}, named("a"))
	if _, err := team.Stop(ctx, waitTimeout); err != nil {
		t.Fatal(err)
	}
	<-h.entered // OnStop is running
	got := make(chan error, 1)
	go func() {
		_, err := team.Members(ctx)
		got <- err
	}()
	close(h.release)
	if err := <-got; err != nil {
		t.Fatalf("Members during the team's last step: %v", err)
	}
}

// A Spawn whose caller gave up while it waited does not spawn.
func TestSpawnCancelledWhileQueued(t *testing.T) {
	ctx := ctxT(t)
	_, team, _ := newTeam(t)
	h := &held{entered: make(chan struct{}), release: make(chan struct{}), inMessage: true}
	_ = team.Subscribe(ctx, h)
	go func() { _, _ = team.Spawn(ctx, &echo{}, named("busy")) }() // its Start holds the orchestrator in OnMessage
	<-h.entered
	short, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := team.Spawn(short, &echo{}, named("late"))
		done <- err
	}()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled Spawn succeeded")
	}
	close(h.release)
	if m, _ := team.Member(ctx, "late"); m != nil {
		t.Fatalf("the cancelled Spawn created %s", m)
	}
}

// Nil arguments give errors, not panics.
func TestNilArguments(t *testing.T) {
	ctx := ctxT(t)
	_, team, _ := newTeam(t)
	if _, err := team.ChildOrCreate(ctx, &echo{}, nil); err == nil {
		t.Error("ChildOrCreate with no config")
	}
	var card *orchestrator.AgentCard
	if _, err := card.NewActor(); err == nil {
		t.Error("NewActor of a nil card")
	}
	if _, err := card.ConfigCopy(); err == nil {
		t.Error("ConfigCopy of a nil card")
	}
	if err := team.Register(ctx, nil); err == nil {
		t.Error("Register(nil)")
	}
	if _, err := team.Spawn(ctx, nil, nil); err == nil {
		t.Error("Spawn(nil)")
	}
	if err := team.Emit(ctx, nil); err == nil {
		t.Error("Emit(nil)")
	}
	if err := orchestrator.ProcessHumanInput(ctx, nil, "x", nil); err == nil {
		t.Error("ProcessHumanInput to nobody")
	}
}
