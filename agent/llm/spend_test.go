package llm_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// Issue 16: a budget counts the reservations of the calls in flight: with
// one in flight, a second call whose worst case would pass the ceiling is
// refused with the amounts; settling replaces a reservation with the real
// cost.
func TestBudgetReservesCallsInFlight(t *testing.T) {
	b := llm.NewBudget(1.0, 0.25)
	settle, err := b.Reserve("team", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Reserve("team", 0.3)
	var le *llm.UsageLimitError
	if !errors.As(err, &le) || le.Tier != "team" || le.Limit != "spend_limit_usd" ||
		!strings.Contains(err.Error(), "team spend ceiling of $1.000000: spent $0.250000, reserved $0.500000 for calls in flight, this call's worst case $0.300000") {
		t.Fatalf("second reservation: %v", err)
	}
	settle(0.1) // the call cost less than its worst case
	if got := b.Spent(); got < 0.35-1e-9 || got > 0.35+1e-9 {
		t.Fatalf("spent %v, want 0.35", got)
	}
	if _, err := b.Reserve("team", 0.6); err != nil {
		t.Fatalf("after the settle 0.35 + 0.6 fits under 1.0: %v", err)
	}
}

// Issue 16: concurrent reservations never let the spend pass the ceiling.
func TestBudgetConcurrentReservations(t *testing.T) {
	b := llm.NewBudget(1.0, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	made := 0
	for range 50 {
		wg.Go(func() {
			settle, err := b.Reserve("team", 0.125)
			if err != nil {
				return
			}
			mu.Lock()
			made++
			mu.Unlock()
			settle(0.125) // exact in binary: no rounding at the ceiling
		})
	}
	wg.Wait()
	if made != 8 || b.Spent() != 1.0 {
		t.Fatalf("%d calls made for $%v, want 8 for $1", made, b.Spent())
	}
}

// Issue 16: the default table knows each model's default maximum output,
// which a ceiling reserves for a call without max_tokens.
func TestPriceMaxOutput(t *testing.T) {
	p, ok := llm.DefaultPriceTable().Lookup("gpt-4.1-mini-2025-04-14")
	if !ok || p.MaxOutput != 32768 {
		t.Fatalf("gpt-4.1-mini max output %d", p.MaxOutput)
	}
	if _, err := llm.ParsePriceTable(strings.NewReader(`{"models":{"m":{"input":1,"output":1,"max_output":-1}}}`)); err == nil {
		t.Fatal("a negative max_output was accepted")
	}
}

// Issue 16: without max_tokens a call reserves the model's default maximum
// output (gpt-4.1: 32,768 tokens at $8 per 1M, $0.262): under a $0.25
// ceiling the call is not made; with max_tokens 1,000 it is, and its real
// cost is what is spent; a restored runner recomputes that spend.
func TestAgentSpendCeilingReservesTheDefaultMaxOutput(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.AgentLimits.SpendLimit = new(0.25) })
	_, err := h.run("go")
	var le *llm.UsageLimitError
	if !errors.As(err, &le) || le.Tier != "agent" || !strings.Contains(err.Error(), "agent spend ceiling of $0.250000: spent $0.000000") {
		t.Fatalf("run: %v", err)
	}
	worst := strings.SplitAfter(err.Error(), "worst case $")[1]
	if !strings.HasPrefix(worst, "0.26") {
		t.Fatalf("worst case $%s, want the prompt plus $0.262 of output", worst)
	}
	if n := len(h.requests()); n != 0 {
		t.Fatalf("%d requests made past the ceiling", n)
	}

	h = newHarness(t, func(c *llm.Config) {
		c.AgentLimits.SpendLimit = new(0.25)
		c.Model.MaxTokens = 1000
	})
	h.model.Enqueue(llmtest.Final(`{"messages":[]}`).WithUsage(50_000, 1000, 0)) // $0.108
	h.mustRun("go")
	restored, err := llm.NewRunner(testConfigWith(h.srv, func(c *llm.Config) {
		c.AgentLimits.SpendLimit = new(0.22) // $0.216 spent leaves less than a call's worst case
		c.Model.MaxTokens = 1000
	}), llm.Options{HTTPClient: h.srv.HTTPClient(), SystemPrompts: rosterPrompt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restored.Close() })
	var events []llm.Event
	for _, u := range h.rec.usage() {
		events = append(events, u, u) // spent twice: $0.216
	}
	restored.Restore(events)
	_, err = llm.Run(t.Context(), restored, llm.UserText("again"), h.out)
	if err == nil || !strings.Contains(err.Error(), "agent spend ceiling of $0.220000: spent $0.216000") {
		t.Fatalf("restored run: %v, want the ceiling with the recomputed spend", err)
	}
}

func testConfigWith(srv *llmtest.Server, mutate func(*llm.Config)) llm.Config {
	cfg := testConfig(srv)
	mutate(&cfg)
	return cfg
}
