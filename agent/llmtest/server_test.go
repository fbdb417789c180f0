package llmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"
	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(contractChecked{m}) }

// contractChecked runs the tests, then fails the run when a request a
// server accepted, or a body it served, does not match OpenAI's OpenAPI
// document: the contract check covers every test of the package.
type contractChecked struct{ m *testing.M }

func (c contractChecked) Run() int {
	code := c.m.Run()
	violations, checked := llmtest.ContractReport()
	for _, v := range violations {
		fmt.Fprintf(os.Stderr, "llmtest: against OpenAI's OpenAPI document: %s\n\n", v)
	}
	if len(violations) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "llmtest: %d bodies do not match OpenAI's OpenAPI document (checked: %v)\n", len(violations), checked)
		code = 1
	}
	return code
}

type out struct {
	Messages []struct {
		MessageType string `json:"message_type" enum:"request,response"`
		Message     string `json:"message"`
		Recipient   string `json:"recipient"`
	} `json:"messages"`
}

func newServer(t *testing.T, opts ...llmtest.Option) (*llmtest.Server, *openai.Client) {
	t.Helper()
	srv := llmtest.NewServer(opts...)
	t.Cleanup(srv.Close)
	return srv, client(srv, "sk-test")
}

// client is a go-openai client that talks to srv with apiKey.
func client(srv *llmtest.Server, apiKey string) *openai.Client {
	cfg := openai.DefaultConfig(apiKey)
	cfg.BaseURL = srv.URL()
	cfg.HTTPClient = srv.HTTPClient()
	return openai.NewClientWithConfig(cfg)
}

func schemaFormat(t *testing.T) *openai.ChatCompletionResponseFormat {
	t.Helper()
	def, err := jsonschema.GenerateSchemaForType(out{})
	if err != nil {
		t.Fatal(err)
	}
	return &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "StructuredOutput", Schema: def, Strict: true}}
}

func roster(name string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "system",
		Content: "Team members:\n@Human (role: Human)\n" + name + " (role: Manager) - [you]"}
}

func tools() []openai.Tool {
	return []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: "hire_members", Parameters: json.RawMessage(`{"type":"object","properties":{"roles":{"type":"array","items":{"type":"string"}}},"required":["roles"]}`)}}}
}

func apiErr(t *testing.T, err error) *openai.APIError {
	t.Helper()
	var ae *openai.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("want *openai.APIError, got %T %v", err, err)
	}
	return ae
}

func TestFinalAndToolCallsRoutedByRoster(t *testing.T) {
	srv, c := newServer(t)
	reasoned := llmtest.Final(`{"messages":[]}`).WithUsage(812, 19, 500).WithModel("gpt-4.1-2025-04-14")
	reasoned.ReasoningTokens = 3
	srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA"]}`), llmtest.Call("", "hire_members", `{"roles":[]}`)),
		reasoned,
	)
	req := openai.ChatCompletionRequest{Model: "gpt-4.1", Tools: tools(), ResponseFormat: schemaFormat(t),
		Messages: []openai.ChatCompletionMessage{roster("@Manager"), {Role: "user", Content: "hi"}}}
	resp, err := c.CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) != 2 || calls[0].ID != "call_1" || !strings.HasPrefix(calls[1].ID, "call_") || len(calls[1].ID) != 29 {
		t.Fatalf("tool calls: %+v", calls)
	}
	if resp.Choices[0].FinishReason != openai.FinishReasonToolCalls || resp.Usage.PromptTokens != 100 || resp.Usage.CompletionTokens != 20 {
		t.Fatalf("defaults: %+v", resp)
	}
	req.Messages = append(req.Messages, resp.Choices[0].Message,
		openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_1", Content: "Members hired: [@QA123]"},
		openai.ChatCompletionMessage{Role: "tool", ToolCallID: calls[1].ID, Content: "none"})
	resp, err = c.CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != `{"messages":[]}` || resp.Model != "gpt-4.1-2025-04-14" ||
		resp.Usage.PromptTokensDetails.CachedTokens != 500 || resp.Usage.CompletionTokensDetails.ReasoningTokens != 3 ||
		resp.Usage.TotalTokens != 831 {
		t.Fatalf("final: %+v", resp)
	}
	reqs := srv.RequestsFor("@Manager")
	if len(reqs) != 2 || reqs[1].Messages[2].ToolCalls[0].Function.Arguments != `{"roles":["QA"]}` || reqs[1].Messages[3].Text() != "Members hired: [@QA123]" {
		t.Fatalf("recorded: %+v", reqs)
	}
	if reqs[0].Authorization != "Bearer sk-test" || reqs[0].Tools[0].Function.Name != "hire_members" || len(reqs[0].History()) != 1 {
		t.Fatalf("recorded request 0: %+v", reqs[0])
	}
	if srv.Pending() != 0 {
		t.Fatal("queue not drained")
	}
}

