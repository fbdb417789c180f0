package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var discard = slog.New(slog.DiscardHandler)

// TestRunSmallFleet runs three teams of two turns each: every turn is
// completed (Run checks each answer reached its own team's person, from
// its manager), each took three model calls, and the figures are sane.
func TestRunSmallFleet(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Teams: 3, Turns: 2, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Turns != 6 || rep.ModelCalls != 18 {
		t.Errorf("turns %d, model calls %d; want 6 turns of 3 calls", rep.Turns, rep.ModelCalls)
	}
	if rep.Concurrency != 3 || rep.Teams != 3 || rep.TurnsPerTeam != 2 {
		t.Errorf("config reported %d teams x %d turns, %d in flight; want 3 x 2, 3", rep.Teams, rep.TurnsPerTeam, rep.Concurrency)
	}
	if rep.Driven <= 0 || rep.Setup <= 0 || rep.TurnsPerSec() <= 0 || rep.CallsPerSec() <= rep.TurnsPerSec() {
		t.Errorf("times: setup %v, driven %v, %f turns/s, %f calls/s", rep.Setup, rep.Driven, rep.TurnsPerSec(), rep.CallsPerSec())
	}
	if runtime.GOOS == "linux" && rep.CPUPerTurn() <= 0 {
		t.Errorf("CPU per turn %v", rep.CPUPerTurn())
	}
	if rep.LatencyP50 <= 0 || rep.LatencyP99 < rep.LatencyP50 {
		t.Errorf("latency p50 %v, p99 %v", rep.LatencyP50, rep.LatencyP99)
	}
	if rep.Allocs == 0 || rep.BytesPerTurn() <= 0 {
		t.Errorf("allocations: %d allocs, %f B per turn", rep.Allocs, rep.BytesPerTurn())
	}
	// A team is at least its five actors' state; not more than a few MB.
	for name, v := range map[string]int64{"fresh": rep.HeapFreshTeam, "idle": rep.HeapIdleTeam} {
		if v < 1<<10 || v > 8<<20 {
			t.Errorf("heap per %s team: %d B", name, v)
		}
	}
	t.Log("\n" + rep.String())
	if s := rep.String(); !strings.Contains(s, "3 teams x 2 turns") || !strings.Contains(s, "turns/s") {
		t.Errorf("report:\n%s", s)
	}
}

// TestRoute checks the script: each step of a turn is routed to the
// model that answers it, and the person's request to the worker it names.
func TestRoute(t *testing.T) {
	sc := newScript()
	defer sc.srv.Close()
	user := func(text string) *llmtest.Request {
		q, _ := json.Marshal(text)
		return &llmtest.Request{Messages: []llmtest.Message{{Role: "system", Content: json.RawMessage(`"You are @X."`)},
			{Role: "user", Content: json.RawMessage(`"You received a request from @Human.\n\nearlier"`)},
			{Role: "assistant", Content: json.RawMessage(`"{}"`)}, {Role: "user", Content: q}}}
	}
	for text, want := range map[string]string{
		"You received a request from @Human. Carry out the task.\n\nPlease ask @Worker1 to do the task.": keyRoute1,
		"You received a request from @Human. Carry out the task.\n\nPlease ask @Worker2 to do the task.": keyRoute2,
		"You received a request from @Manager. Carry out the task.\n\n" + taskText:                       keyWorker,
		"You received a response from @Worker2. Analyse the response.\n\n" + resultText:                  keyAnswer,
		"You received a notification from @Human.\n\nhello":                                              "",
	} {
		if got := sc.route(user(text)); got != want {
			t.Errorf("route(%q) = %q, want %q", text, got, want)
		}
	}
	if sc.calls.Load() != 5 || sc.unexpected.Load() != 1 {
		t.Errorf("calls %d, unexpected %d; want 5, 1", sc.calls.Load(), sc.unexpected.Load())
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{}, {Teams: 1}, {Teams: 1, Turns: 1, Concurrency: -1},
		{Teams: 1, Turns: 1, TurnTimeout: -1}, {Teams: 1, Turns: 1, Retention: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
		if _, err := Run(t.Context(), c); err == nil {
			t.Errorf("Run(%+v): no error", c)
		}
	}
}

// TestTurnTimeout: a turn that takes too long fails the run, and the
// teams are still stopped (goleak checks the goroutines).
func TestTurnTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := Run(ctx, Config{Teams: 2, Turns: 1, TurnTimeout: time.Nanosecond, Logger: discard})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a turn timeout", err)
	}
}
