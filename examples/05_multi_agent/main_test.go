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

const want = `coordinator: asking the researcher
coordinator: 3 findings, asking the writer
coordinator: draft "Actors isolate state, share nothing, talk by messages.", asking the person
@Human is asked "Approve the draft?" by coordinator, answers Approved
the coordinator got the verdict: Approved
the team's log:
  coordinator -> researcher: ResearchRequest
  researcher -> coordinator: ResearchResult
  coordinator -> writer: WriteRequest
  writer -> coordinator: DraftReady
  coordinator -> @Human: UserMessage
  @Human -> coordinator: ResultMessage
`
