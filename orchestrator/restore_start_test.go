package orchestrator_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// failsRestored is an actor whose start fails when it is restored (a
// recorded state it cannot take, say).
type failsRestored struct{}

func init() {
	actor.RegisterKind("orchestrator_test.failsRestored", func() actor.Actor { return &failsRestored{} })
}

func (*failsRestored) OnStart(c *actor.Context) error {
	if c.Restoring() {
		return errors.New("restored state of the wrong type")
	}
	return nil
}

func (*failsRestored) Receive(*actor.Context, any) (any, error) { return nil, nil }

// A restore in which a member fails its start returns an error naming it;
// the member is stopped and leaves the roster, the others are restored.
func TestRestoreNamesAMemberWhoseStartFailed(t *testing.T) {
	ctx := actortest.Context(t)
	_, team1, _ := actortest.NewTeam(t)
	rec := newSub()
	_ = team1.Subscribe(ctx, rec)
	mustSpawn(t, team1, &failsRestored{}, named("board"))
	mustSpawn(t, team1, &tally{}, &tallyConfig{Config: *named("counter"), Step: 1})
	_, _ = team1.Members(ctx)
	team2, err := orchestrator.Restore(ctx, newSystem(t), actortest.Reloaded(t, rec.messages()))
	if team2 == nil || err == nil || !strings.Contains(err.Error(), "recreate board") || !strings.Contains(err.Error(), "its start failed: restored state of the wrong type") {
		t.Fatalf("Restore = %v, %v; want a team and an error naming board and why", team2, err)
	}
	members, err := team2.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range members {
		names = append(names, m.Name())
	}
	if strings.Join(names, ",") != "counter" {
		t.Errorf("roster %v, want counter only", names)
	}
}
