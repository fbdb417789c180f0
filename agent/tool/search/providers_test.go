package search_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/tool/search"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeFile(name, content string) error { return os.WriteFile(name, []byte(content), 0o600) }

// The key the stand-ins expect; no error or log line may show it.
const secret = "tvly-SECRET-0123456789"

// standIn is a provider's stand-in: it checks each request and answers
// from a script, one answer a request (the last one repeats).
type standIn struct {
	t       *testing.T
	srv     *httptest.Server
	check   func(*http.Request, []byte)
	mu      sync.Mutex
	answers []answer
	calls   int
}

type answer struct {
	status int
	header map[string]string
	body   string
}

func ok(body string) answer {
	return answer{status: 200, header: map[string]string{"Content-Type": "application/json"}, body: body}
}

func newStandIn(t *testing.T, check func(*http.Request, []byte), answers ...answer) *standIn {
	s := &standIn{t: t, check: check, answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if s.check != nil {
			s.check(r, body)
		}
		s.mu.Lock()
		a := s.answers[min(s.calls, len(s.answers)-1)]
		s.calls++
		s.mu.Unlock()
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *standIn) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// clock records the waits a provider asks for, without waiting.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *clock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *clock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// endpoint points a provider at the stand-in, with a fake clock and the
// logs in buf.
func (s *standIn) endpoint(c *clock, buf *bytes.Buffer) search.Endpoint {
	return search.Endpoint{BaseURL: s.srv.URL, Key: secret, Client: s.srv.Client(), Sleep: c.sleep,
		Now: func() time.Time { return c.now }, Logger: slog.New(slog.NewTextHandler(buf, nil))}
}

func want(t *testing.T, got []search.Result, err error, want ...search.Result) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("results\n%+v\nwant\n%+v", got, want)
	}
}

// Tavily's documented answer to POST /search (bearer key, JSON body).
func TestTavily(t *testing.T) {
	s := newStandIn(t, func(r *http.Request, body []byte) {
		var in map[string]any
		json.Unmarshal(body, &in)
		if r.Method != "POST" || r.URL.Path != "/search" || r.Header.Get("Authorization") != "Bearer "+secret ||
			r.Header.Get("Content-Type") != "application/json" || in["query"] != "go actors" || in["max_results"] != 2.0 {
			t.Errorf("request %s %s %v %s", r.Method, r.URL, r.Header, body)
		}
	}, ok(`{"query": "go actors", "follow_up_questions": null, "answer": null, "images": [],
		"results": [
			{"title": "Actors in Go", "url": "https://a.example/go", "content": "Actors  and\nmailboxes.", "score": 0.91, "raw_content": null},
			{"title": "Proto.Actor", "url": "https://b.example/", "content": "Cross-platform actors.", "score": 0.8, "raw_content": null},
			{"title": "Third", "url": "https://c.example/", "content": "Past n.", "score": 0.2, "raw_content": null}],
		"response_time": 1.09}`))
	c := &clock{}
	got, err := search.Tavily(s.endpoint(c, &bytes.Buffer{})).Search(actortest.Context(t), "go actors", 2)
	want(t, got, err,
		search.Result{Title: "Actors in Go", URL: "https://a.example/go", Snippet: "Actors  and\nmailboxes."},
		search.Result{Title: "Proto.Actor", URL: "https://b.example/", Snippet: "Cross-platform actors."})
}

// Brave's documented answer to GET /res/v1/web/search (X-Subscription-Token).
func TestBrave(t *testing.T) {
	s := newStandIn(t, func(r *http.Request, _ []byte) {
		q := r.URL.Query()
		if r.Method != "GET" || r.URL.Path != "/res/v1/web/search" || r.Header.Get("X-Subscription-Token") != secret ||
			q.Get("q") != "go actors" || q.Get("count") != "20" {
			t.Errorf("request %s %s %v", r.Method, r.URL, r.Header)
		}
	}, ok(`{"type": "search", "query": {"original": "go actors", "more_results_available": true},
		"mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
		"web": {"type": "search", "family_friendly": true, "results": [
			{"type": "search_result", "title": "Actors in <strong>Go</strong>", "url": "https://a.example/go",
			 "description": "The <strong>actor</strong> model &amp; Go.", "age": "2 days ago", "language": "en",
			 "profile": {"name": "A", "url": "https://a.example", "long_name": "a.example", "img": ""}}]}}`))
	got, err := search.Brave(s.endpoint(&clock{}, &bytes.Buffer{})).Search(actortest.Context(t), "go actors", 50)
	want(t, got, err, search.Result{Title: "Actors in Go", URL: "https://a.example/go", Snippet: "The actor model & Go."})
}

