package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// On a terminal the agents stream their answers and the printer
// shows each as it is written, on one live line redrawn in place and
// erased before the next record's line; the recorded conversation still
// replays (the transcript matches streamed requests too) and prints the
// same records.
func TestDemoStreamsOnTerminal(t *testing.T) {
	var out bytes.Buffer
	opt := testOptions(&out)
	opt.color = true // what isTerminal(stdout) gives on a terminal
	if err := run(context.Background(), opt); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	if !strings.Contains(got, eraseLine+styleDim+"  @Manager ✎ ") {
		t.Fatalf("no live line for @Manager's answers:\n%q", got)
	}
	// Without the live lines and the colours, the records print as on a
	// pipe.
	plain := regexp.MustCompile(`\r\x1b\[2K(\x1b\[2m  @[^\r\n]* ✎ [^\r\n]*?\x1b\[0m)?`).ReplaceAllString(got, "")
	plain = regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(plain, "")
	for _, want := range []string{
		"@Human → @Manager · request",
		"@QA100 → @Human · request",
		"@Manager → @Human · response\n  Done: greet.go is written and reviewed.",
		"total                  11      17000        650    $0.0254",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(plain, "✎") {
		t.Errorf("a live line was left in the output:\n%s", plain)
	}
	if t.Failed() {
		t.Log(plain)
	}
}

// The live line shows the text of the messages being written, decoded
// from the partial structured output, its end in view; a Seq 0 starts a
// new answer; the next record line erases it.
func TestLiveLine(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, true)
	answer := `{"messages":[{"message_type":"response","message":"Line one\nand \"two\"","recipient":"@Human"},{"message_type":"request","message":"next`
	mgr := &message.EventMessage{}
	delta := func(seq int, s string) *message.EventMessage {
		ev := *mgr
		ev.Event = llm.TextDeltaEvent{RunID: "r", Seq: seq, Delta: s}
		return &ev
	}
	for i := 0; i*7 < len(answer); i++ {
		p.OnMessage(delta(i, answer[i*7:min(len(answer), (i+1)*7)]))
	}
	lines := strings.Split(out.String(), eraseLine)
	last := lines[len(lines)-1]
	if want := styleDim + "  ? ✎ " + `Line one and "two" · next` + styleReset; last != want {
		t.Fatalf("live line %q, want %q", last, want)
	}
	out.Reset()
	p.OnMessage(delta(0, `{"messages":[{"message":"again`))
	if !strings.HasSuffix(out.String(), "✎ again"+styleReset) {
		t.Fatalf("a new answer's line %q", out.String())
	}
	out.Reset()
	w := &message.WarningMessage{}
	w.Content = "careful"
	p.OnMessage(w)
	if !strings.HasPrefix(out.String(), eraseLine) || !strings.Contains(out.String(), "careful") {
		t.Fatalf("the next record's line %q does not erase the live line first", out.String())
	}
}

// With -i, a /cancel typed while the manager is busy (its model
// call held open) cancels that turn at once; the warning names the person.
func TestInteractiveCancel(t *testing.T) {
	var out syncBuffer
	pr, pw := io.Pipe()
	defer pw.Close()
	inFlight := make(chan struct{}, 1)
	m := modeOffline
	opt := options{stdout: &out, stdin: pr, getenv: func(string) string { return "" },
		logger: slog.New(slog.DiscardHandler), interactive: true, forceMode: &m,
		script: func(srv *llmtest.Server) {
			hang := llmtest.Hang()
			hang.Check = func(*llmtest.Request) error { inFlight <- struct{}{}; return nil }
			srv.Model("").Enqueue(hang)
		}}
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), opt) }()
	write := func(s string) {
		if _, err := io.WriteString(pw, s); err != nil {
			t.Fatal(err)
		}
	}
	write("think very hard\n")
	select {
	case <-inFlight:
	case <-time.After(10 * time.Second):
		t.Fatal("the manager's model call did not start")
	}
	write("/cancel enough\n")
	write("/quit\n")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the demo did not end:\n%s", out.String())
	}
	if want := "! @Manager: agent @Manager: turn cancelled by @Human: enough"; !strings.Contains(out.String(), want) {
		t.Fatalf("output lacks %q:\n%s", want, out.String())
	}
}
