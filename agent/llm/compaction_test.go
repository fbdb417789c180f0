package llm_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

func compacting(c *llm.Config) { c.Model.ContextLength = 1000 }

// The auto-trigger fires before the request once the last prompt
// exceeded floor(1000 × 0.85); the summarizer request has no tools and no
// response_format; the history becomes one summary entry plus the prompt.
func TestAutoCompaction(t *testing.T) {
	h := newHarness(t, compacting, hireTool(t, nil))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "hire_members", `{"roles":["QA"]}`)), llmtest.Final(finalPlan).WithUsage(900, 20, 0))
	h.mustRun("first")
	h.srv.Summarizer().Enqueue(llmtest.Final("Hired QA; plan shipped."))
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("second")
	var sum *llmtest.Request
	for _, r := range h.srv.Requests() {
		if r.Summarizer {
			sum = r
		}
	}
	if sum == nil || len(sum.Messages) != 2 || sum.Messages[0].Role != "system" {
		t.Fatalf("summarizer request %+v", sum)
	}
	tr := sum.Messages[1].Text()
	for _, want := range []string{"~2000 tokens", "---\nUSER: first\n", "TOOL_CALL (hire_members): {\"roles\":[\"QA\"]}", "TOOL_RESULT (hire_members): Members hired", "ASSISTANT: " + finalPlan} {
		if !strings.Contains(tr, want) {
			t.Fatalf("transcript lacks %q:\n%s", want, tr)
		}
	}
	hist := h.history(2)
	if len(hist) != 2 || hist[0].Text() != "[Conversation summary] Hired QA; plan shipped." || hist[1].Text() != "second" {
		t.Fatalf("history %+v", hist)
	}
	var ev *llm.CompactedEvent
	for _, e := range h.rec.events {
		if c, ok := e.(llm.CompactedEvent); ok {
			ev = &c
		}
	}
	if ev == nil || ev.ReplacedMessageCount != 4 || ev.StrategyID != "summarize" || ev.TokensBefore != 900 || ev.RunID == "" || ev.SummarizerPromptVersion != "v1" || ev.TokensAfter == 0 {
		t.Fatalf("event %+v", ev)
	}
	if len(h.rec.usage()) != 3 {
		t.Fatalf("the summarizer produced a usage event: %d", len(h.rec.usage()))
	}
}

// No trigger below the threshold, without a context length, or with
// auto_trigger off.
func TestAutoCompactionGate(t *testing.T) {
	for name, mutate := range map[string]func(*llm.Config){
		"below threshold":   compacting,
		"no context length": nil,
		"auto off":          func(c *llm.Config) { compacting(c); c.Compaction.AutoTrigger = false },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, mutate)
			usage := 850
			if name != "below threshold" {
				usage = 5000
			}
			h.model.Enqueue(llmtest.Final(finalPlan).WithUsage(usage, 1, 0))
			h.mustRun("a")
			h.mustRun("b")
			if len(h.srv.Requests()) != 2 {
				t.Fatalf("unexpected summarizer call: %d requests", len(h.srv.Requests()))
			}
		})
	}
}

// A failing summarizer leaves a truncation note; the run goes on.
func TestSummarizerFailure(t *testing.T) {
	h := newHarness(t, compacting)
	h.model.Enqueue(llmtest.Final(finalPlan).WithUsage(900, 1, 0))
	h.mustRun("a")
	for range 5 {
		h.srv.Summarizer().Enqueue(llmtest.ServerError())
	}
	h.mustRun("b")
	hist := h.history(1)
	if !strings.HasPrefix(hist[0].Text(), "[Conversation summary] [NOTE: 2 earlier message(s) were truncated") || hist[1].Text() != "b" {
		t.Fatalf("history %+v", hist)
	}
}

// /compact on a fresh runner, /clear after two exchanges.
func TestCompactAndClear(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.runner.Compact(t.Context())
	if _, compacted := h.rec.lastCompacted(); err != nil || res != "Nothing to compact." || compacted {
		t.Fatalf("%v %v", res, err)
	}
	h.mustRun("a")
	h.mustRun("b")
	cl := h.runner.Clear()
	if cl != "Cleared 4 message(s); system prompt regenerates on the next run." || len(h.runner.History()) != 0 {
		t.Fatalf("%v", cl)
	}
	if k := h.rec.kinds(); k[len(k)-1] != "cleared" {
		t.Fatalf("events %v", k)
	}
	h.mustRun("c")
	if hist := h.history(2); len(hist) != 1 || hist[0].Text() != "c" || len(h.requests()[2].SystemTexts()) != 3 {
		t.Fatalf("after clear %+v", hist)
	}
	h.srv.Summarizer().Enqueue(llmtest.Final("S"))
	res, err = h.runner.Compact(t.Context())
	if ev, _ := h.rec.lastCompacted(); err != nil || res != "Compacted: replaced 2 earlier message(s) with a summary." ||
		ev.Summary != "S" || ev.ReplacedMessageCount != 2 {
		t.Fatalf("%v %v %+v", res, err, ev)
	}
	if ev, ok := h.rec.events[len(h.rec.events)-1].(llm.CompactedEvent); !ok || ev.RunID != "" {
		t.Fatalf("a compaction outside a run has a run id: %+v", h.rec.events[len(h.rec.events)-1])
	}
}