// SearXNG's answer to GET /search?format=json: a page of results, cut to n.
func TestSearXNG(t *testing.T) {
	s := newStandIn(t, func(r *http.Request, _ []byte) {
		q := r.URL.Query()
		if r.URL.Path != "/searx/search" || q.Get("format") != "json" || q.Get("q") != "go actors" ||
			r.Header.Get("Authorization") != "" || r.Header.Get("X-Subscription-Token") != "" {
			t.Errorf("request %s %v", r.URL, r.Header)
		}
	}, ok(`{"query": "go actors", "number_of_results": 0, "results": [
			{"url": "https://a.example/go", "title": "Actors in Go", "content": "Actors.", "engine": "duckduckgo",
			 "parsed_url": ["https", "a.example", "/go", "", "", ""], "template": "default.html",
			 "engines": ["duckduckgo", "brave"], "positions": [1, 2], "score": 3.0, "category": "general"},
			{"url": "https://b.example/", "title": "B", "content": "", "engine": "brave", "score": 1.0, "category": "general"}],
		"answers": [], "corrections": [], "infoboxes": [], "suggestions": ["go actor model"], "unresponsive_engines": [["google", "timeout"]]}`))
	e := s.endpoint(&clock{}, &bytes.Buffer{})
	e.BaseURL += "/searx/"
	got, err := search.SearXNG(e).Search(actortest.Context(t), "go actors", 1)
	want(t, got, err, search.Result{Title: "Actors in Go", URL: "https://a.example/go", Snippet: "Actors."})
}

// Error answers become *APIError values naming the provider, the status
// and the service's words, never the key, even when the service echoes it.
func TestProviderErrors(t *testing.T) {
	type provider func(search.Endpoint) search.Provider
	for _, c := range []struct {
		name     string
		provider provider
		answer   answer
		status   int
		words    string
	}{
		{"tavily 401", search.Tavily, answer{401, nil, `{"detail": {"error": "Unauthorized: missing or invalid API key."}}`}, 401, "Unauthorized: missing or invalid API key. (check the API key)"},
		{"tavily 400", search.Tavily, answer{400, nil, `{"detail": {"error": "Invalid topic. Must be 'general' or 'news'."}}`}, 400, "Invalid topic"},
		{"tavily 432", search.Tavily, answer{432, nil, `{"detail": {"error": "This request exceeds your plan's set usage limit."}}`}, 432, "usage limit"},
		{"tavily 422 list", search.Tavily, answer{422, nil, `{"detail": [{"loc": ["body", "query"], "msg": "field required"}]}`}, 422, "field required"},
		{"tavily echoes key", search.Tavily, answer{401, nil, `{"detail": {"error": "invalid API key: ` + secret + `"}}`}, 401, "invalid API key: [redacted]"},
		{"brave 422 token", search.Brave, answer{422, nil, `{"type": "ErrorResponse", "error": {"id": "x", "status": 422, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid.", "meta": {"component": "authentication"}}, "time": 1}`}, 422, "The provided subscription token is invalid. (SUBSCRIPTION_TOKEN_INVALID)"},
		{"brave 401", search.Brave, answer{401, nil, `{"type": "ErrorResponse", "error": {"status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "token ` + secret + `"}}`}, 401, "token [redacted]"},
		{"brave html 400", search.Brave, answer{400, map[string]string{"Content-Type": "text/html"}, `<html><body><h1>400 Bad Request</h1></body></html>`}, 400, "400 Bad Request"},
		{"searxng 403", search.SearXNG, answer{403, map[string]string{"Content-Type": "text/html"}, `<html><title>403 Forbidden</title><body><h1>Forbidden</h1></body></html>`}, 403, "Forbidden (does the instance allow format=json?"},
		{"searxng 404 empty", search.SearXNG, answer{404, nil, ``}, 404, "Not Found"},
		{"tavily 500", search.Tavily, answer{500, nil, `{"detail": {"error": "Internal Server Error"}}`}, 500, "Internal Server Error"},
		{"brave 503", search.Brave, answer{503, nil, `upstream down`}, 503, "upstream down"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStandIn(t, nil, c.answer)
			var logs bytes.Buffer
			clk := &clock{}
			_, err := c.provider(s.endpoint(clk, &logs)).Search(actortest.Context(t), "q", 3)
			var ae *search.APIError
			if !errors.As(err, &ae) || ae.Status != c.status {
				t.Fatalf("error %v (%T), want an *APIError with status %d", err, err, c.status)
			}
			if !strings.Contains(err.Error(), c.words) || !strings.HasPrefix(err.Error(), "search: "+ae.Provider+": HTTP ") {
				t.Errorf("error %q, want it to contain %q", err, c.words)
			}
			if strings.Contains(err.Error()+logs.String(), secret) {
				t.Errorf("the key leaked:\n%s\n%s", err, logs.String())
			}
			retried := c.status >= 500
			if n := s.count(); retried && n != 3 || !retried && n != 1 {
				t.Errorf("%d requests for a %d (waits %v)", n, c.status, clk.slept())
			}
		})
	}
}

