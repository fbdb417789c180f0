package akotel_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	akotel "github.com/akgentic/akgentic-go/observe/otel"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Relay passes each UserMessage on to To, if any.
type Relay struct {
	actor.Base
	To *message.Address
}

func (r *Relay) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		if r.To != nil {
			return nil, c.Send(r.To, message.NewUserMessage(m.Content))
		}
		return nil, nil
	}
	return nil, actor.ErrUnhandled
}

// A team traced: a's turn sends to b, so b's turn is a child of a's, in
// the same trace.
func ExampleNew() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	sub, _ := akotel.New(akotel.Options{TracerProvider: tp})

	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys.Shutdown(ctx) }()
	team, _ := orchestrator.New(sys, orchestrator.WithSubscribers(sub))
	b, _ := team.Spawn(ctx, &Relay{}, &actor.Config{Name: "b", Role: "Relay"})
	a, _ := team.Spawn(ctx, &Relay{To: b}, &actor.Config{Name: "a", Role: "Relay"})
	_, _ = sys.Ask(ctx, a, message.NewUserMessage("hello")) // a has sent it on
	_, _ = sys.Ask(ctx, b, &message.UserMessage{})          // b has handled it
	_ = team.Stop(ctx)                                      // ends the spans still open

	ended := spans.Ended()
	byID := map[string]string{}
	for _, s := range ended {
		byID[s.SpanContext().SpanID().String()] = s.Name()
	}
	for _, s := range ended {
		if s.Name() == "turn b" && s.Parent().IsValid() {
			fmt.Printf("%s (%s), child of %s\n", s.Name(), s.Attributes()[0].Value.Emit(), byID[s.Parent().SpanID().String()])
			fmt.Println("same trace:", s.Parent().TraceID() == s.SpanContext().TraceID())
			break
		}
	}
	// Output:
	// turn b (b), child of turn a
	// same trace: true
}
