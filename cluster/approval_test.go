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

// passiveAssistant starts a worker that passivates idle teams after
// 100 ms, with the assistant template whose team_roles call waits for the
// person's approval (timeout: its deadline, 0 for none), creates a team
// and asks it the question whose call waits, and waits until the team is
// passive with the call waiting. The model answers the call, then
// approvedAnswer.
func passiveAssistant(t *testing.T, ctx context.Context, timeout time.Duration) (w *Worker, c *Client, srv *llmtest.Server, id uuid.UUID, resumed chan uuid.UUID) {
	t.Helper()
	e := embedded(t)
	srv = llmtest.NewServer(llmtest.WithReporter(t))
	t.Cleanup(srv.Close)
	srv.Model("@Assistant").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "team_roles", `{}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"`+approvedAnswer+`"}]}`),
	)
	env := &agent.Env{HTTPClient: srv.HTTPClient(), Guards: &agent.Guards{
		Approval: &tool.Approval{Always: []string{"team_roles"}, Timeout: timeout}}}
	passivated, resumed := make(chan uuid.UUID, 8), make(chan uuid.UUID, 8)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "w", IdleAfter: 100 * time.Millisecond,
		passivated: func(id uuid.UUID) { passivated <- id }, resumed: func(id uuid.UUID) { resumed <- id }}
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
	c = client(t, ctx, nc)
	if id, err = c.Create(ctx, "assistant", nil); err != nil {
		t.Fatal(err)
	}
	send(t, ctx, c, id, "@Assistant", "Which roles are missing?")
	for w.team(id) != nil { // passivated with its call waiting
		waitFor(t, ctx, passivated, id, "passivated")
	}
	return w, c, srv, id, resumed
}

// A person's decision on a passive team's approval request activates the
// team: the team, passivated while its tool call waited for the person,
// is restored with the agent still waiting, given the decision, and the
// call runs once; the conversation completes.
func TestDecisionWakesAPassiveTeam(t *testing.T) {
	ctx := actortest.Context(t)
	_, c, srv, id, _ := passiveAssistant(t, ctx, 0)
	request := approvalRequest(t, ctx, c, id)
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

// A passive team waiting for an approval with a deadline is activated at
// the deadline though no input comes: its passive lease holds the wake
// time, its shard's holder takes it then, and the restored agent denies
// the call as expired, once; the model is told and the conversation
// completes.
func TestApprovalDeadlineWakesAPassiveTeam(t *testing.T) {
	ctx := actortest.Context(t)
	// The deadline is the behaviour under test: long enough for the team
	// to be passivated before it, on a loaded machine.
	w, c, srv, id, resumed := passiveAssistant(t, ctx, 3*time.Second)
	l := leaseOf(t, ctx, w.kv, id)
	if !l.Passive || l.WakeAt.IsZero() {
		t.Fatalf("the passive team's lease: %+v; want passive, waking at the approval's deadline", l)
	}
	if time.Now().After(l.WakeAt) {
		t.Skipf("the machine is too slow for this test: the team was passivated %v after the approval's deadline", time.Since(l.WakeAt))
	}
	waitFor(t, ctx, resumed, id, "activated at its wake time")
	if now := time.Now(); now.Before(l.WakeAt) {
		t.Fatalf("activated %v before its wake time", l.WakeAt.Sub(now))
	}
	expired := 0
	answered := watchUntil(t, ctx, c, id, 0, func(m message.Message) bool {
		switch r := m.(type) {
		case *message.EventMessage:
			if ev, ok := r.Event.(*llm.ApprovalDeniedEvent); ok && ev.ToolCallID == "call_1" && ev.Expired {
				expired++
			}
		case *message.SentMessage:
			am, ok := r.Message.(*agent.AgentMessage)
			return ok && r.Sender.Name() == "@Assistant" && am.Content == approvedAnswer
		}
		return false
	})
	if !answered {
		t.Fatal("the run did not answer after the deadline")
	}
	if expired != 1 {
		t.Fatalf("the call was denied as expired %d times; want once", expired)
	}
	reqs := srv.RequestsFor("@Assistant")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2 (the tool call, the answer after its denial)", len(reqs))
	}
	if h := reqs[1].History(); len(h) != 3 || h[2].Role != "tool" || h[2].ToolCallID != "call_1" {
		t.Fatalf("the request after the deadline has history %+v; want the prompt, the call, its denial", h)
	}
}
