package llm_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

var update = flag.Bool("update", false, "rewrite testdata transcripts from the scripted model")

const transcriptPath = "testdata/tool_roundtrip.jsonl"

// A recorded transcript (JSONL) replays through the real loop: the runner
// must send exactly the recorded requests (dates masked) and gets the
// recorded answers, a 429 included; anything else fails the test.
func TestReplayTranscript(t *testing.T) {
	if *update {
		recordTranscript(t)
	}
	h := newHarness(t, nil, hireTool(t, nil))
	replayTranscript(t, h.srv)
	res := h.mustRun("Hire a QA, then report.")
	if len(res.Messages) != 1 || res.Messages[0].Message != "Plan: ship it" {
		t.Fatalf("result %+v", res)
	}
	if h.srv.Pending() != 0 || len(h.srv.Failures()) != 0 {
		t.Fatalf("remaining %d failures %v", h.srv.Pending(), h.srv.Failures())
	}
	if len(h.rec.sleeps) != 1 {
		t.Fatalf("recorded Retry-After was not honoured: %v", h.rec.sleeps)
	}
}

// A request the transcript does not expect fails with a clear error.
func TestReplayRejectsUnexpectedRequest(t *testing.T) {
	rep := &silentReporter{}
	srv := llmtest.NewServer(llmtest.WithReporter(rep))
	defer srv.Close()
	r, err := llm.NewRunner(testConfig(srv), llm.Options{HTTPClient: srv.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, _ := llm.NewOutput[StructuredOutput]("StructuredOutput")
	replayTranscript(t, srv)
	_, err = llm.Run(t.Context(), r, llm.UserText("something else"), out)
	if err == nil || !strings.Contains(err.Error(), "does not match the transcript") || len(rep.msgs) != 1 {
		t.Fatalf("got %v, reports %v", err, rep.msgs)
	}
}

type silentReporter struct{ msgs []string }

func (s *silentReporter) Errorf(format string, args ...any) { s.msgs = append(s.msgs, format) }

func recordTranscript(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(transcriptPath), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(transcriptPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv := llmtest.NewServer(llmtest.WithRecorder(f))
	defer srv.Close()
	rec := &recorder{}
	r, err := llm.NewRunner(testConfig(srv), llm.Options{Tools: []*llm.Tool{hireTool(t, nil)},
		HTTPClient: srv.HTTPClient(), Sleep: rec.sleep,
		SystemPrompts: rosterPrompt, Now: nowFixed})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, _ := llm.NewOutput[StructuredOutput]("StructuredOutput")
	srv.Model(agentName).Enqueue(llmtest.RateLimited("1"),
		llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA"]}`)), llmtest.Final(finalPlan))
	if _, err := llm.Run(t.Context(), r, llm.UserText("Hire a QA, then report."), out); err != nil {
		t.Fatal(err)
	}
}

// replayTranscript switches srv to replaying the recorded transcript.
func replayTranscript(t *testing.T, srv *llmtest.Server) {
	t.Helper()
	f, err := os.Open(transcriptPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := srv.Replay(f); err != nil {
		t.Fatal(err)
	}
}
