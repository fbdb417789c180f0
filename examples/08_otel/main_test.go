package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun checks the whole output: the spans (as stdouttrace writes them,
// one JSON object each), all in one trace, then the token lines.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	dec := json.NewDecoder(strings.NewReader(text))
	var names []string
	traces := map[string]bool{}
	end := int64(0) // where the last span ends
	for {
		var span struct {
			Name        string
			SpanContext struct{ TraceID string }
		}
		if err := dec.Decode(&span); err != nil {
			break // the token lines are not JSON
		}
		names = append(names, span.Name)
		traces[span.SpanContext.TraceID] = true
		end = dec.InputOffset()
	}
	slices.Sort(names)
	want := []string{"chat gpt-4.1", "chat gpt-4.1", "chat gpt-4.1", "invoke_agent @Developer100", "invoke_agent @Manager", "invoke_agent @Manager", "turn @Human"}
	if !slices.Equal(names, want) {
		t.Errorf("spans %q, want %q", names, want)
	}
	if len(traces) != 1 {
		t.Errorf("%d traces, want 1", len(traces))
	}
	tail := strings.TrimSpace(text[end:])
	const tokens = `Developer: 12 output tokens in 1 model calls
Developer: 300 input tokens in 1 model calls
Manager: 63 output tokens in 2 model calls
Manager: 930 input tokens in 2 model calls`
	if tail != tokens {
		t.Errorf("token lines:\n%s\nwant:\n%s", tail, tokens)
	}
}
