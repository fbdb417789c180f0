package teamtool_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Regression tests for defects a review found (each failed before its fix).

// A model cannot fire the team's person, a hidden tool actor, or the
// agent that hired it.
func TestFireRefusals(t *testing.T) {
	e := newEnv(t, teamtool.New())
	human, err := e.team.Spawn(e.ctx, &orchestrator.UserProxy{}, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	// A tool actor is marked by its config (actor.Config.Tool), no longer
	// by a "#" name.
	board, err := e.team.Spawn(e.ctx, &worker{}, &actor.Config{Name: "#PlanningTool", Role: "ToolActor", Tool: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.call("fire_members", map[string]any{"names": []string{"@Human", "#PlanningTool"}})
	if err == nil || !strings.Contains(err.Error(), "person") || !strings.Contains(err.Error(), `"#PlanningTool" not found`) {
		t.Fatalf("fire_members = %q, %v; want both refused", out, err)
	}
	if !human.IsAlive() || !board.IsAlive() {
		t.Fatal("the person or the tool actor was stopped")
	}

	dev, err := e.hire("Developer", "@Dev") // @Manager hires @Dev
	if err != nil {
		t.Fatal(err)
	}
	e2 := *e
	e2.owner = dev
	if e2.caps, err = e2.attach(teamtool.New(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.call("fire_members", map[string]any{"names": []string{"@Manager"}}); err == nil || !strings.Contains(err.Error(), "hired you") {
		t.Fatalf("firing one's hirer: %v", err)
	}
	if !dev.IsAlive() {
		t.Fatal("@Dev was stopped with its hirer")
	}
}

// Two agents hiring at once get distinct names (the name is reserved in the
// team before the member exists).
func TestConcurrentHiresGetDistinctNames(t *testing.T) {
	e := newEnv(t, &teamtool.Card{Rand: fixed(0)})
	qa, err := e.team.Spawn(e.ctx, &worker{}, &actor.Config{Name: "@QA", Role: "QA"})
	if err != nil {
		t.Fatal(err)
	}
	e2 := *e
	e2.owner = qa
	if e2.caps, err = e2.attach(&teamtool.Card{Rand: fixed(0)}, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, x := range []*env{e, &e2} {
		wg.Go(func() {
			if _, err := x.call("hire_members", map[string]any{"roles": []string{"Developer"}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	members, _ := e.team.Members(e.ctx)
	for _, m := range members {
		seen[m.Name()]++
	}
	if seen["@Developer100"] != 1 || seen["@Developer101"] != 1 {
		t.Fatalf("roster names %v, want @Developer100 and @Developer101 once each", seen)
	}
}
