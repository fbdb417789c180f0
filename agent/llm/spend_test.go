package llm_test

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// A budget counts the reservations of the calls in flight: with
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

// Concurrent reservations never let the spend pass the ceiling.
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

// The default table knows each model's default maximum output,
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

// Without max_tokens a call reserves the model's default maximum
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

// Without max_tokens gpt-5's worst case is its whole
// default output (128,000 tokens at $8 per 1M, $1.02): docs/tools.md's $0.50
// agent ceiling refused every call without saying why. The refusal says
// that no such call can ever be made and names the setting; docs/tools.md's
// example, which sets Model.MaxTokens, makes its calls.
func TestSpendCeilingBelowTheWorstCaseNamesMaxTokens(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) {
		c.Model.Model = "gpt-5"
		c.AgentLimits.SpendLimit = new(0.50)
	})
	_, err := h.run("go")
	var le *llm.UsageLimitError
	if !errors.As(err, &le) || le.Tier != "agent" ||
		!strings.Contains(err.Error(), "no call like it can ever be made") ||
		!strings.Contains(err.Error(), "default output (128000 tokens for gpt-5): set Model.MaxTokens (JSON model_cfg.max_tokens)") {
		t.Fatalf("run: %v", err)
	}
	if n := len(h.requests()); n != 0 {
		t.Fatalf("%d requests made past the ceiling", n)
	}

	// The example in docs/tools.md: gpt-4.1, max_tokens 4,096, $0.50.
	h = newHarness(t, func(c *llm.Config) {
		c.AgentLimits.SpendLimit = new(0.50)
		c.Model.MaxTokens = 4096
	})
	h.model.Enqueue(llmtest.Final(`{"messages":[]}`))
	h.mustRun("go")

	// A cap set too high for the ceiling: the error says to lower it.
	h = newHarness(t, func(c *llm.Config) {
		c.AgentLimits.SpendLimit = new(0.01)
		c.Model.MaxTokens = 4096
	})
	if _, err := h.run("go"); err == nil || !strings.Contains(err.Error(), "Lower the completion cap (4096 tokens; Model.MaxTokens") {
		t.Fatalf("run: %v", err)
	}
}

// A ceiling the call's worst case fits under, with others in
// flight, is refused without the "never" hint: waiting may let it pass.
func TestSpendRefusalInFlightHasNoHint(t *testing.T) {
	b := llm.NewBudget(1.0, 0.75)
	_, err := b.Reserve("team", 0.5)
	if err == nil || strings.Contains(err.Error(), "never") || strings.Contains(err.Error(), "(what to do)") {
		t.Fatalf("err %v", err)
	}
	_, err = b.Reserve("team", 1.5)
	if err == nil || !strings.Contains(err.Error(), "no call like it can ever be made. (what to do)") {
		t.Fatalf("err %v", err)
	}
}

// An answer without usage (a stream whose server sent
// no usage chunk) is settled at its worst case, not at $0; a failed call
// at $0; an answer with usage at its real cost.
func TestSpendSettlesAnswerWithoutUsageAtWorstCase(t *testing.T) {
	team := llm.NewBudget(10, 0)
	r := guardedRunner(t, func(c *llm.Config) { c.Model.MaxTokens = 1000 }, llm.Options{TeamBudget: team})
	req := promptOf(3000) // about 1,010 prompt tokens
	_, done, err := r.Admit(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	done(answered("hi", 0, 0), nil)
	// 1,000 × $8/M = $0.008 of output plus the prompt's ~1,010 × $2/M.
	if got := team.Spent(); got < 0.008+0.002 || got > 0.008+0.0021 {
		t.Fatalf("spent $%v, want the worst case (about $0.010)", got)
	}
	_, done, err = r.Admit(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	before := team.Spent()
	done(openai.ChatCompletionResponse{}, errors.New("connection refused"))
	if team.Spent() != before {
		t.Fatalf("a failed call was charged $%v", team.Spent()-before)
	}
	_, done, err = r.Admit(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	done(answered("hi", 1000, 100), nil) // $0.002 + $0.0008
	if got := team.Spent() - before; math.Abs(got-0.0028) > 1e-9 {
		t.Fatalf("spent $%v, want $0.0028", got)
	}
}

// End to end, a streamed answer without a usage chunk
// is settled at its worst case.
func TestSpendStreamWithoutUsageChunk(t *testing.T) {
	team := llm.NewBudget(10, 0)
	h := newHarness(t, nil)
	cfg := testConfig(h.srv)
	cfg.Runtime.Stream, cfg.Model.MaxTokens = true, 1000
	r, err := llm.NewRunner(cfg, llm.Options{HTTPClient: h.srv.HTTPClient(), SystemPrompts: rosterPrompt, TeamBudget: team})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	bare := llmtest.Final(`{"messages":[]}`)
	bare.NoUsage = true
	h.model.Enqueue(bare)
	if _, err := llm.Run(t.Context(), r, llm.UserText("go"), h.out); err != nil {
		t.Fatal(err)
	}
	if got := team.Spent(); got < 0.008 {
		t.Fatalf("spent $%v, want at least the $0.008 of the 1,000-token cap", got)
	}
}