func TestEmptyQueueAnswersEmptyStructuredOutput(t *testing.T) {
	srv, c := newServer(t)
	resp, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "gpt-4.1", ResponseFormat: schemaFormat(t),
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != `{"messages":[]}` || srv.Requests()[0].Agent != "" || srv.Requests()[0].Summarizer {
		t.Fatalf("got %+v", resp)
	}
}

func TestOtherwiseAnswersWhenTheQueueIsEmpty(t *testing.T) {
	srv, c := newServer(t)
	srv.Model("").Otherwise(llmtest.Final(`{"messages":[]}`)).Enqueue(llmtest.Final(`{"messages":[{"message_type":"response","message":"first","recipient":"@H"}]}`))
	var got []string
	for range 3 {
		resp, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "gpt-4.1", ResponseFormat: schemaFormat(t),
			Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Choices[0].Message.Content)
	}
	if !strings.Contains(got[0], "first") || got[1] != `{"messages":[]}` || got[2] != got[1] {
		t.Fatalf("answers %q", got)
	}
}

func TestWireShapeHasNullContentAndRefusal(t *testing.T) {
	srv, _ := newServer(t)
	srv.Model("").Enqueue(llmtest.ToolCalls(llmtest.Call("", "f", "{}")), llmtest.Refusal("I can't help with that."))
	body := `{"model":"gpt-4.1","messages":[{"role":"user","content":"Answer in JSON."}],"response_format":{"type":"json_object"}}`
	raw := post(t, srv, body)
	if !strings.Contains(raw, `"content":null`) || !strings.Contains(raw, `"refusal":null`) || !strings.Contains(raw, `"finish_reason":"tool_calls"`) {
		t.Fatalf("tool-call response shape: %s", raw)
	}
	raw = post(t, srv, body)
	if !strings.Contains(raw, `"content":null`) || !strings.Contains(raw, `"refusal":"I can't help with that."`) {
		t.Fatalf("refusal response shape: %s", raw)
	}
}

// plain is a request for the default model: no roster line, and a
// response_format so it is not taken for a summarizer request.
func plain() openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "m", ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Answer in JSON."}}}
}

func post(t *testing.T, srv *llmtest.Server, body string) string {
	t.Helper()
	resp, err := srv.HTTPClient().Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestToolCallWithoutReplyIs400(t *testing.T) {
	_, c := newServer(t)
	assistant := openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "call_1", Type: "function",
		Function: openai.FunctionCall{Name: "hire_members", Arguments: "{}"}}}}
	cases := map[string][]openai.ChatCompletionMessage{
		"no reply at end":     {{Role: "user", Content: "u"}, assistant},
		"user before reply":   {{Role: "user", Content: "u"}, assistant, {Role: "user", Content: "again"}},
		"unknown tool id":     {{Role: "user", Content: "u"}, assistant, {Role: "tool", ToolCallID: "call_9", Content: "r"}},
		"tool without a call": {{Role: "user", Content: "u"}, {Role: "tool", ToolCallID: "call_1", Content: "r"}},
	}
	for name, msgs := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "gpt-4.1", Tools: tools(), Messages: msgs})
			ae := apiErr(t, err)
			if ae.HTTPStatusCode != 400 || ae.Type != "invalid_request_error" {
				t.Fatalf("got %+v", ae)
			}
			if !strings.Contains(ae.Message, "tool_call") && !strings.Contains(ae.Message, "role 'tool'") {
				t.Fatalf("message: %s", ae.Message)
			}
		})
	}
}

