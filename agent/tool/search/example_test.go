package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/search"
)

// A SearchTool card on the fixed provider (offline: results from a JSON
// file), and web_fetch with its address checks. An agent gets the card
// through its config (agent.AgentConfig.Tools); here the tools are called
// as the model would call them, with raw JSON arguments. For a real
// search, set Provider to "tavily" or "brave" (with TAVILY_API_KEY or
// BRAVE_API_KEY) or "searxng" with BaseURL.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Notes</title><style>p{}</style></head>
			<body><nav>Home | About</nav><h1>Actors</h1><p>One   message
			at a time.</p></body></html>`)
	}))
	defer site.Close()

	// The page is served on loopback: allow private addresses, as for an
	// intranet. Without AllowPrivate it would be refused.
	card := &search.Card{Provider: "fixed", File: "testdata/fixed.json", AllowPrivate: true}
	caps, err := card.Attach(ctx, &tool.Owner{})
	if err != nil {
		panic(err)
	}
	tools := map[string]*llm.Tool{}
	for _, t := range caps.Tools {
		tools[t.Name] = t
	}
	for _, c := range []struct{ tool, args string }{
		{"web_search", `{"query": "go actor runtime", "max_results": 1}`},
		{"web_fetch", fmt.Sprintf(`{"url": %q}`, site.URL)},
		{"web_fetch", `{"url": "http://169.254.169.254/latest/meta-data/"}`},
		{"web_fetch", `{"url": "file:///etc/passwd"}`},
	} {
		out, err := tools[c.tool].Call(ctx, json.RawMessage(c.args))
		if err != nil { // an *llm.RetryError: its text goes back to the model
			fmt.Printf("%s: error: %v\n", c.tool, err)
			continue
		}
		fmt.Printf("%s:\n%s\n", c.tool, strings.ReplaceAll(out.(string), site.URL, "http://site"))
	}
	// Output:
	// web_search:
	// Results for "go actor runtime":
	//
	// 1. akgentic for Go
	//    https://example.com/akgentic-go
	//    An actor runtime for teams of LLM agents, in Go.
	// web_fetch:
	// URL: http://site
	// Title: Notes
	//
	// # Actors
	//
	// One message at a time.
	// web_fetch: error: web_fetch: refused http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a cloud metadata address
	// web_fetch: error: web_fetch: refused file:///etc/passwd: not a web URL: scheme "file" (only http and https)
}
