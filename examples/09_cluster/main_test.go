package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A worker and a client on an embedded server (NATS_URL unset).
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), "", &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

const want = `team created from the template "assistant"
@Human -> @Assistant (request): Hello, where do you run?
@Assistant -> @Human (response): Hello! The team runs on a worker; its records are in JetStream.
listed: template assistant, owner worker-1, stopped false
team stopped
`
