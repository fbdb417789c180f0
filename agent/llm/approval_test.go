package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// guarded is a tool that counts its calls and needs approval for every
// call whose path is under /prod.
func guarded(calls *atomic.Int32) *llm.Tool {
	t := funcTool("delete_file", func(_ context.Context, args json.RawMessage) (any, error) {
		calls.Add(1)
		return "deleted", nil
	})
	t.NeedsApproval = func(args json.RawMessage) bool {
		var a struct {
			Path string `json:"path"`
		}
		return json.Unmarshal(args, &a) == nil && strings.HasPrefix(a.Path, "/prod")
	}
	return t
}

// pendingErr checks that err is a pause waiting for the named calls.
func pendingErr(t *testing.T, err error, ids ...string) *llm.ApprovalPendingError {
	t.Helper()
	var pe *llm.ApprovalPendingError
	if !errors.As(err, &pe) {
		t.Fatalf("want *ApprovalPendingError, got %T %v", err, err)
	}
	var got []string
	for _, c := range pe.Calls {
		got = append(got, c.ToolCallID)
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("waiting calls %v, want %v", got, ids)
	}
	return pe
}

// toolReply returns the tool result for call id in request i's history.
func (h *harness) toolReply(i int, id string) string {
	h.t.Helper()
	for _, m := range h.history(i) {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Text()
		}
	}
	h.t.Fatalf("request %d has no result for call %s", i, id)
	return ""
}

func TestApprovedCallRunsOnceAndTheRunGoesOn(t *testing.T) {
	var calls atomic.Int32
	h := newHarness(t, nil, guarded(&calls))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/prod/db"}`)), llmtest.Final(finalPlan))

	_, err := h.run("clean up")
	pe := pendingErr(t, err, "c1")
	if pe.Calls[0].ToolName != "delete_file" || pe.Calls[0].Arguments != `{"path":"/prod/db"}` || !pe.Calls[0].Deadline.IsZero() {
		t.Fatalf("waiting call %+v", pe.Calls[0])
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times before its approval", n)
	}
	if len(h.requests()) != 1 {
		t.Fatalf("%d requests while paused, want 1", len(h.requests()))
	}
	if _, err := h.run("another prompt"); err == nil {
		t.Fatal("Run on a paused runner started a run")
	} else {
		pendingErr(t, err, "c1")
	}
	if _, err := llm.Resume(t.Context(), h.runner, h.out); err == nil {
		t.Fatal("Resume with an undecided call went on")
	} else {
		pendingErr(t, err, "c1")
	}
	if err := h.runner.Decide("nope", true, "@Human", "", false); !errors.Is(err, llm.ErrNoSuchApproval) {
		t.Fatalf("a decision on an unknown call: %v, want ErrNoSuchApproval", err)
	}
	if err := h.runner.Decide("c1", true, "@Human", "backed up", false); err != nil {
		t.Fatal(err)
	}
	if err := h.runner.Decide("c1", false, "@Human", "", false); !errors.Is(err, llm.ErrNoSuchApproval) {
		t.Fatalf("a second decision: %v, want ErrNoSuchApproval", err)
	}
	res, err := llm.Resume(t.Context(), h.runner, h.out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Message != "Plan: ship it" {
		t.Fatalf("answer %+v", res)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the approved tool ran %d times, want once", n)
	}
	if got := h.toolReply(1, "c1"); got != "deleted" {
		t.Fatalf("the model got %q for the approved call", got)
	}
	granted := eventsOf[llm.ApprovalGrantedEvent](h.rec)
	if len(granted) != 1 || granted[0].By != "@Human" || granted[0].Reason != "backed up" || granted[0].ToolCallID != "c1" {
		t.Fatalf("granted events %+v", granted)
	}
	if h.runner.Pending() != nil {
		t.Fatalf("still pending: %+v", h.runner.Pending())
	}
}

func TestDeniedCallNeverRunsAndTheModelGetsTheRefusal(t *testing.T) {
	var calls, other atomic.Int32
	free := funcTool("list_files", func(context.Context, json.RawMessage) (any, error) {
		other.Add(1)
		return "a, b", nil
	})
	h := newHarness(t, func(c *llm.Config) { c.Runtime.ParallelToolCalls = new(true) }, guarded(&calls), free)
	h.model.Enqueue(llmtest.ToolCalls(
		llmtest.Call("c1", "list_files", `{}`),
		llmtest.Call("c2", "delete_file", `{"path":"/prod/db"}`),
		llmtest.Call("c3", "delete_file", `{"path":"/tmp/x"}`),
	), llmtest.Final(finalPlan))

	_, err := h.run("clean up")
	pendingErr(t, err, "c2")
	if other.Load() != 0 || calls.Load() != 0 {
		t.Fatal("a call of the paused response ran before the decision")
	}
	if err := h.runner.Decide("c2", false, "@Human", "that is the live database", false); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Resume(t.Context(), h.runner, h.out); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("delete_file ran %d times, want once (the call that needed no approval)", n)
	}
	if other.Load() != 1 {
		t.Fatalf("list_files ran %d times, want once", other.Load())
	}
	got := h.toolReply(1, "c2")
	for _, want := range []string{"denied by @Human", "that is the live database", "did not run"} {
		if !strings.Contains(got, want) {
			t.Errorf("the refusal %q does not say %q", got, want)
		}
	}
	if h.toolReply(1, "c3") != "deleted" || h.toolReply(1, "c1") != "a, b" {
		t.Error("the calls that needed no approval did not get their results")
	}
	var success []bool
	for _, r := range eventsOf[llm.ToolReturnEvent](h.rec) {
		success = append(success, r.Success)
	}
	if len(success) != 3 || !success[0] || success[1] || !success[2] {
		t.Errorf("tool returns' success %v, want the denied call's false", success)
	}
	denied := eventsOf[llm.ApprovalDeniedEvent](h.rec)
	if len(denied) != 1 || denied[0].Reason != "that is the live database" || denied[0].Expired {
		t.Fatalf("denied events %+v", denied)
	}
}

