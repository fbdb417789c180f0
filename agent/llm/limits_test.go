package llm_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// run_request_limit=2 with a model that always calls a tool:
// two requests, then a run-tier breach; the next run's request is valid.
func TestRunRequestLimit(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.RunLimits.RequestLimit = new(2) }, hireTool(t, nil))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "hire_members", `{"roles":["QA"]}`)), llmtest.ToolCalls(llmtest.Call("", "hire_members", `{"roles":["QA"]}`)))
	_, err := h.run("go")
	ule := usageErr(t, err)
	if ule.Tier != "run" || ule.Limit != "run_request_limit" || !strings.Contains(ule.Error(), "request_limit of 2") || len(h.requests()) != 2 {
		t.Fatalf("err %+v requests %d", ule, len(h.requests()))
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("next") // counters reset every run
}

// tool_calls_limit=1 and one response with two calls:
// breach before either runs; history healed with two synthetic results.
func TestToolCallsLimitHealsBothCalls(t *testing.T) {
	var calls []string
	h := newHarness(t, func(c *llm.Config) { c.RunLimits.ToolCallsLimit = new(1) }, hireTool(t, &calls))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "hire_members", `{"roles":["A"]}`), llmtest.Call("c2", "hire_members", `{"roles":["B"]}`)))
	_, err := h.run("go")
	if ule := usageErr(t, err); ule.Limit != "tool_calls_limit" || !strings.Contains(ule.Error(), "tool_calls_limit of 1") {
		t.Fatalf("err %v", ule)
	}
	if len(calls) != 0 {
		t.Fatalf("tools ran: %v", calls)
	}
	hist := h.runner.History()
	tail := hist[len(hist)-2:]
	if tail[0].ToolCallID != "c1" || tail[1].ToolCallID != "c2" || !strings.Contains(tail[0].Content, "tool_calls_limit") {
		t.Fatalf("healed tail %+v", tail)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("next")
}

// total_tokens_limit=150 and a 180+20 response: breach after one
// request, and its usage event is still emitted.
func TestRunTokenLimit(t *testing.T) {
	for _, tc := range []struct {
		limit func(*llm.RunUsageLimits)
		want  string
	}{
		{func(l *llm.RunUsageLimits) { l.TotalTokensLimit = new(150) }, "Exceeded the total_tokens_limit of 150 (total_tokens=200)"},
		{func(l *llm.RunUsageLimits) { l.InputTokensLimit = new(150) }, "input_tokens_limit of 150"},
		{func(l *llm.RunUsageLimits) { l.OutputTokensLimit = new(10) }, "output_tokens_limit of 10"},
	} {
		h := newHarness(t, func(c *llm.Config) { tc.limit(&c.RunLimits) })
		h.model.Enqueue(llmtest.Final(finalPlan).WithUsage(180, 20, 0))
		_, err := h.run("go")
		if ule := usageErr(t, err); ule.Tier != "run" || !strings.Contains(ule.Error(), tc.want) {
			t.Fatalf("err %v, want %q", ule, tc.want)
		}
		if len(h.requests()) != 1 || len(h.rec.usage()) != 1 {
			t.Fatalf("requests %d usage %d", len(h.requests()), len(h.rec.usage()))
		}
	}
}

// A token breach on a tool-call response heals the unexecuted calls.
func TestRunTokenLimitOnToolCallResponse(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.RunLimits.TotalTokensLimit = new(150) }, hireTool(t, nil))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "hire_members", `{"roles":["QA"]}`)).WithUsage(180, 20, 0))
	usageErr(t, func() error { _, err := h.run("go"); return err }())
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("next")
}

// agent_request_limit=2: the third run makes no HTTP request.
func TestAgentRequestLimit(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.AgentLimits.RequestLimit = new(2) })
	h.mustRun("1")
	h.mustRun("2")
	_, err := h.run("3")
	ule := usageErr(t, err)
	if ule.Tier != "agent" || !strings.Contains(ule.Error(), "Exceeded the agent_request_limit of 2 (run_count=2)") || len(h.requests()) != 2 {
		t.Fatalf("err %v requests %d", ule, len(h.requests()))
	}
	if runs, _, _ := h.runner.AgentUsage(); runs != 2 {
		t.Fatalf("a rejected run consumed budget: runs=%d", runs)
	}
}

