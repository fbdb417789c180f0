package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/internal/lineage"
	"github.com/akgentic/akgentic-go/message"
)

// deleteCard gives an agent delete_file, which counts its calls.
type deleteCard struct{ calls *atomic.Int32 }

func (*deleteCard) Kind() string { return "A2ADeleteTestTool" }

func (d *deleteCard) Attach(context.Context, *tool.Owner) (tool.Capabilities, error) {
	return tool.Capabilities{Tools: []*llm.Tool{{Name: "delete_file", Description: "Delete a file.",
		Call: func(context.Context, json.RawMessage) (any, error) {
			d.calls.Add(1)
			return "deleted", nil
		}}}}, nil
}

func init() {
	tool.Register("A2ADeleteTestTool", func() tool.Card { return &deleteCard{calls: new(atomic.Int32)} })
}

// withApproval gives @Manager delete_file, every call of which waits for
// the person's approval, and returns its call count.
func withApproval() (func(*agent.AgentConfig, *agent.Env), *atomic.Int32) {
	calls := new(atomic.Int32)
	return func(c *agent.AgentConfig, env *agent.Env) {
		c.Tools = tool.Cards{&deleteCard{calls: calls}}
		env.Guards = &agent.Guards{Approval: &tool.Approval{Always: []string{"delete_file"}}}
	}, calls
}

// TestOfficialClientDecidesToolApprovals: over A2A 1.0 and 0.3, through
// @a2a-js/sdk's client, a tool call waiting for approval makes the task
// input-required with the call's details (agent, tool, call id,
// arguments) in a data part beside the text (in the task, and in the last
// status update of a streamed send); a structured decision
// approves it (the call runs once, the task completes), a text answer
// denies it (the call never runs, the model's next request carries the
// refusal and the reason), and a structured decision that is not one is
// refused with the protocol's error while the task goes on waiting.
func TestOfficialClientDecidesToolApprovals(t *testing.T) {
	for _, version := range []string{"1.0", "0.3"} {
		t.Run(version, func(t *testing.T) {
			change, calls := withApproval()
			f := newFixture(t, Options{}, change)
			f.model.Model("@Manager").Enqueue(
				llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/prod/db"}`)),
				reply("response", "@Human", "cleaned up"),
				llmtest.ToolCalls(llmtest.Call("c2", "delete_file", `{"path":"/prod/db"}`)),
				reply("response", "@Human", "left it alone"),
				llmtest.ToolCalls(llmtest.Call("c3", "delete_file", `{"path":"/prod/logs"}`)),
			)
			got := steps(nodeScript(t, f.ctx, "client.mjs", f.http.URL, version, "approval"))
			if e, ok := got["error"]; ok {
				t.Fatalf("the client failed: %v", e["error"])
			}
			field := func(step, name string) string {
				t.Helper()
				s, ok := got[step]
				if !ok {
					t.Fatalf("no step %q in %v", step, got)
				}
				return fmt.Sprint(s[name])
			}
			for _, step := range []string{"asked", "asked again"} {
				if s := field(step, "state"); s != "input-required" {
					t.Errorf("%s: the task is %s; want input-required", step, s)
				}
				if s := field(step, "status"); !strings.Contains(s, "delete_file") || !strings.Contains(s, "approve or deny") {
					t.Errorf("%s: the status text %q does not ask to approve delete_file", step, s)
				}
			}
			call := func(step string) map[string]any {
				t.Helper()
				ds, _ := got[step]["data"].([]any)
				if len(ds) != 1 {
					t.Fatalf("%s: the status message has %d data parts; want the approval's details", step, len(ds))
				}
				d, _ := ds[0].(map[string]any)
				return d
			}
			d := call("asked")
			args, _ := d["arguments"].(map[string]any)
			if d["type"] != "tool_approval" || d["agent"] != "@Manager" || d["tool"] != "delete_file" || d["callId"] != "c1" || args["path"] != "/prod/db" {
				t.Errorf("the approval's details are %v", d)
			}
			if id := call("asked again")["callId"]; id != "c2" || field("asked again", "streamed") != "true" {
				t.Errorf("the streamed request's call id is %v; want c2 in the stream's last status update", id)
			}
			if s, a := field("approved", "state"), field("approved", "answer"); s != "completed" || a != "cleaned up" {
				t.Errorf("approved: the task is %s with %q; want completed with the turn's answer", s, a)
			}
			if s, a := field("denied", "state"), field("denied", "answer"); s != "completed" || a != "left it alone" {
				t.Errorf("denied: the task is %s with %q; want completed with the turn's answer", s, a)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("delete_file ran %d times; want once (the approved call)", n)
			}
			reqs := f.model.RequestsFor("@Manager")
			if len(reqs) < 4 {
				t.Fatalf("%d model requests; want at least 4", len(reqs))
			}
			hist := reqs[1].History()
			if last := hist[len(hist)-1]; last.Role != "tool" || last.Text() != `"deleted"` && last.Text() != "deleted" {
				t.Errorf("after the approval the model got %s %q; want the call's result", last.Role, last.Text())
			}
			hist = reqs[3].History()
			if last := hist[len(hist)-1]; last.Role != "tool" || !strings.Contains(last.Text(), "denied by @Human") || !strings.Contains(last.Text(), "that is the live database") {
				t.Errorf("after the denial the model got %s %q; want the refusal with its reason", last.Role, last.Text())
			}
			if e := field("bad decision", "error"); !strings.Contains(e, "want \"approve\" or \"deny\"") {
				t.Errorf("a decision of maybe: error %q; want the invalid-params error naming the choices", e)
			}
			if s := field("bad decision", "state"); s != "input-required" {
				t.Errorf("after a bad decision the task is %s; want input-required still", s)
			}
		})
	}
}

