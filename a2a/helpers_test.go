package a2a

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/akgentic/akgentic-go/internal/npmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reply is a model answer: one message to a recipient.
func reply(intent, to, text string) llmtest.Step {
	b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"message_type": intent, "recipient": to, "message": text}}})
	return llmtest.Final(string(b)).WithUsage(1000, 50, 0)
}

// fixture is a small team on the fake model, @Human (its person) and
// @Manager (a streaming BaseAgent, the entry member), served as an A2A
// agent over httptest.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	team    *orchestrator.Team
	human   *message.Address
	manager *message.Address
	model   *llmtest.Server
	server  *Server
	http    *httptest.Server
	rec     *actortest.Recorder
}

func newFixture(t *testing.T, opt Options, manager ...func(*agent.AgentConfig, *agent.Env)) *fixture {
	t.Helper()
	f := newTeam(t, true, manager...)
	opt.Person, opt.Entry = f.human, f.manager
	sctx, scancel := context.WithCancel(f.ctx)
	t.Cleanup(scancel)
	var err error
	if f.server, err = New(sctx, f.team, opt); err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(f.server)
	t.Cleanup(f.http.Close)
	return f
}

// newTeam builds the team, @Manager streaming its answers or not, its
// config and Env changed by each of manager.
func newTeam(t *testing.T, stream bool, manager ...func(*agent.AgentConfig, *agent.Env)) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, model: llmtest.NewServer()}
	t.Cleanup(f.model.Close)
	_, team, _ := actortest.NewTeam(t)
	f.team = team
	var err error
	if f.human, err = team.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
		t.Fatal(err)
	}
	cfg := agent.NewConfig("@Manager", "Manager")
	cfg.Model = f.model.ModelConfig("gpt-4.1")
	cfg.Runtime.Stream = stream
	env := &agent.Env{HTTPClient: f.model.HTTPClient()}
	for _, change := range manager {
		change(cfg, env)
	}
	if f.manager, err = team.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg); err != nil {
		t.Fatal(err)
	}
	f.rec = actortest.NewRecorder()
	if err := team.Subscribe(ctx, f.rec); err != nil {
		t.Fatal(err)
	}
	return f
}

// rpc posts one JSON-RPC body and decodes the response.
func (f *fixture) rpc(body string) rpcAnswer {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, f.http.URL+"/", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.http.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a rpcAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		f.t.Fatalf("POST %s: %s: the answer is not JSON: %v", body, resp.Status, err)
	}
	return a
}

// rpcAnswer is a decoded JSON-RPC response.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// nodeDir prepares a folder to run a script of testdata/js in.
func nodeDir(t *testing.T, script string) (string, string) {
	t.Helper()
	return npmtest.Script(t, filepath.Join("testdata", "js"), script)
}

// nodeScript runs a script of testdata/js to its end and returns its
// output lines decoded.
func nodeScript(t *testing.T, ctx context.Context, script string, args ...string) []map[string]any {
	t.Helper()
	node, dir := nodeDir(t, script)
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("node %s: a line that is not JSON: %q (stderr: %s)", script, line, stderr.String())
		}
		out = append(out, m)
	}
	if runErr != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, runErr, stdout.String(), stderr.String())
	}
	return out
}

// nodeServer starts a script of testdata/js that serves until it is
// killed (at the test's end) and returns its output lines, as they come.
func nodeServer(t *testing.T, script string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	node, dir := nodeDir(t, script)
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = dir
	lines := &lineWriter{ch: make(chan string, 64)}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = lines, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("node %s stderr: %s", script, stderr.String())
		}
	})
	return cmd, lines.ch
}

// lineWriter hands a process's output on line by line.
type lineWriter struct {
	buf []byte
	ch  chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.ch <- string(w.buf[:i]):
		default: // nobody reads that far: dropped
		}
		w.buf = w.buf[i+1:]
	}
}

// line waits for the next output line that starts with prefix.
func line(t *testing.T, ctx context.Context, lines <-chan string, prefix string) string {
	t.Helper()
	for {
		select {
		case l := <-lines:
			if strings.HasPrefix(l, prefix) {
				return strings.TrimPrefix(l, prefix)
			}
		case <-ctx.Done():
			t.Fatalf("no line %q from the node process", prefix)
			return ""
		}
	}
}

// steps indexes a script's output by step.
func steps(out []map[string]any) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, o := range out {
		m[o["step"].(string)] = o
	}
	return m
}
