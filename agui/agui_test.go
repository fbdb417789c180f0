package agui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/internal/npmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reply is a model answer: one message to a recipient.
func reply(intent, to, text string) llmtest.Step {
	b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"message_type": intent, "recipient": to, "message": text}}})
	return llmtest.Final(string(b))
}

// fixture is a team on the fake model, @Human (its person) and @Manager
// (a streaming BaseAgent with the planning tool, its config and Env
// changed by each of manager), behind the endpoint.
type fixture struct {
	ctx     context.Context
	team    *orchestrator.Team
	human   *message.Address
	manager *message.Address
	model   *llmtest.Server
	http    *httptest.Server
}

func newFixture(t *testing.T, opt Options, manager ...func(*agent.AgentConfig, *agent.Env)) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	f := &fixture{ctx: ctx, model: llmtest.NewServer()}
	t.Cleanup(f.model.Close)
	_, team, _ := actortest.NewTeam(t)
	f.team = team
	var err error
	if f.human, err = team.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
		t.Fatal(err)
	}
	cfg := agent.NewConfig("@Manager", "Manager")
	cfg.Model = f.model.ModelConfig("gpt-4.1")
	cfg.Runtime.Stream = true
	cfg.Tools = tool.Cards{planning.New()}
	env := &agent.Env{HTTPClient: f.model.HTTPClient()}
	for _, change := range manager {
		change(cfg, env)
	}
	if f.manager, err = team.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg); err != nil {
		t.Fatal(err)
	}
	opt.Person, opt.Entry = f.human, f.manager
	sctx, scancel := context.WithCancel(ctx)
	t.Cleanup(scancel)
	h, err := New(sctx, team, opt)
	if err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(h)
	t.Cleanup(f.http.Close)
	return f
}

// TestOfficialClientRunsAConversation: @ag-ui/client's HttpAgent runs
// three runs: a request answered with a streamed text message after a
// tool call (its start, args, end and result) that changed the task
// board (a state snapshot, then deltas); a request the team answers with
// a question to the person (an interrupt); and the resume answering it.
func TestOfficialClientRunsAConversation(t *testing.T) {
	f := newFixture(t, Options{})
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "update_planning", `{"update":{"create_tasks":[{"id":1,"description":"Book the train"}]}}`)),
		reply("response", "@Human", "The trip is planned: first, the train."),
		reply("request", "@Human", "which colour?"),
		reply("response", "@Human", "blue it is"),
	)
	got := f.client(t, "conversation")
	has := got.has
	has("streamed", "finished", "success")
	has("streamed", "text", "The trip is planned: first, the train.")
	for _, typ := range []string{"RUN_STARTED", "STATE_SNAPSHOT", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_DELTA", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"} {
		has("streamed", "types", typ)
	}
	if n, _ := got.steps["streamed"]["contents"].(float64); n < 2 {
		t.Errorf("the answer came in %v pieces; want it streamed, in several", got.steps["streamed"]["contents"])
	}
	has("streamed", "tools", "update_planning")
	has("streamed", "state", "Book the train")
	has("streamed", "state", "@Manager")
	has("question", "finished", "interrupt")
	has("question", "interrupts", "which colour?")
	has("question", "text", "which colour?")
	has("answered", "finished", "success")
	has("answered", "text", "blue it is")
	has("answered", "interrupts", "[]")
}

// TestBadRunsAreRefused: a body that is not a run, a run with nothing to
// run, a resume of a question that does not exist, another method or
// path, and a request from another host without the token: each refused
// with a status and a reason, before any stream.
func TestBadRunsAreRefused(t *testing.T) {
	f := newFixture(t, Options{})
	locked := newFixture(t, Options{Token: "s3cret"})
	for _, tc := range []struct {
		name, method, path, body, ctype string
		srv                             *httptest.Server
		remote                          bool
		status                          int
		contains                        string
	}{
		{"not JSON", "POST", "/", `{`, "application/json", f.http, false, 400, "not a RunAgentInput"},
		{"not JSON content", "POST", "/", `{}`, "text/plain", f.http, false, 415, "Content-Type"},
		{"nothing to run", "POST", "/", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"assistant","content":"hi"}]}`, "application/json", f.http, false, 400, "no user message"},
		{"an empty message", "POST", "/", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":" "}]}`, "application/json", f.http, false, 400, "has no text"},
		{"an unknown interrupt", "POST", "/", `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"6c3f9b9e-2b0f-4c36-9d0c-1a2b3c4d5e6f","status":"resolved","payload":"x"}]}`, "application/json", f.http, false, 400, "no open question"},
		{"not an interrupt id", "POST", "/", `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"x","status":"resolved","payload":"x"}]}`, "application/json", f.http, false, 400, "not an interrupt"},
		{"GET", "GET", "/", ``, "", f.http, false, 405, "not allowed"},
		{"another path", "POST", "/x", `{}`, "application/json", f.http, false, 404, "no such endpoint"},
		{"remote without the token", "POST", "/", `{}`, "application/json", locked.http, true, 401, "a token is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
			if tc.remote {
				req.RemoteAddr, req.Host = "192.0.2.1:1", "example.com"
			}
			w := httptest.NewRecorder()
			tc.srv.Config.Handler.ServeHTTP(w, req)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.contains) {
				t.Fatalf("%d %q; want %d containing %q", w.Code, w.Body.String(), tc.status, tc.contains)
			}
		})
	}
}

