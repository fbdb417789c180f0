package mcp_test

import (
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
