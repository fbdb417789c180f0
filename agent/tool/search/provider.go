package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/internal/scrub"
)

// Provider is a web search service.
type Provider interface {
	// Search returns at most n results for query, best first. It fails
	// with an [*APIError] when the service answers with an error.
	Search(ctx context.Context, query string, n int) ([]Result, error)
}

// Result is one search result, as a provider gives it and as the fixed
// provider's file holds it.
type Result struct {
	// Title is the page's title, as plain text.
	Title string `json:"title"`
	// URL is the page's address.
	URL string `json:"url"`
	// Snippet is the part of the page the provider shows, as plain text.
	Snippet string `json:"snippet,omitempty"`
}

// Endpoint configures an HTTP search provider ([Tavily], [Brave],
// [SearXNG]). The zero value uses the provider's public URL, the API key
// from the environment, and retries a rate-limited or failed request twice.
type Endpoint struct {
	// BaseURL replaces the provider's URL (a proxy, a test stand-in);
	// SearXNG has none of its own and needs it.
	BaseURL string
	// Key is the API key; "" means the provider's environment variable
	// (TAVILY_API_KEY, BRAVE_API_KEY). It is sent only in the request
	// header, never logged, and cut out of every error.
	Key string
	// Client sends the requests; nil means a client with a 30 s timeout.
	Client *http.Client
	// MaxRetries is how many times a request answered 429 or 5xx is sent
	// again: 0 means 2, a negative number none.
	MaxRetries int
	// MaxWait is the longest wait honoured: a Retry-After beyond it fails
	// at once. 0 means 30 s.
	MaxWait time.Duration
	// Sleep waits between retries; nil means a timer that ends early with
	// ctx. Tests pass one that returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock that a Retry-After given as an HTTP date is read
	// against; nil means time.Now.
	Now func() time.Time
	// Logger receives a line for each retry; nil means slog.Default().
	Logger *slog.Logger
}

// APIError is a search service's error answer.
type APIError struct {
	// Provider is "tavily", "brave" or "searxng".
	Provider string
	// Status is the HTTP status code.
	Status int
	// Message is the service's own words (its API key cut out), or the
	// status text.
	Message string
	// RetryAfter is the wait the service asked for (429, 503), 0 when it
	// did not say.
	RetryAfter time.Duration
}

// Error names the provider, the status and the service's message, and the
// wait it asked for.
func (e *APIError) Error() string {
	s := fmt.Sprintf("search: %s: HTTP %d", e.Provider, e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	switch {
	case e.Status == http.StatusTooManyRequests && e.RetryAfter > 0:
		s += fmt.Sprintf(" (rate limited: retry after %s)", e.RetryAfter)
	case e.Status == http.StatusTooManyRequests:
		s += " (rate limited)"
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		s += " (check the API key)"
	}
	return s
}

// Defaults of an Endpoint.
const (
	defaultRetries = 2
	defaultMaxWait = 30 * time.Second
	defaultTimeout = 30 * time.Second
	// maxAnswer bounds a provider's answer read into memory.
	maxAnswer = 4 << 20
	// maxResults is the most results a search returns (Tavily's and
	// Brave's limit).
	maxResults = 20
	// defaultResults is the number of results when none is asked for.
	defaultResults = 5
)

// api is a resolved Endpoint for one provider.
type api struct {
	name    string // "tavily", ...
	base    string
	key     string
	client  *http.Client
	retries int
	maxWait time.Duration
	sleep   func(context.Context, time.Duration) error
	now     func() time.Time
	logger  *slog.Logger
	// message extracts the service's words from an error body.
	message func(status int, body []byte) string
}

func newAPI(e Endpoint, name, base, keyEnv string, message func(int, []byte) string) *api {
	a := &api{name: name, base: strings.TrimRight(e.BaseURL, "/"), key: e.Key, client: e.Client,
		retries: e.MaxRetries, maxWait: e.MaxWait, sleep: e.Sleep, now: e.Now, logger: e.Logger, message: message}
	if a.base == "" {
		a.base = base
	}
	if a.key == "" && keyEnv != "" {
		a.key = os.Getenv(keyEnv)
	}
	scrub.Register(a.key)
	if a.client == nil {
		a.client = &http.Client{Timeout: defaultTimeout}
	}
	switch {
	case a.retries == 0:
		a.retries = defaultRetries
	case a.retries < 0:
		a.retries = 0
	}
	if a.maxWait <= 0 {
		a.maxWait = defaultMaxWait
	}
	if a.sleep == nil {
		a.sleep = clock.Sleep
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.logger == nil {
		a.logger = slog.Default()
	}
	return a
}

// call sends the request that build makes (a new one for each attempt)
// and decodes a 2xx JSON answer into out. An answer of 429 or 5xx is
// retried after the Retry-After the service gave, else after 1 s, 2 s,
// ...; a wait longer than maxWait, or no retry left, returns the
// *APIError.
func (a *api) call(ctx context.Context, build func(ctx context.Context) (*http.Request, error), out any) error {
	for attempt := 0; ; attempt++ {
		req, err := build(ctx)
		if err != nil {
			return fmt.Errorf("search: %s: %s", a.name, a.redact(err.Error()))
		}
		resp, err := a.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("search: %s: %s", a.name, a.redact(err.Error()))
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("search: %s: reading the answer: %s", a.name, a.redact(err.Error()))
		}
		if resp.StatusCode/100 == 2 {
			if err := json.Unmarshal(body, out); err != nil {
				return fmt.Errorf("search: %s: the answer is not the expected JSON: %w", a.name, err)
			}
			return nil
		}
		apiErr := &APIError{Provider: a.name, Status: resp.StatusCode,
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), a.now())}
		apiErr.Message = a.redact(a.message(resp.StatusCode, body))
		if apiErr.Message == "" {
			apiErr.Message = http.StatusText(resp.StatusCode)
		}
		if !retryable(resp.StatusCode) || attempt >= a.retries {
			return apiErr
		}
		wait := apiErr.RetryAfter
		if wait == 0 {
			wait = time.Second << attempt
		}
		if wait > a.maxWait {
			return apiErr
		}
		a.logger.LogAttrs(ctx, slog.LevelInfo, "search: retrying", slog.String("provider", a.name),
			slog.Int("status", resp.StatusCode), slog.Duration("wait", wait), slog.Int("attempt", attempt+1))
		if err := a.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusInternalServerError ||
		status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; 0 when
// absent, unreadable or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// redact cuts the API key out of s.
func (a *api) redact(s string) string {
	if a.key == "" {
		return s
	}
	return strings.ReplaceAll(s, a.key, "[redacted]")
}

// noKey is the error of a provider without an API key.
func (a *api) noKey(env string) error {
	return fmt.Errorf("search: %s: no API key: set %s (or Endpoint.Key)", a.name, env)
}

// textMessage is the message of an error body that is not the provider's
// JSON: its first line of text, short.
func textMessage(body []byte) string {
	_, text := extract(body, 200)
	text, _, _ = strings.Cut(text, "\n")
	return strings.TrimSpace(text)
}

// errNoProvider is web_search's answer when the card has no provider.
var errNoProvider = errors.New("no search provider is configured: set TAVILY_API_KEY or BRAVE_API_KEY, or the card's provider")
