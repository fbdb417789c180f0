package akotel_test

import (
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/akgentic/akgentic-go/actor/actortest"
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
		llmtest.ToolCalls(llmtest.Call("call_1", "no_such_tool", `{}`)).WithUsage(100, 10, 0).WithModel("gpt-4.1-2025-04-14"),
		final(agent.Request, "Developer", "Estimate the login page.").WithUsage(120, 20, 0),
		final(agent.Response, "@Human", "Login page: 3 days.").WithUsage(200, 30, 0),
	)
	tm.srv.Model("@Developer100").Enqueue(final(agent.Response, "@Manager", "3 days.").WithUsage(50, 5, 0))
	if got := tm.ask("Plan the sprint."); got.Content != "Login page: 3 days." {
		t.Fatalf("the person got %q", got.Content)
	}
	// The person's answer can reach the test before the exporter has been
	// given the members' Start records: Sync waits for every subscriber.
	if err := tm.team.Sync(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	rm := tel.metrics(t) // before the stop: the live members
	if n, _ := sum(rm, "akgentic.team.members", attribute.String("akgentic.team.id", tm.team.ID().String())); n != 3 {
		t.Errorf("live members %v, want 3 (@Human, @Manager, @Developer100)", n)
	}
	tm.stop()
	spans := tel.ended()
	want := `invoke_agent @Manager [Unset]
  chat gpt-4.1 [Unset]
  execute_tool no_such_tool [Error]
  chat gpt-4.1 [Unset]
  invoke_agent @Developer100 [Unset]
    chat gpt-4.1 [Unset]
    invoke_agent @Manager [Unset]
      chat gpt-4.1 [Unset]
      turn @Human [Unset]
`
	if got := tree(spans); got != want {
		t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
	}
	root := named(spans, "invoke_agent @Manager")[0].SpanContext().TraceID()
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
		if strings.HasPrefix(s.Name(), "turn ") || strings.HasPrefix(s.Name(), "invoke_agent ") {
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
	host, port := serverOf(t, tm.srv.URL())
	teamID := tm.team.ID().String()
	for _, want := range []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String("openai-compatible"),
		semconv.GenAIRequestModel("gpt-4.1"), // as configured: the span's name says it too
		semconv.GenAIResponseModel("gpt-4.1-2025-04-14"),
		semconv.GenAIUsageInputTokens(100),
		semconv.GenAIUsageOutputTokens(10),
		semconv.GenAIResponseFinishReasons("tool_calls"),
		semconv.GenAIAgentName("@Manager"),
		semconv.GenAIAgentID(tm.manager.AgentID().String()),
		semconv.GenAIConversationID(teamID),
		semconv.ServerAddress(host),
		semconv.ServerPort(port),
		attribute.Int("akgentic.llm.attempts", 2), // the 429, then the answer
	} {
		if got := attr(first, string(want.Key)); got != want.Value {
			t.Errorf("first model call: %s = %v, want %v", want.Key, got.Emit(), want.Value.Emit())
		}
	}
	if id := attr(first, string(semconv.GenAIResponseIDKey)).AsString(); !strings.HasPrefix(id, "chatcmpl-") {
		t.Errorf("first model call: response id %q", id)
	}
	if got := attr(chats[1], string(semconv.GenAIResponseModelKey)); got != attribute.StringValue("gpt-4.1") {
		t.Errorf("second model call: response model %v", got.Emit())
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
	for _, want := range []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName("no_such_tool"),
		semconv.GenAIToolCallID("call_1"),
		semconv.GenAIToolType("function"),
		semconv.GenAIConversationID(teamID),
		semconv.ErrorTypeKey.String("tool_retry"),
	} {
		if got := attr(tool, string(want.Key)); got != want.Value {
			t.Errorf("tool call: %s = %v, want %v", want.Key, got.Emit(), want.Value.Emit())
		}
	}
	if tool.SpanKind() != trace.SpanKindInternal {
		t.Errorf("tool call kind %v, want internal", tool.SpanKind())
	}
	mgr := named(spans, "invoke_agent @Manager")[0]
	for _, want := range []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIProviderNameKey.String("openai-compatible"),
		semconv.GenAIAgentName("@Manager"),
		semconv.GenAIConversationID(teamID),
	} {
		if got := attr(mgr, string(want.Key)); got != want.Value {
			t.Errorf("manager's turn: %s = %v, want %v", want.Key, got.Emit(), want.Value.Emit())
		}
	}
	if mgr.SpanKind() != trace.SpanKindInternal {
		t.Errorf("agent turn kind %v, want internal (an agent in process)", mgr.SpanKind())
	}
	if h := named(spans, "turn @Human")[0]; attr(h, string(semconv.GenAIOperationNameKey)).Type() != attribute.INVALID {
		t.Errorf("the person's proxy, no agent, has an operation name: %v", h.Attributes())
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if kv.Key == "gen_ai.system" || strings.HasPrefix(string(kv.Key), "akgentic.llm.cache") {
				t.Errorf("span %s records %s, which the conventions replaced", s.Name(), kv.Key)
			}
		}
		if got := s.InstrumentationScope(); got.Name != "github.com/akgentic/akgentic-go/observe/otel" || got.Version == "" || got.SchemaURL != semconv.SchemaURL {
			t.Errorf("span %s: scope %+v, want a name, a version and the conventions' schema", s.Name(), got)
		}
	}
	dev := named(spans, "invoke_agent @Developer100")[0]
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
	manager := role("Manager")
	tokens, duration := genaiconv.ClientTokenUsage{}.Name(), genaiconv.ClientOperationDuration{}.Name()
	for typ, want := range map[attribute.KeyValue]float64{semconv.GenAITokenTypeInput: 420, semconv.GenAITokenTypeOutput: 60} {
		if n, _ := sum(rm, tokens, manager, typ); n != want {
			t.Errorf("manager's %s tokens %v, want %v", typ.Value.Emit(), n, want)
		}
	}
	if n, _ := sum(rm, tokens, role("Developer"), semconv.GenAITokenTypeInput, semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String("openai-compatible"), semconv.GenAIRequestModel("gpt-4.1"),
		semconv.ServerAddress(host), semconv.ServerPort(port)); n != 50 {
		t.Errorf("developer's input tokens %v, want 50", n)
	}
	if n, _ := sum(rm, duration, manager); n != 3 {
		t.Errorf("manager's model-call latencies: %v recorded, want 3", n)
	}
	if n, _ := sum(rm, duration, manager, semconv.GenAIResponseModel("gpt-4.1-2025-04-14")); n != 1 {
		t.Errorf("manager's calls answered by the dated model: %v, want 1", n)
	}
	prices := llm.DefaultPriceTable()
	wantCost := prices.Cost("gpt-4.1", 100, 10, 0, 0) + prices.Cost("gpt-4.1", 120, 20, 0, 0) + prices.Cost("gpt-4.1", 200, 30, 0, 0)
	if n, _ := sum(rm, "akgentic.llm.cost", manager, semconv.GenAIRequestModel("gpt-4.1")); wantCost == 0 || math.Abs(n-wantCost) > 1e-12 {
		t.Errorf("manager's cost %v, want %v", n, wantCost)
	}
	noNames(t, rm)
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

