package agui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/message"
)

// TestOfficialClientDecidesToolApprovals: through @ag-ui/client's
// HttpAgent, a tool call waiting for the person's approval ends the run
// as an interrupt (reason tool_approval) naming the call, describing the
// answer it takes and carrying the call's details (agent, tool, call id,
// arguments); a resume with a structured decision approves it (the call
// runs once, its result streams, the run goes on to the answer), one with
// a text denies it (the call never runs, the model gets the refusal and
// the reason), a payload that is not a decision is refused before any
// stream, and an abandoned interrupt (cancelled) is a denial.
func TestOfficialClientDecidesToolApprovals(t *testing.T) {
	create := func(id int, what string) llmtest.Step {
		return llmtest.ToolCalls(llmtest.Call(fmt.Sprintf("c%d", id), "update_planning",
			fmt.Sprintf(`{"update":{"create_tasks":[{"id":%d,"description":%q}]}}`, id, what)))
	}
	f := newFixture(t, Options{}, func(_ *agent.AgentConfig, env *agent.Env) {
		env.Guards = &agent.Guards{Approval: &tool.Approval{Always: []string{"update_planning"}}}
	})
	f.model.Model("@Manager").Enqueue(
		create(1, "Drop the table"),
		reply("response", "@Human", "dropped"),
		create(2, "Drop it again"),
		reply("response", "@Human", "left it alone"),
		create(3, "Drop it once more"),
		reply("response", "@Human", "not this time either"),
	)
	got := f.client(t, "approval")
	for _, step := range []string{"asked", "asked again", "asked a third time"} {
		got.has(step, "finished", "interrupt")
		got.has(step, "tools", "update_planning")
		got.has(step, "interrupts", "reason:tool_approval")
		got.has(step, "interrupts", "agent:@Manager")
		got.has(step, "interrupts", "tool:update_planning")
		got.has(step, "interrupts", "responseSchema:map[")
		got.has(step, "text", "approve or deny")
	}
	ins, _ := got.steps["asked"]["interrupts"].([]any)
	if len(ins) != 1 {
		t.Fatalf("the first run ended with %d interrupts; want the approval request", len(ins))
	}
	in, _ := ins[0].(map[string]any)
	md, _ := in["metadata"].(map[string]any)
	ap, _ := md["approval"].(map[string]any)
	args, _ := ap["arguments"].(map[string]any)
	if in["toolCallId"] != "c1" || ap["callId"] != "c1" || args["update"] == nil {
		t.Errorf("the interrupt is %v; want call c1 with its arguments", in)
	}
	got.has("approved", "finished", "success")
	got.has("approved", "types", "TOOL_CALL_RESULT")
	got.has("approved", "text", "dropped")
	got.has("approved", "state", "Drop the table")
	got.has("approved", "interrupts", "[]")
	if rs, _ := got.steps["approved"]["results"].([]any); len(rs) != 1 {
		t.Errorf("the approved run has %d tool results; want the call's, once", len(rs))
	}
	got.has("denied", "finished", "success")
	got.has("denied", "text", "left it alone")
	got.has("denied", "results", "denied by @Human")
	got.has("bad decision", "error", "400")
	got.has("abandoned", "finished", "success")
	got.has("abandoned", "text", "not this time either")
	for _, step := range []string{"denied", "abandoned"} {
		if s := fmt.Sprint(got.steps[step]["state"]); strings.Contains(s, "Drop it") {
			t.Errorf("%s: the board is %s; a denied call ran", step, s)
		}
	}
	reqs := f.model.RequestsFor("@Manager")
	if len(reqs) != 6 {
		t.Fatalf("%d model requests; want 6", len(reqs))
	}
	for i, want := range map[int]string{3: "that is the live database", 5: "the person cancelled the question"} {
		hist := reqs[i].History()
		if last := hist[len(hist)-1]; last.Role != "tool" || !strings.Contains(last.Text(), "denied by @Human") || !strings.Contains(last.Text(), want) {
			t.Errorf("model request %d ends with %s %q; want the refusal saying %q", i+1, last.Role, last.Text(), want)
		}
	}
}

