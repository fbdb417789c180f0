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

const want = `the manager has 3 workers
member manager: role Manager, in the team: true
member worker-1: role Worker, in the team: true
member worker-2: role Worker, in the team: true
member worker-3: role Worker, in the team: true
worker-1 (child of manager): ALPHA
worker-2 (child of manager): BETA
worker-3 (child of manager): GAMMA
`
