package llm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// Token streaming: with RuntimeConfig.Stream the runner sends
// stream: true with include_usage, reports the answer's text as
// TextDeltaEvents while it arrives, and then handles the whole answer
// exactly as an unstreamed one (validated against the strict schema,
// recorded, usage counted once). A stream cut mid-way is sent again,
// never taken as an answer.

func streaming(c *llm.Config) { c.Runtime.Stream = true }

// deltas returns the TextDeltaEvents recorded so far.
func (r *recorder) deltas() []llm.TextDeltaEvent { return eventsOf[llm.TextDeltaEvent](r) }

// answers joins the deltas into answers: a Seq 0 starts a new one.
func answers(ds []llm.TextDeltaEvent) []string {
	var out []string
	for _, d := range ds {
		if d.Seq == 0 {
			out = append(out, "")
		}
		out[len(out)-1] += d.Delta
	}
	return out
}

func (r *recorder) assistantContents() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if m, ok := e.(llm.MessageEvent); ok && m.Message.Role == "assistant" {
			out = append(out, m.Message.Content)
		}
	}
	return out
}

func TestStreamDeltasJoinToAnswer(t *testing.T) {
	h := newHarness(t, streaming)
	h.model.Enqueue(llmtest.Final(finalPlan).WithUsage(321, 45, 0))
	res := h.mustRun("plan it")
	if len(res.Messages) != 1 || res.Messages[0].Message != "Plan: ship it" {
		t.Fatalf("result %+v", res)
	}
	ds := h.rec.deltas()
	if len(ds) < 5 {
		t.Fatalf("%d deltas: the answer should arrive in pieces", len(ds))
	}
	for i, d := range ds {
		if d.Seq != i || d.RunID == "" || d.RunID != ds[0].RunID {
			t.Fatalf("delta %d: %+v (out of order or another run)", i, d)
		}
	}
	if got := answers(ds); len(got) != 1 || got[0] != finalPlan {
		t.Fatalf("joined deltas %q, want the answer", got)
	}
	if got := h.rec.assistantContents(); len(got) != 1 || got[0] != finalPlan {
		t.Fatalf("recorded answer %q", got)
	}
	// Usage counted once, from the last chunk.
	us := h.rec.usage()
	if len(us) != 1 || us[0].InputTokens != 321 || us[0].OutputTokens != 45 {
		t.Fatalf("usage events %+v", us)
	}
	if runs, in, out := h.runner.AgentUsage(); runs != 1 || in != 321 || out != 45 {
		t.Fatalf("lifetime usage %d %d %d", runs, in, out)
	}
	req := h.requests()[0]
	if !req.Stream || req.StreamOptions == nil || !req.StreamOptions.IncludeUsage {
		t.Fatalf("request stream=%v options=%v", req.Stream, req.StreamOptions)
	}
}

// Off by default: no stream, no deltas.
func TestStreamOffByDefault(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("plan it")
	if h.requests()[0].Stream || len(h.rec.deltas()) != 0 {
		t.Fatalf("streamed without RuntimeConfig.Stream")
	}
}

// A stream cut mid-way (an error event) is sent again: the second
// attempt's deltas start at Seq 0, the cut answer is never recorded, and
// usage is counted once, for the whole answer.
func TestStreamCutIsRetried(t *testing.T) {
	h := newHarness(t, streaming)
	h.model.Enqueue(llmtest.Final(finalPlan).CutAfter(4), llmtest.Final(finalPlan))
	res := h.mustRun("plan it")
	if res.Messages[0].Message != "Plan: ship it" {
		t.Fatalf("result %+v", res)
	}
	got := answers(h.rec.deltas())
	if len(got) != 2 || got[1] != finalPlan || !strings.HasPrefix(finalPlan, got[0]) || got[0] == finalPlan {
		t.Fatalf("answers from deltas %q: want a cut prefix, then the whole answer", got)
	}
	if contents := h.rec.assistantContents(); len(contents) != 1 || contents[0] != finalPlan {
		t.Fatalf("recorded %q", contents)
	}
	if us := h.rec.usage(); len(us) != 1 {
		t.Fatalf("%d usage events, want 1", len(us))
	}
	if n := len(h.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if len(h.rec.sleeps) != 1 {
		t.Fatalf("backoffs %v, want one before the second attempt", h.rec.sleeps)
	}
}

// A stream that ends without its finish_reason (the connection closed
// before "data: [DONE]") is cut too. When every attempt is cut the run
// fails, reported as a cut stream, and no half answer joins the history.
func TestStreamCutEveryAttemptFails(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { streaming(c); c.Runtime.HTTP.MaxAttempts = 2 })
	noFinish := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":"{\"messages\":"},"finish_reason":null}]}` + "\n\n"
	h.model.Enqueue(llmtest.Raw(http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, noFinish),
		llmtest.Final(finalPlan).CutAfter(3))
	_, err := h.run("plan it")
	if err == nil || !strings.Contains(err.Error(), "stream was cut") || !strings.Contains(err.Error(), "server had an error") {
		t.Fatalf("error %v, want the cut stream reported", err)
	}
	if c := h.rec.assistantContents(); len(c) != 0 {
		t.Fatalf("a cut answer was recorded: %q", c)
	}
	for _, m := range h.runner.History() {
		if m.Role == "assistant" {
			t.Fatalf("history has an assistant message after a failed stream: %+v", m)
		}
	}
	if n := len(h.requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (MaxAttempts)", n)
	}
}

// The strict validation still applies to a streamed answer: an answer
// that does not match the schema gets the validation feedback and a new
// request; tool calls stream in fragments and run with whole arguments.
func TestStreamKeepsValidationAndTools(t *testing.T) {
	var hired []string
	h := newHarness(t, streaming, hireTool(t, &hired))
	h.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA","Developer"]}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human"}]}`), // message missing
		llmtest.Final(finalPlan),
	)
	res := h.mustRun("hire and plan")
	if res.Messages[0].Message != "Plan: ship it" {
		t.Fatalf("result %+v", res)
	}
	if len(hired) != 1 || hired[0] != "QA,Developer" {
		t.Fatalf("tool called with %q", hired)
	}
	hist := h.history(2)
	var feedback bool
	for _, m := range hist {
		if m.Role == "user" && strings.HasPrefix(m.Text(), "Validation feedback:") {
			feedback = true
		}
	}
	if !feedback {
		t.Fatal("the invalid streamed answer got no validation feedback")
	}
	var call struct {
		Roles []string `json:"roles"`
	}
	for _, m := range hist {
		for _, c := range m.ToolCalls {
			if err := json.Unmarshal([]byte(c.Function.Arguments), &call); err != nil || c.ID != "call_1" {
				t.Fatalf("tool call sent back as %+v", c)
			}
		}
	}
	if us := h.rec.usage(); len(us) != 3 {
		t.Fatalf("%d usage events for 3 answers", len(us))
	}
}

