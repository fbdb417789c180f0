package a2a

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// TestOfficialClientDrivesTheTeam: the official JavaScript SDK's client
// (@a2a-js/sdk), over A2A 1.0 and over its 0.3 compatibility, sends a
// request and gets the answer, streams one (the task, its states, the
// streamed chunks of the answer), reads a task, answers the question an
// agent asked the person (input-required, then completed), cancels a
// task that would work forever, and gets the protocol's error for a task
// that does not exist.
func TestOfficialClientDrivesTheTeam(t *testing.T) {
	for _, version := range []string{"1.0", "0.3"} {
		t.Run(version, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.model.Model("@Manager").Enqueue(
				reply("response", "@Human", "hi there"),
				reply("response", "@Human", "a streamed answer"),
				reply("request", "@Human", "which colour?"),
				reply("response", "@Human", "blue it is"),
				llmtest.Hang(),
			)
			got := steps(nodeScript(t, f.ctx, "client.mjs", f.http.URL, version))
			if e, ok := got["error"]; ok {
				t.Fatalf("the client failed: %v", e["error"])
			}
			want := func(step, field, value string) {
				t.Helper()
				s, ok := got[step]
				if !ok {
					t.Fatalf("no step %q in %v", step, got)
				}
				if v := fmt.Sprint(s[field]); v != value {
					t.Errorf("%s.%s = %q; want %q (%v)", step, field, v, value, s)
				}
			}
			want("send", "state", "completed")
			want("send", "answer", "hi there")
			want("stream", "streamed", "a streamed answer")
			events := fmt.Sprint(got["stream"]["events"])
			if !strings.HasPrefix(events, "[task:submitted") || !strings.Contains(events, "status:working") || !strings.HasSuffix(events, "status:completed]") || !strings.Contains(events, "artifact") {
				t.Errorf("stream events = %s; want the task, working, the answer's chunks, completed", events)
			}
			want("get", "state", "completed")
			want("get", "answer", "hi there")
			want("question", "state", "input-required")
			want("question", "status", "which colour?")
			want("answered", "state", "completed")
			want("answered", "answer", "blue it is")
			want("cancel", "state", "canceled")
			want("canceled", "state", "canceled")
			if e := fmt.Sprint(got["unknown"]["error"]); !strings.Contains(e, "not found") {
				t.Errorf("unknown task: error %q; want the task-not-found error", e)
			}
			// The cancel reached the turn: it ended, cancelled by the person.
			if err := proxy.Do(f.ctx, f.manager, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
				t.Fatal(err)
			}
			ws, err := f.team.Messages(f.ctx, orchestrator.Filter{Type: "WarningMessage"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(orchestrator.Select[*message.WarningMessage](ws), func(w *message.WarningMessage) bool {
				return strings.Contains(w.Content, "turn cancelled by @Human")
			}) {
				t.Errorf("no cancelled turn in the team's log: %v", actortest.Describe(ws))
			}
		})
	}
}
