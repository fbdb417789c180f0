package orchestrator_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/orchestrator"
)

func tallyCard(t *testing.T, role string, step int) *orchestrator.AgentCard {
	t.Helper()
	c, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
		AgentClass: "orchestrator_test.tally", Description: "adds " + role, Skills: []string{"adding"}, CanBeHired: true,
		Config: &tallyConfig{Config: actor.Config{Name: "@" + role, Role: role}, Step: step},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRestoreBringsTheCatalogBack: the cards a team registered are in its
// log (a CatalogChanged with the whole catalog), and a team restored from
// it has the same catalog, typed configs included, with no registration of
// its own; a card the restoring process cannot use is left out, and the
// error names it.
func TestRestoreBringsTheCatalogBack(t *testing.T) {
	ctx := actortest.Context(t)
	_, team1, _ := actortest.NewTeam(t)
	rec := newSub()
	if err := team1.Subscribe(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := team1.Register(ctx, tallyCard(t, "Adder", 2), tallyCard(t, "Doubler", 4)); err != nil {
		t.Fatal(err)
	}
	if err := team1.Register(ctx, tallyCard(t, "Adder", 3)); err != nil { // replaces the first in place
		t.Fatal(err)
	}
	mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "@T", Role: "Tally"}, Step: 1})
	if err := team1.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	log := actortest.Reloaded(t, rec.messages())

	team2, err := orchestrator.Restore(ctx, newSystem(t), log)
	if err != nil {
		t.Fatal(err)
	}
	cards, err := team2.Cards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cards) != 2 || cards[0].Role() != "Adder" || cards[1].Role() != "Doubler" {
		t.Fatalf("restored catalog: %v; want Adder then Doubler", cards)
	}
	if cfg, ok := cards[0].Config.(*tallyConfig); !ok || cfg.Step != 3 || !cards[0].CanBeHired || cards[0].Description != "adds Adder" {
		t.Fatalf("restored Adder card: %+v (config %T); want the second registration's, typed", cards[0], cards[0].Config)
	}

	// The same log with one card of a kind this process does not know.
	for _, m := range log {
		if cc, ok := m.(*orchestrator.CatalogChanged); ok {
			cc.Cards[1].AgentClass = "orchestrator_test.unknown"
		}
	}
	team3, err := orchestrator.Restore(ctx, newSystem(t), log)
	if team3 == nil || err == nil || !strings.Contains(err.Error(), `"Doubler"`) {
		t.Fatalf("Restore = %v, %v; want the team and an error naming the card left out", team3, err)
	}
	if cards, _ := team3.Cards(ctx); len(cards) != 1 || cards[0].Role() != "Adder" {
		t.Fatalf("catalog with a card left out: %v; want Adder", cards)
	}
}
