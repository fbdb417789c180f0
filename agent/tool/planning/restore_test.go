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
)

// A85, A87, B94: the board is its actor's published state, so a team
// restored from its log has the same board actor with the same plan, and
// the agents attaching again share it.
func TestBoardSurvivesRestore(t *testing.T) {
	ctx := ctxT(t)
	rec := &recorder{}
	_, team1 := newTeam(t, orchestrator.WithSubscribers(rec))
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

// A restored board with no recorded state starts empty; one whose recorded
// state does not decode reports it and answers with an error.
func TestRestoredBoardState(t *testing.T) {
	ctx := ctxT(t)
	_, team := newTeam(t)
	spawnBoard := func(id uuid.UUID) {
		t.Helper()
		a, err := actor.NewKind(planning.BoardKind)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := team.Spawn(ctx, a, &actor.Config{Name: planning.BoardName, Role: planning.BoardRole},
			actor.WithAgentID(id), actor.WithRestoring()); err != nil {
			t.Fatal(err)
		}
	}
	spawnBoard(uuid.New())
	a := mustAttach(t, spawnOwner(t, team, "@A"), planning.New())
	if got := a.prompt(); got != "No current team planning." {
		t.Fatalf("restored board without a state: %q", got)
	}
	if n := len(boards(t, team)); n != 1 {
		t.Fatalf("%d boards", n)
	}

	_, team = newTeam(t)
	id := uuid.New()
	state := &message.StateChangedMessage{State: json.RawMessage(`{"tasks": "not a list"}`)}
	state.ID = uuid.New()
	state.Sender = message.NewSnapshotAddress(message.Identity{AgentID: id, Name: planning.BoardName, Role: planning.BoardRole, TeamID: team.ID()})
	state.TeamID = uuid.NullUUID{UUID: team.ID(), Valid: true}
	if err := team.Replay(ctx, []message.Message{state}); err != nil {
		t.Fatal(err)
	}
	spawnBoard(id)
	b := mustAttach(t, spawnOwner(t, team, "@B"), planning.New())
	if _, err := b.call("get_planning_task", `{"task_id": 1}`); err == nil || !strings.Contains(err.Error(), "the board did not start") {
		t.Fatalf("board with a bad restored state: %v", err)
	}
	if got := b.prompt(); got != "Cannot get the team planning." {
		t.Fatalf("prompt: %q", got)
	}
}
