package akotel_test

import (
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	akotel "github.com/akgentic/akgentic-go/observe/otel"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// noopSubscriber is the baseline: a subscriber that does nothing.
type noopSubscriber struct{}

func (noopSubscriber) OnMessage(message.Message) {}

// BenchmarkRecord is the subscriber's cost per record, beside
// the no-op subscriber: each iteration is one turn of a member, four
// records (the Sent message, Received, a model call's usage event,
// Processed), prepared before the timer starts. "sdk" records to the
// OpenTelemetry SDK (every span sampled, metrics aggregated), "noop-otel"
// to OpenTelemetry's no-op providers.
//
//	go test -run '^$' -bench Record -benchmem ./observe/otel/
func BenchmarkRecord(b *testing.B) {
	sdk := func(b *testing.B) orchestrator.Subscriber {
		tp := sdktrace.NewTracerProvider() // spans made and ended, exported nowhere
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		s, err := akotel.New(akotel.Options{TracerProvider: tp, MeterProvider: mp})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	noopOtel := func(b *testing.B) orchestrator.Subscriber {
		s, err := akotel.New(akotel.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name string
		make func(*testing.B) orchestrator.Subscriber
	}{
		{"noop-subscriber", func(*testing.B) orchestrator.Subscriber { return noopSubscriber{} }},
		{"noop-otel", noopOtel},
		{"sdk", sdk},
	} {
		b.Run(c.name, func(b *testing.B) {
			sub := c.make(b)
			f := newFeed()
			from, to := f.member("@A", "Worker"), f.member("@B", "Worker")
			const turns = 1024
			recs := make([]message.Message, 0, 4*turns)
			for i := range turns {
				m := f.msg(from, to, nil)
				usage := &message.EventMessage{Base: f.base(to, 2*i+1), Event: llm.UsageEvent{
					ModelName: "gpt-4.1", ProviderName: "openai", InputTokens: 100, OutputTokens: 10, Requests: 1}}
				recs = append(recs, f.sent(m, 2*i), f.received(to, m, 2*i), usage, f.processed(to, m, 2*i+1))
			}
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for b.Loop() {
				for _, r := range recs[n%turns*4 : n%turns*4+4] {
					sub.OnMessage(r)
				}
				n++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(4*n), "ns/record")
		})
	}
}
