// An LLM team traced with OpenTelemetry: every turn, model call and tool
// call of a conversation becomes a span, printed on stdout as JSON.
//
//	go run ./examples/08_otel
//
// The team of examples/07_llm_team (a person, a manager, the developer it
// hires) on a scripted model, with an akotel.Subscriber. The person's one
// request is one trace: the manager's turn, its model calls (the first
// answered by a 429, then retried), the developer's turn under it, the
// manager's turn on the developer's answer, and the person's turn on the
// final answer. Then the tokens each role used, from the metrics (which
// are labelled by role and model, never by a member's name). To
// send the spans to Jaeger, Tempo or Honeycomb instead,
// replace the stdout exporter with an OTLP one (see docs/observability.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	akotel "github.com/akgentic/akgentic-go/observe/otel"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// script plays the model, offline. The manager's first request is
// rate-limited once: its span shows two attempts.
func script(srv *llmtest.Server) {
	srv.Model("@Manager").Enqueue(
		llmtest.RateLimited("1"),
		answer(agent.Request, "Developer", "Estimate the login page.").WithUsage(420, 35, 0),
		answer(agent.Response, "@Human", "Login page: 3 days, by @Developer100.").WithUsage(510, 28, 0),
	)
	srv.Model("@Developer100").Enqueue(
		answer(agent.Response, "@Manager", "Login page: 3 days.").WithUsage(300, 12, 0),
	)
}

// answer is one model output: a StructuredOutput sending one message.
func answer(intent agent.Intent, to, text string) llmtest.Step {
	out, _ := json.Marshal(agent.StructuredOutput{Messages: []agent.OutboundRequest{
		{MessageType: intent, Recipient: to, Message: text},
	}})
	return llmtest.Final(string(out))
}

func run(ctx context.Context, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	// The OpenTelemetry SDK: spans written to out as each ends, metrics
	// read on demand. A service would rather batch the spans
	// (sdktrace.WithBatcher) to an OTLP exporter, install the providers as
	// the globals (otel.SetTracerProvider, otel.SetMeterProvider) and call
	// akotel.New(akotel.Options{}).
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer func() { err = errors.Join(err, tp.Shutdown(context.Background())) }()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { err = errors.Join(err, mp.Shutdown(context.Background())) }()
	tracing, err := akotel.New(akotel.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		return err
	}

	srv := llmtest.NewServer()
	defer srv.Close()
	script(srv)
	model := srv.ModelConfig("gpt-4.1")
	env := &agent.Env{HTTPClient: srv.HTTPClient(), Rand: func(int) int { return 0 },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }} // retry at once

	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { err = errors.Join(err, shutdown(sys)) }()
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(tracing))
	if err != nil {
		return err
	}
	managerCfg := agent.NewConfig("@Manager", "Manager")
	managerCfg.Prompt = agent.PromptTemplate{Template: "You are a project manager. Delegate to specialists."}
	managerCfg.Model = model
	developerCfg := agent.NewConfig("@Developer", "Developer")
	developerCfg.Prompt = agent.PromptTemplate{Template: "You are a software developer."}
	developerCfg.Model = model
	managerCard, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
		AgentClass: agent.Kind, Description: "Project manager", Config: managerCfg, RoutesTo: []string{"Developer"},
	})
	if err != nil {
		return err
	}
	developerCard, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
		AgentClass: agent.Kind, Description: "Developer", Config: developerCfg, CanBeHired: true,
	})
	if err != nil {
		return err
	}
	if err := team.Register(ctx, managerCard, developerCard); err != nil {
		return err
	}
	answers := make(chan *agent.AgentMessage, 10)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		return err
	}
	cfg, err := managerCard.ConfigCopy()
	if err != nil {
		return err
	}
	manager, err := team.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
	if err != nil {
		return err
	}
	if err := agent.Say(ctx, human, manager, agent.NewRequest("Plan the next sprint.")); err != nil {
		return err
	}
	select {
	case <-answers:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the manager's answer: %w", ctx.Err())
	}
	// The team's stop ends every span still open.
	if err := team.Stop(ctx); err != nil {
		return err
	}
	if err := printTokens(ctx, out, reader); err != nil {
		return err
	}
	if failures := srv.Failures(); len(failures) > 0 {
		return fmt.Errorf("scripted model: %v", failures)
	}
	return nil
}

// printTokens prints the tokens each role used, from the metrics.
func printTokens(ctx context.Context, out io.Writer, reader sdkmetric.Reader) error {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[int64])
			if !ok || m.Name != "gen_ai.client.token.usage" {
				continue
			}
			for _, p := range h.DataPoints {
				role, _ := p.Attributes.Value("akgentic.actor.role")
				typ, _ := p.Attributes.Value("gen_ai.token.type")
				lines = append(lines, fmt.Sprintf("%s: %d %s tokens in %d model calls", role.Emit(), p.Sum, typ.Emit(), p.Count))
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	return nil
}

// shutdown stops every agent and joins every goroutine of the system.
func shutdown(sys *actor.System) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sys.Shutdown(ctx)
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "otel:", err)
		os.Exit(1)
	}
}