func TestStrictSchemaRejected(t *testing.T) {
	cases := map[string]string{
		"additionalProperties missing": `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		"required incomplete":          `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"]}`,
		"nullable keyword":             `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","nullable":true}},"required":["a"]}`,
		"default keyword":              `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","default":"x"}},"required":["a"]}`,
		"nested in items":              `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}}}}},"required":["a"]}`,
		"in anyOf":                     `{"anyOf":[{"type":"string","pattern":"x"}]}`,
		"in defs":                      `{"$defs":{"X":{"type":"object","properties":{}}},"$ref":"#/$defs/X"}`,
		"not an object":                `{"type":"object","additionalProperties":false,"properties":{"a":true},"required":["a"]}`,
		"a property without a type":    `{"type":"object","additionalProperties":false,"properties":{"a":{"description":"any"}},"required":["a"]}`,
		"items without a type":         `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","items":{}}},"required":["a"]}`,
		"a $defs entry without a type": `{"type":"object","additionalProperties":false,"properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"$defs":{"A":{}}}`,
		"no type at the root":          `{"description":"any"}`,
	}
	_, c := newServer(t)
	for name, schema := range cases {
		t.Run(name, func(t *testing.T) {
			if err := llmtest.CheckStrictSchema(json.RawMessage(schema)); err == nil {
				t.Fatal("CheckStrictSchema accepted it")
			}
			rf := &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
				JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "StructuredOutput", Schema: json.RawMessage(schema), Strict: true}}
			_, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "gpt-4.1", ResponseFormat: rf,
				Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "u"}}})
			if ae := apiErr(t, err); ae.HTTPStatusCode != 400 || !strings.Contains(ae.Message, "Invalid schema for response_format 'StructuredOutput'") {
				t.Fatalf("got %+v", ae)
			}
			tl := []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "f", Strict: true, Parameters: json.RawMessage(schema)}}}
			_, err = c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "gpt-4.1", Tools: tl,
				Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "u"}}})
			if ae := apiErr(t, err); ae.HTTPStatusCode != 400 || !strings.Contains(ae.Message, "Invalid schema for function 'f'") {
				t.Fatalf("got %+v", ae)
			}
		})
	}
	if err := llmtest.CheckStrictSchema(json.RawMessage(`{`)); err == nil {
		t.Fatal("bad JSON accepted")
	}
}

// Schemas strict mode accepts: each node typed by type, anyOf, $ref, enum
// or const.
func TestStrictSchemaAccepted(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","additionalProperties":false,"properties":{},"required":[]}`,
		`{"type":"object","additionalProperties":false,"properties":{"e":{"enum":["a","b"]},"c":{"const":1},"u":{"anyOf":[{"type":"string"},{"type":"null"}]},"r":{"$ref":"#/$defs/R"}},"required":["c","e","r","u"],"$defs":{"R":{"type":"array","items":{"type":"integer"}}}}`,
	} {
		if err := llmtest.CheckStrictSchema(json.RawMessage(schema)); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
}

