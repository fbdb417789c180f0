package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// steppingClock is a limiter clock whose sleeps return at once and move
// the time by what was asked: the waits are recorded, nothing blocks.
type steppingClock struct {
	now   time.Time
	waits []time.Duration
}

func (c *steppingClock) Now() time.Time { return c.now }

func (c *steppingClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func newLimiter(t *testing.T, limits map[string]llm.RateLimit) (*llm.RateLimiter, *steppingClock) {
	t.Helper()
	c := &steppingClock{now: fixedNow}
	l, err := llm.NewRateLimiter(limits, c.Now, c.Sleep)
	if err != nil {
		t.Fatal(err)
	}
	return l, c
}

var endpoint = llm.ModelConfig{Provider: "openai-compatible", BaseURL: "http://localhost/v1", Model: "gpt-4.1"}

// Issue 16: requests per minute: a minute's worth at once, then one every
// 60/RPM seconds; the longest matching key applies.
func TestRateLimiterRequestsPerMinute(t *testing.T) {
	l, c := newLimiter(t, map[string]llm.RateLimit{"": {RequestsPerMinute: 100}, "gpt-4.1": {RequestsPerMinute: 2}})
	for range 3 {
		if _, _, err := l.Wait(t.Context(), endpoint, "gpt-4.1-2025-04-14", 10); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.waits) != 1 || c.waits[0] < 30*time.Second || c.waits[0] > 30*time.Second+time.Millisecond {
		t.Fatalf("waits %v, want one of 30s (2 requests a minute)", c.waits)
	}
}

// Issue 16: tokens per minute: a call is charged its tokens (capped at the
// bucket) and gets back what the response did not use.
func TestRateLimiterTokensPerMinute(t *testing.T) {
	l, c := newLimiter(t, map[string]llm.RateLimit{"gpt": {TokensPerMinute: 6000}})
	_, refund, err := l.Wait(t.Context(), endpoint, "gpt-4.1", 6000)
	if err != nil {
		t.Fatal(err)
	}
	refund(3000) // 3,000 tokens back
	if _, _, err := l.Wait(t.Context(), endpoint, "gpt-4.1", 3000); err != nil || len(c.waits) != 0 {
		t.Fatalf("the refunded tokens did not fit: %v, waits %v", err, c.waits)
	}
	if _, _, err := l.Wait(t.Context(), endpoint, "gpt-4.1", 60000); err != nil { // capped at 6,000: a full minute
		t.Fatal(err)
	}
	if len(c.waits) != 1 || c.waits[0] < time.Minute || c.waits[0] > time.Minute+time.Millisecond {
		t.Fatalf("waits %v, want one of a minute", c.waits)
	}
	// Another endpoint or model has its own bucket.
	if _, _, err := l.Wait(t.Context(), endpoint, "gpt-4o", 6000); err != nil || len(c.waits) != 1 {
		t.Fatalf("another model waited: %v %v", err, c.waits)
	}
}

// Issue 16: a 429's Retry-After seen by one call pauses the next calls to
// the same endpoint and model, not the others; a cancelled context ends a
// wait with its error.
func TestRateLimiterPauseAndCancel(t *testing.T) {
	l, c := newLimiter(t, nil)
	ctx, _, err := l.Wait(t.Context(), endpoint, "gpt-4.1", 100)
	if err != nil {
		t.Fatal(err)
	}
	llm.SharePause(ctx, 20*time.Second)
	if _, _, err := l.Wait(t.Context(), endpoint, "gpt-4o", 100); err != nil || len(c.waits) != 0 {
		t.Fatalf("another model was paused: %v %v", err, c.waits)
	}
	if _, _, err := l.Wait(t.Context(), endpoint, "gpt-4.1", 100); err != nil || len(c.waits) != 1 || c.waits[0] != 20*time.Second {
		t.Fatalf("waits %v (%v), want the 20s pause", c.waits, err)
	}
	llm.SharePause(ctx, time.Minute)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = l.Wait(cancelled, endpoint, "gpt-4.1", 100)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for the rate limit of gpt-4.1") {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// Issue 16: a negative limit is refused, naming the model.
func TestRateLimiterRejectsNegativeLimits(t *testing.T) {
	_, err := llm.NewRateLimiter(map[string]llm.RateLimit{"gpt-4o": {TokensPerMinute: -1}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"gpt-4o"`) {
		t.Fatalf("err %v", err)
	}
}

// Issue 16: a 429 with Retry-After answered to one runner pauses the next
// call of another runner sharing the limiter (the retry doer tells it).
func TestRateLimiterShares429AcrossRunners(t *testing.T) {
	l, c := newLimiter(t, nil)
	h := newHarness(t, nil)
	newRunner := func() *llm.Runner {
		r, err := llm.NewRunner(testConfig(h.srv), llm.Options{HTTPClient: h.srv.HTTPClient(), Sleep: h.rec.sleep,
			SystemPrompts: rosterPrompt, RateLimiter: l})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	a, b := newRunner(), newRunner()
	h.model.Enqueue(llmtest.RateLimited("7"), llmtest.Final(`{"messages":[]}`), llmtest.Final(`{"messages":[]}`))
	if _, err := llm.Run(t.Context(), a, llm.UserText("a"), h.out); err != nil {
		t.Fatal(err)
	}
	if len(c.waits) != 0 {
		t.Fatalf("the first runner waited on the limiter: %v", c.waits)
	}
	if _, err := llm.Run(t.Context(), b, llm.UserText("b"), h.out); err != nil {
		t.Fatal(err)
	}
	if len(c.waits) != 1 || c.waits[0] != 7*time.Second {
		t.Fatalf("the second runner's waits %v, want the 7s Retry-After", c.waits)
	}
}
