package akotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	akotel "github.com/akgentic/akgentic-go/observe/otel"
	"github.com/akgentic/akgentic-go/orchestrator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// secret is the API key of the agents' model: no span may carry it.
const secret = "sk-akotel-test-secret"

// telemetry is a subscriber on a span recorder and a manual metric reader.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	sub    *akotel.Subscriber
}

func newTelemetry(t testing.TB, capture bool) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	sub, err := akotel.New(akotel.Options{TracerProvider: tp, MeterProvider: mp, CaptureContent: capture,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tel.sub = sub
	return tel
}

// ended returns the ended spans.
func (tel *telemetry) ended() []sdktrace.ReadOnlySpan { return tel.spans.Ended() }

// metrics collects the metrics.
func (tel *telemetry) metrics(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// sum returns the sum of the data points of the named metric whose
// attributes include want (a counter's value, a histogram's sum, a gauge's
// value), and whether the metric was found.
func sum(rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) (float64, bool) {
	var total float64
	found := false
	match := func(set attribute.Set) bool {
		for _, kv := range want {
			if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
				return false
			}
		}
		return true
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						total, found = total+float64(p.Value), true
					}
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						total, found = total+p.Value, true
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						total, found = total+float64(p.Value), true
					}
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						total, found = total+float64(p.Sum), true
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						total, found = total+float64(p.Count), true // a latency: count the calls
					}
				}
			}
		}
	}
	return total, found
}

// team is a three-agent team on a scripted model: @Human (a
// HumanProxy), @Manager, and the Developer the manager hires
// (@Developer100), in a team made with opts.
type team struct {
	t       testing.TB
	srv     *llmtest.Server
	env     *agent.Env
	sys     *actor.System
	team    *orchestrator.Team
	human   *message.Address
	manager *message.Address
	inbox   chan *agent.AgentMessage
	cards   []*orchestrator.AgentCard
}

func newTeam(t testing.TB, opts ...orchestrator.Option) *team {
	t.Helper()
	tm := &team{t: t, srv: llmtest.NewServer(), inbox: make(chan *agent.AgentMessage, 10)}
	t.Cleanup(tm.srv.Close)
	tm.env = &agent.Env{HTTPClient: tm.srv.HTTPClient(), Rand: func(int) int { return 0 },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }} // retries do not wait
	for _, role := range []string{"Manager", "Developer"} {
		cfg := agent.NewConfig("@"+role, role)
		cfg.Prompt = agent.PromptTemplate{Template: "You are the " + role + "."}
		cfg.Model = tm.srv.ModelConfig("gpt-4.1")
		cfg.Model.APIKey = secret
		card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
			AgentClass: agent.Kind, Description: role, Config: cfg, CanBeHired: role == "Developer",
			RoutesTo: map[string][]string{"Manager": {"Developer"}}[role],
		})
		if err != nil {
			t.Fatal(err)
		}
		tm.cards = append(tm.cards, card)
	}
	tm.sys, tm.team, _ = actortest.NewTeam(t, opts...)
	ctx := actortest.Context(t)
	if err := tm.team.Register(ctx, tm.cards...); err != nil {
		t.Fatal(err)
	}
	var err error
	tm.human, err = tm.team.Spawn(ctx, &agent.HumanProxy{Deliver: tm.deliver}, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tm.cards[0].ConfigCopy()
	if err != nil {
		t.Fatal(err)
	}
	tm.manager, err = tm.team.Spawn(ctx, &agent.BaseAgent{Env: tm.env}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func (tm *team) deliver(m *agent.AgentMessage) { tm.inbox <- m }

// ask sends a request from @Human to the manager and returns the answer
// the person gets.
func (tm *team) ask(text string) *agent.AgentMessage {
	tm.t.Helper()
	if err := agent.Say(actortest.Context(tm.t), tm.human, tm.manager, agent.NewRequest(text)); err != nil {
		tm.t.Fatal(err)
	}
	select {
	case m := <-tm.inbox:
		return m
	case <-time.After(actortest.Timeout):
		tm.t.Fatal("timed out waiting for the answer to @Human")
		return nil
	}
}

// stop stops the team: every span has ended after it.
func (tm *team) stop() {
	tm.t.Helper()
	if err := tm.team.Stop(actortest.Context(tm.t)); err != nil {
		tm.t.Fatal(err)
	}
}

// final is a model answer sending one message.
func final(intent agent.Intent, to, text string) llmtest.Step {
	out, _ := json.Marshal(agent.StructuredOutput{Messages: []agent.OutboundRequest{
		{MessageType: intent, Recipient: to, Message: text}}})
	return llmtest.Final(string(out))
}

// tree renders the spans as an indented tree, children in start order:
// "name [status]" per line.
func tree(spans []sdktrace.ReadOnlySpan) string {
	kids := map[string][]sdktrace.ReadOnlySpan{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		p := s.Parent().SpanID().String()
		if s.Parent().IsValid() && ids[p] {
			kids[p] = append(kids[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(list []sdktrace.ReadOnlySpan, depth int)
	walk = func(list []sdktrace.ReadOnlySpan, depth int) {
		sort.SliceStable(list, func(i, j int) bool { return list[i].StartTime().Before(list[j].StartTime()) })
		for _, s := range list {
			fmt.Fprintf(&b, "%s%s [%s]\n", strings.Repeat("  ", depth), s.Name(), s.Status().Code)
			walk(kids[s.SpanContext().SpanID().String()], depth+1)
		}
	}
	walk(roots, 0)
	return b.String()
}

// named returns the ended spans called name.
func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attr returns a span's attribute value ("" when absent).
func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}
