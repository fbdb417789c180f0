package planning_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// The board is its actor's published state, so a team
// restored from its log has the same board actor with the same plan, and
// the agents attaching again share it.
func TestBoardSurvivesRestore(t *testing.T) {
	ctx := actortest.Context(t)
	rec := &recorder{}
	_, team1, _ := actortest.NewTeam(t, orchestrator.WithSubscribers(rec))
	m := mustAttach(t, spawnOwner(t, team1, "@Manager"), planning.New())
	d := mustAttach(t, spawnOwner(t, team1, "@Dev"), planning.New())
	m.mustCall("update_planning", threeTasks)
	d.mustCall("update_planning", `{"update": {"update_tasks": [{"id": 1, "status": "completed", "output": "api.md"}], "delete_tasks": [3]}}`)
	before := d.dispatch("/planning_summary false")
	board1 := boards(t, team1)[0] // a barrier too: the log is complete
	saved := rec.saved(t)

	sys2 := actor.NewSystem(actor.SystemConfig{Logger: actortest.NewLogCapture(t).Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys2) })
	team2, err := orchestrator.Restore(ctx, sys2, saved)
	if err != nil {
		t.Fatal(err)
	}
	b := boards(t, team2)
	if len(b) != 1 || b[0].AgentID() != board1.AgentID() || !b[0].IsAlive() {
		t.Fatalf("restored boards %v, want the live board %s", b, board1.AgentID())
	}
	m2 := mustAttach(t, sys2.Get(m.addr.AgentID()), planning.New())
	d2 := mustAttach(t, sys2.Get(d.addr.AgentID()), planning.New())
	if n := len(boards(t, team2)); n != 1 {
		t.Fatalf("%d boards after the agents attached again", n)
	}
	if got := m2.dispatch("/planning_summary false"); got != before {
		t.Fatalf("restored summary:\n%s\nwant:\n%s", got, before)
	}
	// The restored board goes on, and publishes its changes.
	if got := d2.mustCall("update_planning", `{"update": {"create_tasks": [{"id": 4, "description": "Ship it"}]}}`); got != "Done" {
		t.Fatal(got)
	}
	states, err := team2.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := states[board1.AgentID()].(*planning.Board)
	if !ok || len(st.Tasks) != 3 || st.Tasks[2].ID != 4 || st.Tasks[2].Creator != "@Dev" || st.Tasks[0].Output != "api.md" {
		t.Fatalf("published board %#v", states[board1.AgentID()])
	}
}

// The board is a tool actor (actor.Config.Tool, not its "#" name): a
// team's stop stops it after the agents, so that an agent stopping can
// still reach the plan, and a restore recreates it before them, so that
// they find it when they attach again.
func TestBoardIsATool(t *testing.T) {
	ctx := actortest.Context(t)
	rec := &recorder{}
	_, team1, _ := actortest.NewTeam(t, orchestrator.WithSubscribers(rec))
	m := mustAttach(t, spawnOwner(t, team1, "@Manager"), planning.New()) // creates the board: it starts after @Manager
	d := mustAttach(t, spawnOwner(t, team1, "@Dev"), planning.New())
	board := boards(t, team1)[0]
	saved := rec.saved(t)

	sys2 := actor.NewSystem(actor.SystemConfig{Logger: actortest.NewLogCapture(t).Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys2) })
	team2, err := orchestrator.Restore(ctx, sys2, saved)
	if err != nil {
		t.Fatal(err)
	}
	if b := boards(t, team2); len(b) != 1 || !b[0].IsTool() {
		t.Fatalf("restored boards %v, want one tool", b)
	}
	// Positions in the team's log (the ledger order; while the team stops,
	// StopMessages are logged but not fanned out to subscribers): the
	// last record of a kind for each sender. The recreated actors'
	// StartMessages follow the replayed ones.
	last := func(kind string) map[uuid.UUID]int {
		t.Helper()
		log, err := team2.Messages(ctx, orchestrator.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		at := map[uuid.UUID]int{}
		for i, msg := range log {
			if message.TypeName(msg) == kind {
				at[msg.Envelope().Sender.AgentID()] = i
			}
		}
		return at
	}
	at := func(m map[uuid.UUID]int, a *message.Address) int {
		t.Helper()
		i, ok := m[a.AgentID()]
		if !ok {
			t.Fatalf("no record of %s", a.Name())
		}
		return i
	}
	started := last("StartMessage")
	if b, im, id := at(started, board), at(started, m.addr), at(started, d.addr); b > im || b > id {
		t.Fatalf("restarted at: board %d, @Manager %d, @Dev %d; want the board first", b, im, id)
	}

	if err := team2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := last("StopMessage")
	if b, im, id := at(stopped, board), at(stopped, m.addr), at(stopped, d.addr); b < im || b < id {
		t.Fatalf("stopped at: board %d, @Manager %d, @Dev %d; want the board last", b, im, id)
	}
}

