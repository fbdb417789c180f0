package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// An answer asking for 1,000 tool calls runs 64 of them, at most 8 at
// once; the others are answered "not run" and a LimitEvent names the limit.
func TestToolCallsPerAnswerAndAtOnceBounded(t *testing.T) {
	var ran, active, most atomic.Int64
	tl := funcTool("probe", func(context.Context, json.RawMessage) (any, error) {
		ran.Add(1)
		n := active.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		runtime.Gosched()
		active.Add(-1)
		return "ok", nil
	})
	h := newHarness(t, nil, tl)
	calls := make([]llmtest.ToolCall, 1000)
	for i := range calls {
		calls[i] = llmtest.Call(fmt.Sprintf("call_%d", i), "probe", `{}`)
	}
	h.model.Enqueue(llmtest.ToolCalls(calls...), llmtest.Final(finalPlan))
	h.mustRun("go")
	if ran.Load() != 64 {
		t.Errorf("%d calls ran, want 64", ran.Load())
	}
	if most.Load() > 8 {
		t.Errorf("%d calls ran at once, want at most 8", most.Load())
	}
	hist := h.history(1)
	if last := hist[len(hist)-1].Text(); !strings.Contains(last, "Not run: at most 64 tool calls of one answer run (max_tool_calls_per_answer) and this answer asked for 1000") {
		t.Errorf("the last call's answer %q", last)
	}
	ev := eventsOf[llm.LimitEvent](h.rec)
	if len(ev) != 1 || ev[0].Limit != "max_tool_calls_per_answer" || !strings.Contains(ev[0].Reason, "the last 936 were not run") {
		t.Errorf("limit events %+v", ev)
	}
}

// A 16 MiB tool result reaches the model cut at 256 KiB, saying so.
func TestToolResultBytesCut(t *testing.T) {
	big := strings.Repeat("é", 8<<20) // 16 MiB, two bytes a character
	h := newHarness(t, nil, funcTool("read", func(context.Context, json.RawMessage) (any, error) { return big, nil }))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "read", `{}`)), llmtest.Final(finalPlan))
	h.mustRun("go")
	got := h.history(1)[2].Text()
	if len(got) > 256<<10+200 || !strings.HasSuffix(got, "\n[... result cut at 262144 bytes of 16777216 (max_tool_result_bytes): ask for a smaller part ...]") {
		t.Errorf("tool message of %d bytes ending %q", len(got), got[max(0, len(got)-120):])
	}
	ev := eventsOf[llm.LimitEvent](h.rec)
	if len(ev) != 1 || ev[0].Limit != "max_tool_result_bytes" {
		t.Errorf("limit events %+v", ev)
	}
}

// The limits are settings: a larger one lets more through.
func TestAnswerLimitsConfigurable(t *testing.T) {
	var ran atomic.Int64
	tl := funcTool("probe", func(context.Context, json.RawMessage) (any, error) { ran.Add(1); return strings.Repeat("x", 100), nil })
	h := newHarness(t, func(c *llm.Config) {
		c.Runtime.MaxToolCallsPerAnswer, c.Runtime.MaxParallelToolCalls, c.Runtime.MaxToolResultBytes = 3, 1, 10
	}, tl)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("a", "probe", `{}`), llmtest.Call("b", "probe", `{}`), llmtest.Call("c", "probe", `{}`), llmtest.Call("d", "probe", `{}`)), llmtest.Final(finalPlan))
	h.mustRun("go")
	if ran.Load() != 3 {
		t.Errorf("%d calls ran, want 3", ran.Load())
	}
	if got := h.history(1)[2].Text(); !strings.HasPrefix(got, "xxxxxxxxxx\n[... result cut at 10 bytes of 100") {
		t.Errorf("tool message %q", got)
	}
}

// A tool's error text that holds a key reaches neither the model nor the
// events: the retry feedback and the abort are scrubbed.
func TestToolErrorTextScrubbed(t *testing.T) {
	const key = "sk-live-Qw8eR7tY6uI5oP4aS3dF2g"
	retry := funcTool("search", func(context.Context, json.RawMessage) (any, error) {
		return nil, llm.Retry("backend said 401 for api_key=%s", key)
	})
	h := newHarness(t, nil, retry)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "search", `{}`)), llmtest.Final(finalPlan))
	h.mustRun("go")
	if got := h.history(1)[2].Text(); strings.Contains(got, key) || !strings.Contains(got, "api_key=[REDACTED]") {
		t.Errorf("the model got %q", got)
	}
	for _, e := range eventsOf[llm.MessageEvent](h.rec) {
		if strings.Contains(e.Message.Text(), key) {
			t.Errorf("an event holds the key: %+v", e)
		}
	}
}

// A model response larger than HTTP.MaxResponseBytes fails the call,
// naming the limit, before it is held whole.
func TestModelResponseBytesCapped(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.Runtime.HTTP.MaxResponseBytes = 4 << 10 })
	h.model.Enqueue(llmtest.Final(`{"messages":[{"message_type":"response","message":"` + strings.Repeat("x", 64<<10) + `","recipient":"@Human"}]}`))
	_, err := h.run("go")
	if err == nil || !strings.Contains(err.Error(), "larger than max_response_bytes") {
		t.Fatalf("run: %v, want an error naming max_response_bytes", err)
	}
}
