package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// wireMessages decodes the messages of request i's body as sent, so that a
// test sees which keys were present, not what a decoder defaulted.
func wireMessages(t *testing.T, h *harness, i int) []map[string]json.RawMessage {
	t.Helper()
	reqs := h.requests()
	if i >= len(reqs) {
		t.Fatalf("want request %d, have %d", i, len(reqs))
	}
	var body struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Messages
}

// lastWith returns the last message of role in msgs.
func lastWith(t *testing.T, msgs []map[string]json.RawMessage, role string) map[string]json.RawMessage {
	t.Helper()
	for i := len(msgs) - 1; i >= 0; i-- {
		if string(msgs[i]["role"]) == `"`+role+`"` {
			return msgs[i]
		}
	}
	t.Fatalf("no %s message in %v", role, msgs)
	return nil
}

// A tool that returns "" is answered with "content": "", which the API
// requires of a tool message.
func TestEmptyToolResultIsSentAsEmptyContent(t *testing.T) {
	tool := funcTool("noop", func(context.Context, json.RawMessage) (any, error) { return "", nil })
	h := newHarness(t, nil, tool)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "noop", `{}`)), llmtest.Final(finalPlan))
	h.mustRun("go")
	m := lastWith(t, wireMessages(t, h, 1), "tool")
	if c, ok := m["content"]; !ok || string(c) != `""` {
		t.Fatalf("tool message %s: want \"content\":\"\"", mustJSON(t, m))
	}
	if got := h.runner.History()[2]; got.Role != "tool" || got.Content != "" {
		t.Fatalf("history keeps the result as it was: %+v", got)
	}
}

// A tool call whose arguments were empty is sent back with arguments "{}",
// the arguments the tool was called with: the API requires them.
func TestEmptyToolArgumentsAreSentAsEmptyObject(t *testing.T) {
	var got []string
	tool := funcTool("noop", func(_ context.Context, args json.RawMessage) (any, error) {
		got = append(got, string(args))
		return "done", nil
	})
	h := newHarness(t, nil, tool)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "noop", "")), llmtest.Final(finalPlan))
	h.mustRun("go")
	if len(got) != 1 || got[0] != "{}" {
		t.Fatalf("tool called with %q", got)
	}
	var calls []struct {
		Function map[string]json.RawMessage `json:"function"`
	}
	m := lastWith(t, wireMessages(t, h, 1), "assistant")
	if err := json.Unmarshal(m["tool_calls"], &calls); err != nil || len(calls) != 1 {
		t.Fatalf("tool calls %s: %v", m["tool_calls"], err)
	}
	if a, ok := calls[0].Function["arguments"]; !ok || string(a) != `"{}"` {
		t.Fatalf("function %s: want \"arguments\":\"{}\"", mustJSON(t, calls[0].Function))
	}
}

// An empty answer goes back in the next request as "content": "", not as a
// bare {"role":"assistant"}.
func TestEmptyAnswerIsSentAsEmptyContent(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.Final(""), llmtest.Final(finalPlan))
	h.mustRun("go")
	msgs := wireMessages(t, h, 1)
	var assistant map[string]json.RawMessage
	for _, m := range msgs {
		if string(m["role"]) == `"assistant"` {
			assistant = m
		}
	}
	if assistant == nil {
		t.Fatalf("no assistant message in %s", mustJSON(t, msgs))
	}
	if c, ok := assistant["content"]; !ok || string(c) != `""` {
		t.Fatalf("assistant message %s: want \"content\":\"\"", mustJSON(t, assistant))
	}
}

// An empty user prompt is sent with "content": "" too; the text of a
// message is never changed on the way.
func TestEmptyPromptIsSentAsEmptyContent(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.Final(finalPlan))
	if _, err := llm.Run(t.Context(), h.runner, llm.UserText(""), h.out); err != nil {
		t.Fatal(err)
	}
	m := lastWith(t, wireMessages(t, h, 0), "user")
	if c, ok := m["content"]; !ok || string(c) != `""` {
		t.Fatalf("user message %s: want \"content\":\"\"", mustJSON(t, m))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