// TestTwoApprovalsOfOneAnswerAreOneInterruptEach: a model answer with two
// calls to approve ends the run with an interrupt for each (the run waits
// for the asking turn's end to send both), and one resume with an entry
// for each decides them: the approved call ran once, the denied one never,
// and the run goes on to the answer.
func TestTwoApprovalsOfOneAnswerAreOneInterruptEach(t *testing.T) {
	f := newFixture(t, Options{}, func(_ *agent.AgentConfig, env *agent.Env) {
		env.Guards = &agent.Guards{Approval: &tool.Approval{Always: []string{"update_planning"}}}
	})
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(
			llmtest.Call("c1", "update_planning", `{"update":{"create_tasks":[{"id":1,"description":"First task"}]}}`),
			llmtest.Call("c2", "update_planning", `{"update":{"create_tasks":[{"id":2,"description":"Second task"}]}}`)),
		reply("response", "@Human", "planned the first"),
	)
	got := f.client(t, "two approvals")
	got.has("asked", "finished", "interrupt")
	ins, _ := got.steps["asked"]["interrupts"].([]any)
	var calls []string
	for _, i := range ins {
		m, _ := i.(map[string]any)
		calls = append(calls, fmt.Sprint(m["toolCallId"]))
	}
	if strings.Join(calls, ",") != "c1,c2" {
		t.Fatalf("the run ended with the interrupts of %v; want c1 and c2", calls)
	}
	got.has("decided", "finished", "success")
	got.has("decided", "text", "planned the first")
	got.has("decided", "state", "First task")
	if s := fmt.Sprint(got.steps["decided"]["state"]); strings.Contains(s, "Second task") {
		t.Errorf("the board is %s; the denied call ran", s)
	}
	got.has("decided", "results", "one is enough")
}

// TestAnExpiredApprovalCannotBeResumed: an approval's deadline passes
// before the person decides: the call is denied by itself, and a resume
// of its interrupt is refused (no open question has that id) rather than
// answering a call that no longer waits.
func TestAnExpiredApprovalCannotBeResumed(t *testing.T) {
	f := newFixture(t, Options{}, func(_ *agent.AgentConfig, env *agent.Env) {
		env.Guards = &agent.Guards{Approval: &tool.Approval{Always: []string{"update_planning"}, Timeout: 50 * time.Millisecond}}
	})
	rec := actortest.NewRecorder()
	if err := f.team.Subscribe(f.ctx, rec); err != nil {
		t.Fatal(err)
	}
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "update_planning", `{"update":{"create_tasks":[{"id":1,"description":"Late"}]}}`)),
		reply("response", "@Human", "not approved in time"),
	)
	evs := f.post(t, `{"threadId":"t","runId":"r1","messages":[{"id":"1","role":"user","content":"plan it"}]}`)
	last := evs[len(evs)-1]
	if last.Type != runFinished || last.Outcome == nil || len(last.Outcome.Interrupts) != 1 || last.Outcome.Interrupts[0].ExpiresAt == "" {
		t.Fatalf("the run ended with %+v; want an approval interrupt with its expiry", last)
	}
	id := last.Outcome.Interrupts[0].ID
	actortest.WaitFor(t, rec, func(m *message.SentMessage) bool {
		am, ok := m.Message.(*agent.AgentMessage)
		return ok && am.Content == "not approved in time"
	})
	if err := f.team.Sync(f.ctx); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"threadId":"t","runId":"r2","messages":[],"resume":[{"interruptId":"`+id+`","status":"resolved","payload":"approve"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
	w := httptest.NewRecorder()
	f.http.Config.Handler.ServeHTTP(w, req)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "no open question") {
		t.Fatalf("a resume of the expired interrupt got %d %q; want 400, no open question", w.Code, w.Body.String())
	}
}
