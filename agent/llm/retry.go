package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/internal/scrub"
)

// ErrAttemptTimeout is wrapped by the error of an attempt that exceeded
// RuntimeConfig.HTTP.Timeout; such attempts are not retried.
var ErrAttemptTimeout = errors.New("llm: request timed out")

// attemptCountKey is the context key of the counter a retryDoer sets to
// the number of attempts it made (Runner.complete, UsageEvent.Attempts).
type attemptCountKey struct{}

// withAttemptCount returns ctx carrying n, which the retry doer sets to
// the number of HTTP attempts of the request made with it.
func withAttemptCount(ctx context.Context, n *int) context.Context {
	return context.WithValue(ctx, attemptCountKey{}, n)
}

// retryDoer is an [openai.HTTPDoer] that retries a request on 429, 408,
// 409, any 5xx and transport errors (connection reset, refused, EOF), with
// random exponential backoff that a Retry-After header overrides. It
// fails fast on other statuses, on its per-attempt timeout and when the
// caller's context ends. After the last attempt the last answer (or error)
// is returned as is, so go-openai decodes the API error.
type retryDoer struct {
	// Next sends one attempt; nil uses a private *http.Client.
	Next openai.HTTPDoer
	// Config holds timeout, attempts and backoff; zero fields take defaults.
	Config httpConfig
	// Sleep waits between attempts (default: a real wait that ends early with ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a float in [0, 1) that scales the backoff (default
	// math/rand/v2).
	Jitter func() float64
	// Logger receives one debug line per retry; nil discards. It never sees
	// headers, so no API key is logged.
	Logger *slog.Logger
	// Now is the clock used for HTTP-date Retry-After values.
	Now func() time.Time
}

// Do sends req, retrying as described on retryDoer.
func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	cfg := d.Config.withDefaults()
	body, err := bodySource(req)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	count, _ := ctx.Value(attemptCountKey{}).(*int)
	for attempt := 1; ; attempt++ {
		if count != nil {
			*count = attempt
		}
		resp, err := d.attempt(ctx, req, body, cfg.Timeout)
		if attempt >= cfg.MaxAttempts || !retryable(ctx, resp, err) || quotaExhausted(resp) {
			return resp, err
		}
		wait := d.backoff(cfg, attempt, resp)
		sharePause(ctx, resp, wait) // a Retry-After pauses the team's other calls too
		d.logger().LogAttrs(ctx, slog.LevelDebug, "llm: retrying request", slog.Int("attempt", attempt),
			slog.Int("status", statusOf(resp)), slog.String("error", errString(err)), slog.Duration("wait", wait))
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
		}
		if err := d.sleep()(ctx, wait); err != nil {
			return nil, fmt.Errorf("llm: waiting to retry: %w", err)
		}
	}
}

func (d *retryDoer) attempt(ctx context.Context, req *http.Request, body func() (io.ReadCloser, error), timeout time.Duration) (*http.Response, error) {
	actx, cancel := context.WithTimeoutCause(ctx, timeout, ErrAttemptTimeout)
	// A shallow copy: its body is its own, the headers and URL are
	// req's, which the HTTP client only reads.
	r := req.WithContext(actx)
	if body != nil {
		b, err := body()
		if err != nil {
			cancel()
			return nil, fmt.Errorf("llm: reading request body: %w", err)
		}
		r.Body, r.GetBody = b, body
	}
	resp, err := d.next().Do(r)
	if err != nil {
		cancel()
		if context.Cause(actx) == ErrAttemptTimeout && ctx.Err() == nil {
			return nil, fmt.Errorf("%w after %s: %w", ErrAttemptTimeout, timeout, err)
		}
		return nil, err
	}
	// The body is read after Do returns: cancel when it is closed.
	resp.Body = &cancelOnClose{cappedBody: cappedBody{ReadCloser: resp.Body, left: d.Config.withDefaults().MaxResponseBytes}, cancel: cancel}
	return resp, nil
}

// errResponseTooLarge is wrapped by the error of a model call whose
// response body passed RuntimeConfig.HTTP.MaxResponseBytes.
var errResponseTooLarge = errors.New("llm: the model's response is larger than max_response_bytes")

// cappedBody is a response body that fails once more than left bytes are
// read from it.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n, errResponseTooLarge
	}
	return n, err
}

// cancelOnClose is a capped response body that cancels its attempt's
// context when it is closed (one allocation for both).
type cancelOnClose struct {
	cappedBody
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// quotaExhausted reports a 429 insufficient_quota: retrying cannot help, so
// it fails fast. The body is put back for the caller to decode.
func quotaExhausted(resp *http.Response) bool {
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(b), resp.Body), Closer: resp.Body}
	return err == nil && bytes.Contains(b, []byte(`"insufficient_quota"`))
}

type readCloser struct {
	io.Reader
	io.Closer
}

// bodySource returns what gives each attempt a fresh copy of req's body:
// the request's own GetBody when it has one (go-openai's body is a
// bytes.Buffer, which http.NewRequest gives one: no copy), else the body
// read once; nil for no body.
func bodySource(req *http.Request) (func() (io.ReadCloser, error), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		_ = req.Body.Close()
		return req.GetBody, nil
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("llm: reading request body: %w", err)
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, nil
}

// retryable decides from one attempt's outcome.
func retryable(ctx context.Context, resp *http.Response, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		return !errors.Is(err, ErrAttemptTimeout)
	}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests, s == http.StatusRequestTimeout, s == http.StatusConflict:
		return true
	case s >= 500:
		return true
	}
	return false
}

// backoff is the wait before the next attempt: Retry-After when the server
// sent one (capped), else random exponential.
func (d *retryDoer) backoff(cfg httpConfig, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), d.now()); ok {
			return min(ra, cfg.RetryAfterMax)
		}
	}
	ceiling := cfg.BackoffMax
	if attempt < 40 {
		ceiling = min(cfg.BackoffMax, cfg.BackoffBase*time.Duration(1<<attempt))
	}
	j := rand.Float64
	if d.Jitter != nil {
		j = d.Jitter
	}
	return time.Duration(j() * float64(ceiling))
}

// parseRetryAfter reads seconds (possibly fractional) or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func (d *retryDoer) next() openai.HTTPDoer {
	if d.Next == nil {
		return http.DefaultClient
	}
	return d.Next
}

func (d *retryDoer) sleep() func(ctx context.Context, d time.Duration) error {
	if d.Sleep == nil {
		return clock.Sleep
	}
	return d.Sleep
}

func (d *retryDoer) now() time.Time {
	if d.Now == nil {
		return time.Now()
	}
	return d.Now()
}

func (d *retryDoer) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return scrub.String(err.Error())
}
