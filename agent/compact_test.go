package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// restoredView is what a restored team is compared on.
type restoredView struct {
	Roster   []string
	States   map[string]json.RawMessage
	Metadata json.RawMessage
	Cards    json.RawMessage
	Agents   map[string]agentView
	Question bool // the pending question is in the team's log
}

type agentView struct {
	History json.RawMessage
	Runs    int
	Input   int
	Output  int
	Cost    float64
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// viewOf reads what a restored team is compared on.
func viewOf(t *testing.T, team *orchestrator.Team, question *agent.AgentMessage) restoredView {
	t.Helper()
	ctx := actortest.Context(t)
	members, err := team.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := restoredView{States: map[string]json.RawMessage{}, Agents: map[string]agentView{}}
	for _, m := range members {
		v.Roster = append(v.Roster, fmt.Sprintf("%s/%s", m.Name(), m.AgentID()))
	}
	states, err := team.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, s := range states {
		v.States[id.String()] = mustJSON(t, s)
	}
	meta, err := team.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v.Metadata = mustJSON(t, meta)
	cards, err := team.Cards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v.Cards = mustJSON(t, cards)
	for _, m := range members {
		if m.ActorType() != agent.Kind {
			continue
		}
		av, err := proxy.Ask(ctx, m, func(_ *actor.Context, a *agent.BaseAgent) (agentView, error) {
			runs, in, out := a.Runner().AgentUsage()
			b, err := json.Marshal(a.Runner().History())
			return agentView{History: b, Runs: runs, Input: in, Output: out}, err
		})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := agent.UsageSummary(ctx, team, m.AgentID(), false, nil)
		if err != nil {
			t.Fatal(err)
		}
		av.Cost = sum.Cost
		v.Agents[m.Name()] = av
	}
	sent, err := team.Messages(ctx, orchestrator.Filter{Type: "SentMessage"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sent {
		if s, ok := r.(*message.SentMessage); ok && s.Message != nil && s.Message.Envelope().ID == question.ID {
			v.Question = true
		}
	}
	return v
}

// A team restored from its compacted log (orchestrator.Compact with the
// agent layer's part) is the team restored from the whole log: the same
// roster, states, metadata and catalog, each agent's model context (a
// compaction of it, a hired member's) and usage totals, the pending
// question to the person; the next turn of each agent sends the model the
// same request. The compacted log is much shorter.
func TestRestoreFromCompactedLogEqualsRestoreFromFullLog(t *testing.T) {
	h := newHarness(t)
	ctx := actortest.Context(t)
	mgr := h.srv.Model("@Manager")
	mgr.Enqueue(final(out(agent.Response, "@Human", "first answer")).WithUsage(100, 10, 0))
	h.say(h.manager, agent.Request, "first question")
	h.expectHuman()
	mgr.Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA"]}`)).WithUsage(200, 20, 0),
		final(out(agent.Response, "@Human", "hired")).WithUsage(300, 30, 0),
	)
	h.say(h.manager, agent.Request, "hire a QA")
	h.expectHuman()
	members, err := h.team.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var qa *message.Address
	for _, m := range members {
		if m.Role() == "QA" {
			qa = m
		}
	}
	if qa == nil {
		t.Fatalf("no QA hired: %v", members)
	}
	qaName := qa.Name()
	h.srv.Model(qaName).Enqueue(final(out(agent.Response, "@Human", "qa answer")).WithUsage(50, 5, 0))
	h.say(qa, agent.Request, "test it")
	h.expectHuman()
	for i := range 3 {
		mgr.Enqueue(final(out(agent.Response, "@Human", fmt.Sprintf("answer %d", i))).WithUsage(400, 40, 0))
		h.say(h.manager, agent.Request, fmt.Sprintf("question %d", i))
		h.expectHuman()
	}
	h.srv.Summarizer().Enqueue(llmtest.Final("the summary of it all"))
	h.say(h.manager, agent.Request, "/compact")
	h.expectHuman()
	if err := h.team.SetMetadata(ctx, map[string]any{"project": "snapshots", "round": 2.0}); err != nil {
		t.Fatal(err)
	}
	mgr.Enqueue(final(out(agent.Request, "@Human", "which colour?")).WithUsage(500, 50, 0))
	h.say(h.manager, agent.Request, "ask me something")
	q := h.expectHuman()
	mgr.Enqueue(final(out(agent.Response, "@Human", "after the question")).WithUsage(600, 60, 0))
	h.say(h.manager, agent.Request, "and then")
	h.expectHuman()
	h.barrier()

	full := actortest.Reloaded(t, h.sub.all())
	compacted := orchestrator.Compact(full, agent.Compaction)
	if len(compacted)*3 > len(full) {
		t.Fatalf("the compacted log has %d records of %d; want at most a third", len(compacted), len(full))
	}
	t.Logf("compacted %d of %d", len(compacted), len(full))
	// The compacted log encodes and decodes as any log.
	compacted = actortest.Reloaded(t, compacted)

	restore := func(log []message.Message) (*orchestrator.Team, *actor.System) {
		sys := actor.NewSystem(actor.SystemConfig{Logger: h.logs.Logger()})
		t.Cleanup(func() { actortest.Shutdown(t, sys) })
		team, err := orchestrator.Restore(ctx, sys, log, agent.WithEnv(h.env))
		if err != nil {
			t.Fatal(err)
		}
		return team, sys
	}
	fromFull, sysFull := restore(full)
	fromCompact, sysCompact := restore(compacted)
	a, b := viewOf(t, fromFull, q), viewOf(t, fromCompact, q)
	if !a.Question || !b.Question {
		t.Fatalf("the pending question is in the log restored from the whole log: %v; from the compacted one: %v", a.Question, b.Question)
	}
	if len(a.Agents) != 2 || a.Agents["@Manager"].Runs == 0 {
		t.Fatalf("restored agents %+v; want the manager and the QA, with their runs", a.Agents)
	}
	if ja, jb := mustJSON(t, a), mustJSON(t, b); !bytes.Equal(ja, jb) {
		t.Fatalf("restored from the whole log:\n%s\nfrom the compacted log:\n%s", ja, jb)
	}
	if !bytes.Contains(a.Agents["@Manager"].History, []byte("the summary of it all")) {
		t.Fatalf("the manager's context has no compaction summary: %s", a.Agents["@Manager"].History)
	}

	// One more turn of each agent, on each team: the same model request.
	for _, name := range []string{"@Manager", qaName} {
		var bodies [][]byte
		for _, x := range []struct {
			team *orchestrator.Team
			sys  *actor.System
		}{{fromFull, sysFull}, {fromCompact, sysCompact}} {
			m, err := x.team.Member(ctx, name)
			if err != nil || m == nil {
				t.Fatalf("restored team lacks %s (%v)", name, err)
			}
			before := len(h.srv.RequestsFor(name))
			h.srv.Model(name).Enqueue(final())
			if _, err := x.sys.Ask(ctx, m, agent.NewRequest("one more")); err != nil {
				t.Fatal(err)
			}
			reqs := h.srv.RequestsFor(name)
			if len(reqs) != before+1 {
				t.Fatalf("%s: %d model requests for one turn", name, len(reqs)-before)
			}
			bodies = append(bodies, mustJSON(t, reqs[len(reqs)-1].Messages))
		}
		if !bytes.Equal(bodies[0], bodies[1]) {
			t.Fatalf("%s's next request, restored from the whole log:\n%s\nfrom the compacted log:\n%s", name, bodies[0], bodies[1])
		}
	}
}

// A run paused for a person's approval, its log compacted, restores to a
// team whose agent waits: the request is pending there, and approved, the
// call runs once and the turn goes on.
func TestPendingApprovalSurvivesACompactedRestore(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "warm-up answer")))
	h.say(h.manager, agent.Request, "warm-up")
	h.expectHuman()
	askedApproval(t, h)
	h.barrier()
	full := h.sub.all()
	compacted := orchestrator.Compact(actortest.Reloaded(t, full), agent.Compaction)
	if len(compacted) >= len(full) {
		t.Fatalf("the compacted log has %d records of %d", len(compacted), len(full))
	}
	team2, human2, delivered := restoredFrom(t, h.env, actortest.Reloaded(t, compacted))
	p := pendingIn(t, team2)
	if len(p) != 1 || p[0].Approval.CallID != "c1" {
		t.Fatalf("the restored team's pending approvals %+v", p)
	}
	decide(t, h, human2, p[0], true, "")
	if got := next(t, delivered); got.Content != "cleaned up" {
		t.Fatalf("the restored person got %q", got.Content)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the call ran %d times across the restore, want once", n)
	}
}
