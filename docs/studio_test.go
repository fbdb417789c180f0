package docs_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/studio"
)

// serveStudio serves the live page of team on ln until ctx ends, the input
// box speaking as the team's person.
func serveStudio(ctx context.Context, team *orchestrator.Team, human *actor.Config, ln net.Listener, token string) error {
	person, err := team.Member(ctx, human.Name)
	if err != nil {
		return err
	}
	st, err := studio.New(ctx, team, studio.Options{
		Person: person, // the HumanProxy (or UserProxy) the input box speaks as; nil: read-only
		Token:  token,  // required for requests that are not from loopback; "": loopback only
	})
	if err != nil {
		return err
	}
	return st.Serve(ctx, ln) // or mount it: mux.Handle("/studio/", http.StripPrefix("/studio", st))
}

// The studio of a team of a person and an agent: the page's input box
// posts the person's message, which the agent answers.
func Example_studio() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Assistant").Enqueue(llmtest.Final(hello))
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	answers := make(chan *agent.AgentMessage, 1)
	human := &actor.Config{Name: "@Human", Role: "Human"}
	if _, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }}, human); err != nil {
		panic(err)
	}
	cfg := agent.NewConfig("@Assistant", "Assistant")
	cfg.Model = model.ModelConfig("gpt-4.1")
	if _, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: model.HTTPClient()}}, cfg); err != nil {
		panic(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() { served <- serveStudio(sctx, team, human, ln, "") }()

	// What the page's input box posts.
	resp, err := http.Post("http://"+ln.Addr().String()+"/api/send", "application/json",
		strings.NewReader(`{"to": "@Assistant", "text": "Hi"}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("sent:", resp.Status)
	fmt.Println("answer:", (<-answers).Content)
	stop()
	fmt.Println("served:", <-served)
	_ = team.Stop(ctx)
	// Output:
	// sent: 202 Accepted
	// answer: Hello!
	// served: <nil>
}
