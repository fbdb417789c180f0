package cluster

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

const rerunAnswer = "Nobody is missing."

// assistantTeam is a template of a person and an LLM agent, @Assistant,
// on srv, with the tool cards given.
func assistantTeam(srv *llmtest.Server, env *agent.Env, cards ...tool.Card) map[string]Template {
	return map[string]Template{"assistant": {Person: "@Human", Build: func(ctx context.Context, t *orchestrator.Team, _ json.RawMessage) error {
		if _, err := t.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
			return err
		}
		cfg := agent.NewConfig("@Assistant", "Assistant")
		cfg.Model = srv.ModelConfig("gpt-4.1")
		cfg.Tools = cards
		_, err := t.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
		return err
	}}}
}

// assistantWorkers returns how to start a worker of tmpls, its agents
// with env, on a connection, named owner, telling resumed of each team it
// takes over; it is closed when the test ends.
func assistantWorkers(t *testing.T, ctx context.Context, tmpls map[string]Template, env *agent.Env) func(nc *conn, owner string, resumed chan uuid.UUID) *Worker {
	return func(nc *conn, owner string, resumed chan uuid.UUID) *Worker {
		cfg := Config{Logger: discard, Lease: testLease, Owner: owner, resumed: func(id uuid.UUID) { resumed <- id }}
		w, err := StartWorker(ctx, nc.Conn, system(t), cfg, tmpls, agent.WithEnv(env))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close(context.Background()) }) // the first one's connection is closed
		return w
	}
}

// The owner crashes while an agent's turn on a person's input waits for its
// second model call, the first (a tool call) and the tool's result already in
// the ledger. The next owner runs the input again (at least once) and the
// agent replays the logged answer instead of asking the model again: the
// model gets the first request once (the rerun's first request is the cut
// call's, its history the prompt once, the replayed tool call and the tool's
// result; without the replay it would hold the prompt twice), and the
// conversation completes.
func TestRerunDoesNotPayTwice(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	srv := llmtest.NewServer(llmtest.WithReporter(t))
	t.Cleanup(srv.Close)
	hang := llmtest.Hang()
	inFlight := make(chan struct{}, 1)
	hang.Check = func(*llmtest.Request) error { inFlight <- struct{}{}; return nil }
	srv.Model("@Assistant").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "team_roles_missing", `{}`)),
		hang, // the crash comes while this call waits
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"`+rerunAnswer+`"}]}`),
	)
	env := &agent.Env{HTTPClient: srv.HTTPClient()}
	start := assistantWorkers(t, ctx, assistantTeam(srv, env), env)
	nc1 := connect(t, e)
	w1 := start(nc1, "w1", make(chan uuid.UUID, 1))
	c := client(t, ctx, connect(t, e))
	id, err := c.Create(ctx, "assistant", nil)
	if err != nil {
		t.Fatal(err)
	}
	input := send(t, ctx, c, id, "@Assistant", "Which roles are missing?")[0]
	select {
	case <-inFlight:
	case <-ctx.Done():
		t.Fatal("the second model call never came")
	}
	if _, err := acked(ctx, w1.team(id), w1.ledgerOf(id)); err != nil { // the tool call and its result are stored
		t.Fatal(err)
	}
	nc1.Close() // the crash

	resumed := make(chan uuid.UUID, 1)
	w2 := start(connect(t, e), "w2", resumed)
	takenOver(t, ctx, w2, resumed, id)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	answered := false
	for m, err := range c.Watch(wctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := m.(*message.SentMessage); ok && s.Sender.Name() == "@Assistant" {
			if am, ok := s.Message.(*agent.AgentMessage); ok && am.Content == rerunAnswer && am.ParentID.UUID != input {
				answered = true // the rerun's message (a new id) answered
				stop()
			}
		}
	}
	if !answered {
		t.Fatal("the rerun was not answered")
	}
	reqs := srv.RequestsFor("@Assistant")
	if len(reqs) != 3 {
		t.Fatalf("%d model requests; want 3 (the tool call once, the call cut by the crash, its rerun)", len(reqs))
	}
	if h := reqs[2].History(); len(h) != 3 || h[1].ToolCalls[0].ID != "call_1" || h[2].Role != "tool" {
		t.Fatalf("the rerun's request history %+v; want the prompt, the replayed tool call, the tool's result", h)
	}
}
