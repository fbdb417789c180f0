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

const want = `counter with max increment 5
increment by 5 -> count 5
increment by 3 -> count 8
increment by 10 -> count 13
reset -> count 0
increment by 10 -> count 5
the team's copy of the state: count 5
  [DEMO] +5
  [DEMO] +3
  [DEMO] +5 (asked 10, max 5)
  [DEMO] reset
  [DEMO] +5 (asked 10, max 5)
`
