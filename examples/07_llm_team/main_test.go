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

const want = `@Human -> @Manager (request): Plan the next sprint.
@Manager hires @Developer100 (Developer)
@Manager -> @Developer100 (request): Estimate the login page and the password reset.
@Developer100 -> @Manager (response): Login page: 3 days. Password reset: 2 days.
@Manager -> @Human (response): Sprint plan: login page (3 days), then password reset (2 days), by @Developer100.

final answer (response from @Manager): Sprint plan: login page (3 days), then password reset (2 days), by @Developer100.
team: @Human (Human) @Manager (Manager) @Developer100 (Developer)
`
