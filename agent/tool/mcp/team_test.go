package mcp_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/mcp"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// An agent of a team (a BaseAgent on a scripted model) calls MCP tools
// over each transport; the server dies in the middle of a call (the child
// process exits; the HTTP connection is cut), which the
// model sees as a retry tool message and the team as a warning record;
// the next call reconnects, and the answer uses its result.
func TestAgentUsesMCPTools(t *testing.T) {
	t.Parallel()
	t.Run("stdio", func(t *testing.T) { agentConversation(t, stdioServer(t, "s"), func() {}) })
	t.Run("http", func(t *testing.T) {
		crashed := make(chan struct{})
		s, srv, release := httpServer(t, "s", crashed)
		ctx := actortest.Context(t)
		cut := make(chan struct{})
		go func() {
			defer close(cut)
			select {
			case <-crashed: // the call is in the server's hands: cut it
				srv.CloseClientConnections()
			case <-ctx.Done():
			}
		}()
		agentConversation(t, s, func() { <-cut; release() })
	})
}

func agentConversation(t *testing.T, s mcp.Server, afterAnswer func()) {
	// Made before the system: it closes after the agent has ended its
	// session (an HTTP server closed first keeps the SDK's session alive).
	other, _, _ := httpServer(t, "t", nil)
	srv := llmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Model("@Assistant").Enqueue(
		llmtest.ToolCalls(
			llmtest.Call("c1", "s_echo", `{"text": "hello", "upper": true}`),
			llmtest.Call("c2", "s_picture", `{}`)),
		// The crash runs in parallel with a call of another server: the
		// warning is reported from a tool goroutine.
		llmtest.ToolCalls(llmtest.Call("c3", "s_crash", `{}`), llmtest.Call("c3b", "t_echo", `{"text": "unharmed"}`)),
		llmtest.ToolCalls(llmtest.Call("c4", "s_echo", `{"text": "again", "upper": null}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"HELLO, again"}]}`),
	)

	_, rec, root := actortest.Team(t)
	team := orchestrator.Of(root)
	ctx := actortest.Context(t)
	answers := make(chan *agent.AgentMessage, 1)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.NewConfig("@Assistant", "Assistant")
	cfg.Model = srv.ModelConfig("gpt-4.1")
	cfg.Tools = tool.Cards{&mcp.Card{Servers: []mcp.Server{s, other}}}
	assistant, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: srv.HTTPClient()}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(ctx, human, assistant, agent.NewRequest("Say hello twice.")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-answers:
		if m.Content != "HELLO, again" {
			t.Fatalf("answer %q", m.Content)
		}
	case <-ctx.Done():
		t.Fatalf("no answer; model failures %v", srv.Failures())
	}
	afterAnswer()

	reqs := srv.RequestsFor("@Assistant")
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	strict := map[string]bool{}
	for _, tl := range reqs[0].Tools {
		strict[tl.Function.Name] = tl.Function.Strict
	}
	if on, ok := strict["s_echo"]; !ok || !on {
		t.Errorf("s_echo offered %v, strict %v", ok, on)
	}
	if on, ok := strict["s_stats"]; !ok || on {
		t.Errorf("s_stats offered %v, strict %v", ok, on)
	}
	results := toolMessages(reqs[3])
	for id, want := range map[string]string{
		"c1":  "HELLO",
		"c2":  "a red dot\n[image image/png, 4 bytes]",
		"c3b": "unharmed",
		"c4":  "again",
	} {
		if results[id] != want {
			t.Errorf("tool result %s: %q, want %q", id, results[id], want)
		}
	}
	if c3 := results["c3"]; !strings.HasPrefix(c3, "MCP server s failed during the call of crash: ") ||
		!strings.HasSuffix(c3, "It is reconnected on the next call.\n\nFix the errors and try again.") {
		t.Errorf("the crash's tool result: %q", c3)
	}
	w := actortest.WaitFor(t, rec, func(w *message.WarningMessage) bool {
		return strings.HasPrefix(w.Content, "mcp: server s failed during a call of crash; it is reconnected on the next call: ")
	})
	if w.Sender.Name() != "@Assistant" {
		t.Errorf("warning from %s", w.Sender.Name())
	}
}

// toolMessages returns the tool messages of a request by call id.
func toolMessages(r *llmtest.Request) map[string]string {
	out := map[string]string{}
	for _, m := range r.History() {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text()
		}
	}
	return out
}

// A team's agent with the card on three reference servers (the
// everything server over stdio and over HTTP, server-filesystem over
// stdio): the servers' instructions are in its system prompt, a file
// reaches the model once, an image as its description; stopping the
// team stops the Node servers without a warning.
func TestAgentUsesReferenceServers(t *testing.T) {
	t.Parallel()
	r := referenceServers(t)
	root := t.TempDir()
	file := strings.Repeat("a line of the notes\n", 2000) // 40 KB
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, _ := r.everythingStdio(t, "ev")
	web := r.everythingHTTP(t).server("web")
	fs := r.filesystemStdio("fs", root)

	srv := llmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Model("@Assistant").Enqueue(
		llmtest.ToolCalls(
			llmtest.Call("c1", "fs_read_text_file", fmt.Sprintf(`{"path": %q, "head": null, "tail": null}`, filepath.Join(root, "notes.txt"))),
			llmtest.Call("c2", "ev_get-tiny-image", `{}`),
			llmtest.Call("c3", "web_echo", `{"message": "hi"}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"done"}]}`),
	)
	rec := actortest.NewRecorder()
	sys, team, logs := actortest.NewTeam(t, orchestrator.WithSubscribers(rec))
	ctx := actortest.Context(t)
	answers := make(chan *agent.AgentMessage, 1)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.NewConfig("@Assistant", "Assistant")
	cfg.Model = srv.ModelConfig("gpt-4.1")
	cfg.Tools = tool.Cards{&mcp.Card{Servers: []mcp.Server{ev, web, fs}}}
	assistant, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: srv.HTTPClient()}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(ctx, human, assistant, agent.NewRequest("Read the notes.")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-answers:
		if m.Content != "done" {
			t.Fatalf("answer %q", m.Content)
		}
	case <-ctx.Done():
		t.Fatalf("no answer; model failures %v", srv.Failures())
	}
	reqs := srv.RequestsFor("@Assistant")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	system := strings.Join(reqs[0].SystemTexts(), "\n")
	for _, name := range []string{"ev", "web"} {
		if !strings.Contains(system, "Instructions of the MCP server "+name+" (its tools are named "+name+"_<tool>):\n# Everything Server") {
			t.Errorf("the system prompt has no instructions of %s", name)
		}
	}
	results := toolMessages(reqs[1])
	if results["c1"] != file {
		t.Errorf("the file reached the model as %d bytes, want its %d", len(results["c1"]), len(file))
	}
	if c2 := results["c2"]; !strings.Contains(c2, "[image image/png, ") || len(c2) > 200 {
		t.Errorf("the image reached the model as %.200q (%d bytes)", c2, len(c2))
	}
	if results["c3"] != "Echo: hi" {
		t.Errorf("echo: %q", results["c3"])
	}
	actortest.Shutdown(t, sys)
	if n := logs.Count(slog.LevelWarn, "releasing tool cards failed"); n != 0 {
		t.Errorf("stopping the team: %s", logs.Text())
	}
}
