package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// One request, system block per
// section, strict json_schema, no tool_choice, events in order.
func TestRunFinalOutput(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.Final(finalPlan).WithModel("gpt-4.1-2025-04-14"))
	res := h.mustRun("Plan the next sprint.")
	if len(res.Messages) != 1 || res.Messages[0].Message != "Plan: ship it" || res.Messages[0].Recipient != "@Human" {
		t.Fatalf("result %+v", res)
	}
	reqs := h.requests()
	if len(reqs) != 1 {
		t.Fatalf("want 1 request, got %d", len(reqs))
	}
	r := reqs[0]
	sys := r.SystemTexts()
	if len(sys) != 3 || sys[0] != "You are a project manager. Delegate to specialists." || sys[1] != "The current date is 2026-08-18." ||
		!strings.HasSuffix(sys[2], "@Manager (role: Manager) - [you]") {
		t.Fatalf("system block %q", sys)
	}
	if hist := r.History(); len(hist) != 1 || hist[0].Text() != "Plan the next sprint." || hist[0].Content[0] == '[' {
		t.Fatalf("history %+v", hist)
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(r.ResponseFormat, &rf); err != nil || rf.Type != "json_schema" || rf.JSONSchema.Name != "StructuredOutput" || !rf.JSONSchema.Strict {
		t.Fatalf("response_format %s", r.ResponseFormat)
	}
	if r.ToolChoice != nil || r.ParallelToolCalls != nil || r.Temperature != nil || r.Model != "gpt-4.1" || r.Authorization != "Bearer sk-test-secret" {
		t.Fatalf("request fields %+v", r)
	}
	if got := h.rec.kinds(); !slices.Equal(got, []string{"message:user", "message:assistant", "usage"}) {
		t.Fatalf("events %v", got)
	}
	u := h.rec.usage()[0]
	if u.ModelName != "gpt-4.1-2025-04-14" || u.RequestModel != "gpt-4.1" || u.ProviderName != "openai-compatible" ||
		u.InputTokens != 100 || u.OutputTokens != 20 || u.Requests != 1 || u.RunID == "" {
		t.Fatalf("usage %+v", u)
	}
	if u.ResponseID != "chatcmpl-fake-1" || u.FinishReason != "stop" || u.ServerAddress != "127.0.0.1" || u.ServerPort == 0 {
		t.Fatalf("usage: response id, finish reason or server missing: %+v", u)
	}
	hist := h.runner.History()
	if len(hist) != 2 || hist[1].Role != "assistant" || hist[1].Content != finalPlan {
		t.Fatalf("stored history %+v", hist)
	}
}

// A tool call round trip.
func TestToolCallRoundTrip(t *testing.T) {
	var calls []string
	h := newHarness(t, nil, hireTool(t, &calls))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA"]}`)), llmtest.Final(finalPlan))
	h.mustRun("Hire a QA.")
	if len(h.requests()) != 2 || !slices.Equal(calls, []string{"QA"}) {
		t.Fatalf("requests %d, calls %v", len(h.requests()), calls)
	}
	hist := h.history(1)
	if len(hist) != 3 || hist[1].Role != "assistant" || hist[1].ToolCalls[0].ID != "call_1" || hist[1].ToolCalls[0].Function.Arguments != `{"roles":["QA"]}` {
		t.Fatalf("assistant tool call %+v", hist)
	}
	if hist[2].Role != "tool" || hist[2].ToolCallID != "call_1" || !strings.HasPrefix(hist[2].Text(), "Members hired:") {
		t.Fatalf("tool message %+v", hist[2])
	}
	tools := h.requests()[0].Tools
	if len(tools) != 1 || tools[0].Function.Name != "hire_members" || !tools[0].Function.Strict {
		t.Fatalf("tools %+v", tools)
	}
	want := []string{"message:user", "message:assistant", "call:call_1", "usage", "message:tool", "return:call_1", "message:assistant", "usage"}
	if got := h.rec.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events %v\nwant %v", got, want)
	}
	us := h.rec.usage()
	if len(us) != 2 || us[0].RunID != us[1].RunID {
		t.Fatalf("usage run ids %+v", us)
	}
	for _, e := range h.rec.events {
		if tc, ok := e.(llm.ToolCallEvent); ok && (tc.ToolName != "hire_members" || tc.Arguments != `{"roles":["QA"]}` || tc.RunID != us[0].RunID) {
			t.Fatalf("tool call event %+v", tc)
		}
	}
}

