package docs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/mcp"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/agent/tool/search"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// developer is an agent's config with tool cards: a task board, a
// workspace of files and web search.
func developer(model *llmtest.Server, root string) *agent.AgentConfig {
	cfg := agent.NewConfig("@Developer", "Developer")
	cfg.Model = model.ModelConfig("gpt-4.1")
	cfg.Tools = tool.Cards{
		planning.New(),              // a task board shared by the team
		&workspace.Card{Root: root}, // files under <root>/<team id>, which no path or symlink can leave
		&search.Card{Provider: "fixed", File: "testdata/search.json"}, // "tavily" or "brave" with TAVILY_API_KEY or BRAVE_API_KEY
	}
	return cfg
}

// An agent with tools: its model searches the web, writes a file in the
// team's workspace, then answers; the program reads the file.
func Example_tools() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	root, err := os.MkdirTemp("", "docs-tools")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Developer").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "web_search", `{"query":"go actor runtime","max_results":1}`)),
		llmtest.ToolCalls(llmtest.Call("call_2", "workspace_write", `{"path":"notes.md","content":"An actor runtime for teams of LLM agents.\n"}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"Written: notes.md"}]}`))
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	answers := make(chan *agent.AgentMessage, 1)
	human, _ := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	dev, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: model.HTTPClient()}}, developer(model, root))
	if err != nil {
		panic(err)
	}
	_ = agent.Say(ctx, human, dev, agent.NewRequest("Look up what akgentic is and note it."))
	fmt.Println((<-answers).Content)

	dir, _ := (&workspace.Card{Root: root}).Dir(team.ID())
	files, err := workspace.Open(dir)
	if err != nil {
		panic(err)
	}
	defer files.Close()
	data, _ := files.ReadFile("notes.md")
	fmt.Print(string(data))
	reqs := model.RequestsFor("@Developer")
	fmt.Println(len(reqs), "model calls")
	_ = team.Stop(ctx)
	// Output:
	// Written: notes.md
	// An actor runtime for teams of LLM agents.
	// 3 model calls
}

// mcpTools gives an agent the tools of two MCP servers: a command run as a
// child process (stdio) and a streamable HTTP URL.
func mcpTools(cfg *agent.AgentConfig) {
	cfg.Tools = append(cfg.Tools, &mcp.Card{Servers: []mcp.Server{
		{Name: "fs", Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"}, Deny: []string{"write_file"}},
		{Name: "docs", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}},
	}})
}

// The config of an agent with MCP tools keeps ${DOCS_TOKEN} as written:
// it is read from the environment when the agent connects.
func Example_mcpTools() {
	cfg := agent.NewConfig("@Researcher", "Researcher")
	mcpTools(cfg)
	data, _ := json.Marshal(cfg.Tools)
	fmt.Println(string(data))
	// Output:
	// [{"kind":"MCPTool","config":{"servers":[{"name":"fs","command":["npx","-y","@modelcontextprotocol/server-filesystem","/data"],"deny":["write_file"]},{"name":"docs","url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer ${DOCS_TOKEN}"}}]}}]
}

// guarded returns the environment a team's agents share, with the team's
// guard rails, and an agent's config with its own spend ceiling.
func guarded() (*agent.Env, *agent.AgentConfig, error) {
	limiter, err := llm.NewRateLimiter(map[string]llm.RateLimit{
		"gpt-4.1": {RequestsPerMinute: 500, TokensPerMinute: 30_000},
	}, nil, nil) // nil, nil: the real clock
	if err != nil {
		return nil, nil, err
	}
	env := &agent.Env{Guards: &agent.Guards{
		MaxRounds:       5,    // the default
		MaxPairMessages: 10,   // the default
		TeamSpendLimit:  2.50, // USD for the whole team; 0: none
		RateLimiter:     limiter,
	}}
	cfg := agent.NewConfig("@Manager", "Manager")
	cfg.Model.Model = "gpt-4.1"
	cfg.Model.MaxTokens = 4096             // caps each answer, and so each call's worst case
	cfg.AgentLimits.SpendLimit = new(0.50) // USD for this agent (JSON spend_limit_usd)
	return env, cfg, nil
}

// A spend ceiling below a call's worst case: the call is not made, the
// person is told and the turn ends with a warning.
func Example_spendCeiling() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	model := llmtest.NewServer()
	defer model.Close()
	env, cfg, err := guarded()
	if err != nil {
		panic(err)
	}
	env.HTTPClient = model.HTTPClient()
	cfg.Model = model.ModelConfig("gpt-4.1")
	cfg.Model.MaxTokens = 4096
	cfg.AgentLimits.SpendLimit = new(0.001) // less than one call's worst case
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	defer sys.Shutdown(ctx)
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	answers := make(chan *agent.AgentMessage, 1)
	human, _ := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	manager, _ := team.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
	_ = agent.Say(ctx, human, manager, agent.NewRequest("Plan the sprint."))
	notice, detail, _ := strings.Cut((<-answers).Content, " (")
	fmt.Println(notice+":", strings.Contains(detail, "would pass the agent spend ceiling of $0.001000"))
	fmt.Println("model calls:", len(model.RequestsFor("@Manager")))
	_ = team.Stop(ctx)
	// Output:
	// The agent @Manager has exceeded its usage limits: true
	// model calls: 0
}

// approvals marks the tool calls that wait for the team's person: every
// workspace_write, and the MCP server's deletes under /prod.
func approvals(env *agent.Env) {
	env.Guards = &agent.Guards{Approval: &tool.Approval{
		Always: []string{"workspace_write"},
		When: map[string]func(json.RawMessage) bool{
			"fs_delete_file": func(args json.RawMessage) bool { return strings.Contains(string(args), `"/prod`) },
		},
		Timeout: 10 * time.Minute, // denied by itself after that; 0: waits for the person
	}}
}

// A call that waits: the person gets the request, approves it, and the
// call runs once; the run goes on to its answer.
func Example_approval() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	root, err := os.MkdirTemp("", "docs-approval")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Developer").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "workspace_write", `{"path":"notes.md","content":"approved\n"}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"Written: notes.md"}]}`))
	env := &agent.Env{HTTPClient: model.HTTPClient()}
	approvals(env)
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	inbox := make(chan *agent.AgentMessage, 2)
	human, _ := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { inbox <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	cfg := agent.NewConfig("@Developer", "Developer")
	cfg.Model = model.ModelConfig("gpt-4.1")
	cfg.Tools = tool.Cards{&workspace.Card{Root: root}}
	dev, err := team.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
	if err != nil {
		panic(err)
	}
	_ = agent.Say(ctx, human, dev, agent.NewRequest("Note that it was approved."))
	request := <-inbox // the call waits: nothing is written yet
	fmt.Println(request.Approval.Tool, request.Approval.Arguments)
	pending, _ := agent.PendingApprovals(ctx, team)
	fmt.Println(len(pending), "pending")
	_ = agent.Answer(ctx, human, request, &agent.AgentMessage{Content: agent.Decision(true, "fine")})
	fmt.Println((<-inbox).Content)
	dir, _ := (&workspace.Card{Root: root}).Dir(team.ID())
	data, _ := os.ReadFile(dir + "/notes.md")
	fmt.Print(string(data))
	_ = team.Stop(ctx)
	// Output:
	// workspace_write {"path":"notes.md","content":"approved\n"}
	// 1 pending
	// Written: notes.md
	// approved
}
