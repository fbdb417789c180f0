package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/search"
	"github.com/akgentic/akgentic-go/command"
)

// web_search answers numbered results from the card's provider, at most
// max_results (default 5, at most 20).
func TestWebSearch(t *testing.T) {
	ws := tools(t, &search.Card{Provider: "fixed", File: "testdata/fixed.json"})["web_search"]
	out, err := call(t, ws, map[string]any{"query": "go actor runtime", "max_results": 1})
	want := `Results for "go actor runtime":

1. akgentic for Go
   https://example.com/akgentic-go
   An actor runtime for teams of LLM agents, in Go.`
	if err != nil || out != want {
		t.Fatalf("got %q %v\nwant %q", out, err, want)
	}
	out, _ = call(t, ws, map[string]any{"query": "go actor runtime"})
	if !strings.Contains(out, "\n2. The actor model\n") {
		t.Fatalf("default max_results: %q", out)
	}
	retry(t, ws, map[string]any{"query": "  "}, "web_search: the query is empty")
	retry(t, ws, map[string]any{}, "invalid arguments")

	empty := tools(t, &search.Card{Searcher: providerFunc(func(int) ([]search.Result, error) { return nil, nil })})["web_search"]
	if out, err := call(t, empty, map[string]any{"query": "nothing"}); err != nil || out != `No results for "nothing".` {
		t.Fatalf("no results: %q %v", out, err)
	}
	var asked int
	many := tools(t, &search.Card{Searcher: providerFunc(func(n int) ([]search.Result, error) {
		asked = n
		return make([]search.Result, 30), nil
	})})["web_search"]
	if out, _ := call(t, many, map[string]any{"query": "q", "max_results": 50}); asked != 20 || strings.Count(out, "\n   ") != 20 {
		t.Fatalf("asked %d, answered %q", asked, out)
	}
}

// providerFunc is a provider made of a function.
type providerFunc func(n int) ([]search.Result, error)

func (f providerFunc) Search(_ context.Context, _ string, n int) ([]search.Result, error) {
	return f(n)
}

// No provider, or one that fails, is explained in the answer, never a
// tool error; the key does not appear.
func TestWebSearchUnavailable(t *testing.T) {
	t.Setenv("TAVILY_API_KEY", "")
	t.Setenv("BRAVE_API_KEY", "")
	out, err := call(t, tools(t, &search.Card{})["web_search"], map[string]any{"query": "q"})
	if err != nil || !strings.Contains(out, "web_search is unavailable: no search provider is configured: set TAVILY_API_KEY or BRAVE_API_KEY") {
		t.Fatalf("no provider: %q %v", out, err)
	}
	out, err = call(t, tools(t, &search.Card{Provider: "tavily"})["web_search"], map[string]any{"query": "q"})
	if err != nil || !strings.Contains(out, "web_search is unavailable: search: tavily: no API key: set TAVILY_API_KEY") {
		t.Fatalf("no key: %q %v", out, err)
	}
	s := newStandIn(t, nil, answer{401, nil, `{"detail": {"error": "Unauthorized: missing or invalid API key."}}`})
	t.Setenv("TAVILY_API_KEY", secret)
	out, err = call(t, tools(t, &search.Card{BaseURL: s.srv.URL})["web_search"], map[string]any{"query": "q"})
	if err != nil || out != "web_search is unavailable: search: tavily: HTTP 401: Unauthorized: missing or invalid API key. (check the API key)" {
		t.Fatalf("bad key: %q %v", out, err)
	}
	// The environment picks Brave when only its key is set.
	t.Setenv("TAVILY_API_KEY", "")
	t.Setenv("BRAVE_API_KEY", secret)
	b := newStandIn(t, func(r *http.Request, _ []byte) {
		if r.URL.Path != "/res/v1/web/search" {
			t.Errorf("path %s", r.URL.Path)
		}
	}, ok(`{"web": {"results": [{"title": "B", "url": "https://b.example/"}]}}`))
	if out, _ := call(t, tools(t, &search.Card{BaseURL: b.srv.URL})["web_search"], map[string]any{"query": "q"}); !strings.Contains(out, "1. B\n") {
		t.Fatalf("brave from the environment: %q", out)
	}
}

