package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/proxy"
)

// BenchmarkAgentTurn is one full agent turn: the person's message in, the
// manager's prompt built (system sections: backstory, date, roster and
// roles of the team), one model call to llmtest over HTTP, the output
// routed to @Human (whose proxy hands it over). The history is cleared
// between turns (outside the timer, on the manager's goroutine: a /clear
// command would put its operator action in the next prompt) so every
// request is the one BenchmarkRawModelCall sends, byte for byte (the last
// one is checked).
//
// Target: ns/op <= +100 us over BenchmarkRawModelCall of the same run,
// allocs/op <= +25 (docs/performance.md has the figures). The turn asks
// the orchestrator nothing (the roster, the roles and the agent's own card
// are kept while the team's version holds). What the profile leaves is
// mostly the runtime's: the goroutine wake-ups of the hand-offs (the
// person's proxy, the manager's mailbox, the orchestrator and the
// subscriber on telemetry; about 30 us of scheduler CPU a turn against 5
// in the baseline), the garbage collector (the test's recorder keeps
// every record), and the telemetry itself.
func BenchmarkAgentTurn(b *testing.B) { benchTurn(b) }

// BenchmarkAgentTurnStreamed is BenchmarkAgentTurn with the answer
// streamed (AgentConfig.Runtime.Stream): the same request with stream and
// include_usage, the answer in server-sent chunks, each piece of text one
// ephemeral TextDeltaEvent through the team's ledger to its subscriber.
func BenchmarkAgentTurnStreamed(b *testing.B) { benchTurn(b, streamingAgents) }

func benchTurn(b *testing.B, opts ...option) {
	want := agentRequest(b, opts...)
	h := newHarness(b, opts...)
	model := h.srv.Model("@Manager")
	ctx := context.Background()
	clearHistory := func(_ *actor.Context, a actor.Actor) error {
		a.(*agent.BaseAgent).Runner().Clear()
		return nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		model.Enqueue(final(outReq()))
		if err := agent.Say(ctx, h.human, h.manager, agent.NewRequest("Plan the next sprint.")); err != nil {
			b.Fatal(err)
		}
		if got := <-h.inbox; got.Content != "Plan: ship it" {
			b.Fatalf("human got %q", got.Content)
		}
		b.StopTimer()
		if err := proxy.Do(ctx, h.manager, clearHistory); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	reqs := h.srv.RequestsFor("@Manager")
	if got := reqs[len(reqs)-1]; !bytes.Equal(got.Body, want.Body) {
		b.Fatalf("the last turn's request differs from the first's:\n%s\n%s", got.Body, want.Body)
	}
}

// BenchmarkRawModelCall is the baseline: the request an agent turn sends
// (its system sections, its tools, its response format; checked byte for
// byte before the loop), made with a bare go-openai call to the same kind
// of server, and the answer parsed against the same output schema.
func BenchmarkRawModelCall(b *testing.B) {
	want := agentRequest(b)
	srv := llmtest.NewServer()
	defer srv.Close()
	cfg := openai.DefaultConfig("")
	cfg.BaseURL, cfg.HTTPClient = srv.URL(), srv.HTTPClient()
	client := openai.NewClientWithConfig(cfg)
	model := srv.Model("@Manager")
	ctx := context.Background()
	out, err := llm.NewOutput[agent.StructuredOutput]("StructuredOutput")
	if err != nil {
		b.Fatal(err)
	}
	req := rawRequest(b, want, out)
	call := func() {
		model.Enqueue(final(outReq()))
		resp, err := client.CreateChatCompletion(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := out.Parse(resp.Choices[0].Message.Content); err != nil {
			b.Fatal(err)
		}
	}
	call()
	if got := srv.Requests()[0].Body; !bytes.Equal(got, want.Body) {
		b.Fatalf("the baseline's request differs from the agent's:\n%s\n%s", got, want.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		call()
	}
}

// agentRequest returns the request BenchmarkAgentTurn's manager sends.
func agentRequest(b *testing.B, opts ...option) *llmtest.Request {
	h := newHarness(b, opts...)
	h.srv.Model("@Manager").Enqueue(final(outReq()))
	h.say(h.manager, agent.Request, "Plan the next sprint.")
	h.expectHuman()
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != 1 {
		b.Fatalf("the manager made %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// rawRequest is r made the way a program without the framework would: the
// messages as text, the tools' schemas as *jsonschema.Definition values and
// out's schema, each built once.
func rawRequest(b *testing.B, r *llmtest.Request, out *llm.Output[agent.StructuredOutput]) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{Model: r.Model,
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: out.Name(), Schema: out.Schema(), Strict: true}}}
	for _, m := range r.Messages {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: m.Role, Content: m.Text()})
	}
	for _, t := range r.Tools {
		params := new(jsonschema.Definition)
		if err := json.Unmarshal(t.Function.Parameters, params); err != nil {
			b.Fatal(err)
		}
		req.Tools = append(req.Tools, openai.Tool{Type: openai.ToolType(t.Type), Function: &openai.FunctionDefinition{
			Name: t.Function.Name, Description: t.Function.Description, Strict: t.Function.Strict, Parameters: params}})
	}
	if r.ParallelToolCalls != nil {
		req.ParallelToolCalls = *r.ParallelToolCalls
	}
	return req
}

func outReq() agent.OutboundRequest { return out(agent.Response, "@Human", "Plan: ship it") }
