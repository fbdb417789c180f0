package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Environment variables holding the API keys.
const (
	tavilyKeyEnv = "TAVILY_API_KEY"
	braveKeyEnv  = "BRAVE_API_KEY"
)

// Tavily returns the Tavily search provider: POST {BaseURL}/search with
// the key as a bearer token (BaseURL defaults to https://api.tavily.com,
// the key to $TAVILY_API_KEY, read now). Results are Tavily's title, url
// and content.
func Tavily(e Endpoint) Provider {
	return &tavily{newAPI(e, "tavily", "https://api.tavily.com", tavilyKeyEnv, tavilyMessage)}
}

type tavily struct{ *api }

func (t *tavily) Search(ctx context.Context, query string, n int) ([]Result, error) {
	if t.key == "" {
		return nil, t.noKey(tavilyKeyEnv)
	}
	n = clampResults(n)
	body, err := json.Marshal(map[string]any{"query": query, "max_results": n})
	if err != nil {
		return nil, err
	}
	var out struct {
		Results hits `json:"results"`
	}
	err = t.call(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+"/search", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+t.key)
		return req, nil
	}, &out)
	return out.Results.results(n, err)
}

// tavilyMessage reads Tavily's error body: {"detail": {"error": "..."}},
// or {"detail": "..."}.
func tavilyMessage(_ int, body []byte) string {
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Detail) == 0 {
		return textMessage(body)
	}
	var obj struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(e.Detail, &obj) == nil && obj.Error != "" {
		return obj.Error
	}
	var s string
	if json.Unmarshal(e.Detail, &s) == nil {
		return s
	}
	return string(e.Detail)
}

// Brave returns the Brave Search provider: GET
// {BaseURL}/res/v1/web/search?q=...&count=n with the key in the
// X-Subscription-Token header (BaseURL defaults to
// https://api.search.brave.com, the key to $BRAVE_API_KEY, read now).
// Results are the web results' title, url and description.
func Brave(e Endpoint) Provider {
	return &brave{newAPI(e, "brave", "https://api.search.brave.com", braveKeyEnv, braveMessage)}
}

type brave struct{ *api }

func (b *brave) Search(ctx context.Context, query string, n int) ([]Result, error) {
	if b.key == "" {
		return nil, b.noKey(braveKeyEnv)
	}
	n = clampResults(n)
	q := url.Values{"q": {query}, "count": {strconv.Itoa(n)}, "text_decorations": {"false"}}
	var out struct {
		Web struct {
			Results hits `json:"results"`
		} `json:"web"`
	}
	err := b.call(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/res/v1/web/search?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-Subscription-Token", b.key)
		return req, nil
	}, &out)
	return out.Web.Results.results(n, err)
}

// braveMessage reads Brave's error body: {"type": "ErrorResponse",
// "error": {"code": "...", "detail": "..."}}.
func braveMessage(_ int, body []byte) string {
	var e struct {
		Error struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Code == "" && e.Error.Detail == "" {
		return textMessage(body)
	}
	switch {
	case e.Error.Code == "":
		return e.Error.Detail
	case e.Error.Detail == "":
		return e.Error.Code
	}
	return e.Error.Detail + " (" + e.Error.Code + ")"
}

// SearXNG returns the provider of a self-hosted SearXNG instance at
// BaseURL: GET {BaseURL}/search?q=...&format=json, no key. The instance
// must allow the json format (search.formats in its settings.yml); it
// returns a page of results, of which the first n are kept.
func SearXNG(e Endpoint) Provider {
	e.Key = "" // SearXNG has no key; never read one from anywhere
	return &searxng{newAPI(e, "searxng", "", "", searxngMessage)}
}

type searxng struct{ *api }

func (s *searxng) Search(ctx context.Context, query string, n int) ([]Result, error) {
	if s.base == "" {
		return nil, errors.New("search: searxng: no base URL: set the address of the instance")
	}
	n = clampResults(n)
	q := url.Values{"q": {query}, "format": {"json"}}
	var out struct {
		Results hits `json:"results"`
	}
	err := s.call(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/search?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		return req, nil
	}, &out)
	return out.Results.results(n, err)
}

// searxngMessage reads a SearXNG error page; a 403 is most often an
// instance that does not serve the json format.
func searxngMessage(status int, body []byte) string {
	msg := textMessage(body)
	if msg == "" {
		msg = http.StatusText(status)
	}
	if status == http.StatusForbidden {
		msg += " (does the instance allow format=json? see search.formats in its settings.yml)"
	}
	return msg
}

// hits are the results of a provider's answer: Tavily and SearXNG give a
// snippet as content, Brave as description (with <strong> decorations).
type hits []struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	Content     string `json:"content"`
	Description string `json:"description"`
}

// results returns the first n hits as results, or the error of the call
// that got them.
func (h hits) results(n int, err error) ([]Result, error) {
	if err != nil || len(h) == 0 {
		return nil, err
	}
	rs := make([]Result, 0, min(len(h), n))
	for _, r := range h[:min(len(h), n)] {
		rs = append(rs, Result{Title: plain(r.Title), URL: r.URL, Snippet: plain(r.Content + r.Description)})
	}
	return rs, nil
}

// clampResults keeps n in [1, maxResults]; 0 or less means the default.
func clampResults(n int) int {
	switch {
	case n <= 0:
		return defaultResults
	case n > maxResults:
		return maxResults
	}
	return n
}

func limit(rs []Result, n int) []Result {
	if len(rs) > n {
		return rs[:n]
	}
	return rs
}

// plain returns s with its markup (Brave's <strong> decorations) removed
// and entities decoded.
func plain(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	_, text := extract([]byte(s), len(s)+16)
	return strings.Join(strings.Fields(text), " ")
}
