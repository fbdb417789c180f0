package llm_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

const finalHello = `{"messages":[{"message_type":"response","message":"Hello","recipient":"@Human"}]}`

// cutLog is an agent's log: a first run ("hello", answered), then a run
// on "Hire a QA." (a tool call, its result, the final answer) whose turn
// was cut by a crash after the events kept (keep of the second run's
// events, all when -1). It returns the events and where the cut run's
// begin.
func cutLog(t *testing.T, keep int) ([]llm.Event, int) {
	t.Helper()
	h := newHarness(t, nil, hireTool(t, nil))
	h.model.Enqueue(llmtest.Final(finalHello))
	h.mustRun("hello")
	from := len(h.rec.events)
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA"]}`)), llmtest.Final(finalPlan))
	h.mustRun("Hire a QA.")
	events := h.rec.events
	if keep >= 0 {
		events = events[:from+keep]
	}
	return events, from
}

// texts is the role and text of each message of a request's history.
func texts(hist []llmtest.Message) []string {
	var out []string
	for _, m := range hist {
		s := m.Role + ":" + m.Text()
		for _, c := range m.ToolCalls {
			s += " call " + c.ID
		}
		out = append(out, s)
	}
	return out
}

// The message of a turn cut by a crash, run again (a
// durable inbox delivers it at least once), gets the model's answers the
// cut run already paid for from the log: a crash after the final answer
// costs no request at all; tools run again; the history holds the run
// once; a replayed answer emits no usage event (its usage is logged).
func TestRestoreCutReplaysPaidAnswers(t *testing.T) {
	events, from := cutLog(t, -1) // cut after the final answer (routing)
	var calls []string
	h := newHarness(t, nil, hireTool(t, &calls))
	h.runner.RestoreCut(events, from)
	if got := h.mustRun("Hire a QA."); len(got.Messages) != 1 || got.Messages[0].Message != "Plan: ship it" {
		t.Fatalf("rerun result %+v; want the logged plan", got)
	}
	if n := len(h.requests()); n != 0 {
		t.Fatalf("%d model requests; want 0 (both answers replayed)", n)
	}
	if !slices.Equal(calls, []string{"QA"}) {
		t.Fatalf("tool calls %v; want the tool run again once", calls)
	}
	want := []string{"message:user", "message:assistant", "call:call_1", "message:tool", "return:call_1", "message:assistant"}
	if got := h.rec.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events %v\nwant %v (no usage)", got, want)
	}
	// The next run sends the history with the run once.
	h.model.Enqueue(llmtest.Final(finalHello))
	h.mustRun("thanks")
	got := texts(h.history(0))
	if n := len(got); n != 7 || strings.Count(strings.Join(got, "\n"), "user:Hire a QA.") != 1 || strings.Contains(strings.Join(got, "\n"), "aborted") {
		t.Fatalf("history after the rerun:\n%s\nwant hello, its answer, the run once (4 messages), thanks", strings.Join(got, "\n"))
	}
}

// A crash while the tool ran: the tool call is
// replayed, the tool runs, and the model is asked only for what the cut
// run never got, with the real result (no stand-in).
func TestRestoreCutMidTool(t *testing.T) {
	events, from := cutLog(t, 4) // user, assistant, call, usage: the tool's result never logged
	h := newHarness(t, nil, hireTool(t, nil))
	h.runner.RestoreCut(events, from)
	h.model.Enqueue(llmtest.Final(finalPlan))
	h.mustRun("Hire a QA.")
	if n := len(h.requests()); n != 1 {
		t.Fatalf("%d model requests; want 1 (the tool call replayed)", n)
	}
	got := texts(h.history(0))
	want := []string{"user:hello", "assistant:" + finalHello, "user:Hire a QA.", "assistant: call call_1", "tool:Members hired: [@QA123]"}
	if !slices.Equal(got, want) {
		t.Fatalf("request history\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The replay lasts only while the rerun is the cut
// run: a tool that answers differently this time ends it (the model is
// asked again), and a different prompt replays nothing and keeps the cut
// run in the history (as Restore).
func TestRestoreCutStopsOnDifference(t *testing.T) {
	events, from := cutLog(t, -1)
	other := funcTool("hire_members", func(context.Context, json.RawMessage) (any, error) { return "No budget left.", nil })
	h := newHarness(t, nil, other)
	h.runner.RestoreCut(events, from)
	h.model.Enqueue(llmtest.Final(finalHello))
	h.mustRun("Hire a QA.")
	if n := len(h.requests()); n != 1 {
		t.Fatalf("another tool result: %d model requests; want 1", n)
	}
	if got := texts(h.history(0)); got[len(got)-1] != "tool:No budget left." {
		t.Fatalf("request history %v; want the new tool result last", got)
	}

	h2 := newHarness(t, nil, hireTool(t, nil))
	h2.runner.RestoreCut(events, from)
	h2.model.Enqueue(llmtest.Final(finalHello))
	h2.mustRun("Something else.")
	got := texts(h2.history(0))
	if n := len(got); n != 7 || got[2] != "user:Hire a QA." || got[6] != "user:Something else." {
		t.Fatalf("another prompt: request history\n%s\nwant the cut run kept, then the prompt", strings.Join(got, "\n"))
	}
	// Offered to the next run only.
	h2.model.Enqueue(llmtest.Final(finalHello))
	h2.mustRun("Hire a QA.")
	if n := len(h2.requests()); n != 2 {
		t.Fatalf("%d requests; want 2 (no replay after another run)", n)
	}

	// RestoreCut at len(events) is Restore.
	h3 := newHarness(t, nil, hireTool(t, nil))
	h3.runner.RestoreCut(events, len(events))
	h3.model.Enqueue(llmtest.Final(finalHello))
	h3.mustRun("Hire a QA.")
	if n := len(h3.requests()); n != 1 {
		t.Fatalf("RestoreCut(events, len(events)): %d requests; want 1", n)
	}
}
