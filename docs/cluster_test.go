package docs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/cluster"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// connect starts an embedded NATS server with JetStream in dir and
// connects to it; done closes both and waits for the connection's
// goroutines.
func connect(dir string) (nc *nats.Conn, done func(), err error) {
	srv, err := cluster.RunEmbedded(dir) // one machine, no install; or nats.Connect(url) to a real cluster
	if err != nil {
		return nil, nil, err
	}
	closed := make(chan struct{})
	nc, err = nats.Connect(srv.URL(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	return nc, func() { nc.Close(); <-closed; srv.Close() }, nil
}

// tempNATS is connect in a temporary directory named after name, for the
// examples; done also removes the directory.
func tempNATS(name string) (*nats.Conn, func()) {
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		panic(err)
	}
	nc, done, err := connect(dir)
	if err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	return nc, func() { done(); os.RemoveAll(dir) }
}

// assistantTemplate is a worker's template: the person, @Human, and an LLM
// agent, @Assistant.
func assistantTemplate(env *agent.Env, model *llmtest.Server) cluster.Template {
	return cluster.Template{
		Person: "@Human", // the member that speaks for the person: Client.Send and Answer go through it
		Build: func(ctx context.Context, t *orchestrator.Team, params json.RawMessage) error {
			if _, err := t.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
				return err
			}
			cfg := agent.NewConfig("@Assistant", "Assistant")
			cfg.Model = model.ModelConfig("gpt-4.1")
			_, err := t.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
			return err
		},
		// A team restored on this worker calls this worker's model server,
		// not the base URL its log recorded (the key would go here too).
		Endpoint: func(recorded llm.ModelConfig) llm.ModelConfig {
			recorded.BaseURL = model.URL()
			return recorded
		},
	}
}

// runCluster runs a worker and a client on one connection; in a
// deployment each runs in its own process.
func runCluster(ctx context.Context, nc *nats.Conn, model *llmtest.Server) error {
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)
	env := &agent.Env{HTTPClient: model.HTTPClient()}
	w, err := cluster.StartWorker(ctx, nc, sys, cluster.Config{Lease: 10 * time.Second},
		map[string]cluster.Template{"assistant": assistantTemplate(env, model)}, agent.WithEnv(env))
	if err != nil {
		return err
	}
	defer w.Close(ctx) // stops its teams and hands their leases over

	c, err := cluster.NewClient(ctx, nc, cluster.Config{})
	if err != nil {
		return err
	}
	team, err := c.Create(ctx, "assistant", nil) // on the worker serving "assistant" with the fewest teams
	if err != nil {
		return err
	}
	if _, err := c.Send(ctx, team, "@Assistant", "Hello, where do you run?"); err != nil { // into the durable inbox
		return err
	}
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	for rec, err := range c.Watch(watch, team, 0) { // from the first record, then live
		if err != nil {
			return err
		}
		if s, ok := rec.(*message.SentMessage); ok {
			if m, ok := s.Message.(*agent.AgentMessage); ok {
				fmt.Printf("%s -> %s: %s\n", s.Sender.Name(), s.Recipient.Name(), m.Content)
				if s.Sender.Name() == "@Assistant" {
					break
				}
			}
		}
	}
	teams, err := c.Teams(ctx) // id, template, owner, lease end, stopped
	if err != nil {
		return err
	}
	fmt.Println(len(teams), "team, template", teams[0].Template)
	return c.Stop(ctx, team) // stopped for good: resumed nowhere
}

// A worker serving a template and a client creating a team from it,
// sending the person's message and watching the answer, on an embedded
// NATS server.
func Example_cluster() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, done := tempNATS("docs-cluster")
	defer done()
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Assistant").Enqueue(llmtest.Final(
		`{"messages":[{"message_type":"response","recipient":"@Human","message":"On a worker; my records are in JetStream."}]}`))

	if err := runCluster(ctx, nc, model); err != nil {
		fmt.Println(err)
	}
	// Output:
	// @Human -> @Assistant: Hello, where do you run?
	// @Assistant -> @Human: On a worker; my records are in JetStream.
	// 1 team, template assistant
}

// openTeam claims a team's ledger without a worker: a new team when the
// stream holds nothing for it, else the team restored from its records.
func openTeam(ctx context.Context, nc *nats.Conn, sys *actor.System, teamID uuid.UUID) (*orchestrator.Team, error) {
	l, log, err := cluster.OpenLedger(ctx, nc, teamID, cluster.Config{})
	if err != nil {
		return nil, err
	}
	var team *orchestrator.Team
	if len(log) == 0 {
		team, err = orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(l))
	} else {
		team, err = orchestrator.Restore(ctx, sys, log, orchestrator.WithSubscribers(l))
	}
	if err != nil {
		return nil, err
	}
	l.Attach(team) // warnings through the team; stop it if another owner takes it
	return team, nil
}

// A process owning a team's ledger itself: the team is created, stopped,
// then restored from the stream with its member.
func Example_openLedger() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, done := tempNATS("docs-ledger")
	defer done()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)
	teamID := uuid.MustParse("0b6f6b1e-6c1d-4f0e-9a53-2f8d3c1e7a10")

	team, err := openTeam(ctx, nc, sys, teamID)
	if err != nil {
		panic(err)
	}
	if _, err := team.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
		panic(err)
	}
	if err := team.Stop(ctx); err != nil { // waits for the ledger's last acknowledgements
		panic(err)
	}
	team, err = openTeam(ctx, nc, sys, teamID)
	if err != nil {
		panic(err)
	}
	members, _ := team.Members(ctx)
	for _, m := range members {
		fmt.Println("restored:", m.Name())
	}
	_ = team.Stop(ctx)
	// Output:
	// restored: @Human
}