// Cancelling the run's context ends a stream at once, without a retry.
func TestStreamCancelled(t *testing.T) {
	h := newHarness(t, streaming)
	entered := make(chan struct{})
	hang := llmtest.Hang()
	hang.Check = func(*llmtest.Request) error { close(entered); return nil }
	h.model.Enqueue(hang)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := llm.Run(ctx, h.runner, llm.UserText("x"), h.out)
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; err == nil || ctx.Err() == nil {
		t.Fatalf("run ended with %v", err)
	}
	if n := len(h.requests()); n != 1 {
		t.Fatalf("%d requests after a cancel, want 1", n)
	}
}

// Tool-call fragments are merged by their index; a server that omits the
// index (some OpenAI-compatible ones do) starts a new call with each id. A
// streamed refusal is a refusal: validation feedback, as unstreamed.
func TestStreamToolCallsWithoutIndexAndRefusal(t *testing.T) {
	var hired []string
	h := newHarness(t, streaming, hireTool(t, &hired))
	chunk := func(delta string) string {
		return `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	noIndex := chunk(`{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"hire_members","arguments":""}}]}`) +
		chunk(`{"tool_calls":[{"function":{"arguments":"{\"roles\":"}}]}`) +
		chunk(`{"tool_calls":[{"function":{"arguments":"[\"QA\"]}"}}]}`) +
		chunk(`{"tool_calls":[{"id":"call_b","type":"function","function":{"name":"hire_members","arguments":"{\"roles\":[\"Dev\"]}"}}]}`) +
		`data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	h.model.Enqueue(
		llmtest.Raw(http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, noIndex),
		llmtest.Refusal("I cannot help with that."),
		llmtest.Final(finalPlan),
	)
	h.mustRun("hire and plan")
	slices.Sort(hired) // the two calls run in parallel
	if len(hired) != 2 || hired[0] != "Dev" || hired[1] != "QA" {
		t.Fatalf("tools called with %q, want the two calls assembled", hired)
	}
	var refused, answered bool
	for _, m := range h.history(2) {
		if m.Role == "assistant" && m.Refusal == "I cannot help with that." {
			refused = true
		}
		if m.Role == "user" && strings.Contains(m.Text(), "the model refused: I cannot help with that.") {
			answered = true
		}
	}
	if !refused || !answered {
		t.Fatalf("the streamed refusal was not handled as a refusal: %+v", h.history(2))
	}
}

// A stream whose tool call index is negative or leaves
// a gap is malformed: the run fails naming it, no panic, no unbounded
// growth, and it is not sent again as a cut stream would be.
func TestStreamMalformedToolCallIndex(t *testing.T) {
	for _, index := range []string{"-1", "5", "1099511627776"} {
		t.Run(index, func(t *testing.T) {
			h := newHarness(t, streaming)
			body := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":` + index + `,"id":"call_a","type":"function","function":{"name":"hire_members","arguments":"{}"}}]},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" + "data: [DONE]\n\n"
			h.model.Enqueue(llmtest.Raw(http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, body))
			_, err := h.run("go")
			if err == nil || !strings.Contains(err.Error(), "malformed stream: tool call index "+index) {
				t.Fatalf("run error %v, want a malformed stream naming index %s", err, index)
			}
			if n := len(h.srv.Requests()); n != 1 {
				t.Fatalf("%d requests, want 1 (a malformed stream is not sent again)", n)
			}
		})
	}
}
