package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
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
		"@Developer100 ⚙ web_search",
		"@Developer100 ⚙ workspace_write",
		"@Developer100 → @Manager · response",
		"@QA100 ⚙ workspace_read",
		"@QA100 → @Human · request",
		"@Human → @QA100 · response",
		"@QA100 → @Manager · response",
		"@Manager → @Human · response\n  Done: greet.go is written and reviewed.",
		"agent            requests      input     output       cost",
		"@Manager                5       8790        335    $0.0126",
		"total                  11      17000        650    $0.0254",
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
	outputHas(t, runDemo(t, "/team_members\n/hire_member QA\n/team_members\n/usage\n/help\nhello\n/quit\n", "-i"),
		"@Manager → @Human · notification\n  Team members:",
		"@QA100 (role: QA)",
		"agent            requests",
		"hire_member",
		"I am the offline demo model")
}

// childEnv makes the test binary run the demo as a child process.
const childEnv = "AKGENTIC_DEMO_CHILD_ARGS"

// TestChild is the child process of TestInterrupt (skipped otherwise).
func TestChild(t *testing.T) {
	args := os.Getenv(childEnv)
	if args == "" {
		t.Skip("only as a child process")
	}
	if err := mainErr(strings.Fields(args), os.Stdin, os.Stdout, os.Stderr, func(k string) string {
		if k == "OPENAI_API_KEY" {
			return ""
		}
		return os.Getenv(k)
	}); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	// As main does: exit now. A read blocked on os.Stdin (not pollable)
	// cannot be joined; the team and every other goroutine are stopped.
	os.Exit(0)
}

// Ctrl-C (SIGINT) stops the team cleanly: exit 0, a readable event log
// that ends with the team's stop.
func TestInterrupt(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "team.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=-i -log "+logPath)
	stdin, err := cmd.StdinPipe() // kept open: the demo waits for input
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child ended before its prompt: %v\n%s", err, stderr.String())
		}
		if strings.HasPrefix(line, "Type a message") {
			break
		}
	}
	if _, err := io.WriteString(stdin, "/team_members\n"); err != nil {
		t.Fatal(err)
	}
	for { // the answer is printed before the next line is read
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no answer: %v\n%s", err, stderr.String())
		}
		if strings.Contains(line, "@Manager (role: Manager)") {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child exit: %v\nstdout: %s\nstderr: %s", err, rest, stderr.String())
	}
	if !strings.Contains(string(rest), "total") {
		t.Errorf("no usage table after Ctrl-C:\n%s", rest)
	}
	log, err := eventlog.ReadFile(logPath)
	if err != nil || log.Truncated != nil {
		t.Fatalf("event log after Ctrl-C: %v, truncated %v", err, log.Truncated)
	}
	var stopping, stops int
	for _, m := range log.Messages {
		switch mm := m.(type) {
		case *message.EventMessage:
			if _, ok := mm.Event.(*message.TeamStoppingEvent); ok {
				stopping++
			}
			if _, ok := mm.Event.(message.TeamStoppingEvent); ok {
				stopping++
			}
		case *message.StopMessage:
			stops++
		}
	}
	if stopping != 1 || len(log.Messages) < 5 {
		t.Fatalf("log has %d records, %d TeamStoppingEvents, %d StopMessages", len(log.Messages), stopping, stops)
	}
}

// -log then -restore: the team comes back from its log, with its members,
// and the log goes on.
func TestLogAndRestore(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "team.log")
	var out bytes.Buffer
	if err := mainErr([]string{"-log", logPath}, strings.NewReader(""), &out, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	before, err := eventlog.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	in := strings.NewReader("/team_members\n/hire_member Developer\n/quit\n")
	if err := mainErr([]string{"-restore", logPath, "-i"}, in, &out, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	// The recreated manager has the demo's Env (agent.WithEnv): its
	// generated names are the demo's, the next after @Developer100. The
	// board is still a tool after the restore: not on the roster.
	for _, want := range []string{"restored ", "@Developer100", "@QA100", "@QA100 (role: QA)", "@Developer101(Developer"} {
		if !strings.Contains(got, want) {
			t.Errorf("restore output lacks %q", want)
		}
	}
	if strings.Contains(got, "We need a tiny Go command") {
		t.Error("the replayed history was printed again")
	}
	if strings.Contains(got, "#PlanningTool (role") {
		t.Error("the restored board is listed as a member")
	}
	if t.Failed() {
		t.Log(got)
	}
	after, err := eventlog.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Messages) < len(before.Messages) {
		t.Fatalf("log shrank: %d -> %d", len(before.Messages), len(after.Messages))
	}
}

