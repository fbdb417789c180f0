package akotel_test

import (
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Person -> manager -> developer -> manager -> person is one
// trace; the manager's first model call is a 429 then a success, and its
// first tool call fails (an unknown tool: feedback the model acts on).
func TestConversationIsOneTrace(t *testing.T) {
	tel := newTelemetry(t, false)
	tm := newTeam(t, orchestrator.WithSubscribers(tel.sub))
	tm.srv.Model("@Manager").Enqueue(
		llmtest.RateLimited("1"),
		llmtest.ToolCalls(llmtest.Call("call_1", "no_such_tool", `{}`)).WithUsage(100, 10, 0),
		final(agent.Request, "Developer", "Estimate the login page.").WithUsage(120, 20, 0),
		final(agent.Response, "@Human", "Login page: 3 days.").WithUsage(200, 30, 0),
	)
	tm.srv.Model("@Developer100").Enqueue(final(agent.Response, "@Manager", "3 days.").WithUsage(50, 5, 0))
	if got := tm.ask("Plan the sprint."); got.Content != "Login page: 3 days." {
		t.Fatalf("the person got %q", got.Content)
	}
	rm := tel.metrics(t) // before the stop: the live members
	if n, _ := sum(rm, "akgentic.team.members", attribute.String("akgentic.team.id", tm.team.ID().String())); n != 3 {
		t.Errorf("live members %v, want 3 (@Human, @Manager, @Developer100)", n)
	}
	tm.stop()
	spans := tel.ended()
	want := `turn @Manager [Unset]
  chat gpt-4.1 [Unset]
  execute_tool no_such_tool [Error]
  chat gpt-4.1 [Unset]
  turn @Developer100 [Unset]
    chat gpt-4.1 [Unset]
    turn @Manager [Unset]
      chat gpt-4.1 [Unset]
      turn @Human [Unset]
`
	if got := tree(spans); got != want {
		t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
	}
	root := named(spans, "turn @Manager")[0].SpanContext().TraceID()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	for _, s := range spans {
		if s.SpanContext().TraceID() != root {
			t.Errorf("span %s is in trace %s, want %s", s.Name(), s.SpanContext().TraceID(), root)
		}
		if s.EndTime().Before(s.StartTime()) {
			t.Errorf("span %s ends before it starts", s.Name())
		}
		if strings.HasPrefix(s.Name(), "turn ") {
			continue
		}
		// A model or tool call lies within its turn.
		turn := byID[s.Parent().SpanID()]
		if turn == nil || s.StartTime().Before(turn.StartTime()) || s.EndTime().After(turn.EndTime()) {
			t.Errorf("span %s is not within its turn", s.Name())
		}
	}

	chats := named(spans, "chat gpt-4.1")
	first := chats[0]
	for key, want := range map[string]attribute.Value{
		"gen_ai.operation.name":      attribute.StringValue("chat"),
		"gen_ai.system":              attribute.StringValue("openai"),
		"gen_ai.provider.name":       attribute.StringValue("openai"),
		"gen_ai.request.model":       attribute.StringValue("gpt-4.1"),
		"gen_ai.usage.input_tokens":  attribute.IntValue(100),
		"gen_ai.usage.output_tokens": attribute.IntValue(10),
		"gen_ai.agent.name":          attribute.StringValue("@Manager"),
		"akgentic.llm.attempts":      attribute.IntValue(2), // the 429, then the answer
	} {
		if got := attr(first, key); got != want {
			t.Errorf("first model call: %s = %v, want %v", key, got.Emit(), want.Emit())
		}
	}
	if ev := first.Events(); len(ev) != 1 || ev[0].Name != "akgentic.llm.retried" {
		t.Errorf("first model call events %v, want one akgentic.llm.retried", ev)
	}
	if got := attr(chats[1], "akgentic.llm.attempts"); got != attribute.IntValue(1) {
		t.Errorf("second model call attempts %v, want 1", got.Emit())
	}
	if first.SpanKind() != trace.SpanKindClient {
		t.Errorf("model call kind %v, want client", first.SpanKind())
	}
	tool := named(spans, "execute_tool no_such_tool")[0]
	for key, want := range map[string]attribute.Value{
		"gen_ai.operation.name": attribute.StringValue("execute_tool"),
		"gen_ai.tool.name":      attribute.StringValue("no_such_tool"),
		"gen_ai.tool.call.id":   attribute.StringValue("call_1"),
	} {
		if got := attr(tool, key); got != want {
			t.Errorf("tool call: %s = %v, want %v", key, got.Emit(), want.Emit())
		}
	}
	dev := named(spans, "turn @Developer100")[0]
	for key, want := range map[string]attribute.Value{
		"akgentic.actor.role":     attribute.StringValue("Developer"),
		"akgentic.actor.kind":     attribute.StringValue(agent.Kind),
		"akgentic.message.type":   attribute.StringValue("AgentMessage"),
		"akgentic.message.sender": attribute.StringValue("@Manager"),
	} {
		if got := attr(dev, key); got != want {
			t.Errorf("developer's turn: %s = %v, want %v", key, got.Emit(), want.Emit())
		}
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if kv.Key == "akgentic.message.content" || strings.HasPrefix(string(kv.Key), "gen_ai.input") ||
				strings.HasPrefix(string(kv.Key), "gen_ai.output") || kv.Key == "gen_ai.tool.call.arguments" {
				t.Errorf("span %s records %s without CaptureContent", s.Name(), kv.Key)
			}
		}
	}
	noSecret(t, spans)

	rm = tel.metrics(t)
	role := func(r string) attribute.KeyValue { return attribute.String("akgentic.actor.role", r) }
	for r, want := range map[string]float64{"Manager": 2, "Developer": 1, "Human": 1} {
		if n, _ := sum(rm, "akgentic.turns", role(r)); n != want {
			t.Errorf("turns of %s: %v, want %v", r, n, want)
		}
		if n, _ := sum(rm, "akgentic.turn.duration", role(r)); n != want {
			t.Errorf("turn durations of %s: %v recorded, want %v", r, n, want)
		}
	}
	if n, _ := sum(rm, "akgentic.messages", role("Manager"), attribute.String("akgentic.message.type", "AgentMessage")); n != 2 {
		t.Errorf("messages sent by the manager: %v, want 2", n)
	}
	if n, _ := sum(rm, "akgentic.messages", role("Human")); n != 1 {
		t.Errorf("messages sent by the person: %v, want 1", n)
	}
	if n, _ := sum(rm, "akgentic.errors"); n != 0 {
		t.Errorf("errors %v, want 0", n)
	}
	manager := attribute.String("gen_ai.agent.name", "@Manager")
	for typ, want := range map[string]float64{"input": 420, "output": 60} {
		if n, _ := sum(rm, "gen_ai.client.token.usage", manager, attribute.String("gen_ai.token.type", typ)); n != want {
			t.Errorf("manager's %s tokens %v, want %v", typ, n, want)
		}
	}
	if n, _ := sum(rm, "gen_ai.client.token.usage", attribute.String("gen_ai.agent.name", "@Developer100"),
		attribute.String("gen_ai.token.type", "input")); n != 50 {
		t.Errorf("developer's input tokens %v, want 50", n)
	}
	if n, _ := sum(rm, "gen_ai.client.operation.duration", manager); n != 3 {
		t.Errorf("manager's model-call latencies: %v recorded, want 3", n)
	}
	prices := llm.DefaultPriceTable()
	wantCost := prices.Cost("gpt-4.1", 100, 10, 0, 0) + prices.Cost("gpt-4.1", 120, 20, 0, 0) + prices.Cost("gpt-4.1", 200, 30, 0, 0)
	if n, _ := sum(rm, "akgentic.llm.cost", manager, attribute.String("gen_ai.request.model", "gpt-4.1")); wantCost == 0 || math.Abs(n-wantCost) > 1e-12 {
		t.Errorf("manager's cost %v, want %v", n, wantCost)
	}
	if _, found := sum(rm, "akgentic.team.members"); found {
		t.Error("a stopped team still reports live members")
	}
}

// noSecret fails when a span, or an event of one, carries the API key.
func noSecret(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range spans {
		kvs := s.Attributes()
		for _, e := range s.Events() {
			kvs = append(kvs, e.Attributes...)
		}
		for _, kv := range kvs {
			if strings.Contains(kv.Value.Emit(), secret) {
				t.Errorf("span %s: %s carries the API key", s.Name(), kv.Key)
			}
		}
	}
}
