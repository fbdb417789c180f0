package main

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "re-record testdata/demo.jsonl from the scripted models")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testOptions(out *bytes.Buffer) options {
	return options{stdout: out, stdin: strings.NewReader(""), getenv: func(string) string { return "" },
		logger: slog.New(slog.DiscardHandler)}
}

// TestRecordTranscript runs the scripted conversation; with -update it
// writes the transcript the demo replays.
func TestRecordTranscript(t *testing.T) {
	var out, rec bytes.Buffer
	opt := testOptions(&out)
	m := modeScripted
	opt.forceMode = &m
	opt.record = &rec
	if err := run(context.Background(), opt); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "@Manager → @Human · response") {
		t.Fatalf("the scripted conversation did not finish:\n%s", out.String())
	}
	if *update {
		if err := os.WriteFile("testdata/demo.jsonl", rec.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The demo's main path: the recorded conversation, printed live, and the
// usage table; it ends with the team stopped and no goroutine left.
func TestDemoOffline(t *testing.T) {
	var out bytes.Buffer
	if err := mainErr(nil, strings.NewReader(""), &out, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"@Human → @Manager · request",
		"@Manager ⚙ update_planning",
		"+ @Developer100 (Developer) joined the team, hired by @Manager",
		"@Manager → @Developer100 · request",
		"@Developer100 ⚙ workspace_write",
		"@Developer100 → @Manager · response",
		"@QA100 ⚙ workspace_read",
		"@QA100 → @Human · request",
		"@Human → @QA100 · response",
		"@QA100 → @Manager · response",
		"@Manager → @Human · response\n  Done: greet.go is written and reviewed.",
		"agent            requests      input     output       cost",
		"@Manager                5       8790        335    $0.0126",
		"total                  10      15540        625    $0.0238",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for i, line := range strings.Split(got, "\n") {
		if n := len([]rune(line)); n > width && !strings.HasPrefix(line, "team ") && !strings.HasPrefix(line, "akgentic demo") {
			t.Errorf("line %d has %d columns: %q", i, n, line)
		}
	}
	if strings.Contains(got, "\x1b[") {
		t.Error("colour codes written to a non-terminal")
	}
	if t.Failed() {
		t.Log(got)
	}
}

// -i through a pipe: slash commands reach the manager, /usage prints the
// table, /quit stops.
func TestInteractive(t *testing.T) {
	var out bytes.Buffer
	in := strings.NewReader("/team_members\n/hire_member QA\n/team_members\n/usage\n/help\nhello\n/quit\n")
	if err := mainErr([]string{"-i"}, in, &out, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"@Manager → @Human · notification\n  Team members:",
		"@QA100 (role: QA)",
		"agent            requests",
		"hire_member",
		"I am the offline demo model",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(got)
	}
}