// Calls of one response run concurrently; results keep call order.
func TestParallelToolCallsKeepOrder(t *testing.T) {
	bDone := make(chan struct{})
	a := funcTool("a", func(ctx context.Context, _ json.RawMessage) (any, error) {
		select { // a finishes only after b: proves both ran at once
		case <-bDone:
			return "A", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	b := funcTool("b", func(context.Context, json.RawMessage) (any, error) { close(bDone); return map[string]int{"b": 1}, nil })
	h := newHarness(t, nil, a, b)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_a", "a", `{}`), llmtest.Call("call_b", "b", "")), llmtest.Final(finalPlan))
	h.mustRun("go")
	hist := h.history(1)
	if hist[2].ToolCallID != "call_a" || hist[2].Text() != "A" || hist[3].ToolCallID != "call_b" || hist[3].Text() != `{"b":1}` {
		t.Fatalf("tool messages %+v", hist[2:])
	}
	want := []string{"message:user", "message:assistant", "call:call_a", "call:call_b", "usage",
		"message:tool", "return:call_a", "message:tool", "return:call_b", "message:assistant", "usage"}
	if got := h.rec.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events %v", got)
	}
}

// parallel_tool_calls is sent only when set; false runs calls in order.
func TestSequentialWhenParallelOff(t *testing.T) {
	var order []string
	mk := func(name string) *llm.Tool {
		return funcTool(name, func(context.Context, json.RawMessage) (any, error) { order = append(order, name); return name, nil })
	}
	h := newHarness(t, func(c *llm.Config) { c.Runtime.ParallelToolCalls = new(false) }, mk("a"), mk("b"))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "a", "{}"), llmtest.Call("", "b", "{}")), llmtest.Final(finalPlan))
	h.mustRun("go")
	if !slices.Equal(order, []string{"a", "b"}) {
		t.Fatalf("order %v", order)
	}
	if p := h.requests()[0].ParallelToolCalls; p == nil || *p {
		t.Fatalf("parallel_tool_calls %v", p)
	}
}

// A Serial tool keeps the batch sequential.
func TestSerialToolRunsAlone(t *testing.T) {
	var order []string
	a := funcTool("a", func(context.Context, json.RawMessage) (any, error) { order = append(order, "a"); return "a", nil })
	a.Serial = true
	b := funcTool("b", func(context.Context, json.RawMessage) (any, error) { order = append(order, "b"); return "b", nil })
	h := newHarness(t, nil, a, b)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "a", "{}"), llmtest.Call("", "b", "{}")), llmtest.Final(finalPlan))
	h.mustRun("go")
	if !slices.Equal(order, []string{"a", "b"}) {
		t.Fatalf("order %v", order)
	}
}

// A retry error goes back to the model, which recovers.
func TestToolRetryRecovers(t *testing.T) {
	tool := funcTool("update_planning", func(context.Context, json.RawMessage) (any, error) {
		return nil, llm.Retry("no task with ID %d", 99)
	})
	h := newHarness(t, nil, tool)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "update_planning", `{"id":99}`)), llmtest.Final(finalPlan))
	h.mustRun("update")
	msg := h.history(1)[2].Text()
	if !strings.Contains(msg, "no task with ID 99") || !strings.Contains(msg, "try again") {
		t.Fatalf("tool message %q", msg)
	}
	for _, e := range h.rec.events {
		if r, ok := e.(llm.ToolReturnEvent); ok && (r.Success || r.ErrorType != "tool_retry") {
			t.Fatalf("want success=false, error type tool_retry, got %+v", r)
		}
	}
}

// Fault "a tool the model invents": the model is told the tool is
// unknown and which tools exist.
func TestHallucinatedTool(t *testing.T) {
	h := newHarness(t, nil, hireTool(t, nil))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "launch_rocket", `{}`)), llmtest.Final(finalPlan))
	h.mustRun("go")
	msg := h.history(1)[2].Text()
	if !strings.Contains(msg, `Unknown tool name: "launch_rocket"`) || !strings.Contains(msg, "hire_members") || !strings.Contains(msg, "try again") {
		t.Fatalf("tool message %q", msg)
	}
}