func TestGeneratedSchemaIsStrictValid(t *testing.T) {
	def, err := jsonschema.GenerateSchemaForType(out{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(def)
	if err := llmtest.CheckStrictSchema(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}

func TestOtherBadRequests(t *testing.T) {
	srv, _ := newServer(t)
	cases := map[string]struct{ body, want string }{
		"not json":               {`{`, "could not parse the JSON body"},
		"no model":               {`{"messages":[{"role":"user","content":"x"}]}`, "model"},
		"no messages":            {`{"model":"m","messages":[]}`, "too short"},
		"stream_options alone":   {`{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, "stream_options"},
		"max_tokens on gpt-5":    {`{"model":"gpt-5.2","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "max_completion_tokens"},
		"effort on gpt-4.1":      {`{"model":"gpt-4.1","reasoning_effort":"low","messages":[{"role":"user","content":"x"}]}`, "reasoning_effort"},
		"bad tool name":          {`{"model":"m","tools":[{"type":"function","function":{"name":"a b"}}],"messages":[{"role":"user","content":"x"}]}`, "does not match pattern"},
		"bad schema name":        {`{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"a b","schema":{}}},"messages":[{"role":"user","content":"x"}]}`, "does not match pattern"},
		"missing json_schema":    {`{"model":"m","response_format":{"type":"json_schema"},"messages":[{"role":"user","content":"x"}]}`, "json_schema"},
		"response_format broken": {`{"model":"m","response_format":{"type":7},"messages":[{"role":"user","content":"x"}]}`, "Invalid 'response_format'"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := post(t, srv, tc.body)
			if !strings.Contains(got, tc.want) || !strings.Contains(got, `"type":"invalid_request_error"`) {
				t.Fatalf("got %s", got)
			}
		})
	}
	resp, err := srv.HTTPClient().Get(srv.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("GET /models: %d", resp.StatusCode)
	}
}

func TestAPIKeyChecked(t *testing.T) {
	srv := llmtest.NewServer(llmtest.WithAPIKey("sk-right"))
	defer srv.Close()
	c := client(srv, "sk-wrong")
	_, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}})
	if ae := apiErr(t, err); ae.HTTPStatusCode != 401 || ae.Code != "invalid_api_key" {
		t.Fatalf("got %+v", ae)
	}
}

func TestFaultSteps(t *testing.T) {
	srv, c := newServer(t)
	cut := llmtest.Final("cut")
	cut.FinishReason, cut.NoUsage = "length", true
	srv.Model("").Enqueue(
		llmtest.RateLimited("2"),
		llmtest.ServerError(),
		llmtest.ContextLengthExceeded(),
		llmtest.Raw(502, http.Header{"Content-Type": {"text/html"}}, "<html>bad gateway</html>"),
		llmtest.Raw(200, nil, `{"id":"chatcmpl-empty","object":"chat.completion","created":1,"model":"m","choices":[]}`),
		cut,
		llmtest.Reset(),
	)
	req := plain()
	_, err := c.CreateChatCompletion(t.Context(), req)
	if ae := apiErr(t, err); ae.HTTPStatusCode != 429 || ae.Code != "rate_limit_exceeded" {
		t.Fatalf("429: %+v", ae)
	}
	_, err = c.CreateChatCompletion(t.Context(), req)
	if ae := apiErr(t, err); ae.HTTPStatusCode != 500 || ae.Type != "server_error" {
		t.Fatalf("500: %+v", ae)
	}
	_, err = c.CreateChatCompletion(t.Context(), req)
	if ae := apiErr(t, err); ae.HTTPStatusCode != 400 || ae.Code != "context_length_exceeded" || *ae.Param != "messages" {
		t.Fatalf("400: %+v", ae)
	}
	_, err = c.CreateChatCompletion(t.Context(), req)
	var re *openai.RequestError
	if !errors.As(err, &re) || re.HTTPStatusCode != 502 {
		t.Fatalf("502: %T %v", err, err)
	}
	resp, err := c.CreateChatCompletion(t.Context(), req)
	if err != nil || len(resp.Choices) != 0 || resp.Usage.PromptTokens != 0 {
		t.Fatalf("empty choices: %+v %v", resp, err)
	}
	resp, err = c.CreateChatCompletion(t.Context(), req)
	if err != nil || resp.Choices[0].FinishReason != openai.FinishReasonLength || resp.Usage.PromptTokens != 0 {
		t.Fatalf("length: %+v %v", resp, err)
	}
	if _, err = c.CreateChatCompletion(t.Context(), req); err == nil {
		t.Fatal("reset: no error")
	}
}

func TestRateLimitedHeader(t *testing.T) {
	srv, _ := newServer(t)
	srv.Model("").Enqueue(llmtest.RateLimited("1"))
	resp, err := srv.HTTPClient().Post(srv.URL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"Answer in JSON."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
	}
}

func TestHangEndsWithClientContext(t *testing.T) {
	srv, c := newServer(t)
	srv.Model("").Enqueue(llmtest.Hang())
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := c.CreateChatCompletion(ctx, plain())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

func TestCloseReleasesHangingRequest(t *testing.T) {
	srv := llmtest.NewServer()
	started := make(chan struct{})
	hang := llmtest.Hang()
	hang.Check = func(*llmtest.Request) error { close(started); return nil }
	srv.Model("").Enqueue(hang)
	c := client(srv, "")
	errc := make(chan error, 1)
	go func() {
		_, err := c.CreateChatCompletion(context.Background(), plain())
		errc <- err
	}()
	<-started
	srv.Close()
	srv.Close() // idempotent
	if err := <-errc; err == nil {
		t.Fatal("hanging request succeeded")
	}
	if srv.Requests()[0].Authorization != "" {
		t.Fatal("empty key must send no Authorization header")
	}
}

func TestSummarizerRouting(t *testing.T) {
	srv, c := newServer(t)
	srv.Summarizer().Enqueue(llmtest.Final("the summary"))
	resp, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "m",
		Messages: []openai.ChatCompletionMessage{roster("@Manager"), {Role: "user", Content: "summarize"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "the summary" || !srv.Requests()[0].Summarizer {
		t.Fatalf("got %+v", resp)
	}
	resp, _ = c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "m",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "summarize"}}})
	if resp.Choices[0].Message.Content == "" {
		t.Fatal("fallback summary is empty")
	}
}

