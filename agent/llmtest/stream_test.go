package llmtest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// The fake server streams its answers in OpenAI's wire format
// (server-sent "data:" chunks, "data: [DONE]", usage in a last chunk when
// stream_options.include_usage asks for it), through go-openai's own
// stream reader, and can cut a stream with an error event.

// streamRequest is a request routed to @Manager's script (a summarizer
// request has neither tools nor response_format).
func streamRequest(withUsage bool) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessage{
		roster("@Manager"), {Role: "user", Content: "hi, in JSON"}},
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}}
	if withUsage {
		req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	return req
}

// drain reads a stream to its end: the chunks and the error that ended it
// (nil for [DONE]).
func drain(t *testing.T, c *openai.Client, req openai.ChatCompletionRequest) ([]openai.ChatCompletionStreamResponse, error) {
	t.Helper()
	s, err := c.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var chunks []openai.ChatCompletionStreamResponse
	for {
		ch, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return chunks, nil
		}
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, ch)
	}
}

func TestStreamedFinal(t *testing.T) {
	srv, c := newServer(t)
	const text = `{"messages":[{"message_type":"response","message":"Héllo wörld, streamed","recipient":"@Human"}]}`
	srv.Model("@Manager").Enqueue(llmtest.Final(text).WithUsage(42, 7, 0), llmtest.Final(text))
	chunks, err := drain(t, c, streamRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	var finish openai.FinishReason
	usages := 0
	for i, ch := range chunks {
		if ch.Object != "chat.completion.chunk" || ch.ID == "" {
			t.Fatalf("chunk %d: object %q id %q", i, ch.Object, ch.ID)
		}
		if ch.Usage != nil {
			usages++
			if i != len(chunks)-1 || len(ch.Choices) != 0 || ch.Usage.PromptTokens != 42 || ch.Usage.CompletionTokens != 7 {
				t.Fatalf("usage chunk %d of %d: %+v", i, len(chunks), ch)
			}
		}
		for _, choice := range ch.Choices {
			got.WriteString(choice.Delta.Content)
			if choice.FinishReason != "" {
				finish = choice.FinishReason
			}
		}
	}
	if got.String() != text || finish != openai.FinishReasonStop || usages != 1 {
		t.Fatalf("joined %q, finish %q, %d usage chunks", got.String(), finish, usages)
	}
	if len(chunks) < 10 {
		t.Fatalf("%d chunks: the answer should come in small pieces", len(chunks))
	}
	// Without include_usage, no usage chunk.
	chunks, err = drain(t, c, streamRequest(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chunks {
		if ch.Usage != nil || len(ch.Choices) == 0 {
			t.Fatalf("usage chunk sent without include_usage: %+v", ch)
		}
	}
	if r := srv.Requests()[0]; !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Fatalf("request decoded stream=%v options=%v", r.Stream, r.StreamOptions)
	}
}

// The raw wire: "data: " lines separated by blank lines, ending with
// "data: [DONE]"; a cut stream ends with an error event instead, which
// go-openai reports as an *openai.APIError.
func TestStreamWireAndCut(t *testing.T) {
	srv, c := newServer(t)
	srv.Model("@Manager").Enqueue(llmtest.Final(`{"messages":[]}`), llmtest.Final(`{"messages":[]}`).CutAfter(2))
	body := `{"model":"gpt-4.1","stream":true,"response_format":{"type":"json_object"},"messages":[{"role":"system","content":"@Manager (role: Manager) - [you]"},{"role":"user","content":"x, in JSON"}]}`
	resp, err := srv.HTTPClient().Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n")
	for _, e := range events {
		if !strings.HasPrefix(e, "data: ") {
			t.Fatalf("event %q is not a data line", e)
		}
	}
	if last := events[len(events)-1]; last != "data: [DONE]" {
		t.Fatalf("last event %q", last)
	}

	chunks, err := drain(t, c, streamRequest(true))
	apiErr(t, err)
	if len(chunks) != 2 {
		t.Fatalf("%d chunks before the error, want 2", len(chunks))
	}
	// Not streamed, a cut step answers whole.
	srv.Model("@Manager").Enqueue(llmtest.Final(`{"messages":[]}`).CutAfter(0))
	req := streamRequest(false)
	if _, err := c.CreateChatCompletion(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// Tool calls stream as OpenAI streams them: the id and name first, then
// the arguments in pieces, each fragment with the call's index.
func TestStreamedToolCalls(t *testing.T) {
	srv, c := newServer(t)
	srv.Model("@Manager").Enqueue(llmtest.ToolCalls(
		llmtest.Call("call_a", "hire_members", `{"roles":["QA","Developer"]}`),
		llmtest.Call("call_b", "hire_members", `{"roles":["Designer"]}`)))
	req := streamRequest(true)
	req.Tools = tools()
	chunks, err := drain(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	args := map[int]*strings.Builder{}
	ids := map[int]string{}
	for _, ch := range chunks {
		for _, choice := range ch.Choices {
			for _, tc := range choice.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatal("a tool-call fragment without its index")
				}
				i := *tc.Index
				if args[i] == nil {
					args[i] = &strings.Builder{}
				}
				if tc.ID != "" {
					ids[i] = tc.ID
				}
				args[i].WriteString(tc.Function.Arguments)
			}
		}
	}
	if ids[0] != "call_a" || ids[1] != "call_b" || args[0].String() != `{"roles":["QA","Developer"]}` || args[1].String() != `{"roles":["Designer"]}` {
		t.Fatalf("ids %v, arguments %q %q", ids, args[0], args[1])
	}
}

// A recorded transcript replays to a streamed request as a stream of the
// recorded completion; a streamed answer is recorded as that completion.
func TestStreamRecordAndReplay(t *testing.T) {
	var log bytes.Buffer
	rec, c := newServer(t, llmtest.WithRecorder(&log))
	const text = `{"messages":[{"message_type":"response","message":"recorded","recipient":"@Human"}]}`
	rec.Model("@Manager").Enqueue(llmtest.Final(text))
	if _, err := drain(t, c, streamRequest(true)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `"object":"chat.completion"`) {
		t.Fatalf("recorded %s", log.String())
	}
	play, c2 := newServer(t)
	if err := play.Replay(&log); err != nil {
		t.Fatal(err)
	}
	chunks, err := drain(t, c2, streamRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, ch := range chunks {
		for _, choice := range ch.Choices {
			got.WriteString(choice.Delta.Content)
		}
	}
	if got.String() != text || len(play.Failures()) != 0 {
		t.Fatalf("replayed %q, failures %v", got.String(), play.Failures())
	}
	if play.Pending() != 0 {
		t.Fatalf("%d exchanges left", play.Pending())
	}
}
