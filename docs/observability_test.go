package docs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	akotel "github.com/akgentic/akgentic-go/observe/otel"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// hello is a scripted answer of @Assistant to the person.
const hello = `{"messages":[{"message_type":"response","recipient":"@Human","message":"Hello!"}]}`

// ask spawns the person and @Assistant (on the scripted model) in team,
// has the person ask, and returns the answer.
func ask(ctx context.Context, team *orchestrator.Team, model *llmtest.Server, stream bool) (string, error) {
	answers := make(chan *agent.AgentMessage, 1)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		return "", err
	}
	cfg := agent.NewConfig("@Assistant", "Assistant")
	cfg.Model = model.ModelConfig("gpt-4.1")
	cfg.Runtime.Stream = stream
	assistant, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: model.HTTPClient()}}, cfg)
	if err != nil {
		return "", err
	}
	if err := agent.Say(ctx, human, assistant, agent.NewRequest("Hi")); err != nil {
		return "", err
	}
	select {
	case m := <-answers:
		return m.Content, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// tracedTeam makes a team whose records become spans, sent to exp, and
// metrics, read by reader. shutdown flushes them: call it once the team
// stopped.
func tracedTeam(sys *actor.System, exp sdktrace.SpanExporter, reader sdkmetric.Reader) (team *orchestrator.Team, shutdown func(context.Context) error, err error) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "my-team"))))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	sub, err := akotel.New(akotel.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		return nil, nil, err
	}
	team, err = orchestrator.New(sys, orchestrator.WithSubscribers(sub))
	if err != nil {
		return nil, nil, err
	}
	return team, func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }, nil
}

// keepSpans keeps its spans when the provider shuts down, for the example
// to read them.
type keepSpans struct{ *tracetest.InMemoryExporter }

func (keepSpans) Shutdown(context.Context) error { return nil }

// A team of a person and an LLM agent, traced: a span per turn and per
// model call, and the metrics.
func Example_tracing() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Assistant").Enqueue(llmtest.Final(hello))
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)

	exp := keepSpans{tracetest.NewInMemoryExporter()}
	reader := sdkmetric.NewManualReader()
	team, shutdown, err := tracedTeam(sys, exp, reader)
	if err != nil {
		panic(err)
	}
	if _, err := ask(ctx, team, model, false); err != nil {
		panic(err)
	}
	_ = team.Stop(ctx) // ends the spans still open
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	if err := shutdown(ctx); err != nil {
		panic(err)
	}

	var spans []string
	for _, s := range exp.GetSpans() {
		spans = append(spans, s.Name)
	}
	slices.Sort(spans)
	fmt.Println("spans:", strings.Join(slices.Compact(spans), ", "))
	var metrics []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics = append(metrics, m.Name)
		}
	}
	slices.Sort(metrics)
	fmt.Println("metrics:", strings.Join(metrics, ", "))
	// Output:
	// spans: chat gpt-4.1, invoke_agent @Assistant, turn @Human
	// metrics: akgentic.llm.cost, akgentic.messages, akgentic.turn.duration, akgentic.turns, gen_ai.client.operation.duration, gen_ai.client.token.usage
}

// loggedTeam starts a team whose every record is appended to the event log
// at path.
func loggedTeam(sys *actor.System, path string) (*orchestrator.Team, error) {
	teamID := uuid.New()
	w, err := eventlog.Create(path, teamID, eventlog.Options{Sync: eventlog.SyncBatch})
	if err != nil {
		return nil, err
	}
	return orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(w))
}

// restoreTeam recreates the team of the event log at path, with the same
// ids, configs and last states, and goes on writing the log.
func restoreTeam(ctx context.Context, sys *actor.System, path string, env *agent.Env, deliver func(*agent.AgentMessage)) (*orchestrator.Team, error) {
	log, err := eventlog.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if log.Truncated != nil { // a last line cut by a crash: skipped
		fmt.Println("note:", log.Truncated)
	}
	w, err := eventlog.Append(path, eventlog.Options{Sync: eventlog.SyncBatch})
	if err != nil {
		return nil, err
	}
	return orchestrator.Restore(ctx, sys, log.Messages, orchestrator.WithSubscribers(w),
		agent.WithEnv(env),               // the recreated agents' environment
		agent.WithHumanDelivery(deliver)) // the recreated person's hook
}

// A team written to its event log, stopped, and restored from it.
func Example_eventLog() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "docs-eventlog")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "team.log")
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Assistant").Enqueue(llmtest.Final(hello))
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)

	team, err := loggedTeam(sys, path)
	if err != nil {
		panic(err)
	}
	if _, err := ask(ctx, team, model, false); err != nil {
		panic(err)
	}
	_ = team.Stop(ctx)
	answers := make(chan *agent.AgentMessage, 1)
	team, err = restoreTeam(ctx, sys, path, &agent.Env{HTTPClient: model.HTTPClient()},
		func(m *agent.AgentMessage) { answers <- m })
	if err != nil {
		panic(err)
	}
	members, _ := team.Members(ctx)
	for _, m := range members {
		fmt.Println("restored:", m.Name())
	}
	human, _ := team.Member(ctx, "@Human")
	assistant, _ := team.Member(ctx, "@Assistant")
	model.Model("@Assistant").Enqueue(llmtest.Final(
		`{"messages":[{"message_type":"response","recipient":"@Human","message":"Hello again!"}]}`))
	_ = agent.Say(ctx, human, assistant, agent.NewRequest("Still there?"))
	fmt.Println("answer:", (<-answers).Content)
	fmt.Println("model calls:", len(model.RequestsFor("@Assistant")))
	_ = team.Stop(ctx)
	// Output:
	// restored: @Human
	// restored: @Assistant
	// answer: Hello again!
	// model calls: 2
}

// Writing prints each answer of the team's agents as it is written: the
// deltas of a streamed answer (Runtime.Stream), then the whole message.
type Writing struct {
	mu   sync.Mutex
	text strings.Builder
}

func (w *Writing) OnMessage(m message.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch m := m.(type) {
	case *message.EventMessage:
		if d, ok := message.EventAs[llm.TextDeltaEvent](m); ok {
			if d.Seq == 0 {
				w.text.Reset() // a new answer, or the same one sent again after a cut
			}
			w.text.WriteString(d.Delta) // the answer's JSON text so far
		}
	case *message.SentMessage:
		if am, ok := m.Message.(*agent.AgentMessage); ok {
			fmt.Printf("%s -> %s: %s\n", m.Sender.Name(), m.Recipient.Name(), am.Content)
		}
	}
}

// Written returns the text of the last streamed answer.
func (w *Writing) Written() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text.String()
}

// A subscriber sees every record of the team in order, the deltas of a
// streamed answer included.
func Example_subscriber() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Assistant").Enqueue(llmtest.Final(hello))
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)

	w := &Writing{}
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(w))
	if err != nil {
		panic(err)
	}
	if _, err := ask(ctx, team, model, true); err != nil {
		panic(err)
	}
	_, _ = team.Members(ctx) // a barrier: every subscriber has seen what came before
	fmt.Println("streamed:", w.Written())
	_ = team.Stop(ctx)
	// Output:
	// @Human -> @Assistant: Hi
	// @Assistant -> @Human: Hello!
	// streamed: {"messages":[{"message_type":"response","recipient":"@Human","message":"Hello!"}]}
}