func TestRosterRouter(t *testing.T) {
	cases := map[string]string{
		"Team:\n@Ada (role: Dev) - [you]\n": "@Ada",
		"- @Bob - [you]":                    "@Bob",
		"nobody here":                       "",
	}
	for sys, want := range cases {
		r := &llmtest.Request{Messages: []llmtest.Message{{Role: "system", Content: mustJSON(sys)}}}
		if got := llmtest.RosterRouter(r); got != want {
			t.Errorf("%q: got %q want %q", sys, got, want)
		}
	}
}

func TestCustomRouterAndMultipartText(t *testing.T) {
	srv, _ := newServer(t, llmtest.WithRouter(func(r *llmtest.Request) string { return r.Model }))
	srv.Model("m").Enqueue(llmtest.Final(`{"messages":[{"message_type":"response","message":"ok","recipient":"@H"}]}`))
	got := post(t, srv, `{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"system","content":"Answer in JSON."},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"b"}]}]}`)
	if !strings.Contains(got, `\"ok\"`) {
		t.Fatalf("got %s", got)
	}
	m := srv.Requests()[0].Messages[1]
	if m.Text() != "ab" || m.Content[0] != '[' || (llmtest.Message{}).Text() != "" || (llmtest.Message{Content: []byte(`7`)}).Text() != "" {
		t.Fatalf("Text: %q", m.Text())
	}
}

type fakeReporter struct {
	mu   sync.Mutex
	msgs []string
}

