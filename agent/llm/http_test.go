package llm_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

func apiStatus(t *testing.T, err error) int {
	t.Helper()
	var ae *openai.APIError
	if errors.As(err, &ae) {
		return ae.HTTPStatusCode
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return re.HTTPStatusCode
	}
	t.Fatalf("want an API error, got %T %v", err, err)
	return 0
}

// 429 with Retry-After waits what the server asked, then succeeds;
// one response, one usage event.
func TestRateLimitWithRetryAfter(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.RateLimited("1"), llmtest.Final(finalPlan))
	h.mustRun("go")
	if len(h.requests()) != 2 || len(h.rec.usage()) != 1 {
		t.Fatalf("attempts %d, usage %d", len(h.requests()), len(h.rec.usage()))
	}
	// The usage event says the call took two attempts and how long.
	if u := h.rec.usage()[0]; u.Attempts != 2 || u.Latency <= 0 {
		t.Fatalf("usage event: attempts %d, latency %v; want 2 and > 0", u.Attempts, u.Latency)
	}
	if len(h.rec.sleeps) != 1 || h.rec.sleeps[0] < time.Second {
		t.Fatalf("sleeps %v, want ≥ 1s", h.rec.sleeps)
	}
}

// 429 without Retry-After backs off exponentially within BackoffMax.
func TestRateLimitWithoutRetryAfter(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.RateLimited(""), llmtest.RateLimited(""), llmtest.RateLimited(""), llmtest.Final(finalPlan))
	h.mustRun("go")
	if len(h.rec.sleeps) != 3 {
		t.Fatalf("sleeps %v", h.rec.sleeps)
	}
	for _, d := range h.rec.sleeps {
		if d < 0 || d > 4*time.Millisecond {
			t.Fatalf("backoff %v outside [0, BackoffMax]", d)
		}
	}
}

// Faults 500/502/503, a connection reset, 408 and 409 are retried.
func TestTransientFaultsRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(
		llmtest.ServerError(),
		llmtest.Raw(http.StatusBadGateway, http.Header{"Content-Type": {"text/html"}}, "<html>bad gateway</html>"),
		llmtest.APIError(http.StatusServiceUnavailable, "server_error", "", "The engine is currently overloaded, please try again later."),
		llmtest.Reset(),
		llmtest.Final(finalPlan),
	)
	h.mustRun("go")
	if len(h.requests()) != 5 || len(h.rec.usage()) != 1 {
		t.Fatalf("attempts %d", len(h.requests()))
	}
	h.model.Enqueue(llmtest.APIError(408, "timeout", "", "timeout"), llmtest.APIError(409, "conflict", "", "conflict"), llmtest.Final(finalPlan))
	h.mustRun("again")
	if len(h.requests()) != 8 {
		t.Fatalf("attempts %d", len(h.requests()))
	}
}

// Persistent 500 makes exactly MaxAttempts attempts, then the
// API error surfaces; the one usage event says the call failed, with no
// tokens and no request counted; the runner stays usable.
func TestPersistentServerError(t *testing.T) {
	h := newHarness(t, nil)
	for range 5 {
		h.model.Enqueue(llmtest.ServerError())
	}
	_, err := h.run("go")
	if apiStatus(t, err) != 500 || len(h.requests()) != 5 {
		t.Fatalf("err %v attempts %d", err, len(h.requests()))
	}
	if us := h.rec.usage(); len(us) != 1 || us[0].ErrorType != "500" || us[0].Attempts != 5 || us[0].Requests != 0 ||
		us[0].InputTokens != 0 || us[0].RequestModel != "gpt-4.1" || us[0].Cost != 0 {
		t.Fatalf("usage events %+v, want one failed call (error type 500, 5 attempts, nothing counted)", us)
	}
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("again")
}

// 401 and 404 fail fast with one attempt; so does a 429
// insufficient_quota.
func TestClientErrorsFailFast(t *testing.T) {
	for name, step := range map[string]llmtest.Step{
		"401":   llmtest.APIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-…"),
		"404":   llmtest.APIError(404, "invalid_request_error", "model_not_found", "The model `x` does not exist."),
		"quota": llmtest.APIError(429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota."),
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.model.Enqueue(step, llmtest.Final(finalPlan))
			_, err := h.run("go")
			if err == nil || len(h.requests()) != 1 || !strings.Contains(err.Error(), "gpt-4.1") {
				t.Fatalf("err %v attempts %d", err, len(h.requests()))
			}
			apiStatus(t, err)
		})
	}
}

// Fault "a timeout": an attempt that exceeds RuntimeConfig.HTTP.Timeout is
// not retried and says so.
func TestAttemptTimeout(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.Runtime.HTTP.Timeout = 30 * time.Millisecond })
	h.model.Enqueue(llmtest.Hang(), llmtest.Final(finalPlan))
	_, err := h.run("go")
	wantErrIs(t, err, llm.ErrAttemptTimeout)
	if len(h.requests()) != 1 {
		t.Fatalf("attempts %d", len(h.requests()))
	}
	h.mustRun("again")
}

