// An LLM team: a person, a manager, and a developer the manager hires.
//
//	go run ./examples/07_llm_team
//
// The agent README's quick start in Go. Every agent.BaseAgent runs the
// model once per AgentMessage it receives, and the model's answer is a
// list of messages to send: to "@Name" (a member) or to a bare role (a new
// member hired from the team's catalog of cards).
//
// The person (@Human) asks the manager to plan the next sprint; the
// manager hires a Developer and asks for estimates; the developer answers
// the manager; the manager answers the person.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Conversation is a team subscriber that keeps one line per AgentMessage
// sent in the team, and one per member hired by another member. OnMessage
// runs on the team's goroutine, hence the mutex.
type Conversation struct {
	mu    sync.Mutex
	lines []string
}

func (c *Conversation) OnMessage(m message.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := m.(type) {
	case *message.SentMessage:
		if am, ok := m.Message.(*agent.AgentMessage); ok {
			c.lines = append(c.lines, fmt.Sprintf("%s -> %s (%s): %s", m.Sender.Name(), m.Recipient.Name(), am.Type, am.Content))
		}
	case *message.StartMessage: // the sender is the new member
		if m.Parent != nil && !m.Parent.IsOrchestrator() {
			c.lines = append(c.lines, fmt.Sprintf("%s hires %s (%s)", m.Parent.Name(), m.Sender.Name(), m.Sender.Role()))
		}
	}
}

func (c *Conversation) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// script plays the model, offline: llmtest serves scripted answers over
// the OpenAI wire format, one queue of answers per agent name.
func script(srv *llmtest.Server) {
	srv.Model("@Manager").Enqueue(
		answer(agent.Request, "Developer", "Estimate the login page and the password reset."),
		answer(agent.Response, "@Human", "Sprint plan: login page (3 days), then password reset (2 days), by @Developer100."),
	)
	srv.Model("@Developer100").Enqueue(
		answer(agent.Response, "@Manager", "Login page: 3 days. Password reset: 2 days."),
	)
}

// answer is one model output: a StructuredOutput sending one message.
func answer(intent agent.Intent, to, text string) llmtest.Step {
	// Marshaling strings cannot fail.
	out, _ := json.Marshal(agent.StructuredOutput{Messages: []agent.OutboundRequest{
		{MessageType: intent, Recipient: to, Message: text},
	}})
	return llmtest.Final(string(out))
}

func run(ctx context.Context, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	srv := llmtest.NewServer()
	defer srv.Close() // deferred first: closed after the system's shutdown
	script(srv)
	// The agents' model: the scripted server. For a real model, set
	// llm.ModelConfig{Provider: "openai", Model: "gpt-4.1",
	// APIKeyEnv: "OPENAI_API_KEY"}, leave Env.HTTPClient nil, and drop the
	// script.
	model := srv.ModelConfig("gpt-4.1")
	// Env is what agents need at run time; hired members inherit it. Rand
	// makes hired names deterministic: @Developer100.
	env := &agent.Env{HTTPClient: srv.HTTPClient(), Rand: func(int) int { return 0 }}

	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { err = errors.Join(err, shutdown(sys)) }()
	conv := &Conversation{}
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(conv))
	if err != nil {
		return err
	}

	// The catalog: a card per role. The manager may hand work to Developers.
	managerCfg := agent.NewConfig("@Manager", "Manager")
	managerCfg.Prompt = agent.PromptTemplate{Template: "You are a project manager. Delegate to specialists."}
	managerCfg.Model = model
	developerCfg := agent.NewConfig("@Developer", "Developer")
	developerCfg.Prompt = agent.PromptTemplate{Template: "You are a software developer."}
	developerCfg.Model = model
	managerCard, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
		AgentClass: agent.Kind, Description: "Project manager who coordinates specialists",
		Skills: []string{"coordination", "delegation"}, Config: managerCfg, RoutesTo: []string{"Developer"},
	})
	if err != nil {
		return err
	}
	developerCard, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
		AgentClass: agent.Kind, Description: "Developer who builds features",
		Skills: []string{"coding"}, Config: developerCfg, CanBeHired: true,
	})
	if err != nil {
		return err
	}
	if err := team.Register(ctx, managerCard, developerCard); err != nil {
		return err
	}

	// The person: a HumanProxy. Deliver runs on the proxy's goroutine for
	// every message to the person and must not block.
	answers := make(chan *agent.AgentMessage, 10)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		return err
	}
	// The manager, from its card.
	cfg, err := managerCard.ConfigCopy()
	if err != nil {
		return err
	}
	manager, err := team.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
	if err != nil {
		return err
	}

	if err := agent.Say(ctx, human, manager, agent.NewRequest("Plan the next sprint.")); err != nil {
		return err
	}
	var final *agent.AgentMessage
	select {
	case final = <-answers:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the manager's answer: %w", ctx.Err())
	}

	// A team query returns once every subscriber has seen what the agents
	// emitted before it: the conversation is complete.
	members, err := team.Members(ctx)
	if err != nil {
		return err
	}
	for _, line := range conv.Lines() {
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "\nfinal answer (%s from %s): %s\n", final.Type, final.Sender.Name(), final.Content)
	fmt.Fprint(out, "team:")
	for _, m := range members {
		fmt.Fprintf(out, " %s (%s)", m.Name(), m.Role())
	}
	fmt.Fprintln(out)
	// The scripted server reports requests it had no answer for.
	if failures := srv.Failures(); len(failures) > 0 {
		return fmt.Errorf("scripted model: %v", failures)
	}
	return nil
}

// shutdown stops every agent and joins every goroutine of the system,
// giving up after five seconds.
func shutdown(sys *actor.System) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sys.Shutdown(ctx)
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "llm team:", err)
		os.Exit(1)
	}
}