// 429 with Retry-After in seconds: the provider waits that long (through
// the injected sleep) and tries again.
func TestRetryAfterSeconds(t *testing.T) {
	s := newStandIn(t, nil,
		answer{429, map[string]string{"Retry-After": "7"}, `{"type": "ErrorResponse", "error": {"code": "RATE_LIMITED", "detail": "Request rate limit exceeded for plan."}}`},
		ok(`{"web": {"results": [{"title": "T", "url": "https://t.example/", "description": "d"}]}}`))
	clk := &clock{}
	var logs bytes.Buffer
	got, err := search.Brave(s.endpoint(clk, &logs)).Search(actortest.Context(t), "q", 5)
	want(t, got, err, search.Result{Title: "T", URL: "https://t.example/", Snippet: "d"})
	if w := clk.slept(); !reflect.DeepEqual(w, []time.Duration{7 * time.Second}) {
		t.Fatalf("waits %v, want [7s]", w)
	}
	if !strings.Contains(logs.String(), "status=429") || strings.Contains(logs.String(), secret) {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

// Retry-After as an HTTP date is read against the injected clock.
func TestRetryAfterDate(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s := newStandIn(t, nil,
		answer{429, map[string]string{"Retry-After": now.Add(20 * time.Second).Format(http.TimeFormat)}, `{"detail": {"error": "Your request has been blocked due to excessive requests."}}`},
		ok(`{"results": []}`))
	clk := &clock{now: now}
	got, err := search.Tavily(s.endpoint(clk, &bytes.Buffer{})).Search(actortest.Context(t), "q", 5)
	want(t, got, err)
	if w := clk.slept(); !reflect.DeepEqual(w, []time.Duration{20 * time.Second}) {
		t.Fatalf("waits %v, want [20s]", w)
	}
}

// A Retry-After past MaxWait fails at once; retries are bounded; a
// negative MaxRetries retries nothing; without Retry-After the waits are
// 1 s, 2 s.
func TestRetryBounds(t *testing.T) {
	limited := answer{429, map[string]string{"Retry-After": "120"}, `{"detail": {"error": "slow down"}}`}
	s := newStandIn(t, nil, limited)
	clk := &clock{}
	_, err := search.Tavily(s.endpoint(clk, &bytes.Buffer{})).Search(actortest.Context(t), "q", 5)
	var ae *search.APIError
	if !errors.As(err, &ae) || ae.RetryAfter != 2*time.Minute || len(clk.slept()) != 0 || s.count() != 1 {
		t.Fatalf("err %v, waits %v, %d requests", err, clk.slept(), s.count())
	}
	if !strings.Contains(err.Error(), "slow down (rate limited: retry after 2m0s)") {
		t.Fatalf("error %q", err)
	}

	s = newStandIn(t, nil, answer{429, nil, `{"detail": {"error": "slow down"}}`})
	clk = &clock{}
	_, err = search.Tavily(s.endpoint(clk, &bytes.Buffer{})).Search(actortest.Context(t), "q", 5)
	if w := clk.slept(); !errors.As(err, &ae) || !reflect.DeepEqual(w, []time.Duration{time.Second, 2 * time.Second}) || s.count() != 3 {
		t.Fatalf("err %v, waits %v, %d requests", err, w, s.count())
	}

	s = newStandIn(t, nil, answer{503, map[string]string{"Retry-After": "1"}, ``})
	e := s.endpoint(&clock{}, &bytes.Buffer{})
	e.MaxRetries = -1
	if _, err := search.SearXNG(e).Search(actortest.Context(t), "q", 5); !errors.As(err, &ae) || s.count() != 1 {
		t.Fatalf("err %v, %d requests", err, s.count())
	}

	// A sleep cut short by the context ends the search with its cause.
	s = newStandIn(t, nil, limited)
	e = s.endpoint(&clock{}, &bytes.Buffer{})
	e.MaxWait = time.Hour
	ctx, cancel := context.WithCancelCause(actortest.Context(t))
	stop := errors.New("agent stopping")
	e.Sleep = func(context.Context, time.Duration) error { cancel(stop); return context.Cause(ctx) }
	if _, err := search.Tavily(e).Search(ctx, "q", 5); !errors.Is(err, stop) {
		t.Fatalf("err %v, want the context's cause", err)
	}
}

// Keys come from the environment unless given; without one, no request is
// sent and the error names the variable.
func TestKeys(t *testing.T) {
	t.Setenv("TAVILY_API_KEY", "")
	t.Setenv("BRAVE_API_KEY", "brave-from-env")
	s := newStandIn(t, func(r *http.Request, _ []byte) {
		if k := r.Header.Get("X-Subscription-Token"); k != "brave-from-env" {
			t.Errorf("token %q", k)
		}
	}, ok(`{"web": {"results": []}}`))
	e := s.endpoint(&clock{}, &bytes.Buffer{})
	e.Key = ""
	if _, err := search.Brave(e).Search(actortest.Context(t), "q", 1); err != nil {
		t.Fatal(err)
	}
	_, err := search.Tavily(e).Search(actortest.Context(t), "q", 1)
	if err == nil || !strings.Contains(err.Error(), "no API key: set TAVILY_API_KEY") || s.count() != 1 {
		t.Fatalf("err %v, %d requests", err, s.count())
	}
	if _, err := search.SearXNG(search.Endpoint{}).Search(actortest.Context(t), "q", 1); err == nil || !strings.Contains(err.Error(), "no base URL") {
		t.Fatalf("searxng without a base URL: %v", err)
	}
}

// A network failure names the provider; a bad JSON answer says so.
func TestTransportErrors(t *testing.T) {
	s := newStandIn(t, nil, ok(`{"results": "not a list"}`))
	_, err := search.Tavily(s.endpoint(&clock{}, &bytes.Buffer{})).Search(actortest.Context(t), "q", 1)
	if err == nil || !strings.Contains(err.Error(), "search: tavily: the answer is not the expected JSON") {
		t.Fatalf("bad JSON: %v", err)
	}
	e := s.endpoint(&clock{}, &bytes.Buffer{})
	s.srv.Close()
	_, err = search.Brave(e).Search(actortest.Context(t), "q", 1)
	if err == nil || !strings.HasPrefix(err.Error(), "search: brave: ") || strings.Contains(err.Error(), secret) {
		t.Fatalf("closed server: %v", err)
	}
}

// Fixed serves the results of its file: a query matches whatever its case
// and spacing; others get the default.
func TestFixed(t *testing.T) {
	p, err := search.Fixed("testdata/fixed.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Search(actortest.Context(t), "  Go   ACTOR runtime ", 1)
	want(t, got, err, search.Result{Title: "akgentic for Go", URL: "https://example.com/akgentic-go", Snippet: "An actor runtime for teams of LLM agents, in Go."})
	got, err = p.Search(actortest.Context(t), "anything else", 5)
	want(t, got, err, search.Result{Title: "Example Domain", URL: "https://example.com/", Snippet: "This domain is for use in documentation examples."})

	dir := t.TempDir()
	for name, content := range map[string]string{"typo.json": `{"querys": {}}`, "bad.json": `[`} {
		path := dir + "/" + name
		if err := writeFile(path, content); err != nil {
			t.Fatal(err)
		}
		if _, err := search.Fixed(path); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := search.Fixed(dir + "/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}