func (f *fakeReporter) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func TestCheckFailsRequest(t *testing.T) {
	rep := &fakeReporter{}
	srv, c := newServer(t, llmtest.WithReporter(rep))
	step := llmtest.Final("{}")
	step.Check = func(r *llmtest.Request) error {
		if r.Temperature == nil {
			return errors.New("temperature missing")
		}
		return nil
	}
	srv.Model("").Enqueue(step)
	_, err := c.CreateChatCompletion(t.Context(), plain())
	if ae := apiErr(t, err); !strings.Contains(ae.Message, "temperature missing") || len(srv.Failures()) != 1 || len(rep.msgs) != 1 {
		t.Fatalf("got %+v %v", ae, srv.Failures())
	}
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func TestRecordThenReplay(t *testing.T) {
	var rec bytes.Buffer
	srv, c := newServer(t, llmtest.WithRecorder(&rec))
	srv.Model("@Manager").Enqueue(llmtest.RateLimited("1"), llmtest.Final(`{"messages":[]}`))
	req := openai.ChatCompletionRequest{Model: "gpt-4.1", ResponseFormat: schemaFormat(t),
		Messages: []openai.ChatCompletionMessage{roster("@Manager"), {Role: "system", Content: "The current date is 2026-08-18."}, {Role: "user", Content: "hi"}}}
	if _, err := c.CreateChatCompletion(t.Context(), req); err == nil {
		t.Fatal("want 429")
	}
	if _, err := c.CreateChatCompletion(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	exs, err := llmtest.ReadTranscript(bytes.NewReader(rec.Bytes()))
	if err != nil || len(exs) != 2 || exs[0].Status != 429 || exs[0].RetryAfter != "1" || exs[0].Agent != "@Manager" {
		t.Fatalf("transcript %+v %v", exs, err)
	}

	rep := &fakeReporter{}
	replay, rc := newServer(t, llmtest.WithReporter(rep))
	if err := replay.Replay(bytes.NewReader(rec.Bytes())); err != nil {
		t.Fatal(err)
	}
	req.Messages[1].Content = "The current date is 2031-01-02." // dates are masked
	_, err = rc.CreateChatCompletion(t.Context(), req)
	if ae := apiErr(t, err); ae.HTTPStatusCode != 429 {
		t.Fatalf("replayed 429: %+v", ae)
	}
	if _, err := rc.CreateChatCompletion(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if replay.Pending() != 0 || len(rep.msgs) != 0 {
		t.Fatalf("remaining %d, failures %v", replay.Pending(), rep.msgs)
	}
	// Anything more is unexpected.
	_, err = rc.CreateChatCompletion(t.Context(), req)
	if ae := apiErr(t, err); !strings.Contains(ae.Message, "after the transcript ended") {
		t.Fatalf("got %+v", ae)
	}
	// A request that differs is refused.
	if err := replay.Replay(bytes.NewReader(rec.Bytes())); err != nil {
		t.Fatal(err)
	}
	req.Messages[2].Content = "something else"
	_, err = rc.CreateChatCompletion(t.Context(), req)
	if ae := apiErr(t, err); !strings.Contains(ae.Message, "does not match the transcript") {
		t.Fatalf("got %+v", ae)
	}
	if len(replay.Failures()) != 2 || len(rep.msgs) != 2 {
		t.Fatalf("failures %v", replay.Failures())
	}
}

func TestReplayTranscriptErrors(t *testing.T) {
	srv, _ := newServer(t)
	if err := srv.Replay(strings.NewReader("\n{nope}\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("got %v", err)
	}
	if err := srv.Replay(strings.NewReader(`{"status":200}`)); err == nil {
		t.Fatal("missing request accepted")
	}
}

func TestRecordsNonJSONBodies(t *testing.T) {
	var rec bytes.Buffer
	srv, _ := newServer(t, llmtest.WithRecorder(&rec))
	srv.Summarizer().Enqueue(llmtest.Raw(502, nil, "<html>"))
	post(t, srv, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	exs, err := llmtest.ReadTranscript(&rec)
	if err != nil || string(exs[0].Response) != `"\u003chtml\u003e"` {
		t.Fatalf("got %s %v", rec.String(), err)
	}
}

func TestModelConfigPointsHere(t *testing.T) {
	srv := llmtest.NewServer()
	defer srv.Close()
	m := srv.ModelConfig("gpt-4.1-mini")
	if m.BaseURL != srv.URL() || m.Model != "gpt-4.1-mini" || m.Provider != "openai-compatible" {
		t.Fatalf("ModelConfig %+v", m)
	}
}

// A recorded multipart message gives its parts, in
// order, text and images alike.
func TestMessageParts(t *testing.T) {
	m := llmtest.Message{Role: "user", Content: []byte(`[{"type":"text","text":"look: "},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}},{"type":"text","text":"ok?"}]`)}
	parts := m.Parts()
	if len(parts) != 3 || parts[0].Text != "look: " || parts[1].Type != "image_url" ||
		parts[1].ImageURL != "data:image/png;base64,AAAA" || parts[1].Detail != "low" || parts[2].Text != "ok?" {
		t.Fatalf("parts %+v", parts)
	}
	if got := m.Text(); got != "look: ok?" {
		t.Fatalf("Text %q", got)
	}
	if plain := (llmtest.Message{Content: []byte(`"hi"`)}); plain.Parts() != nil || plain.Text() != "hi" {
		t.Fatalf("a plain content: parts %v, text %q", plain.Parts(), plain.Text())
	}
}

// The schemas the contract check validates against refuse what OpenAI's
// OpenAPI document refuses: among them the three shapes our requests once
// had (a tool message without content, a tool call without arguments) and
// an error without its message; and they accept a well-formed exchange.
func TestOpenAIContractSchemasRefuseWhatTheDocumentRefuses(t *testing.T) {
	const (
		request = "CreateChatCompletionRequest"
		answer  = "CreateChatCompletionResponse"
		chunk   = "CreateChatCompletionStreamResponse"
		errBody = "ErrorResponse"
	)
	call := `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	for _, c := range []struct {
		schema, body string
		ok           bool
	}{
		{request, `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`, true},
		{request, `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"call_1","content":""}]}`, true},
		{request, `{"model":"gpt-4.1","messages":[]}`, false},
		{request, `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"call_1"}]}`, false},
		{request, `{"model":"gpt-4.1","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f"}}]}]}`, false},
		{request, `{"model":"gpt-4.1","messages":[{"role":"wizard","content":"hi"}]}`, false},
		{request, `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}],"temperature":3}`, false},
		{answer, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","logprobs":null,"message":{"role":"assistant","content":"hi","refusal":null}}]}`, true},
		{answer, `{"id":"x","object":"chat.completion","created":1,"model":"m"}`, false},
		{chunk, `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"h"},"finish_reason":null}]}`, true},
		{errBody, `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`, true},
		{errBody, `{"error":{"type":"invalid_request_error"}}`, false},
	} {
		err := llmtest.ValidateContract(c.schema, []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s %s: accepted %v, want %v (%v)", c.schema, c.body, err == nil, c.ok, err)
		}
	}
}
