package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Fixed returns a provider that serves the results of a JSON file, for
// offline runs and tests (the file is read now). The file maps queries to
// results; "default" answers any other query (without it, another query
// has no results):
//
//	{
//	  "queries": {
//	    "go actor runtime": [
//	      {"title": "akgentic for Go", "url": "https://example.com/akgentic", "snippet": "An actor runtime ..."}
//	    ]
//	  },
//	  "default": [
//	    {"title": "Example Domain", "url": "https://example.com/", "snippet": "..."}
//	  ]
//	}
//
// Queries match case-insensitively, with their whitespace collapsed.
func Fixed(name string) (Provider, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("search: fixed results: %w", err)
	}
	var f struct {
		Queries map[string][]Result `json:"queries"`
		Default []Result            `json:"default"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("search: fixed results %s: %w", name, err)
	}
	p := &fixed{queries: make(map[string][]Result, len(f.Queries)), fallback: f.Default}
	for q, rs := range f.Queries {
		p.queries[normalize(q)] = rs
	}
	return p, nil
}

type fixed struct {
	queries  map[string][]Result
	fallback []Result
}

func (f *fixed) Search(_ context.Context, query string, n int) ([]Result, error) {
	rs, ok := f.queries[normalize(query)]
	if !ok {
		rs = f.fallback
	}
	return append([]Result(nil), limit(rs, clampResults(n))...), nil
}

func normalize(q string) string { return strings.ToLower(strings.Join(strings.Fields(q), " ")) }