// Fault "400 context_length_exceeded" without compaction: a clear error.
func TestContextLengthWithoutCompaction(t *testing.T) {
	h := newHarness(t, nil)
	h.model.Enqueue(llmtest.ContextLengthExceeded())
	_, err := h.run("go")
	wantErrIs(t, err, llm.ErrContextLength)
	if !strings.Contains(err.Error(), "context_length") || len(h.requests()) != 1 {
		t.Fatalf("err %v", err)
	}
	if us := h.rec.usage(); len(us) != 1 || us[0].ErrorType != "context_length_exceeded" {
		t.Fatalf("usage events %+v, want one failed call with the provider's code", us)
	}
}

// Fault "400 context_length_exceeded" with compaction on: compact once and
// retry; a second overflow is a clear error.
func TestContextLengthCompactsOnceAndRetries(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.Model.ContextLength = 100000 })
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("first")
	h.srv.Summarizer().Enqueue(llmtest.Final("earlier: planned a sprint"))
	h.model.Enqueue(llmtest.ContextLengthExceeded(), llmtest.Final(finalPlan))
	h.mustRun("second")
	hist := h.history(2)
	if len(hist) != 2 || hist[0].Text() != "[Conversation summary] earlier: planned a sprint" || hist[1].Text() != "second" {
		t.Fatalf("history after compaction %+v", hist)
	}
	h.model.Enqueue(llmtest.ContextLengthExceeded(), llmtest.ContextLengthExceeded())
	_, err := h.run("third")
	wantErrIs(t, err, llm.ErrContextLength)
}

// Never log an API key: retries are logged without headers, and the config
// prints redacted.
func TestAPIKeyNeverLogged(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := llmtest.NewServer()
	defer srv.Close()
	cfg := testConfig(srv)
	cfg.Runtime.HTTP = llm.HTTPConfig{BackoffBase: time.Microsecond}
	out, _ := llm.NewOutput[StructuredOutput]("StructuredOutput")
	r, err := llm.NewRunner(cfg, llm.Options{Logger: logger, HTTPClient: srv.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv.Model("").Enqueue(llmtest.ServerError(), llmtest.Final("bad"), llmtest.Final(finalPlan))
	if _, err := llm.Run(t.Context(), r, llm.UserText("x"), out); err != nil {
		t.Fatal(err)
	}
	logger.Info("config", "model", cfg.Model)
	if !strings.Contains(buf.String(), "retrying") || strings.Contains(buf.String(), "sk-test-secret") {
		t.Fatalf("log:\n%s", buf.String())
	}
	if s := cfg.Model.String(); strings.Contains(s, "sk-test") || !strings.Contains(s, "redacted") {
		t.Fatalf("String() %s", s)
	}
	if s := (llm.ModelConfig{}).String(); !strings.Contains(s, "unset") {
		t.Fatalf("String() %s", s)
	}
}

// A retried request is sent again byte for byte, the explicit
// temperature 0 (added to go-openai's body) included on every attempt.
func TestRetrySendsTheSameBody(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) { c.Model.Temperature = new(float32(0)) })
	h.model.Enqueue(llmtest.ServerError(), llmtest.Final(finalPlan))
	h.mustRun("go")
	reqs := h.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d attempts, want 2", len(reqs))
	}
	if !bytes.Equal(reqs[0].Body, reqs[1].Body) {
		t.Fatalf("the retry sent another body:\n%s\n%s", reqs[0].Body, reqs[1].Body)
	}
	if tp := reqs[1].Temperature; tp == nil || *tp != 0 {
		t.Fatalf("retry temperature %v, want 0", tp)
	}
}

// doerFunc is an HTTP doer made of a function.
type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// A run cancelled with a cause while it waits to retry ends at once, and
// its error is the cause (the real wait, in a synctest bubble).
func TestRetryWaitEndsWithTheCancelCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := llm.DefaultConfig()
		cfg.Model = llm.ModelConfig{Provider: "openai-compatible", BaseURL: "http://model.test/v1", Model: "gpt-4.1", APIKey: "sk-test"}
		var attempts atomic.Int32
		unavailable := doerFunc(func(r *http.Request) (*http.Response, error) {
			attempts.Add(1)
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"30"}},
				Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
		})
		r, err := llm.NewRunner(cfg, llm.Options{HTTPClient: unavailable})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = r.Close() }()
		out, err := llm.NewOutput[StructuredOutput]("StructuredOutput")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancelCause(t.Context())
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := llm.Run(ctx, r, llm.UserText("x"), out)
			done <- err
		}()
		synctest.Wait() // the first attempt got a 503: the retry waits 30s
		stopping := errors.New("the agent is stopping")
		cancel(stopping)
		err = <-done
		if !errors.Is(err, stopping) || !strings.Contains(err.Error(), "waiting to retry") {
			t.Fatalf("run ended with %v, want the cancel's cause while waiting to retry", err)
		}
		if waited := time.Since(start); waited != 0 || attempts.Load() != 1 {
			t.Fatalf("attempts %d, waited %v: want 1 attempt and no wait", attempts.Load(), waited)
		}
	})
}
