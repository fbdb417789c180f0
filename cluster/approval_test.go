package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/message"
)

const approvedAnswer = "Nobody is missing, I checked."

// A tool call waits for the person's approval when the team's owner
// crashes. The person's decision (Client.Decide) waits in the inbox while
// no worker owns the team; the next owner restores the agent still
// waiting, delivers the decision, and the call runs once: the model's
// next request carries its result, and the conversation completes.
func TestPendingApprovalSurvivesATakeover(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	srv := llmtest.NewServer(llmtest.WithReporter(t))
	t.Cleanup(srv.Close)
	srv.Model("@Assistant").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "team_roles", `{}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"`+approvedAnswer+`"}]}`),
	)
	env := &agent.Env{HTTPClient: srv.HTTPClient(), Guards: &agent.Guards{
		Approval: &tool.Approval{Always: []string{"team_roles"}}}}
	start := assistantWorkers(t, ctx, assistantTeam(srv, env, &teamtool.Card{Roles: tool.Capability{Expose: tool.ToolCall}}), env)
	nc1 := connect(t, e)
	w1 := start(nc1, "w1", make(chan uuid.UUID, 1))
	c := client(t, ctx, connect(t, e))
	id, err := c.Create(ctx, "assistant", nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, ctx, c, id, "@Assistant", "Which roles are missing?")
	request := approvalRequest(t, ctx, c, id)
	if _, err := acked(ctx, w1.team(id), w1.ledgerOf(id)); err != nil { // the pause is stored
		t.Fatal(err)
	}
	nc1.Close() // the crash
	if _, err := c.Decide(ctx, id, request, true, "go ahead"); err != nil {
		t.Fatal(err)
	}

	resumed := make(chan uuid.UUID, 1)
	w2 := start(connect(t, e), "w2", resumed)
	takenOver(t, ctx, w2, resumed, id)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	answered, returns, granted := false, 0, 0
	for m, err := range c.Watch(wctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch r := m.(type) {
		case *message.EventMessage:
			switch ev := r.Event.(type) {
			case *llm.ToolReturnEvent:
				if ev.ToolCallID == "call_1" && ev.Success {
					returns++
				}
			case *llm.ApprovalGrantedEvent:
				if ev.By == "@Human" && ev.Reason == "go ahead" {
					granted++
				}
			}
		case *message.SentMessage:
			if am, ok := r.Message.(*agent.AgentMessage); ok && r.Sender.Name() == "@Assistant" && am.Content == approvedAnswer {
				answered = true
				stop()
			}
		}
	}
	if !answered {
		t.Fatal("the approved run did not answer")
	}
	if returns != 1 || granted != 1 {
		t.Fatalf("the call ran %d times after %d approvals; want once after one", returns, granted)
	}
	reqs := srv.RequestsFor("@Assistant")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2 (the tool call, the answer after it ran)", len(reqs))
	}
	if h := reqs[1].History(); len(h) != 3 || h[2].Role != "tool" || h[2].ToolCallID != "call_1" {
		t.Fatalf("the request after the approval has history %+v; want the prompt, the call, its result", h)
	}
}

// approvalRequest watches the team until a member asks the person's
// approval, and returns the request's id.
func approvalRequest(t *testing.T, ctx context.Context, c *Client, team uuid.UUID) uuid.UUID {
	t.Helper()
	var req uuid.UUID
	watchUntil(t, ctx, c, team, 0, func(m message.Message) bool {
		if s, ok := m.(*message.SentMessage); ok && s.Recipient.Name() == "@Human" {
			if am, ok := s.Message.(*agent.AgentMessage); ok && am.Approval != nil {
				req = am.ID
			}
		}
		return req != uuid.Nil
	})
	if req == uuid.Nil {
		t.Fatal("no approval request for the person")
	}
	return req
}

// A person's decision on a passive team's approval request activates the
// team: the team, passivated while its tool call waited for the person,
// is restored with the agent still waiting, given the decision, and the
// call runs once; the conversation completes.
func TestDecisionWakesAPassiveTeam(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	srv := llmtest.NewServer(llmtest.WithReporter(t))
	t.Cleanup(srv.Close)
	srv.Model("@Assistant").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "team_roles", `{}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"`+approvedAnswer+`"}]}`),
	)
	env := &agent.Env{HTTPClient: srv.HTTPClient(), Guards: &agent.Guards{
		Approval: &tool.Approval{Always: []string{"team_roles"}}}}
	passivated := make(chan uuid.UUID, 8)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "w", IdleAfter: 100 * time.Millisecond,
		passivated: func(id uuid.UUID) { passivated <- id }}
	nc := connect(t, e)
	w, err := StartWorker(ctx, nc.Conn, system(t), cfg,
		assistantTeam(srv, env, &teamtool.Card{Roles: tool.Capability{Expose: tool.ToolCall}}), agent.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	c := client(t, ctx, nc)
	id, err := c.Create(ctx, "assistant", nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, ctx, c, id, "@Assistant", "Which roles are missing?")
	request := approvalRequest(t, ctx, c, id)
	for w.team(id) != nil { // passivated with its call waiting
		waitFor(t, ctx, passivated, id, "passivated")
	}
	if _, err := c.Decide(ctx, id, request, true, "go ahead"); err != nil {
		t.Fatal(err)
	}
	returns := 0
	answered := watchUntil(t, ctx, c, id, 0, func(m message.Message) bool {
		switch r := m.(type) {
		case *message.EventMessage:
			if ev, ok := r.Event.(*llm.ToolReturnEvent); ok && ev.ToolCallID == "call_1" && ev.Success {
				returns++
			}
		case *message.SentMessage:
			am, ok := r.Message.(*agent.AgentMessage)
			return ok && r.Sender.Name() == "@Assistant" && am.Content == approvedAnswer
		}
		return false
	})
	if !answered {
		t.Fatal("the approved run did not answer")
	}
	if returns != 1 {
		t.Fatalf("the call ran %d times; want once", returns)
	}
	if reqs := srv.RequestsFor("@Assistant"); len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2 (the tool call, the answer after it ran)", len(reqs))
	}
}