// serverOf returns the host and port of a base URL.
func serverOf(t *testing.T, base string) (string, int) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	host, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

// noNames fails when a metric's labels carry a member's name or id: those
// are made per hire, and belong on spans only.
func noNames(t *testing.T, rm metricdata.ResourceMetrics) {
	t.Helper()
	banned := map[attribute.Key]bool{semconv.GenAIAgentNameKey: true, semconv.GenAIAgentIDKey: true,
		"akgentic.actor.name": true, "akgentic.actor.id": true}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, set := range labelSets(m) {
				for _, kv := range set.ToSlice() {
					if banned[kv.Key] {
						t.Errorf("metric %s is labelled with %s", m.Name, kv.Key)
					}
				}
			}
		}
	}
}

// labelSets returns the attribute sets of a metric's data points.
func labelSets(m metricdata.Metrics) []attribute.Set {
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return pointSets(d.DataPoints)
	case metricdata.Sum[float64]:
		return pointSets(d.DataPoints)
	case metricdata.Gauge[int64]:
		return pointSets(d.DataPoints)
	case metricdata.Histogram[int64]:
		return histogramSets(d.DataPoints)
	case metricdata.Histogram[float64]:
		return histogramSets(d.DataPoints)
	}
	return nil
}

func pointSets[N int64 | float64](ps []metricdata.DataPoint[N]) []attribute.Set {
	out := make([]attribute.Set, len(ps))
	for i, p := range ps {
		out[i] = p.Attributes
	}
	return out
}

func histogramSets[N int64 | float64](ps []metricdata.HistogramDataPoint[N]) []attribute.Set {
	out := make([]attribute.Set, len(ps))
	for i, p := range ps {
		out[i] = p.Attributes
	}
	return out
}
