package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	openai "github.com/sashabaranov/go-openai"

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

// Requests per minute: a minute's worth at once, then one every
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

// Tokens per minute: a call is charged its tokens (capped at the
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

// A 429's Retry-After seen by one call pauses the next calls to
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

// A negative limit is refused, naming the model.
func TestRateLimiterRejectsNegativeLimits(t *testing.T) {
	_, err := llm.NewRateLimiter(map[string]llm.RateLimit{"gpt-4o": {TokensPerMinute: -1}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"gpt-4o"`) {
		t.Fatalf("err %v", err)
	}
}

// A 429 with Retry-After answered to one runner pauses the next
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

// guardedRunner is a runner of model gpt-4.1 (no max_tokens unless mutate
// sets it) with the given guards.
func guardedRunner(t *testing.T, mutate func(*llm.Config), opts llm.Options) *llm.Runner {
	t.Helper()
	h := newHarness(t, nil)
	cfg := testConfig(h.srv)
	if mutate != nil {
		mutate(&cfg)
	}
	opts.HTTPClient, opts.SystemPrompts = h.srv.HTTPClient(), rosterPrompt
	r, err := llm.NewRunner(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// promptOf is a request of about n bytes of prompt (n/3 tokens estimated).
func promptOf(n int) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: strings.Repeat("x", n)}}}
}

// answered is a response with content and, unless prompt is 0, usage.
func answered(content string, prompt, completion int) openai.ChatCompletionResponse {
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: "assistant", Content: content}}},
		Usage: openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}}
}

// Under the limits docs/tools.md shows (gpt-4.1, 500 requests and
// 30,000 tokens a minute) a call without max_tokens was charged the
// model's whole maximum output (32,768 tokens, capped at the bucket): two
// overlapping calls and the second waited a minute. It is charged its
// prompt plus a modest estimate now: several overlap without waiting, and
// each is reconciled with its real usage.
func TestRateLimiterDocumentedLimitsLetOverlappingCallsThrough(t *testing.T) {
	l, c := newLimiter(t, map[string]llm.RateLimit{"gpt-4.1": {RequestsPerMinute: 500, TokensPerMinute: 30_000}})
	r := guardedRunner(t, nil, llm.Options{RateLimiter: l})
	var dones []func(openai.ChatCompletionResponse, error)
	for range 4 { // 4 × (3,000 prompt + 1,024) fit in 30,000
		_, done, err := r.Admit(t.Context(), promptOf(9000))
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, done)
	}
	if len(c.waits) != 0 {
		t.Fatalf("overlapping calls under the documented limits waited %v", c.waits)
	}
	for _, done := range dones {
		done(answered("ok", 2500, 500), nil) // 3,000 used, about what was charged
	}
	// 4 × 3,000 used: 18,000 left, enough for four more without a wait.
	for range 4 {
		if _, _, err := r.Admit(t.Context(), promptOf(9000)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.waits) != 0 {
		t.Fatalf("after reconciling, calls waited %v", c.waits)
	}
}

// emptiedBucket is a limiter on the real clock (a synctest bubble's) of
// 6,000 gpt-4.1 tokens a minute, emptied by one call: reconcile is that
// call's. waiting is a second call of tokens, waiting in a goroutine: its
// result arrives on the channel.
func emptiedBucket(t *testing.T) (reconcile func(int), waiting func(ctx context.Context, tokens int) <-chan error) {
	t.Helper()
	l, err := llm.NewRateLimiter(map[string]llm.RateLimit{"gpt-4.1": {TokensPerMinute: 6000}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, reconcile, err = l.Wait(t.Context(), endpoint, "gpt-4.1", 6000)
	if err != nil {
		t.Fatal(err)
	}
	return reconcile, func(ctx context.Context, tokens int) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, _, err := l.Wait(ctx, endpoint, "gpt-4.1", tokens)
			done <- err
		}()
		synctest.Wait() // it sleeps: the bucket is empty
		select {
		case err := <-done:
			t.Fatalf("the second call did not wait: %v", err)
		default:
		}
		return done
	}
}

// A call waiting for tokens is woken when another call
// gives its unused tokens back, instead of sleeping the whole computed
// wait. In a synctest bubble: no fake time passes before it goes.
func TestRateLimiterRefundWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reconcile, waiting := emptiedBucket(t)
		start := time.Now()
		done := waiting(t.Context(), 3000)
		reconcile(2000) // 4,000 tokens back
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the woken call went after %v, want at once (the refill alone takes 30s)", waited)
		}
	})
}

// A wait that a refund wakes but that still does not fit sleeps
// again; its context still ends it.
func TestRateLimiterWokenWaiterHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reconcile, waiting := emptiedBucket(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := waiting(ctx, 6000)
		reconcile(5000) // 1,000 back: not enough, it sleeps again
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the call went with 1,000 of its 6,000 tokens: %v", err)
		default:
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", err)
		}
	})
}

// Reconciling. With max_tokens a call is charged its
// prompt plus max_tokens; an answer without usage (a stream with no usage
// chunk) is reconciled with the estimate of its prompt and answer, not
// left charged at the worst case; a call that used more than it was
// charged leaves a debt the next call waits for.
func TestRateLimiterReconcilesWithUsageOrEstimate(t *testing.T) {
	l, c := newLimiter(t, map[string]llm.RateLimit{"gpt-4.1": {TokensPerMinute: 6000}})
	r := guardedRunner(t, func(c *llm.Config) { c.Model.MaxTokens = 5000 }, llm.Options{RateLimiter: l})
	_, done, err := r.Admit(t.Context(), promptOf(300)) // about 100 + 5,000 charged
	if err != nil {
		t.Fatal(err)
	}
	done(answered("a short answer", 0, 0), nil) // no usage: about 100 + 5 tokens
	_, done, err = r.Admit(t.Context(), promptOf(300))
	if err != nil || len(c.waits) != 0 {
		t.Fatalf("the answer without usage stayed charged at its worst case: %v, waits %v", err, c.waits)
	}
	done(answered("", 100, 5000), nil)
	c.now = c.now.Add(time.Minute) // full again
	_, done, err = r.Admit(t.Context(), promptOf(300))
	if err != nil {
		t.Fatal(err)
	}
	done(answered("long", 6000, 3000), nil) // 9,000 used: 900 left less a debt of 3,900
	if _, _, err := r.Admit(t.Context(), promptOf(300)); err != nil {
		t.Fatal(err)
	}
	if len(c.waits) != 1 || c.waits[0] < 80*time.Second || c.waits[0] > 82*time.Second {
		t.Fatalf("waits %v, want one of about 81s (a debt of 3,000 and a charge of 5,100 at 6,000 a minute)", c.waits)
	}
}

// A wait cancelled with a cause ends with the cause.
func TestRateLimiterWaitEndsWithTheCancelCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, waiting := emptiedBucket(t)
		ctx, cancel := context.WithCancelCause(t.Context())
		done := waiting(ctx, 3000)
		stopping := errors.New("the agent is stopping")
		cancel(stopping)
		if err := <-done; !errors.Is(err, stopping) || !strings.Contains(err.Error(), "waiting for the rate limit of gpt-4.1") {
			t.Fatalf("wait cancelled with a cause ended with %v", err)
		}
	})
}