// send posts a SendMessage of text (to task, when set) and returns the
// task as the blocking send left it.
func (f *fixture) send(task, text string) *wireTask {
	f.t.Helper()
	m := map[string]any{"messageId": uuid.NewString(), "role": roleUser, "parts": []any{map[string]any{"text": text}}}
	if task != "" {
		m["taskId"] = task
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{"message": m}})
	a := f.rpc(string(body))
	var r streamResponse
	if a.Error != nil || json.Unmarshal(a.Result, &r) != nil || r.Task == nil {
		f.t.Fatalf("SendMessage %q: %s %+v", text, a.Result, a.Error)
	}
	return r.Task
}

// approvalOf returns the call id of the approval a task's status shows.
func approvalOf(t *testing.T, w *wireTask) string {
	t.Helper()
	if w.Status.State != stateInputRequired || w.Status.Message == nil {
		t.Fatalf("the task is %s; want input-required with the approval", w.Status.State)
	}
	for _, p := range w.Status.Message.Parts {
		var d lineage.Approval
		if len(p.Data) > 0 && json.Unmarshal(p.Data, &d) == nil && d.Type == "tool_approval" {
			return d.CallID
		}
	}
	t.Fatalf("the status message %+v has no approval's details", w.Status.Message)
	return ""
}

// TestApprovalsOfOneAnswerAreAskedInTurn: when one model answer has two
// calls that need approval, the task shows the first; its answer shows
// the second (input-required again); the second's answer lets the turn
// go on: the approved call ran once, the denied one never.
func TestApprovalsOfOneAnswerAreAskedInTurn(t *testing.T) {
	change, calls := withApproval()
	f := newFixture(t, Options{}, change)
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/a"}`), llmtest.Call("c2", "delete_file", `{"path":"/b"}`)),
		reply("response", "@Human", "deleted /a only"),
	)
	task := f.send("", "delete /a and /b")
	if id := approvalOf(t, task); id != "c1" {
		t.Fatalf("the task shows the approval of %s first; want c1", id)
	}
	if id := approvalOf(t, f.send(task.ID, "approve")); id != "c2" {
		t.Fatalf("after the first answer the task shows %s; want c2", id)
	}
	done := f.send(task.ID, "deny not /b")
	if done.Status.State != stateCompleted || len(done.Artifacts) != 1 || *done.Artifacts[0].Parts[0].Text != "deleted /a only" {
		t.Fatalf("after both answers the task is %s %+v; want completed with the answer", done.Status.State, done.Artifacts)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("delete_file ran %d times; want once", n)
	}
}

// TestAnApprovalDeadlineDeniesAndTheTaskGoesOn: nobody answers before the
// approval's deadline: the call is denied, and the task, input-required
// until then, follows the agent's next turn to its answer (completed).
func TestAnApprovalDeadlineDeniesAndTheTaskGoesOn(t *testing.T) {
	change, calls := withApproval()
	f := newFixture(t, Options{}, change, func(_ *agent.AgentConfig, env *agent.Env) { env.Guards.Approval.Timeout = 50 * time.Millisecond })
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/a"}`)),
		reply("response", "@Human", "not approved in time"),
	)
	task := f.send("", "delete /a")
	st := f.server.store.get(task.ID)
	if st == nil {
		t.Fatal("the task is not in the store")
	}
	if w, snap := f.server.store.watch(st, false); w != nil {
		for range w.ch { // until the task ends
		}
	} else if snap.Status.State == stateInputRequired {
		t.Fatal("the stream of a waiting task was not opened")
	}
	got := f.server.store.snapshot(st, nil, false)
	if got.Status.State != stateCompleted || len(got.Artifacts) != 1 || *got.Artifacts[0].Parts[0].Text != "not approved in time" {
		t.Fatalf("after the deadline the task is %s %+v; want completed with the agent's answer", got.Status.State, got.Artifacts)
	}
	if calls.Load() != 0 {
		t.Fatal("a call denied by its deadline ran")
	}
}

// TestCancelingATaskDeniesTheApprovalsItWaitedOn: a task waiting for an
// approval is canceled: the call is denied (it never runs, the model reads
// why), and the task stays canceled.
func TestCancelingATaskDeniesTheApprovalsItWaitedOn(t *testing.T) {
	change, calls := withApproval()
	f := newFixture(t, Options{}, change)
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/a"}`)),
		reply("response", "@Human", "fine, nothing deleted"),
	)
	task := f.send("", "delete /a")
	approvalOf(t, task)
	a := f.rpc(`{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"` + task.ID + `"}}`)
	if a.Error != nil {
		t.Fatal(a.Error)
	}
	actortest.WaitFor(t, f.rec, func(m *message.SentMessage) bool {
		am, ok := m.Message.(*agent.AgentMessage)
		return ok && am.Content == "fine, nothing deleted"
	})
	if calls.Load() != 0 {
		t.Fatal("the call of a canceled task ran")
	}
	reqs := f.model.RequestsFor("@Manager")
	hist := reqs[len(reqs)-1].History()
	if last := hist[len(hist)-1]; last.Role != "tool" || !strings.Contains(last.Text(), "the A2A client canceled the task") {
		t.Fatalf("the model's last request ends with %s %q; want the refusal naming the cancel", last.Role, last.Text())
	}
	if st := f.server.store.snapshot(f.server.store.get(task.ID), nil, true).Status.State; st != stateCanceled {
		t.Fatalf("the task is %s; want canceled", st)
	}
}
