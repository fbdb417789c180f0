package agent_test

import (
	"context"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// BenchmarkAgentTurn is one full agent turn: the person's message in, the
// manager's prompt built (system sections: backstory, date, roster and
// roles queried from the team), one model call to llmtest over HTTP, the
// output routed to @Human (whose proxy hands it over). The history is
// cleared between turns (outside the timer) so every request has the same
// size as the baseline's.
func BenchmarkAgentTurn(b *testing.B) {
	h := newHarness(b)
	model := h.srv.Model("@Manager")
	ctx := context.Background()
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
		if err := agent.Say(ctx, h.human, h.manager, agent.NewRequest("/clear")); err != nil {
			b.Fatal(err)
		}
		<-h.inbox
		b.StartTimer()
	}
}

// BenchmarkRawModelCall is the baseline: the same model answer fetched
// with a bare go-openai call to the same kind of server.
func BenchmarkRawModelCall(b *testing.B) {
	srv := llmtest.NewServer()
	defer srv.Close()
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL, cfg.HTTPClient = srv.URL(), srv.HTTPClient()
	client := openai.NewClientWithConfig(cfg)
	model := srv.Model("")
	ctx := context.Background()
	out, err := llm.NewOutput[agent.StructuredOutput]("StructuredOutput")
	if err != nil {
		b.Fatal(err)
	}
	format := &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "StructuredOutput", Schema: out.Schema(), Strict: true}}
	b.ReportAllocs()
	for b.Loop() {
		model.Enqueue(final(outReq()))
		resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4.1",
			Messages: []openai.ChatCompletionMessage{{Role: "system", Content: "You are @Manager."},
				{Role: "user", Content: "You received a request from @Human.\n\nPlan the next sprint."}},
			ResponseFormat: format})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := out.Parse(resp.Choices[0].Message.Content); err != nil {
			b.Fatal(err)
		}
	}
}

func outReq() agent.OutboundRequest { return out(agent.Response, "@Human", "Plan: ship it") }
