package docs_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// warnings passes on the text of every WarningMessage of a team.
type warnings chan string

func (w warnings) OnMessage(m message.Message) {
	if m, ok := m.(*message.WarningMessage); ok {
		w <- m.Content
	}
}

// calling signals each request it sends: the model call is in flight.
type calling struct {
	http.RoundTripper
	sent chan struct{}
}

func (c calling) RoundTrip(r *http.Request) (*http.Response, error) {
	c.sent <- struct{}{}
	return c.RoundTripper.RoundTrip(r)
}

// A person cancels an agent's turn while its model call is running.
func Example_cancel() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Manager").Enqueue(llmtest.Hang()) // a model that never answers
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	defer sys.Shutdown(ctx)
	warned := make(warnings, 1)
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(warned))
	if err != nil {
		panic(err)
	}
	human, _ := team.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"})
	cfg := agent.NewConfig("@Manager", "Manager")
	cfg.Model = model.ModelConfig("gpt-4.1")
	sent := make(chan struct{}, 1)
	client := &http.Client{Transport: calling{model.HTTPClient().Transport, sent}}
	manager, _ := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: client}}, cfg)

	_ = agent.Say(ctx, human, manager, agent.NewRequest("Write the whole app."))
	<-sent // the manager's turn is running
	_ = agent.Say(ctx, human, manager, &agent.AgentMessage{Content: "/cancel wrong task"})
	// or, from any actor: c.Send(manager, &message.CancelMessage{Reason: "wrong task"})
	fmt.Println(<-warned)
	_ = team.Stop(ctx)
	// Output:
	// agent @Manager: turn cancelled by @Human: wrong task
}
