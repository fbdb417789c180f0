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

const want = `the desk team:
  @Human -> @Desk (request): Ask the research team which papers on actor mailboxes to read.
  @Desk -> @Researcher100 (request): Which papers on actor mailboxes should we read?
  @Researcher100 -> @Desk (response): Three papers: bounded mailboxes, work stealing, back-pressure.
  @Desk -> @Human (response): The research team says: Three papers: bounded mailboxes, work stealing, back-pressure.
the research team (its person is the A2A client):
  @Human -> @Analyst (request): Which papers on actor mailboxes should we read?
  @Analyst -> @Human (response): Three papers: bounded mailboxes, work stealing, back-pressure.
final answer (response from @Desk): The research team says: Three papers: bounded mailboxes, work stealing, back-pressure.
`