// Faults "arguments of the wrong type" and "JSON that does not parse" in
// tool arguments: each is feedback naming what was wrong.
func TestBadToolArguments(t *testing.T) {
	cases := map[string]struct{ args, want string }{
		"wrong type":       {`{"roles":"QA"}`, "$.roles: expected an array"},
		"not json":         {`{"roles":`, "not valid JSON"},
		"missing required": {`{}`, `missing required property "roles"`},
		"unknown property": {`{"roles":[],"x":1}`, `unknown property "x"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var calls []string
			h := newHarness(t, nil, hireTool(t, &calls))
			h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "hire_members", tc.args)), llmtest.Final(finalPlan))
			h.mustRun("go")
			if msg := h.history(1)[2].Text(); !strings.Contains(msg, tc.want) {
				t.Fatalf("tool message %q, want %q", msg, tc.want)
			}
			if len(calls) != 0 {
				t.Fatalf("tool ran with bad arguments: %v", calls)
			}
		})
	}
}

// More than Retries retries for one tool fails the run; the history
// stays valid for the next run (the fake rejects unanswered calls).
func TestToolRetriesExceeded(t *testing.T) {
	tool := funcTool("flaky", func(context.Context, json.RawMessage) (any, error) { return nil, llm.Retry("still wrong") })
	h := newHarness(t, func(c *llm.Config) { c.Runtime.Retries = 1 }, tool)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "flaky", "{}")), llmtest.ToolCalls(llmtest.Call("", "flaky", "{}")))
	_, err := h.run("go")
	wantErrIs(t, err, llm.ErrToolRetriesExceeded)
	if !strings.Contains(err.Error(), "flaky") {
		t.Fatalf("error does not name the tool: %v", err)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("again")
}

// A plain tool error aborts the run; the call is answered so the
// next request is valid.
func TestToolErrorAbortsRunAndHeals(t *testing.T) {
	boom := errors.New("disk on fire")
	bad := funcTool("bad", func(context.Context, json.RawMessage) (any, error) { return nil, boom })
	good := funcTool("good", func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	h := newHarness(t, nil, bad, good)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "good", "{}"), llmtest.Call("", "bad", "{}")))
	_, err := h.run("go")
	wantErrIs(t, err, boom)
	hist := h.runner.History()
	if n := len(hist); hist[n-2].Content != "ok" || !strings.Contains(hist[n-1].Content, "aborted") {
		t.Fatalf("history %+v", hist)
	}
	var types []string
	for _, r := range eventsOf[llm.ToolReturnEvent](h.rec) {
		types = append(types, r.ErrorType)
	}
	if !slices.Equal(types, []string{"", "tool_error"}) {
		t.Fatalf("tool return error types %q, want the good call's empty and the bad one's tool_error", types)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("again")
}

// No panic escapes: a panicking tool fails the run with an error.
func TestToolPanicBecomesError(t *testing.T) {
	p := funcTool("p", func(context.Context, json.RawMessage) (any, error) { panic("kaboom") })
	h := newHarness(t, nil, p)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "p", "{}")))
	_, err := h.run("go")
	if err == nil || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("got %v", err)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("again")
}

// A tool result that cannot be JSON-encoded aborts the run with a clear error.
func TestToolResultNotEncodable(t *testing.T) {
	p := funcTool("p", func(context.Context, json.RawMessage) (any, error) { return func() {}, nil })
	h := newHarness(t, nil, p)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "p", "{}")))
	if _, err := h.run("go"); err == nil || !strings.Contains(err.Error(), "encoding its result") {
		t.Fatalf("got %v", err)
	}
}

// JSON that does not parse is fed back; the model fixes it.
func TestOutputRetryOnBrokenJSON(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.Final("not json"), llmtest.Final(finalPlan))
	h.mustRun("go")
	hist := h.history(1)
	if len(hist) != 3 || hist[2].Role != "user" || !strings.Contains(hist[2].Text(), "Validation feedback") || !strings.Contains(hist[2].Text(), "not valid JSON") {
		t.Fatalf("second request history %+v", hist)
	}
}

// Fault "JSON that parses but fails validation": schema and validate
// tags both feed back the path of the problem.
func TestOutputRetryOnInvalidJSON(t *testing.T) {
	cases := map[string]struct{ content, want string }{
		"enum":          {`{"messages":[{"message_type":"shout","message":"x","recipient":"@H"}]}`, `$.messages[0].message_type: "shout" is not one of`},
		"missing":       {`{"messages":[{"message_type":"response","message":"x"}]}`, `missing required property "recipient"`},
		"validate tag":  {`{"messages":[{"message_type":"response","message":"","recipient":"@H"}]}`, "Messages[0].Message"},
		"extra data":    {finalPlan + " {}", "data after the JSON value"},
		"wrong type":    {`{"messages":{}}`, "expected an array"},
		"empty content": {"", "empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.model.Enqueue(llmtest.Final(tc.content), llmtest.Final(finalPlan))
			h.mustRun("go")
			if msg := h.history(1)[2].Text(); !strings.Contains(msg, tc.want) {
				t.Fatalf("feedback %q, want %q", msg, tc.want)
			}
		})
	}
}

// Output retries exhausted fails the run.
func TestOutputRetriesExhausted(t *testing.T) {
	h := newHarness(t, nil)
	for range 4 {
		h.model.Enqueue(llmtest.Final("nope"))
	}
	_, err := h.run("go")
	wantErrIs(t, err, llm.ErrOutputRetriesExceeded)
	if len(h.requests()) != 4 {
		t.Fatalf("want 4 requests, got %d", len(h.requests()))
	}
}

// Fault "a refusal": treated as invalid output and fed back.
func TestRefusalIsRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.Refusal("I can't help with that."), llmtest.Final(finalPlan))
	h.mustRun("go")
	hist := h.history(1)
	if hist[1].Refusal != "I can't help with that." || !strings.Contains(hist[2].Text(), "refused") {
		t.Fatalf("history %+v", hist)
	}
}

// emptyChoices answers 200 with an empty choices array (and the default
// usage), as some OpenAI-compatible servers do.
func emptyChoices() llmtest.Step {
	return llmtest.Raw(http.StatusOK, nil, `{"id":"chatcmpl-empty","object":"chat.completion","created":1755500000,`+
		`"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`)
}

// Fault "empty choices": retried without touching history, usage recorded.
func TestEmptyChoicesRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(emptyChoices(), llmtest.Final(finalPlan))
	h.mustRun("go")
	if len(h.requests()) != 2 || len(h.rec.usage()) != 2 || len(h.history(1)) != 1 {
		t.Fatalf("requests %d usage %d", len(h.requests()), len(h.rec.usage()))
	}
	h2 := newHarness(t, func(c *llm.Config) { c.Runtime.Retries = 0 })
	h2.model.Enqueue(emptyChoices())
	_, err := h2.run("go")
	wantErrIs(t, err, llm.ErrOutputRetriesExceeded)
	if !strings.Contains(err.Error(), "no choices") {
		t.Fatalf("error %v", err)
	}
}

// finish_reason length with unparsable content is retried and says so;
// content_filter fails the run.
func TestFinishReasons(t *testing.T) {
	h := newHarness(t, nil)
	cut := llmtest.Final(`{"messages":[`)
	cut.FinishReason = "length"
	h.model.Enqueue(cut, llmtest.Final(finalPlan))
	h.mustRun("go")
	if msg := h.history(1)[2].Text(); !strings.Contains(msg, "cut off") {
		t.Fatalf("feedback %q", msg)
	}
	filtered := llmtest.Final("")
	filtered.FinishReason = "content_filter"
	h.model.Enqueue(filtered)
	_, err := h.run("again")
	wantErrIs(t, err, llm.ErrContentFilter)
}

// The second run sends system + [u1, a1] + u2, with the
// system block rebuilt.
func TestHistoryContinuity(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.Final(finalPlan), llmtest.Final(`{"messages":[]}`))
	h.mustRun("first")
	h.mustRun("second")
	hist := h.history(1)
	if len(hist) != 3 || hist[0].Text() != "first" || hist[1].Text() != finalPlan || hist[2].Text() != "second" {
		t.Fatalf("history %+v", hist)
	}
	if len(h.requests()[1].SystemTexts()) != 3 {
		t.Fatal("system block not resent")
	}
	us := h.rec.usage()
	if us[0].RunID == us[1].RunID {
		t.Fatal("two runs share a run id")
	}
}

// A multipart prompt is sent as an array of parts.
func TestMultipartPrompt(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.Final(finalPlan))
	_, err := llm.Run(t.Context(), h.runner, llm.Message{Role: "user", Parts: []llm.Part{llm.TextPart("compare "), llm.ImagePart("data:image/png;base64,iVBORw0KGgo=")}}, h.out)
	if err != nil {
		t.Fatal(err)
	}
	m := h.history(0)[0]
	if m.Content[0] != '[' || m.Text() != "compare " || !strings.Contains(string(m.Content), `"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}`) {
		t.Fatalf("content %s", m.Content)
	}
	if got := h.runner.History()[0].Text(); got != "compare " {
		t.Fatalf("Text() %q", got)
	}
}