// post runs input and returns its events, in order, until the stream
// ends.
func (f *fixture) post(t *testing.T, input string) []event {
	t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, f.http.URL+"/", strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %s", resp.Status)
	}
	var evs []event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e event
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			if e.Timestamp <= 0 { // every event says when it was sent
				t.Fatalf("event %q has no timestamp", data)
			}
			evs = append(evs, e)
		}
	}
	return evs
}

// TestCancelsFinishTheirRun: a person's "/cancel" starts no work, and a
// resume that cancels the question cancels the asker's turn: each run
// finishes at once with the cancelled outcome, none waits.
func TestCancelsFinishTheirRun(t *testing.T) {
	f := newFixture(t, Options{})
	f.model.Model("@Manager").Enqueue(reply("request", "@Human", "which colour?"))
	evs := f.post(t, `{"threadId":"t","runId":"r1","messages":[{"id":"1","role":"user","content":"/cancel stop it"}]}`)
	if last := evs[len(evs)-1]; last.Type != runFinished || last.Outcome == nil || last.Outcome.Type != "cancelled" {
		t.Fatalf("the cancel's run ended with %+v; want RUN_FINISHED cancelled", last)
	}
	evs = f.post(t, `{"threadId":"t","runId":"r2","messages":[{"id":"2","role":"user","content":"ask me"}]}`)
	last := evs[len(evs)-1]
	if last.Outcome == nil || last.Outcome.Type != "interrupt" || len(last.Outcome.Interrupts) != 1 {
		t.Fatalf("the question's run ended with %+v; want an interrupt", last)
	}
	evs = f.post(t, `{"threadId":"t","runId":"r3","messages":[],"resume":[{"interruptId":"`+last.Outcome.Interrupts[0].ID+`","status":"cancelled"}]}`)
	if last := evs[len(evs)-1]; last.Type != runFinished || last.Outcome == nil || last.Outcome.Type != "cancelled" {
		t.Fatalf("the cancelled resume's run ended with %+v; want RUN_FINISHED cancelled", last)
	}
}

// FuzzRunInput: no body, however hostile, panics the reading of a run.
func FuzzRunInput(f *testing.F) {
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":[{"type":"text","text":"hi"}]}]}`))
	f.Add([]byte(`{"resume":[{"interruptId":"x","status":"resolved","payload":{"text":"yes"}}]}`))
	h := &Handler{hub: newHub([16]byte{1}, [16]byte{2})}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in runInput
		if json.Unmarshal(body, &in) != nil {
			return
		}
		_, _, _ = h.action(&in)
	})
}

// TestTeamStopEndsTheRun: a run whose team stops ends with a run error,
// never waiting.
func TestTeamStopEndsTheRun(t *testing.T) {
	f := newFixture(t, Options{})
	f.model.Model("@Manager").Enqueue(llmtest.Hang())
	req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, f.http.URL+"/", strings.NewReader(`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"work"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var last event
	stopped := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if err := json.Unmarshal([]byte(data), &last); err != nil {
			t.Fatal(err)
		}
		if last.Type == stateSnapshot && !stopped {
			stopped = true
			if err := f.team.Stop(f.ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if last.Type != runError {
		t.Fatalf("the run ended with %+v; want a run error", last)
	}
}

// clientSteps are the lines the client script printed, by step.
type clientSteps struct {
	t     *testing.T
	steps map[string]map[string]any
}

// has checks that the step's field, printed, contains want.
func (c clientSteps) has(step, field, want string) {
	c.t.Helper()
	if v := fmt.Sprint(c.steps[step][field]); !strings.Contains(v, want) {
		c.t.Errorf("%s.%s = %s; want it to contain %q", step, field, v, want)
	}
}

// client runs the scenario of testdata/js/client.mjs against the endpoint.
func (f *fixture) client(t *testing.T, scenario string) clientSteps {
	t.Helper()
	node, dir := npmtest.Script(t, filepath.Join("testdata", "js"), "client.mjs")
	cmd := exec.CommandContext(f.ctx, node, "client.mjs", f.http.URL+"/", scenario)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	got := clientSteps{t: t, steps: map[string]map[string]any{}}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q", line)
		}
		step, _ := m["step"].(string)
		got.steps[step] = m
	}
	if e, ok := got.steps["error"]; ok {
		t.Fatalf("the client failed: %v\nstderr: %s", e["error"], stderr.String())
	}
	return got
}
