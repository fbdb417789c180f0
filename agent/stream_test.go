package agent_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
	"github.com/akgentic/akgentic-go/proxy"
)

// Token streaming through a team: an agent whose config streams reports
// its answer's text to the team's subscribers as ephemeral
// TextDeltaEvents, in order, joining to the answer it then routes as
// usual; the durable log and the team's events index keep none of them,
// and a stream cut mid-way is never routed half.

func streamingAgents(_ *harness, c *agent.AgentConfig) { c.Runtime.Stream = true }

// deltasOf returns the text deltas an agent published, in log order.
func deltasOf(h *harness, who *message.Address) []llm.TextDeltaEvent {
	var out []llm.TextDeltaEvent
	for _, ev := range of[*message.EventMessage](h.sub, who) {
		if d, ok := message.EventAs[llm.TextDeltaEvent](ev); ok {
			out = append(out, d)
		}
	}
	return out
}

func isDelta(m message.Message) bool {
	ev, ok := m.(*message.EventMessage)
	if !ok {
		return false
	}
	_, ok = message.EventAs[llm.TextDeltaEvent](ev)
	return ok
}

func TestStreamedTurn(t *testing.T) {
	h := newHarness(t, streamingAgents)
	answer := final(out(agent.Response, "@Human", "Streamed, piece by piece."))
	h.srv.Model("@Manager").Enqueue(answer)
	h.say(h.manager, agent.Request, "hello")
	if got := h.expectHuman(); got.Content != "Streamed, piece by piece." {
		t.Fatalf("human got %q", got.Content)
	}
	h.barrier()
	ds := deltasOf(h, h.manager)
	var joined strings.Builder
	for i, d := range ds {
		if d.Seq != i {
			t.Fatalf("delta %d has seq %d: out of order", i, d.Seq)
		}
		joined.WriteString(d.Delta)
	}
	var want string
	for _, ev := range of[*message.EventMessage](h.sub, h.manager) {
		if me, ok := message.EventAs[llm.MessageEvent](ev); ok && me.Message.Role == "assistant" {
			want = me.Message.Content
		}
	}
	if len(ds) < 5 || want == "" || joined.String() != want {
		t.Fatalf("%d deltas joined to %q, the recorded answer is %q", len(ds), joined.String(), want)
	}
	usage := 0
	for _, ev := range of[*message.EventMessage](h.sub, h.manager) {
		if _, ok := message.EventAs[llm.UsageEvent](ev); ok {
			usage++
		}
	}
	if usage != 1 {
		t.Fatalf("%d usage events for one answer", usage)
	}

	// The team's events index keeps no delta; its subscribers saw them.
	evs, err := h.team.Events(actortest.Context(t), orchestrator.EventFilter{Agent: h.manager.AgentID()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if isDelta(ev) {
			t.Fatal("Team.Events kept a TextDeltaEvent")
		}
	}
	if len(evs) == 0 {
		t.Fatal("Team.Events lost the other events")
	}

	// The durable log skips them, and a restore of it has none.
	path := filepath.Join(t.TempDir(), "team.jsonl")
	w, err := eventlog.Create(path, h.team.ID(), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := h.sub.all()
	for _, m := range all {
		w.OnMessage(m)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(all) - len(ds); len(log.Messages) != want {
		t.Fatalf("the log has %d messages, want %d (all but the %d deltas)", len(log.Messages), want, len(ds))
	}
	for _, m := range log.Messages {
		if isDelta(m) {
			t.Fatal("the event log wrote a TextDeltaEvent")
		}
	}
	sys2 := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys2.Shutdown(context.Background()) }()
	team2, err := orchestrator.Restore(actortest.Context(t), sys2, log.Messages, agent.WithEnv(h.env))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := team2.Messages(actortest.Context(t), orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if isDelta(m) {
			t.Fatal("the restored team has a TextDeltaEvent")
		}
	}
	m2, _ := team2.Member(actortest.Context(t), "@Manager")
	n, err := proxy.Ask(actortest.Context(t), m2, func(_ *actor.Context, a *agent.BaseAgent) (int, error) { return len(a.Runner().History()), nil })
	if err != nil || n != 2 {
		t.Fatalf("restored history: %d entries (%v), want the prompt and the whole answer", n, err)
	}
}

// A stream cut mid-way on every attempt fails the turn (an ErrorMessage
// naming the cut); nothing of the half answer is routed. The next turn's
// request is valid and its answer is routed.
func TestStreamCutNeverRouted(t *testing.T) {
	h := newHarness(t, streamingAgents, func(_ *harness, c *agent.AgentConfig) { c.Runtime.HTTP.MaxAttempts = 2 })
	answer := final(out(agent.Response, "@Human", "Whole answer"))
	h.srv.Model("@Manager").Enqueue(answer.CutAfter(6), answer.CutAfter(6), answer)
	h.say(h.manager, agent.Request, "first")
	waitFrom[*message.ErrorMessage](h, h.manager, "the failed turn's error")
	errs := of[*message.ErrorMessage](h.sub, h.manager)
	if len(errs) != 1 || !strings.Contains(errs[0].Content, "stream was cut") {
		t.Fatalf("errors %+v, want the cut stream reported", errs)
	}
	if sent := h.sub.sentTo("@Human"); len(sent) != 0 {
		t.Fatalf("a cut answer was routed: %+v", sent[0])
	}
	h.noHuman()
	starts := 0 // a Seq 0 starts an answer: one per attempt
	for _, d := range deltasOf(h, h.manager) {
		if d.Seq == 0 {
			starts++
		}
	}
	if starts != 2 {
		t.Fatalf("%d streamed attempts, want 2", starts)
	}
	h.say(h.manager, agent.Request, "second")
	if got := h.expectHuman(); got.Content != "Whole answer" {
		t.Fatalf("human got %q", got.Content)
	}
	if f := h.srv.Failures(); len(f) > 0 {
		t.Fatalf("server refused requests: %v", f)
	}
}