// The restore fold, with nothing emitted.
func TestRestoreFold(t *testing.T) {
	h := newHarness(t, nil)
	msg := func(role, text string) llm.Event {
		return llm.MessageEvent{Message: llm.Message{Role: role, Content: text}}
	}
	h.runner.Restore([]llm.Event{
		msg("user", "u1"), msg("assistant", "a1"),
		llm.CompactedEvent{Summary: "S", ReplacedMessageCount: 2},
		msg("user", "u2"), llm.ClearedEvent{}, msg("user", "u3"), msg("assistant", "a3"),
		llm.ToolReturnEvent{},
	})
	if len(h.rec.events) != 0 {
		t.Fatalf("restore emitted %v", h.rec.kinds())
	}
	h.mustRun("u4")
	var texts []string
	for _, m := range h.history(0) {
		texts = append(texts, m.Text())
	}
	if !slices.Equal(texts, []string{"u3", "a3", "u4"}) {
		t.Fatalf("history %v", texts)
	}
	h.runner.Restore([]llm.Event{msg("user", "u1"), llm.CompactedEvent{Summary: "S", ReplacedMessageCount: 1}, msg("user", "u2")})
	if hist := h.runner.History(); len(hist) != 2 || hist[0].Content != "[Conversation summary] S" {
		t.Fatalf("fold %+v", hist)
	}
}

// sliding_window keeps the last N entries, never orphaning a tool
// result; none never folds.
func TestSlidingWindowAndNone(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) {
		c.Compaction.Strategy = "sliding_window"
		c.Compaction.KeepRecentMessages = 2
	}, hireTool(t, nil))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "hire_members", `{"roles":["QA"]}`)), llmtest.Final(finalPlan))
	h.mustRun("a") // history: user, assistant(call), tool, assistant
	// Keeping the last 2 would start at the tool result; the window reaches
	// back to its assistant call, so only the user prompt is dropped.
	res, err := h.runner.Compact(t.Context())
	if ev, _ := h.rec.lastCompacted(); err != nil || res != "Compacted: replaced 1 earlier message(s) with a summary." ||
		ev.ReplacedMessageCount != 1 || ev.Summary != "[Sliding window: dropped 1 earlier message(s)]" {
		t.Fatalf("%q %v %+v", res, err, ev)
	}
	hist := h.runner.History()
	if len(hist) != 4 || hist[0].Content != "[Conversation summary] [Sliding window: dropped 1 earlier message(s)]" || len(hist[1].ToolCalls) != 1 {
		t.Fatalf("history %+v", hist)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("b") // the fake accepts the folded history

	n := newHarness(t, func(c *llm.Config) { c.Compaction.Strategy = "none" })
	n.mustRun("a")
	if res, _ := n.runner.Compact(t.Context()); res != "Nothing to compact." {
		t.Fatalf("none folded: %q", res)
	}
	if ev, compacted := n.rec.lastCompacted(); compacted {
		t.Fatalf("none folded: %+v", ev)
	}
}

// An auto-compaction then a forced one in the same run: the second uses the
// prompt's index after the first (it used to index past the history).
func TestSlidingWindowTwiceInOneRun(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) {
		c.Model.ContextLength = 1000
		c.Compaction.Strategy = "sliding_window"
		c.Compaction.KeepRecentMessages = 1
	}, hireTool(t, nil))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "hire_members", `{"roles":["QA"]}`)), llmtest.Final(finalPlan).WithUsage(900, 20, 0))
	h.mustRun("first") // history: user, assistant(tool call), tool, assistant; last prompt 900 > 850
	h.model.Enqueue(llmtest.ContextLengthExceeded(), llmtest.Final(finalPlan))
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Run panicked: %v", p)
		}
	}()
	if _, err := h.run("second"); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// Summarize: an auto-compaction mid-run, then a forced one, never folds an
// assistant tool call away from its result (which made every later request
// invalid).
func TestSummarizeTwiceInOneRun(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.Model.ContextLength = 1000 }, hireTool(t, nil))
	h.model.Enqueue(llmtest.Final(finalPlan).WithUsage(10, 1, 0))
	h.mustRun("first")
	h.runner.RecordOperatorAction("/team_members", "x") // history: user, assistant, operator (P=3)
	h.srv.Summarizer().Enqueue(llmtest.Final("s1"), llmtest.Final("s2"))
	h.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("", "hire_members", `{"roles":["QA"]}`)).WithUsage(900, 1, 0), // triggers auto compaction next
		llmtest.ContextLengthExceeded(), // forced compaction with the stale index
		llmtest.Final(finalPlan))
	if _, err := h.run("second"); err != nil {
		t.Errorf("run 2: %v", err)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	if _, err := h.run("third"); err != nil {
		t.Errorf("run 3: %v", err)
	}
	hist := h.runner.History()
	for i, m := range hist {
		if m.Role == "tool" && (i == 0 || (hist[i-1].Role != "assistant" && hist[i-1].Role != "tool")) {
			t.Fatalf("history entry %d is a tool result without its call", i)
		}
	}
}