func TestApprovalDeadlineAndExpiry(t *testing.T) {
	var calls atomic.Int32
	srv := llmtest.NewServer(llmtest.WithReporter(t))
	t.Cleanup(srv.Close)
	rec := &recorder{}
	r, err := llm.NewRunner(testConfig(srv), llm.Options{HTTPClient: srv.HTTPClient(), Tools: []*llm.Tool{guarded(&calls)},
		SystemPrompts: rosterPrompt, Observer: rec.observe, Now: nowFixed, ApprovalTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	out, err := llm.NewOutput[StructuredOutput]("StructuredOutput")
	if err != nil {
		t.Fatal(err)
	}
	srv.Model(agentName).Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/prod/db"}`)), llmtest.Final(finalPlan))
	_, err = llm.Run(t.Context(), r, llm.UserText("clean up"), out)
	pe := pendingErr(t, err, "c1")
	if want := fixedNow.Add(5 * time.Minute).UTC(); !pe.Calls[0].Deadline.Equal(want) {
		t.Fatalf("deadline %v, want %v", pe.Calls[0].Deadline, want)
	}
	if err := r.Decide("c1", false, "", "", true); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Resume(t.Context(), r, out); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Fatal("an expired call ran")
	}
	msgs := srv.RequestsFor(agentName)[1].History()
	if got := msgs[len(msgs)-1].Text(); !strings.Contains(got, "nobody approved the call of delete_file in time (5m0s)") {
		t.Fatalf("the expiry's refusal: %q", got)
	}
}

// A log cut at the pause restores to a paused runner: approved, the call
// runs once and the run goes on.
func TestPausedRunSurvivesARestore(t *testing.T) {
	var calls atomic.Int32
	h := newHarness(t, nil, guarded(&calls))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/prod/db"}`)).WithUsage(100, 10, 0), llmtest.Final(finalPlan))
	_, err := h.run("clean up")
	pendingErr(t, err, "c1")
	logged := eventsOf[llm.Event](h.rec)
	// Through JSON, as the log keeps them.
	var decoded []llm.Event
	for _, e := range logged {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		switch e.(type) {
		case llm.MessageEvent:
			decoded = append(decoded, decode[llm.MessageEvent](t, b))
		case llm.UsageEvent:
			decoded = append(decoded, decode[llm.UsageEvent](t, b))
		case llm.ToolCallEvent:
			decoded = append(decoded, decode[llm.ToolCallEvent](t, b))
		case llm.ApprovalRequestedEvent:
			decoded = append(decoded, decode[llm.ApprovalRequestedEvent](t, b))
		}
	}

	var again atomic.Int32
	h2 := newHarness(t, nil, guarded(&again))
	h2.model.Enqueue(llmtest.Final(finalPlan))
	h2.runner.Restore(decoded)
	pending := h2.runner.Pending()
	if len(pending) != 1 || pending[0].ToolCallID != "c1" || pending[0].Arguments != `{"path":"/prod/db"}` {
		t.Fatalf("restored pending %+v", pending)
	}
	hist := h2.runner.History()
	if last := hist[len(hist)-1]; last.Role != "assistant" || len(last.ToolCalls) != 1 {
		t.Fatalf("the restored history ends with %+v, want the paused response (no stand-in result)", last)
	}
	if runs, in, _ := h2.runner.AgentUsage(); runs != 1 || in != 100 {
		t.Fatalf("restored lifetime counters: %d runs, %d input tokens", runs, in)
	}
	if err := h2.runner.Decide("c1", true, "@Human", "", false); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Resume(t.Context(), h2.runner, h2.out); err != nil {
		t.Fatal(err)
	}
	if again.Load() != 1 {
		t.Fatalf("the approved call ran %d times after the restore, want once", again.Load())
	}
	if got := h2.toolReply(0, "c1"); got != "deleted" {
		t.Fatalf("the model got %q", got)
	}
}

func decode[T llm.Event](t *testing.T, b []byte) llm.Event {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A cleared history drops the paused run with it; a compaction waits.
func TestClearDropsAPausedRun(t *testing.T) {
	var calls atomic.Int32
	h := newHarness(t, nil, guarded(&calls))
	h.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/prod/db"}`)), llmtest.Final(finalPlan))
	_, err := h.run("clean up")
	pendingErr(t, err, "c1")
	if _, err := h.runner.Compact(t.Context()); err == nil {
		t.Fatal("a compaction folded a paused run's calls")
	}
	h.runner.Clear()
	if h.runner.Pending() != nil {
		t.Fatal("a cleared runner still waits")
	}
	if d := eventsOf[llm.ApprovalDeniedEvent](h.rec); len(d) != 1 || d[0].ToolCallID != "c1" || !strings.Contains(d[0].Reason, "cleared") {
		t.Fatalf("the dropped call's denials %+v, want one saying the context was cleared", d)
	}
	h.mustRun("start over")
	if calls.Load() != 0 {
		t.Fatal("the dropped call ran")
	}
}