// Attach refuses what cannot work: an unknown provider, searxng without
// its address, a fixed provider without a readable file, a channel the
// card does not support.
func TestAttachErrors(t *testing.T) {
	for _, c := range []struct {
		card *search.Card
		want string
	}{
		{&search.Card{Provider: "bing"}, `unknown provider "bing" (want tavily, brave, searxng or fixed)`},
		{&search.Card{Provider: "searxng"}, "provider searxng needs base_url"},
		{&search.Card{Provider: "fixed"}, "provider fixed needs file"},
		{&search.Card{Provider: "fixed", File: "testdata/missing.json"}, "missing.json"},
		{&search.Card{Fetch: tool.Capability{Expose: tool.SystemPrompt}}, "fetch: channel SYSTEM_PROMPT is not supported"},
	} {
		if _, err := c.card.Attach(actortest.Context(t), &tool.Owner{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.card, err, c.want)
		}
	}
	// A disabled search needs no provider.
	caps, err := (&search.Card{Provider: "bing", Search: tool.Capability{Disabled: true}}).Attach(actortest.Context(t), &tool.Owner{})
	if err != nil || len(caps.Tools) != 1 || caps.Tools[0].Name != "web_fetch" {
		t.Fatalf("search disabled: %v %v", caps.Tools, err)
	}
}

// Both capabilities can be commands as well; instructions extend the
// description.
func TestCommands(t *testing.T) {
	card := &search.Card{Provider: "fixed", File: "testdata/fixed.json", AllowPrivate: true,
		Search: tool.Capability{Expose: tool.ToolCall | tool.Command, Instructions: "Prefer official docs."},
		Fetch:  tool.Capability{Expose: tool.Command}}
	caps, err := card.Attach(actortest.Context(t), &tool.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	if len(caps.Tools) != 1 || !strings.HasSuffix(caps.Tools[0].Description, "\n\nAdditional Instructions:\nPrefer official docs.") {
		t.Fatalf("tools %+v", caps.Tools)
	}
	reg := command.NewRegistry()
	if err := reg.Register(card.Kind(), caps.Commands...); err != nil {
		t.Fatal(err)
	}
	out, err := reg.Dispatch(actortest.Context(t), `/web_search "go actor runtime" max_results=1`)
	if err != nil || !strings.Contains(out, "1. akgentic for Go") || strings.Contains(out, "2.") {
		t.Fatalf("/web_search: %q %v", out, err)
	}
	srv := page(t, "text/html", article)
	if out, err := reg.Dispatch(actortest.Context(t), "/web_fetch "+srv.URL); err != nil || !strings.Contains(out, "# Actors") {
		t.Fatalf("/web_fetch: %q %v", out, err)
	}
	// A slash command's failure is its answer.
	out, err = reg.Dispatch(actortest.Context(t), "/web_fetch file:///etc/passwd")
	if err != nil || !strings.HasPrefix(out, "Command 'web_fetch' failed: web_fetch: refused") || !strings.Contains(out, `scheme "file"`) {
		t.Fatalf("/web_fetch file: %q %v", out, err)
	}
	// Called from code, the failure is the retry error the tool returns.
	_, err = command.Call[string](actortest.Context(t), reg, "web_fetch", "http://169.254.169.254/latest/")
	var re *llm.RetryError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "a cloud metadata address") {
		t.Fatalf("web_fetch from code: %v", err)
	}
}

// The card is serializable config: it round-trips through tool.Cards
// under its kind (Searcher, code only, does not).
func TestCardJSON(t *testing.T) {
	in := tool.Cards{&search.Card{Provider: "searxng", BaseURL: "http://searx.internal:8080", AllowPrivate: true,
		MaxFetchBytes: 4096, Search: tool.Capability{Instructions: "x"}, Fetch: tool.Capability{Disabled: true}}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out tool.Cards
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) || out[0].Kind() != "SearchTool" {
		t.Fatalf("round trip:\n%s\n%+v", data, out[0])
	}
}
