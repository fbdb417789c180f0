package llm_test

import (
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// Regression tests for defects a review found (each failed before its fix).

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
