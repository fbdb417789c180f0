package llm_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// benchSteps is one turn: a tool call, then a final output.
func benchSteps(m *llmtest.Model) {
	m.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA"]}`)), llmtest.Final(finalPlan))
}

// BenchmarkTurn measures one loop turn (tool call + final output) against
// llmtest; compare with BenchmarkRawClient for the loop's own overhead.
func BenchmarkTurn(b *testing.B) {
	r, model, out := benchRunner(b, false)
	prompt := llm.UserText("Plan the next sprint.")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		benchSteps(model)
		if _, err := llm.Run(ctx, r, prompt, out); err != nil {
			b.Fatal(err)
		}
		r.Clear()
	}
}

// benchRunner is the runner of the turn benchmarks, its tool waiting for
// approval when approve is set.
func benchRunner(b *testing.B, approve bool) (*llm.Runner, *llmtest.Model, *llm.Output[StructuredOutput]) {
	srv := llmtest.NewServer()
	b.Cleanup(srv.Close)
	cfg := testConfig(srv)
	tool, err := llm.NewTool("hire_members", "Hire new members by role.", func(_ context.Context, a struct {
		Roles []string `json:"roles"`
	}) (any, error) {
		return "Members hired: [@QA123]", nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if approve {
		tool.NeedsApproval = func(json.RawMessage) bool { return true }
	}
	r, err := llm.NewRunner(cfg, llm.Options{
		Tools:         []*llm.Tool{tool},
		HTTPClient:    srv.HTTPClient(),
		SystemPrompts: []llm.SystemPrompt{func(context.Context) string { return agentName + " (role: Manager) - [you]" }},
		Now:           func() time.Time { return fixedNow },
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	out, err := llm.NewOutput[StructuredOutput]("StructuredOutput")
	if err != nil {
		b.Fatal(err)
	}
	return r, srv.Model(agentName), out
}

// BenchmarkApprovedTurn is BenchmarkTurn with the tool call waiting for
// approval: the run pauses, the call is approved, the run resumes.
func BenchmarkApprovedTurn(b *testing.B) {
	r, model, out := benchRunner(b, true)
	prompt := llm.UserText("Plan the next sprint.")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		benchSteps(model)
		if _, err := llm.Run(ctx, r, prompt, out); err == nil {
			b.Fatal("the run did not pause")
		}
		if err := r.Decide("call_1", true, "@Human", "", false); err != nil {
			b.Fatal(err)
		}
		if _, err := llm.Resume(ctx, r, out); err != nil {
			b.Fatal(err)
		}
		r.Clear()
	}
}

// BenchmarkRawClient makes the same two requests with bare go-openai calls
// to the same server: the baseline for BenchmarkTurn.
func BenchmarkRawClient(b *testing.B) {
	srv := llmtest.NewServer()
	defer srv.Close()
	cfg := openai.DefaultConfig("sk-test-secret")
	cfg.BaseURL, cfg.HTTPClient = srv.URL(), srv.HTTPClient()
	client := openai.NewClientWithConfig(cfg)
	def, err := jsonschema.GenerateSchemaForType(StructuredOutput{})
	if err != nil {
		b.Fatal(err)
	}
	params, err := jsonschema.GenerateSchemaForType(struct {
		Roles []string `json:"roles"`
	}{})
	if err != nil {
		b.Fatal(err)
	}
	tools := []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: "hire_members", Description: "Hire new members by role.", Strict: true, Parameters: params}}}
	format := &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "StructuredOutput", Schema: def, Strict: true}}
	system := []openai.ChatCompletionMessage{
		{Role: "system", Content: "You are a project manager. Delegate to specialists."},
		{Role: "system", Content: "The current date is 2026-08-18."},
		{Role: "system", Content: agentName + " (role: Manager) - [you]"},
	}
	model := srv.Model(agentName)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		benchSteps(model)
		msgs := append(append([]openai.ChatCompletionMessage(nil), system...), openai.ChatCompletionMessage{Role: "user", Content: "Plan the next sprint."})
		req := openai.ChatCompletionRequest{Model: "gpt-4.1", Messages: msgs, Tools: tools, ResponseFormat: format}
		resp, err := client.CreateChatCompletion(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		call := resp.Choices[0].Message.ToolCalls[0]
		var args struct {
			Roles []string `json:"roles"`
		}
		if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
			b.Fatal(err)
		}
		req.Messages = append(req.Messages, resp.Choices[0].Message,
			openai.ChatCompletionMessage{Role: "tool", ToolCallID: call.ID, Content: "Members hired: [@QA123]"})
		resp, err = client.CreateChatCompletion(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		var out StructuredOutput
		if err := json.Unmarshal([]byte(resp.Choices[0].Message.Content), &out); err != nil {
			b.Fatal(err)
		}
	}
}
