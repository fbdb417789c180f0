package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// A restored HumanProxy gets its delivery hook from the restore call
// (WithHumanDelivery), together with the agents' Env (WithEnv): the two
// restore options compose, and the person's next answer reaches the new
// hook.
func TestRestoreGivesTheHumanItsHook(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "first answer")))
	h.say(h.manager, agent.Request, "first question")
	h.expectHuman()
	h.barrier()
	saved := actortest.Reloaded(t, h.sub.all())

	sys2 := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys2.Shutdown(context.Background()) }()
	delivered := make(chan *agent.AgentMessage, 1)
	team2, err := orchestrator.Restore(actortest.Context(t), sys2, saved, agent.WithEnv(h.env),
		agent.WithHumanDelivery(func(m *agent.AgentMessage) { delivered <- m }))
	if err != nil {
		t.Fatal(err)
	}
	human2, _ := team2.Member(actortest.Context(t), "@Human")
	manager2, _ := team2.Member(actortest.Context(t), "@Manager")
	if human2 == nil || manager2 == nil {
		t.Fatal("the restored team lacks @Human or @Manager")
	}
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "second answer")))
	if err := agent.Say(actortest.Context(t), human2, manager2, agent.NewRequest("second question")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-delivered:
		if m.Content != "second answer" {
			t.Fatalf("the hook got %q", m.Content)
		}
	case <-actortest.Context(t).Done():
		t.Fatal("the restored person's hook got nothing")
	}
}

// A restored agent gets its LLM context and its lifetime counters back
// from the replayed log.
func TestRestoredAgentGetsItsContextAndCounters(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *agent.AgentConfig) { c.AgentLimits.RequestLimit = new(3) })
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "first answer")))
	h.say(h.manager, agent.Request, "first question")
	h.expectHuman()
	h.say(h.manager, agent.Request, "second question")
	h.barrier()
	saved := actortest.Reloaded(t, h.sub.all())

	sys2 := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys2.Shutdown(context.Background()) }()
	// Recreated agents have no hirer to inherit an Env from: the restore
	// gives it (it was a process-wide default before the redesign).
	team2, err := orchestrator.Restore(actortest.Context(t), sys2, saved, agent.WithEnv(h.env))
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := team2.Member(actortest.Context(t), "@Manager")
	if m2 == nil || m2.AgentID() != h.manager.AgentID() {
		t.Fatalf("restored manager %v", m2)
	}
	got, _ := proxy.Ask(actortest.Context(t), m2, func(_ *actor.Context, a *agent.BaseAgent) ([]int, error) {
		if a.Env != h.env {
			t.Error("the restored agent did not get the restore's Env")
		}
		runs, _, _ := a.Runner().AgentUsage()
		return []int{len(a.Runner().History()), runs}, nil
	})
	if got[0] != 4 || got[1] != 2 { // two exchanges of user + assistant; two runs
		t.Fatalf("restored history %d entries, %d runs; want 4 and 2", got[0], got[1])
	}
	// The lifetime limit of 3 leaves one run.
	before := len(h.srv.RequestsFor("@Manager"))
	if _, err := sys2.Ask(actortest.Context(t), m2, agent.NewRequest("third")); err != nil {
		t.Fatal(err)
	}
	if _, err := sys2.Ask(actortest.Context(t), m2, agent.NewRequest("fourth")); err == nil || !strings.Contains(err.Error(), "agent_request_limit of 3") {
		t.Fatalf("fourth run: %v", err)
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != before+1 {
		t.Fatalf("%d new requests, want 1", len(reqs)-before)
	}
	if users := userTexts(reqs[len(reqs)-1]); len(users) != 3 || !strings.HasSuffix(users[0], "first question") {
		t.Fatalf("restored request history %q", users)
	}
}

// A team restored from a log cut by a crash in the middle of an agent's
// turn (the model answered, the answer was not routed yet), whose message
// is then sent again (as a durable inbox does, at least once): the agent
// replays the model's logged answers instead of paying for them again (the
// fake server gets no request), runs the tool again, routes the answer,
// and keeps the run once in its history. The same from the log compacted
// (orchestrator.Compact with agent.Compaction, as a cluster snapshot
// holds it): the cut turn is kept whole.
func TestRestoredCutTurnReplaysTheModel(t *testing.T) {
	t.Run("whole log", func(t *testing.T) { cutTurnReplays(t, false) })
	t.Run("compacted log", func(t *testing.T) { cutTurnReplays(t, true) })
}

