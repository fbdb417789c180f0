package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Scenario 1 (quick start): the greeter prints "Hello, Akgentic!" and the
// system shuts down with no goroutine left.
func TestQuickStart(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "Hello, Akgentic!\n" {
		t.Fatalf("output %q", got)
	}
}