// A restored board with no recorded state starts empty; one whose recorded
// state does not decode reports it and answers with an error. (The logs are
// a real team's, edited; they were replayed into a team by hand before the
// redesign, which leaves replay to Restore.)
func TestRestoredBoardState(t *testing.T) {
	rec := &recorder{}
	_, team1, _ := actortest.NewTeam(t, orchestrator.WithSubscribers(rec))
	mustAttach(t, spawnOwner(t, team1, "@A"), planning.New())
	board := boards(t, team1)[0]
	// The board publishes its state in OnStart, on its own goroutine: a
	// call on it runs after that, and the sync after the call puts the
	// StateChanged record in the log.
	if err := proxy.Do(actortest.Context(t), board, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := team1.Sync(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	saved := rec.saved(t)
	isBoardState := func(m message.Message) bool {
		sc, ok := m.(*message.StateChangedMessage)
		return ok && sc.Sender.AgentID() == board.AgentID()
	}

	var noState []message.Message
	for _, m := range saved {
		if !isBoardState(m) {
			noState = append(noState, m)
		}
	}
	team := restore(t, noState)
	a := mustAttach(t, spawnOwner(t, team, "@B"), planning.New())
	if got := a.prompt(); got != "No current team planning." {
		t.Fatalf("restored board without a state: %q", got)
	}
	if b := boards(t, team); len(b) != 1 || b[0].AgentID() != board.AgentID() {
		t.Fatalf("boards %v, want the restored one", b)
	}

	var bad []message.Message
	for _, m := range saved {
		if isBoardState(m) {
			sc := *m.(*message.StateChangedMessage)
			sc.State = json.RawMessage(`{"tasks": "not a list"}`)
			m = &sc
		}
		bad = append(bad, m)
	}
	// A board whose restored state is of the wrong type fails its start:
	// the restore says so, naming it, and the board is not left listed.
	sys := actor.NewSystem(actor.SystemConfig{Logger: actortest.NewLogCapture(t).Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys) })
	team, err := orchestrator.Restore(actortest.Context(t), sys, bad)
	if team == nil || err == nil || !strings.Contains(err.Error(), "recreate #PlanningTool") || !strings.Contains(err.Error(), "its start failed: planning: restore the board") {
		t.Fatalf("restore of a board with a bad state: %v", err)
	}
	if b := boards(t, team); len(b) != 0 {
		t.Fatalf("boards %v after a failed start, want none", b)
	}
}

// restore restores a team from log in a new system, shut down at the end
// of the test.
func restore(t *testing.T, log []message.Message) *orchestrator.Team {
	t.Helper()
	sys := actor.NewSystem(actor.SystemConfig{Logger: actortest.NewLogCapture(t).Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys) })
	team, err := orchestrator.Restore(actortest.Context(t), sys, log)
	if team == nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Logf("restore: %v", err)
	}
	return team
}
