package akotel_test

import (
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// A team restored from its event log replays its
// history without a span or a metric for it; what happens after the
// restore is recorded as usual.
func TestRestoreEmitsNoDuplicates(t *testing.T) {
	before := newTelemetry(t, false)
	path := filepath.Join(t.TempDir(), "team.log")
	id := uuid.New()
	w, err := eventlog.Create(path, id, eventlog.Options{Sync: eventlog.SyncEvery})
	if err != nil {
		t.Fatal(err)
	}
	tm := newTeam(t, orchestrator.WithTeamID(id), orchestrator.WithSubscribers(before.sub, w))
	ctx := actortest.Context(t)
	tm.srv.Model("@Manager").Enqueue(final(agent.Response, "@Human", "first answer"), final(agent.Response, "@Human", "second answer"))
	tm.ask("first question")
	tm.stop()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(before.ended()); n != 3 {
		t.Fatalf("before the restore: %d spans, want 3:\n%s", n, tree(before.ended()))
	}

	log, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	after := newTelemetry(t, false)
	team, err := orchestrator.Restore(ctx, tm.sys, log.Messages, orchestrator.WithSubscribers(after.sub),
		agent.WithEnv(tm.env), agent.WithHumanDelivery(tm.deliver))
	if err != nil {
		t.Fatal(err)
	}
	tm.team = team
	if tm.manager, err = team.Member(ctx, "@Manager"); err != nil || tm.manager == nil {
		t.Fatalf("restored manager %v, %v", tm.manager, err)
	}
	if tm.human, err = team.Member(ctx, "@Human"); err != nil || tm.human == nil {
		t.Fatalf("restored person %v, %v", tm.human, err)
	}
	if err := team.Sync(ctx); err != nil { // the exporter is lossy: queries do not wait for it, Sync does
		t.Fatal(err)
	}
	if n := len(after.ended()); n != 0 { // the replay is over
		t.Fatalf("the replay made %d spans:\n%s", n, tree(after.ended()))
	}
	rm := after.metrics(t)
	if n, found := sum(rm, "akgentic.turns"); found || n != 0 {
		t.Errorf("the replay counted %v turns", n)
	}
	if n, _ := sum(rm, "akgentic.team.members", attribute.String("akgentic.team.id", team.ID().String())); n != 2 {
		t.Errorf("live members after the restore %v, want 2 (@Human and @Manager, recreated)", n)
	}

	if got := tm.ask("second question"); got.Content != "second answer" {
		t.Fatalf("after the restore the person got %q", got.Content)
	}
	tm.stop()
	want := "invoke_agent @Manager [Unset]\n  chat gpt-4.1 [Unset]\n  turn @Human [Unset]\n"
	if got := tree(after.ended()); got != want {
		t.Fatalf("after the restore:\n%s\nwant only the new turn:\n%s", got, want)
	}
	if n, _ := sum(after.metrics(t), "akgentic.turns"); n != 2 {
		t.Errorf("turns after the restore %v, want 2", n)
	}
}
