package agent_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// Each scripted call costs $0.010 on gpt-4.1 ($2 in, $8 out per 1M
// tokens): 3,000 prompt tokens and 500 completion tokens. With max_tokens
// 1,000 a call's worst case is its estimated prompt plus $0.008.
const (
	callPrompt, callCompletion = 3000, 500
	maxTokens                  = 1000
)

// capped sets max_tokens on every card.
func capped(_ *harness, c *agent.AgentConfig) { c.Model.MaxTokens = maxTokens }

// amount returns the dollar figure after label in a spend notice.
func amount(t *testing.T, text, label string) float64 {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(label) + ` \$([0-9.]+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %q amount in %q", label, text)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// restoreFromFile writes what the team logged to an event log file (as an
// eventlog.Writer subscribed to the team would have), reads it back and
// restores the team in a new system with env: a new process.
func (h *harness) restoreFromFile(env *agent.Env) (*actor.System, *orchestrator.Team) {
	h.t.Helper()
	h.barrier()
	path := filepath.Join(h.t.TempDir(), "team.log")
	w, err := eventlog.Create(path, h.team.ID(), eventlog.Options{Sync: eventlog.SyncNone})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, m := range h.sub.all() {
		w.OnMessage(m)
	}
	if err := w.Close(); err != nil {
		h.t.Fatal(err)
	}
	log, err := eventlog.ReadFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	sys2 := actor.NewSystem(actor.SystemConfig{Logger: h.logs.Logger()})
	h.t.Cleanup(func() { _ = sys2.Shutdown(context.Background()) })
	team2, err := orchestrator.Restore(actortest.Context(h.t), sys2, log.Messages, agent.WithEnv(env))
	if err != nil {
		h.t.Fatal(err)
	}
	return sys2, team2
}

// The team's spend ceiling is shared by its agents; the call that could
// pass it is not made (the fake server sees no request), the person is
// told the amounts (spent, reserved, ceiling), and a team restored from
// its event log starts from what it spent.
func TestTeamSpendCeiling(t *testing.T) {
	const ceiling = 0.025
	guards := &agent.Guards{TeamSpendLimit: ceiling}
	h := newHarness(t, capped, func(h *harness, _ *agent.AgentConfig) {
		h.env.Guards = guards
		h.env.Rand = func(int) int { return 0 } // the hire is @Developer100
	})
	// The manager hires a developer (who inherits its Env, and so the
	// team's Guards) by naming the role.
	h.srv.Model("@Manager").Enqueue(final(out(agent.Request, "Developer", "write it")).WithUsage(callPrompt, callCompletion, 0))
	h.srv.Model("@Developer100").Enqueue(final(out(agent.Response, "@Manager", "written")).WithUsage(callPrompt, callCompletion, 0))
	h.say(h.manager, agent.Request, "build it")
	// The manager's call ($0.010) and the hired developer's ($0.010) were
	// made; the manager's next one, for the developer's answer, could pass
	// $0.025 and is not.
	n := h.expectHuman()
	if n.Type != agent.Notification || !strings.Contains(n.Content, "The agent @Manager has exceeded its usage limits") ||
		!strings.Contains(n.Content, "team spend ceiling of $0.025000") {
		t.Fatalf("notice %q", n.Content)
	}
	if spent := amount(t, n.Content, "spent"); spent < 0.02-1e-9 || spent > 0.02+1e-9 {
		t.Fatalf("spent %v, want 0.020 (two calls): %q", spent, n.Content)
	}
	if r := amount(t, n.Content, "reserved"); r != 0 {
		t.Fatalf("reserved %v for calls in flight, want 0: %q", r, n.Content)
	}
	worst := amount(t, n.Content, "this call's worst case")
	if worst < 0.008 || 0.02+worst <= ceiling {
		t.Fatalf("worst case %v: want at least the completion cap's $0.008 and past the ceiling", worst)
	}
	if got, dev := len(h.srv.RequestsFor("@Manager")), len(h.srv.RequestsFor("@Developer100")); got != 1 || dev != 1 {
		t.Fatalf("the manager made %d model calls and the hire %d, want 1 each: the call past the ceiling was made", got, dev)
	}
	h.sub.waitFor(t, "the manager's warning", func([]message.Message) bool {
		w := of[*message.WarningMessage](h.sub, h.manager)
		return len(w) == 1 && strings.Contains(w[0].Content, "LLM usage limit exceeded")
	})

	// A new process: fresh Guards, the spend recomputed from the log.
	env2 := *h.env
	env2.Guards = &agent.Guards{TeamSpendLimit: ceiling}
	sys2, team2 := h.restoreFromFile(&env2)
	m2, err := team2.Member(actortest.Context(t), "@Manager")
	if err != nil || m2 == nil {
		t.Fatalf("restored manager: %v", err)
	}
	before := len(h.srv.Requests())
	_, err = sys2.Ask(actortest.Context(t), m2, agent.NewRequest("go on"))
	if err == nil || !strings.Contains(err.Error(), "team spend ceiling of $0.025000: spent $0.020000") {
		t.Fatalf("restored manager's turn: %v, want the ceiling with the spend recomputed from the log", err)
	}
	if got := len(h.srv.Requests()); got != before {
		t.Fatalf("%d model calls after the restore, want none: the restored team forgot what it spent", got-before)
	}
	h.syncAll(team2)
}

// syncAll returns once every member of team has handled what it was sent
// before (its start included).
func (h *harness) syncAll(team *orchestrator.Team) {
	h.t.Helper()
	members, err := team.Members(actortest.Context(h.t))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, m := range members {
		h.sync(m)
	}
}

// An agent's own spend ceiling (AgentUsageLimits.SpendLimit) refuses the
// call that could pass it, and a restored agent recomputes its spend from
// its usage events.
func TestAgentSpendCeiling(t *testing.T) {
	h := newHarness(t, capped, func(_ *harness, c *agent.AgentConfig) { c.AgentLimits.SpendLimit = new(0.015) })
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "done")).WithUsage(callPrompt, callCompletion, 0))
	h.say(h.manager, agent.Request, "one")
	if n := h.expectHuman(); n.Content != "done" {
		t.Fatalf("first answer %q", n.Content)
	}
	h.say(h.manager, agent.Request, "two")
	n := h.expectHuman()
	if !strings.Contains(n.Content, "agent spend ceiling of $0.015000: spent $0.010000, reserved $0.000000") {
		t.Fatalf("notice %q", n.Content)
	}
	if got := len(h.srv.RequestsFor("@Manager")); got != 1 {
		t.Fatalf("%d model calls, want 1", got)
	}
	sys2, team2 := h.restoreFromFile(h.env)
	m2, err := team2.Member(actortest.Context(t), "@Manager")
	if err != nil || m2 == nil {
		t.Fatalf("restored manager: %v", err)
	}
	if _, err := sys2.Ask(actortest.Context(t), m2, agent.NewRequest("three")); err == nil || !strings.Contains(err.Error(), "spent $0.010000") {
		t.Fatalf("restored manager's turn: %v, want the ceiling with the spend recomputed", err)
	}
	if got := len(h.srv.RequestsFor("@Manager")); got != 1 {
		t.Fatalf("%d model calls after the restore, want still 1", got)
	}
	h.syncAll(team2)
}

// A Guards shared by several teams holds a team's spend only while one of
// its agents runs: one agent stopping keeps it, the team stopping drops it
// (a long process does not keep every team it ever ran).
func TestGuardsDropATeamsSpendWhenItStops(t *testing.T) {
	guards := &agent.Guards{TeamSpendLimit: 1}
	share := func(h *harness, _ *agent.AgentConfig) { h.env.Guards = guards }
	h1, h2 := newHarness(t, capped, share), newHarness(t, capped, share)
	if n := guards.TeamsHeld(); n != 2 {
		t.Fatalf("%d teams held, want 2", n)
	}
	dev := h1.spawnAgent(h1.config("@Developer", "Developer"))
	if err := h1.sys.Stop(actortest.Context(t), dev); err != nil {
		t.Fatal(err)
	}
	if n := guards.TeamsHeld(); n != 2 {
		t.Fatalf("%d teams held after one agent stopped, want 2 (the manager runs)", n)
	}
	if err := h1.team.Stop(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if n := guards.TeamsHeld(); n != 1 {
		t.Fatalf("%d teams held after a team stopped, want 1", n)
	}
	if err := h2.team.Stop(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if n := guards.TeamsHeld(); n != 0 {
		t.Fatalf("%d teams held after both stopped, want 0", n)
	}
}