// Lifetime total 250, 120 per run: runs 1-3 execute (240 ≤ 250 at
// the start of run 3), run 4 is refused pre-flight.
func TestAgentTokenLimitOvershoot(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.AgentLimits.TotalTokensLimit = new(250) })
	for range 4 {
		h.model.Enqueue(llmtest.Final(finalPlan).WithUsage(100, 20, 0))
	}
	for i := range 3 {
		if _, err := h.run("r"); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	_, err := h.run("r4")
	if ule := usageErr(t, err); ule.Tier != "agent" || !strings.Contains(ule.Error(), "total_tokens_limit of 250 (total_tokens=360)") {
		t.Fatalf("err %v", ule)
	}
	if len(h.requests()) != 3 {
		t.Fatalf("requests %d", len(h.requests()))
	}
	// The input and output lifetime limits refuse the same way.
	for _, lim := range []func(*llm.AgentUsageLimits){
		func(l *llm.AgentUsageLimits) { l.InputTokensLimit = new(50) },
		func(l *llm.AgentUsageLimits) { l.OutputTokensLimit = new(10) },
	} {
		h := newHarness(t, func(c *llm.Config) { lim(&c.AgentLimits) })
		h.mustRun("1")
		usageErr(t, func() error { _, err := h.run("2"); return err }())
	}
}

// A run that fails still counts against agent_request_limit.
func TestFailedRunCounts(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.AgentLimits.RequestLimit = new(1) })
	for range 5 {
		h.model.Enqueue(llmtest.ServerError())
	}
	if _, err := h.run("1"); err == nil {
		t.Fatal("want 500")
	}
	_, err := h.run("2")
	if ule := usageErr(t, err); !strings.Contains(ule.Error(), "agent_request_limit of 1") {
		t.Fatalf("err %v", ule)
	}
}

// Restore recomputes the agent tier from usage events, idempotently;
// a run with no usage event is invisible.
func TestRestoreReseedsAgentBudget(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.AgentLimits.RequestLimit = new(3) })
	events := []llm.Event{
		llm.UsageEvent{RunID: "a", InputTokens: 100, OutputTokens: 10},
		llm.UsageEvent{RunID: "a", InputTokens: 100, OutputTokens: 10},
		llm.UsageEvent{RunID: "b", InputTokens: 50, OutputTokens: 5},
	}
	h.runner.Restore(events)
	h.runner.Restore(events)
	if runs, in, out := h.runner.AgentUsage(); runs != 2 || in != 250 || out != 25 {
		t.Fatalf("budget %d %d %d", runs, in, out)
	}
	h.mustRun("third")
	_, err := h.run("fourth")
	usageErr(t, err)
}

// A compaction threshold at or above a run-tier token limit is a
// config error naming both values.
func TestConfigRejectsDeadCompactionThreshold(t *testing.T) {
	cfg := llm.DefaultConfig()
	cfg.Model.ContextLength = 1000
	cfg.RunLimits.TotalTokensLimit = new(850)
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "850") || !strings.Contains(err.Error(), "total_tokens_limit") {
		t.Fatalf("got %v", err)
	}
	cfg.RunLimits.TotalTokensLimit = new(851)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Compaction.AutoTrigger = false // only a live auto-trigger is checked
	cfg.RunLimits.InputTokensLimit = new(10)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Every set limit must be > 0; defaults are 50 requests per run
// and an all-nil agent tier.
func TestLimitDefaultsAndValidation(t *testing.T) {
	cfg := llm.DefaultConfig()
	if *cfg.RunLimits.RequestLimit != 50 || cfg.AgentLimits != (llm.AgentUsageLimits{}) {
		t.Fatalf("defaults %+v %+v", cfg.RunLimits, cfg.AgentLimits)
	}
	cfg.RunLimits.ToolCallsLimit = new(0)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "ToolCallsLimit") {
		t.Fatalf("got %v", err)
	}
	cfg = llm.DefaultConfig()
	cfg.AgentLimits.TotalTokensLimit = new(-1)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "TotalTokensLimit") {
		t.Fatalf("got %v", err)
	}
}

// One error type for both tiers, matched with errors.As.
func TestUsageLimitErrorIsOneType(t *testing.T) {
	kinds := map[string]bool{}
	h := newHarness(t, func(c *llm.Config) {
		c.AgentLimits.RequestLimit = new(1)
		c.RunLimits.RequestLimit = new(1)
	}, funcTool("t", func(context.Context, json.RawMessage) (any, error) { return "x", nil }))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("", "t", "{}")))
	_, err := h.run("1")
	kinds[usageErr(t, err).Tier] = true
	_, err = h.run("2")
	kinds[usageErr(t, err).Tier] = true
	if !kinds["run"] || !kinds["agent"] {
		t.Fatalf("tiers %v", kinds)
	}
	if got := h.rec.kinds(); !slices.Contains(got, "return:"+h.runner.History()[2].ToolCallID) {
		t.Fatalf("events %v", got)
	}
}
