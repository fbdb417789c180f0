package search

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/command"
)

// kind is the card's registered kind.
const kind = "SearchTool"

// Names of the tools (and commands).
const (
	searchName = "web_search"
	fetchName  = "web_fetch"
)

func init() { tool.Register(kind, func() tool.Card { return &Card{} }) }

// Card is the SearchTool card: web_search and web_fetch (see the package
// documentation). The zero value has both capabilities on, as model
// tools, and picks its provider from the environment. It is registered
// (tool.Register) under the kind "SearchTool", which labels its commands,
// and depends on no other card.
type Card struct {
	// Provider names the search provider: "tavily", "brave", "searxng" or
	// "fixed"; "" means Tavily when TAVILY_API_KEY is set, else Brave when
	// BRAVE_API_KEY is set, else none (web_search then answers that no
	// provider is configured).
	Provider string `json:"provider,omitempty"`
	// BaseURL replaces the provider's URL (a proxy); "searxng" needs it.
	BaseURL string `json:"base_url,omitempty"`
	// File is the JSON file of the "fixed" provider (see [Fixed]).
	File string `json:"file,omitempty"`
	// AllowPrivate lets web_fetch reach loopback, private and link-local
	// addresses (an intranet, tests). Cloud metadata addresses stay
	// refused.
	AllowPrivate bool `json:"allow_private,omitempty"`
	// MaxFetchBytes caps the text web_fetch returns; 0 means 32 KiB.
	MaxFetchBytes int `json:"max_fetch_bytes,omitempty"`

	// Search is web_search(query, max_results=5): TOOL_CALL by default,
	// COMMAND possible.
	Search tool.Capability `json:"search"`
	// Fetch is web_fetch(url): TOOL_CALL by default, COMMAND possible.
	Fetch tool.Capability `json:"fetch"`

	// Searcher, when set, is the provider, whatever Provider says: one
	// built in code (an explicit key, a stand-in). JSON does not carry
	// it: a restored or hired agent gets the provider Provider names.
	Searcher Provider `json:"-"`

	// public, set by tests only, takes some addresses as public.
	public func(netip.Addr) bool
}

var _ tool.Card = (*Card)(nil)

// Kind returns "SearchTool".
func (c *Card) Kind() string { return kind }

// Attach resolves the provider and returns the tools and commands of the
// enabled capabilities. An unknown provider, "searxng" without a base URL
// or an unreadable fixed file is an error; a missing API key is not
// (web_search explains it to the model). The tools never touch the owner,
// so they may run concurrently.
func (c *Card) Attach(_ context.Context, _ *tool.Owner) (tool.Capabilities, error) {
	both := tool.ToolCall | tool.Command
	caps := []struct {
		field string
		cfg   tool.Capability
	}{{"search", c.Search}, {"fetch", c.Fetch}}
	var on [2]tool.Channel
	for i, cp := range caps {
		on[i] = cp.cfg.Channels(tool.ToolCall)
		if extra := on[i] &^ both; extra != 0 {
			return tool.Capabilities{}, fmt.Errorf("search: %s: channel %s is not supported (supported: %s)", cp.field, extra, both)
		}
	}
	var out tool.Capabilities
	if on[0] != 0 {
		p, err := c.provider()
		if err != nil {
			return tool.Capabilities{}, err
		}
		s := &searchTool{p: p}
		d := c.Search.Describe(searchDoc)
		if on[0]&tool.ToolCall != 0 {
			t, err := llm.NewTool(searchName, d, s.tool)
			if err != nil {
				return tool.Capabilities{}, fmt.Errorf("search: %w", err)
			}
			out.Tools = append(out.Tools, t)
		}
		if on[0]&tool.Command != 0 {
			out.Commands = append(out.Commands, s.command(d))
		}
	}
	if on[1] != 0 {
		f := newFetcher(c.AllowPrivate, c.MaxFetchBytes, c.public)
		d := c.Fetch.Describe(fetchDoc)
		if on[1]&tool.ToolCall != 0 {
			t, err := llm.NewTool(fetchName, d, func(ctx context.Context, a fetchArgs) (any, error) {
				return toolAnswer(f.fetch(ctx, a.URL))
			})
			if err != nil {
				return tool.Capabilities{}, fmt.Errorf("search: %w", err)
			}
			out.Tools = append(out.Tools, t)
		}
		if on[1]&tool.Command != 0 {
			u := command.NewParam[string]("url", "The http or https URL of the page")
			out.Commands = append(out.Commands, command.New(fetchName, d, func(ctx context.Context, in command.Args) (string, error) {
				return toolAnswer(f.fetch(ctx, u.Get(in)))
			}, u))
		}
	}
	return out, nil
}

