package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

const want = `agent to agent: 10 + 5 = 15 (reply from calculator)
tell and listen: 6 * 7 = 42
ask: 2 - 9 = -7
listen after the ask: -7
ask with an error: calculator: "2 / 9": unknown operator "/"
`