func cutTurnReplays(t *testing.T, compact bool) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(
		final(out(agent.Response, "@Human", "first answer")),
		llmtest.ToolCalls(llmtest.Call("call_1", "team_roles_missing", `{}`)),
		final(out(agent.Response, "@Human", "second answer")),
	)
	h.say(h.manager, agent.Request, "first question")
	second := h.say(h.manager, agent.Request, "second question")
	h.barrier()
	paid := len(h.srv.RequestsFor("@Manager"))

	// The crash: the log ends before the manager sent its second answer.
	all := actortest.Reloaded(t, h.sub.all())
	cut := slices.IndexFunc(all, func(m message.Message) bool {
		s, ok := m.(*message.SentMessage)
		return ok && s.Sender.Name() == "@Manager" && s.Message.Envelope().ParentID.UUID == second.ID
	})
	if cut < 0 {
		t.Fatal("no answer to the second question in the log")
	}
	sys2 := actor.NewSystem(actor.SystemConfig{Logger: h.logs.Logger()})
	t.Cleanup(func() { _ = sys2.Shutdown(context.Background()) })
	answers := make(chan *agent.AgentMessage, 4)
	log := all[:cut]
	if compact {
		log = actortest.Reloaded(t, orchestrator.Compact(log, agent.Compaction))
		if len(log) >= cut {
			t.Fatalf("the compacted log has %d records of %d", len(log), cut)
		}
	}
	team2, err := orchestrator.Restore(actortest.Context(t), sys2, log, agent.WithEnv(h.env),
		agent.WithHumanDelivery(func(m *agent.AgentMessage) { answers <- m }))
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := team2.Member(actortest.Context(t), "@Manager")
	human2, _ := team2.Member(actortest.Context(t), "@Human")
	if m2 == nil || human2 == nil {
		t.Fatal("the restored team lacks its members")
	}
	if err := agent.Say(actortest.Context(t), human2, m2, &agent.AgentMessage{Type: agent.Request, Content: "second question"}); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		if a.Content != "second answer" {
			t.Fatalf("the rerun answered %q; want the logged \"second answer\"", a.Content)
		}
	case <-actortest.Context(t).Done():
		t.Fatal("no answer to the rerun")
	}
	if n := len(h.srv.RequestsFor("@Manager")); n != paid {
		t.Fatalf("%d model requests after the rerun; want %d (the answers were replayed from the log)", n, paid)
	}
	hist, err := proxy.Ask(actortest.Context(t), m2, func(_ *actor.Context, a *agent.BaseAgent) (string, error) {
		var b strings.Builder
		for _, m := range a.Runner().History() {
			b.WriteString(m.Role + ":" + m.Content + "\n")
		}
		return b.String(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(hist, "second question"); n != 1 || strings.Contains(hist, "aborted") {
		t.Fatalf("history after the rerun (the second question %d times):\n%s", n, hist)
	}
}

// A team restored with WithEndpoint calls the model endpoint it gives, not
// the base URL the log recorded: the restored manager's model call reaches
// the second server with the key the mapping set, and so does that of a
// member it hires after the restore from a card that still names the first
// server. The first server gets no request; the records hold no key. A
// second WithEndpoint given after the first is ignored: the first wins.
func TestRestoredAgentCallsTheFirstEndpointGiven(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "first answer")))
	h.say(h.manager, agent.Request, "first question")
	h.expectHuman()
	h.barrier()
	saved := actortest.Reloaded(t, h.sub.all())
	cards, err := h.team.Cards(actortest.Context(t)) // the catalog, as a Resume hook registers it again
	if err != nil {
		t.Fatal(err)
	}
	before := len(h.srv.Requests())

	srv2 := llmtest.NewServer(llmtest.WithReporter(t))
	t.Cleanup(srv2.Close)
	const key = "sk-second-server-key"
	sys2 := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys2.Shutdown(context.Background()) }()
	rec := newRecorder()
	ctx := actortest.Context(t)
	team2, err := orchestrator.Restore(ctx, sys2, saved, orchestrator.WithSubscribers(rec),
		agent.WithEnv(&agent.Env{HTTPClient: srv2.HTTPClient()}),
		agent.WithEndpoint(func(recorded llm.ModelConfig) llm.ModelConfig {
			recorded.BaseURL, recorded.APIKey = srv2.URL(), key
			return recorded
		}),
		agent.WithEndpoint(func(recorded llm.ModelConfig) llm.ModelConfig {
			recorded.BaseURL, recorded.APIKey = srv2.URL(), "sk-the-later-option-loses"
			return recorded
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := team2.Register(ctx, cards...); err != nil {
		t.Fatal(err)
	}
	human2, _ := team2.Member(ctx, "@Human")
	manager2, _ := team2.Member(ctx, "@Manager")
	srv2.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "second answer")))
	if _, err := sys2.Ask(ctx, manager2, agent.NewRequest("second question")); err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(ctx, human2, manager2, agent.NewRequest("/hire_member Developer name=@Ada")); err != nil {
		t.Fatal(err)
	}
	if err := proxy.Do(ctx, manager2, func(*actor.Context, actor.Actor) error { return nil }); err != nil { // the command's turn is done
		t.Fatal(err)
	}
	ada, _ := team2.Member(ctx, "@Ada")
	if ada == nil {
		t.Fatal("the restored manager did not hire @Ada")
	}
	srv2.Model("@Ada").Enqueue(final(out(agent.Response, "@Manager", "done")))
	if _, err := sys2.Ask(ctx, ada, agent.NewRequest("build it")); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"@Manager", "@Ada"} {
		reqs := srv2.RequestsFor(who)
		if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+key {
			t.Fatalf("%s: %d requests to the second server (authorization of the first %q); want 1 with its key", who, len(reqs), authorization(reqs))
		}
	}
	if n := len(h.srv.Requests()) - before; n != 0 {
		t.Fatalf("the first server got %d requests after the restore; want none", n)
	}
	if err := team2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range rec.all() {
		data, err := message.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), key) {
			t.Fatalf("a record holds the key: %s", data)
		}
	}
}

// authorization is the Authorization header of the first request, "" when
// none came.
func authorization(reqs []*llmtest.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].Authorization
}