// provider returns the provider the card names, nil for none.
func (c *Card) provider() (Provider, error) {
	if c.Searcher != nil {
		return c.Searcher, nil
	}
	e := Endpoint{BaseURL: c.BaseURL}
	switch name := strings.ToLower(strings.TrimSpace(c.Provider)); name {
	case "tavily":
		return Tavily(e), nil
	case "brave":
		return Brave(e), nil
	case "searxng":
		if c.BaseURL == "" {
			return nil, errors.New("search: provider searxng needs base_url, the address of the instance")
		}
		return SearXNG(e), nil
	case "fixed":
		if c.File == "" {
			return nil, errors.New("search: provider fixed needs file, the JSON file of results")
		}
		return Fixed(c.File)
	case "":
		switch {
		case os.Getenv(tavilyKeyEnv) != "":
			return Tavily(e), nil
		case os.Getenv(braveKeyEnv) != "":
			return Brave(e), nil
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("search: unknown provider %q (want tavily, brave, searxng or fixed)", c.Provider)
	}
}

// Descriptions of the tools.
const (
	searchDoc = "Search the web. Returns up to max_results results (default 5, at most 20), each with its title, " +
		"URL and a snippet. Use web_fetch to read a result's page."
	fetchDoc = "Fetch a web page (http or https) and return it as readable text: its title, headings (#), paragraphs, " +
		"list items and link texts, without scripts, styles and navigation. Long pages are cut, with a " +
		"\"[truncated at N bytes]\" line at the end. Only public addresses can be fetched."
)

// Arguments of the tools.
type (
	searchArgs struct {
		Query      string `json:"query" description:"What to search for"`
		MaxResults int    `json:"max_results,omitempty" description:"How many results to return, 1 to 20 (default 5)"`
	}
	fetchArgs struct {
		URL string `json:"url" description:"The http or https URL of the page"`
	}
)

// searchTool is web_search on a provider (nil for none).
type searchTool struct{ p Provider }

func (s *searchTool) tool(ctx context.Context, a searchArgs) (any, error) {
	return toolAnswer(s.search(ctx, a.Query, a.MaxResults))
}

func (s *searchTool) command(description string) *command.Command {
	q := command.NewParam[string]("query", "What to search for")
	n := command.NewParam[int]("max_results", "How many results, 1 to 20").Default(defaultResults)
	return command.New(searchName, description, func(ctx context.Context, in command.Args) (string, error) {
		return toolAnswer(s.search(ctx, q.Get(in), n.Get(in)))
	}, q, n)
}

// search returns web_search's answer. A service that fails (a missing key,
// an error answer, a rate limit past its retries) is explained in the
// answer, not returned as an error: the model learns search is
// unavailable and goes on without it.
func (s *searchTool) search(ctx context.Context, query string, n int) (string, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return "", &toolError{msg: "web_search: the query is empty"}
	}
	if s.p == nil {
		return "web_search is unavailable: " + errNoProvider.Error() + ".", nil
	}
	n = clampResults(n)
	rs, err := s.p.Search(ctx, query, n)
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "web_search is unavailable: " + err.Error(), nil
	}
	rs = limit(rs, n)
	if len(rs) == 0 {
		return fmt.Sprintf("No results for %q.", query), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Results for %q:\n", query)
	for i, r := range rs {
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, oneLine(r.Title), r.URL)
		if s := oneLine(r.Snippet); s != "" {
			fmt.Fprintf(&b, "   %s\n", s)
		}
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// oneLine collapses the whitespace of s, cut to 500 bytes.
func oneLine(s string) string { return collapse(s, 500) }

// toolAnswer turns an *toolError (a mistake or a page the model can do
// without) into an *llm.RetryError; other errors (the end of the run's
// context) pass as they are.
func toolAnswer(text string, err error) (string, error) {
	var fe *toolError
	if errors.As(err, &fe) {
		return "", llm.Retry("%s", fe.msg)
	}
	return text, err
}
