package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Request and StructuredOutput have the shape the agent layer's output
// will have; the loop is generic over them.
type Request struct {
	MessageType string `json:"message_type" enum:"request,response,notification,instruction,acknowledgment"`
	Message     string `json:"message" validate:"required"`
	Recipient   string `json:"recipient"`
}

type StructuredOutput struct {
	Messages []Request `json:"messages" validate:"dive"`
}

const agentName = "@Manager"

var fixedNow = time.Date(2026, 8, 18, 10, 0, 0, 0, time.Local)

func nowFixed() time.Time { return fixedNow }

// rosterPrompt is the roster section the fake routes by.
var rosterPrompt = []llm.SystemPrompt{func(context.Context) string { return "Team members:\n" + agentName + " (role: Manager) - [you]" }}

// recorder collects events and sleeps.
type recorder struct {
	mu     sync.Mutex
	events []llm.Event
	sleeps []time.Duration
}

func (r *recorder) observe(e llm.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.sleeps = append(r.sleeps, d)
	r.mu.Unlock()
	return ctx.Err()
}

func (r *recorder) usage() []llm.UsageEvent { return eventsOf[llm.UsageEvent](r) }

// eventsOf returns the recorded events of type T, in order.
func eventsOf[T llm.Event](r *recorder) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []T
	for _, e := range r.events {
		if x, ok := e.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// lastCompacted returns the latest CompactedEvent and whether there is one.
func (r *recorder) lastCompacted() (llm.CompactedEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if ev, ok := r.events[i].(llm.CompactedEvent); ok {
			return ev, true
		}
	}
	return llm.CompactedEvent{}, false
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, e := range r.events {
		switch ev := e.(type) {
		case llm.MessageEvent:
			out[i] = "message:" + ev.Message.Role
		case llm.UsageEvent:
			out[i] = "usage"
		case llm.ToolCallEvent:
			out[i] = "call:" + ev.ToolCallID
		case llm.ToolReturnEvent:
			out[i] = "return:" + ev.ToolCallID
		case llm.CompactedEvent:
			out[i] = "compacted"
		case llm.ClearedEvent:
			out[i] = "cleared"
		}
	}
	return out
}

type harness struct {
	t      *testing.T
	srv    *llmtest.Server
	runner *llm.Runner
	rec    *recorder
	out    *llm.Output[StructuredOutput]
	model  *llmtest.Model
}

func testConfig(srv *llmtest.Server) llm.Config {
	cfg := llm.DefaultConfig()
	cfg.Model = llm.ModelConfig{Provider: "openai-compatible", BaseURL: srv.URL(), Model: "gpt-4.1", APIKey: "sk-test-secret"}
	cfg.Backstory = "You are a project manager. Delegate to specialists."
	cfg.Runtime.HTTP = llm.HTTPConfig{Timeout: 5 * time.Second, BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond}
	return cfg
}

func newHarness(t *testing.T, mutate func(*llm.Config), tools ...*llm.Tool) *harness {
	t.Helper()
	srv := llmtest.NewServer(llmtest.WithReporter(t))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv)
	if mutate != nil {
		mutate(&cfg)
	}
	rec := &recorder{}
	runner, err := llm.NewRunner(cfg, llm.Options{
		HTTPClient: srv.HTTPClient(), Sleep: rec.sleep,
		Tools:         tools,
		SystemPrompts: rosterPrompt,
		Observer:      rec.observe,
		Now:           nowFixed,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Close() })
	out, err := llm.NewOutput[StructuredOutput]("StructuredOutput")
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, runner: runner, rec: rec, out: out, model: srv.Model(agentName)}
}

func (h *harness) run(prompt string) (StructuredOutput, error) {
	return llm.Run(h.t.Context(), h.runner, llm.UserText(prompt), h.out)
}

func (h *harness) mustRun(prompt string) StructuredOutput {
	h.t.Helper()
	res, err := h.run(prompt)
	if err != nil {
		h.t.Fatalf("run %q: %v", prompt, err)
	}
	return res
}

func (h *harness) requests() []*llmtest.Request { return h.srv.RequestsFor(agentName) }

// history returns the non-system messages of request i.
func (h *harness) history(i int) []llmtest.Message {
	h.t.Helper()
	reqs := h.requests()
	if i >= len(reqs) {
		h.t.Fatalf("want request %d, have %d", i, len(reqs))
	}
	return reqs[i].History()
}

const finalPlan = `{"messages":[{"message_type":"response","message":"Plan: ship it","recipient":"@Human"}]}`

func hireTool(t *testing.T, calls *[]string) *llm.Tool {
	t.Helper()
	type args struct {
		Roles []string `json:"roles" description:"roles to hire"`
	}
	var mu sync.Mutex
	tool, err := llm.NewTool("hire_members", "Hire new members by role.", func(_ context.Context, a args) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		if calls != nil {
			*calls = append(*calls, strings.Join(a.Roles, ","))
		}
		return "Members hired: [@" + strings.Join(a.Roles, ", @") + "123]", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func funcTool(name string, fn func(ctx context.Context, args json.RawMessage) (any, error)) *llm.Tool {
	return &llm.Tool{Name: name, Description: name, Call: fn}
}

func wantErrIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("want %v, got %v", target, err)
	}
}

func usageErr(t *testing.T, err error) *llm.UsageLimitError {
	t.Helper()
	var ule *llm.UsageLimitError
	if !errors.As(err, &ule) {
		t.Fatalf("want *UsageLimitError, got %T %v", err, err)
	}
	return ule
}

func plainRequest() openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Answer in JSON."}}}
}