// With OPENAI_API_KEY the demo talks to the configured endpoint with the
// configured model; here an llmtest server stands in for it.
func TestRealModelConfig(t *testing.T) {
	srv := llmtest.NewServer(llmtest.WithRouter(func(*llmtest.Request) string { return "" }))
	defer srv.Close()
	srv.Model("").Otherwise(llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"done by the real model"}]}`))
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL(), "AKGENTIC_MODEL": "gpt-4.1-nano"}
	var out bytes.Buffer
	if err := mainErr(nil, strings.NewReader(""), &out, &out, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "done by the real model") || !strings.Contains(out.String(), "on a real model") {
		t.Fatalf("output:\n%s", out.String())
	}
	if reqs := srv.Requests(); len(reqs) == 0 || reqs[0].Model != "gpt-4.1-nano" {
		t.Fatalf("requests %v", reqs)
	}
}

// A log written by the demo before the telemetry and log-codec rewrite
// (testdata/golden-v1.log, recorded at commit 749d989) still restores: the
// members come back and the restored team goes on writing the same log.
func TestRestoreGoldenLog(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "golden-v1.log"))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "team.log")
	if err := os.WriteFile(logPath, golden, 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := eventlog.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	in := strings.NewReader("/team_members\n/usage\n/quit\n")
	if err := mainErr([]string{"-restore", logPath, "-i"}, in, &out, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"restored ", "@Developer100 (role: Developer)", "@QA100 (role: QA)", "$0.0238"} {
		if !strings.Contains(got, want) {
			t.Errorf("restore of the golden log: output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(got)
	}
	after, err := eventlog.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Messages) <= len(before.Messages) {
		t.Fatalf("the restored team did not go on writing its log: %d -> %d records", len(before.Messages), len(after.Messages))
	}
}

// With -cluster, the demo runs the recorded conversation on NATS JetStream (an
// embedded server, two workers): the team created on worker A, its task
// sent into the durable inbox and its records printed through the cluster
// client; worker A crashes (its connection dropped, no cleanup) once the
// reviewer's question to the person is stored, the person's answer waits
// in the team's inbox (Client.Answer), worker B resumes the team, delivers
// it, and the conversation completes there: the same conversation and usage
// as without -cluster, and no goroutine left.
func TestDemoCluster(t *testing.T) {
	out := runDemo(t, "", "-cluster")
	outputHas(t, out,
		"akgentic demo on NATS JetStream (embedded server nats://127.0.0.1:",
		"created through the cluster client on worker A (worker B stands by; lease 2s)",
		"@Human → @Manager · request",
		"+ @Developer100 (Developer) joined the team, hired by @Manager",
		"@QA100 → @Human · request",
		"worker A lost its connection (a crash: no cleanup) with ",
		"the person's answer waits in the team's inbox",
		"worker A lost the team; the team resumed on worker B at record ",
		"@Human → @QA100 · response",
		"@Manager → @Human · response\n  Done: greet.go is written and reviewed.",
		"total                  11      17000        650    $0.0254")
	crash := strings.Index(out, "worker A lost its connection")
	resumed := strings.Index(out, "the team resumed on worker B at record ")
	asked := strings.Index(out, "@QA100 → @Human · request")
	answered := strings.Index(out, "@Human → @QA100 · response")
	done := strings.Index(out, "@Manager → @Human · response\n  Done:")
	if asked < 0 || crash < asked || resumed < crash || answered < resumed || done < answered {
		t.Errorf("want the question, the crash, the resume, the answer, the report, in that order; at %d, %d, %d, %d, %d\n%s",
			asked, crash, resumed, answered, done, out)
	}
	if n := strings.Count(out, "joined the team"); n != 5 {
		t.Errorf("%d members joined; want 5 (three at the start, two hires): the restore's are not printed\n%s", n, out)
	}
}

// runDemo runs the demo with args and stdin, and returns its output.
func runDemo(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := mainErr(args, strings.NewReader(stdin), &out, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return out.String()
}

// outputHas checks that got has each of wants, and logs it when not.
func outputHas(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(got)
	}
}