// Cancellation through context: a run waiting on the model returns the
// context's error and leaves a valid history.
func TestRunCancelled(t *testing.T) {
	h := newHarness(t, nil, hireTool(t, nil))
	ctx, cancel := context.WithCancel(t.Context())
	hang := llmtest.Hang()
	hang.Check = func(*llmtest.Request) error { cancel(); return nil }
	h.model.Enqueue(hang)
	_, err := llm.Run(ctx, h.runner, llm.UserText("go"), h.out)
	wantErrIs(t, err, context.Canceled)
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("again")
}

// A tool sees the run's context; cancelling mid-tool aborts and heals.
func TestCancelDuringTool(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	slow := funcTool("slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h := newHarness(t, nil, slow)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "slow", "{}")))
	_, err := llm.Run(ctx, h.runner, llm.UserText("go"), h.out)
	wantErrIs(t, err, context.Canceled)
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("again")
}

func TestRunnerClosedAndBadArgs(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := llm.Run[StructuredOutput](t.Context(), h.runner, llm.UserText("x"), nil); err == nil {
		t.Fatal("nil output accepted")
	}
	if err := h.runner.Close(); err != nil {
		t.Fatal(err)
	}
	_ = h.runner.Close()
	_, err := h.run("x")
	wantErrIs(t, err, llm.ErrClosed)
	_, err = h.runner.Compact(t.Context())
	wantErrIs(t, err, llm.ErrClosed)
}

func TestSetToolsRejectsBadTools(t *testing.T) {
	h := newHarness(t, nil)
	ok := funcTool("ok", func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	for name, tools := range map[string][]*llm.Tool{
		"nil":                 {nil},
		"no call":             {{Name: "x"}},
		"bad name":            {funcTool("a b", ok.Call)},
		"duplicate":           {ok, ok},
		"raw schema not JSON": {{Name: "raw", Call: ok.Call, RawParameters: json.RawMessage(`{"type":`)}},
	} {
		if err := h.runner.SetTools(tools...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := llm.NewRunner(testConfig(h.srv), llm.Options{Tools: []*llm.Tool{nil}, HTTPClient: h.srv.HTTPClient()}); err == nil {
		t.Fatal("NewRunner accepted a nil tool")
	}
	// A tool without a schema is declared with an empty object schema.
	if err := h.runner.SetTools(ok); err != nil {
		t.Fatal(err)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("x")
	if p := string(h.requests()[0].Tools[0].Function.Parameters); !strings.Contains(p, `"type":"object"`) {
		t.Fatalf("parameters %s", p)
	}
	// RawParameters (an MCP server's schema) are sent byte for byte,
	// keywords Parameters cannot hold included.
	raw := `{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}`
	if err := h.runner.SetTools(&llm.Tool{Name: "raw", Call: ok.Call, RawParameters: json.RawMessage(raw)}); err != nil {
		t.Fatal(err)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("y")
	if p := string(h.requests()[1].Tools[0].Function.Parameters); p != raw {
		t.Fatalf("raw parameters sent as %s", p)
	}
}

// A team killed while a tool ran restores a history ending with an
// assistant tool call and no result: Restore answers it with a stand-in, so
// the next runs are valid (they all failed with OpenAI's 400 before).
func TestRestoreDanglingToolCall(t *testing.T) {
	h := newHarness(t, nil, hireTool(t, nil))
	h.runner.Restore([]llm.Event{
		llm.MessageEvent{RunID: "r1", Message: llm.UserText("hire a QA")},
		llm.MessageEvent{RunID: "r1", Message: llm.Message{Role: "assistant",
			ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "hire_members", Arguments: `{"roles":["QA"]}`}}}},
		// killed here: no tool result was logged
	})
	for i := range 3 {
		h.model.Enqueue(llmtest.Final(finalPlan))
		if _, err := h.run("next"); err != nil {
			t.Errorf("run %d after restore: %v", i, err)
		}
	}
}
