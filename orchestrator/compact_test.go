package orchestrator_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// teamView is what two restored teams are compared on: the roster in join
// order with each member's parent, the states, the metadata.
func teamView(t *testing.T, sys *actor.System, team *orchestrator.Team) string {
	t.Helper()
	ctx := actortest.Context(t)
	members, err := team.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var roster []string
	for _, m := range members {
		kids, err := proxy.Ask(ctx, sys.Get(m.AgentID()), func(c *actor.Context, _ actor.Actor) ([]string, error) {
			var out []string
			for _, k := range c.Children() {
				out = append(out, k.Name())
			}
			return out, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		roster = append(roster, fmt.Sprintf("%s/%s%v", m.Name(), m.AgentID(), kids))
	}
	states, err := team.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]json.RawMessage{}
	for id, v := range states {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		st[id.String()] = b
	}
	meta, err := team.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"roster": roster, "states": st, "metadata": meta})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A team's log compacted (Compact) restores to the team its whole log
// restores to: the same members in the same order under the same parents
// (a member stopped left out, a child under its parent), the same states
// (a departed member's included) and metadata; after a clean stop too,
// and again once the restored team's own records follow the compacted
// log. The compacted log is much shorter.
func TestCompactedLogRestoresTheSameTeam(t *testing.T) {
	ctx := actortest.Context(t)
	sys1, team1, _ := actortest.NewTeam(t)
	rec := newSub()
	_ = team1.Subscribe(ctx, rec)
	a := mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 2})
	b := mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "b", Role: "Tally"}, Step: 5})
	gone := mustSpawn(t, team1, &tally{}, &tallyConfig{Config: actor.Config{Name: "gone", Role: "Tally"}, Step: 1})
	if _, err := proxy.Ask(ctx, a, func(c *actor.Context, _ actor.Actor) (*message.Address, error) {
		return c.Spawn(&tally{}, &tallyConfig{Config: actor.Config{Name: "a.child", Role: "Tally"}, Step: 3})
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		for _, to := range []*message.Address{a, b, gone} {
			if _, err := sys1.Ask(ctx, to, message.NewUserMessage(fmt.Sprint("m", i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sys1.Stop(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := team1.SetMetadata(ctx, map[string]any{"project": "compact"}); err != nil {
		t.Fatal(err)
	}
	if err := team1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	full := actortest.Reloaded(t, rec.messages())
	compacted := actortest.Reloaded(t, orchestrator.Compact(full))
	if len(compacted)*4 > len(full) {
		t.Fatalf("the compacted log has %d records of %d", len(compacted), len(full))
	}
	restore := func(log []message.Message, subs ...orchestrator.Subscriber) (*actor.System, *orchestrator.Team) {
		sys := newSystem(t)
		team, err := orchestrator.Restore(ctx, sys, log, orchestrator.WithSubscribers(subs...))
		if err != nil {
			t.Fatal(err)
		}
		return sys, team
	}
	sysF, teamF := restore(full)
	later := newSub()
	sysC, teamC := restore(compacted, later)
	if f, c := teamView(t, sysF, teamF), teamView(t, sysC, teamC); f != c {
		t.Fatalf("restored from the whole log:\n%s\nfrom the compacted log:\n%s", f, c)
	}

	// The team restored from the compacted log goes on and stops; its
	// records after the compacted log's, compacted again with them, give
	// the team those records after the whole log give.
	ra := sysC.Get(a.AgentID())
	if total, err := sysC.Ask(ctx, ra, message.NewUserMessage("more")); err != nil || total != 42 {
		t.Fatalf("a answered %v, %v; want 42", total, err)
	}
	if err := teamC.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := teamF.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var after []message.Message // the restored team's own records, past its replay
	ids := map[[16]byte]bool{}
	for _, m := range compacted {
		ids[m.Envelope().ID] = true
	}
	for _, m := range actortest.Reloaded(t, later.messages()) {
		switch m.(type) {
		case *orchestrator.CatalogChanged, *orchestrator.MetadataChanged:
			continue // published again by the replay
		}
		if !ids[m.Envelope().ID] {
			after = append(after, m)
		}
	}
	if len(after) == 0 {
		t.Fatal("the restored team wrote no record")
	}
	sys2F, team2F := restore(slices.Concat(full, after))
	sys2C, team2C := restore(orchestrator.Compact(slices.Concat(compacted, after)))
	if f, c := teamView(t, sys2F, team2F), teamView(t, sys2C, team2C); f != c {
		t.Fatalf("second restore, from the whole log:\n%s\nfrom the compacted one:\n%s", f, c)
	}
}
