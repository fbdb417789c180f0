package orchestrator_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
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

	rec2 := newSub()
	team2, err := orchestrator.Restore(ctx, newSystem(t), log, orchestrator.WithSubscribers(rec2))
	if err != nil {
		t.Fatal(err)
	}
	late := newSub()
	if err := team2.Subscribe(ctx, late); err != nil {
		t.Fatal(err)
	}
	if err := team2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n, roles := catalogsIn(rec2.messages()); n != 2 || roles != "Adder Doubler" {
		t.Fatalf("Restore's subscriber got %d CatalogChanged (the last with %q); want the log's two published again, the last Adder Doubler", n, roles)
	}
	if n, _ := catalogsIn(late.messages()); n != 0 {
		t.Fatalf("a subscriber added after Restore got %d CatalogChanged; want none (it reads Team.Cards)", n)
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
	want := "orchestrator: restore team " + team1.ID().String() + `: the recorded catalog's card of role "Doubler" is left out: ` +
		`agent_class "orchestrator_test.unknown" is not a registered actor kind (actor.RegisterKind)`
	if team3 == nil || err == nil || err.Error() != want {
		t.Fatalf("Restore = %v, %v; want the team and the error %q (one sentence naming the card left out)", team3, err, want)
	}
	if !errors.Is(err, orchestrator.ErrUnknownAgentClass) {
		t.Fatalf("Restore's error %v does not match ErrUnknownAgentClass", err)
	}
	if cards, _ := team3.Cards(ctx); len(cards) != 1 || cards[0].Role() != "Adder" {
		t.Fatalf("catalog with a card left out: %v; want Adder", cards)
	}
}

// catalogsIn counts the CatalogChanged among msgs, and gives the roles of
// the last one.
func catalogsIn(msgs []message.Message) (n int, roles string) {
	for _, m := range msgs {
		if cc, ok := m.(*orchestrator.CatalogChanged); ok {
			n++
			var rs []string
			for _, c := range cc.Cards {
				rs = append(rs, c.Role())
			}
			roles = strings.Join(rs, " ")
		}
	}
	return n, roles
}
