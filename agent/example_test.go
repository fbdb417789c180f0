package agent_test

import (
	"context"
	"fmt"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// A team of LLM agents: a person asks the manager; the manager's model
// hires a developer by role; the developer answers the manager, who
// answers the person. The model is agent/llmtest's scripted fake, spoken
// to over HTTP by the real client; for a real model, use
// llm.ModelConfig{Provider: "openai", Model: "gpt-4.1"} and set
// OPENAI_API_KEY.
func Example() {
	srv := llmtest.NewServer()
	defer srv.Close()
	srv.Model("@Manager").Enqueue(
		llmtest.Final(`{"messages":[{"message_type":"request","recipient":"Developer","message":"Write the login page."}]}`),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"The login page is done."}]}`),
	)
	srv.Model("@Developer100").Enqueue(
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Manager","message":"Done: login.go"}]}`),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)
	team, _ := orchestrator.New(sys)

	config := func(role string) *agent.AgentConfig {
		cfg := agent.NewConfig("@"+role, role)
		cfg.Model = srv.ModelConfig("gpt-4.1")
		return cfg
	}
	var cards []*orchestrator.AgentCard
	for _, role := range []string{"Manager", "Developer"} {
		card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
			AgentClass: agent.Kind, Description: role, Config: config(role), CanBeHired: role != "Manager"})
		if err != nil {
			fmt.Println(err)
			return
		}
		cards = append(cards, card)
	}
	_ = team.Register(ctx, cards...)

	answers := make(chan *agent.AgentMessage, 1)
	human, _ := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	env := &agent.Env{HTTPClient: srv.HTTPClient(), Rand: func(int) int { return 0 }} // hires are @Developer100
	manager, _ := team.Spawn(ctx, &agent.BaseAgent{Env: env}, config("Manager"))

	_ = agent.Say(ctx, human, manager, agent.NewRequest("We need a login page."))
	answer := <-answers
	fmt.Printf("%s -> @Human (%s): %s\n", answer.Sender.Name(), answer.Type, answer.Content)
	// Output:
	// @Manager -> @Human (response): The login page is done.
}
