package llm_test

import (
	"math"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// The usage summary, by model and by run.
func TestAggregateUsageSummary(t *testing.T) {
	events := []llm.UsageEvent{
		{RunID: "A", ModelName: "gpt-4.1", ProviderName: "openai", InputTokens: 1000, OutputTokens: 100, Requests: 1},
		{RunID: "A", ModelName: "gpt-4.1", ProviderName: "openai", InputTokens: 2000, OutputTokens: 200, CacheReadTokens: 500, Requests: 1},
		{RunID: "B", ModelName: "gpt-4.1-mini-2025-04-14", ProviderName: "openai", InputTokens: 1000, OutputTokens: 100, Requests: 1},
	}
	s := llm.Aggregate(events, true, nil)
	if s.InputTokens != 4000 || s.OutputTokens != 400 || s.CacheReadTokens != 500 || s.Requests != 3 {
		t.Fatalf("totals %+v", s)
	}
	if len(s.ByModel) != 2 || !near(s.ByModel[0].Cost, 0.00765) || !near(s.ByModel[1].Cost, 0.00056) || !near(s.Cost, 0.00821) {
		t.Fatalf("costs %+v", s.ByModel)
	}
	if len(s.Runs) != 2 || s.Runs[0].RunID != "A" || s.Runs[1].RunID != "B" || s.Runs[0].InputTokens != 3000 || !near(s.Runs[0].Cost, 0.00765) || s.Runs[1].OutputTokens != 100 {
		t.Fatalf("runs %+v", s.Runs)
	}
	if flat := llm.Aggregate(events, false, nil); len(flat.Runs) != 0 || flat.Requests != 3 {
		t.Fatalf("by_run=false %+v", flat)
	}
	if empty := llm.Aggregate(nil, true, nil); empty.Requests != 0 || empty.Cost != 0 || len(empty.ByModel) != 0 {
		t.Fatalf("empty %+v", empty)
	}
}

// An unknown model aggregates tokens at zero cost.
func TestUnknownModelCostsZero(t *testing.T) {
	s := llm.Aggregate([]llm.UsageEvent{{RunID: "r", ModelName: "my-local-llm", InputTokens: 10, OutputTokens: 5, Requests: 1}}, false, nil)
	if s.InputTokens != 10 || s.Cost != 0 {
		t.Fatalf("%+v", s)
	}
}

// The longest key that is a substring wins; cached tokens are
// charged once, at the cache price, and never more than the input.
func TestPriceLookupAndCostFormula(t *testing.T) {
	p := llm.DefaultPriceTable()
	if p.Version == "" {
		t.Fatal("table has no version")
	}
	for model, wantIn := range map[string]float64{"gpt-4.1-nano-2025-04-14": 0.10, "gpt-4o-mini": 0.15, "gpt-4o": 2.50, "gpt-5.2": 2, "gpt-5-mini-x": 0.40} {
		got, ok := p.Lookup(model)
		if !ok || got.Input != wantIn {
			t.Errorf("%s: %+v", model, got)
		}
	}
	if c := p.Cost("gpt-4.1", 100, 0, 500, 0); !near(c, 500*0.5/1e6) {
		t.Fatalf("clamped cost %v", c)
	}
	if c := p.Cost("claude-sonnet-4-20250514", 0, 0, 0, 1e6); !near(c, 3.75) {
		t.Fatalf("cache write cost %v", c)
	}
}

// A user overrides or extends the table.
func TestPriceTableOverride(t *testing.T) {
	custom := llm.DefaultPriceTable().With(map[string]llm.Price{"my-local-llm": {Input: 1, Output: 1}, "gpt-4.1": {Input: 10}})
	if c := custom.Cost("my-local-llm", 1e6, 1e6, 0, 0); !near(c, 2) {
		t.Fatalf("custom cost %v", c)
	}
	if c := custom.Cost("gpt-4.1", 1e6, 0, 0, 0); !near(c, 10) {
		t.Fatalf("override %v", c)
	}
	if c := llm.DefaultPriceTable().Cost("gpt-4.1", 1e6, 0, 0, 0); !near(c, 2) {
		t.Fatal("With changed the default table")
	}
	parsed, err := llm.ParsePriceTable(strings.NewReader(`{"version":"x","models":{"m":{"input":1,"output":2,"cache_read":0,"cache_write":0}}}`))
	if err != nil || parsed.Version != "x" {
		t.Fatalf("%v", err)
	}
	for _, bad := range []string{`{`, `{"models":{"m":{"input":-1}}}`, `{"models":{"":{"input":1}}}`, `{"unknown":1}`} {
		if _, err := llm.ParsePriceTable(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if s := llm.Aggregate([]llm.UsageEvent{{ModelName: "my-local-llm", InputTokens: 1e6}}, false, custom); !near(s.Cost, 1) {
		t.Fatalf("aggregate with custom table %v", s.Cost)
	}
}

// Usage from the response: cached and reasoning tokens, dated model
// name, cost; missing usage and model are zero and the requested model,
// and the last prompt size becomes unknown (0).
func TestUsageEventFields(t *testing.T) {
	h := newHarness(t, nil)
	dated := llmtest.Final(finalPlan).WithUsage(2000, 200, 500).WithModel("gpt-4.1-2025-04-14")
	dated.ReasoningTokens = 50
	bare := llmtest.Final(finalPlan).WithModel("")
	bare.NoUsage = true
	h.model.Enqueue(dated, bare)
	h.mustRun("a")
	h.mustRun("b")
	us := h.rec.usage()
	u := us[0]
	if u.InputTokens != 2000 || u.OutputTokens != 200 || u.CacheReadTokens != 500 || u.ReasoningTokens != 50 || u.ModelName != "gpt-4.1-2025-04-14" || !near(u.Cost, (1500*2+500*0.5+200*8)/1e6) {
		t.Fatalf("usage %+v", u)
	}
	if z := us[1]; z.InputTokens != 0 || z.OutputTokens != 0 || z.Requests != 1 || z.ModelName != "gpt-4.1" {
		t.Fatalf("zero usage %+v", z)
	}
	if h.runner.LastInputTokens() != 0 {
		t.Fatalf("last input tokens %d after a response without usage, want 0 (unknown)", h.runner.LastInputTokens())
	}
}

// A failed call's usage event used nothing: the summary leaves it out.
func TestAggregateLeavesOutFailedCalls(t *testing.T) {
	events := []llm.UsageEvent{
		{RunID: "A", ModelName: "gpt-4.1", InputTokens: 1000, OutputTokens: 100, Requests: 1},
		{RunID: "B", ModelName: "gpt-4.1-mini", ErrorType: "500", Attempts: 5},
	}
	sum := llm.Aggregate(events, true, nil)
	if sum.Requests != 1 || len(sum.ByModel) != 1 || len(sum.Runs) != 1 || sum.Runs[0].RunID != "A" {
		t.Fatalf("summary %+v, want the successful call only", sum)
	}
}
