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

const want = `roles: [ResearchAgent WriterAgent ReviewerAgent]
skills: [editing fact_checking pdf_extraction web_search writing]
can edit: WriterAgent (Writes reports)
can edit: ReviewerAgent (Reviews drafts)
no card for the role Translator
reviewer routes to WriterAgent: true
reviewer routes to ResearchAgent: false
the WriterAgent card can be hired: true
hired writer-1 (role WriterAgent, kind examples.WriterAgent)
asked for a report: [concise] a report on actors
the card's config is still named: writer
`
