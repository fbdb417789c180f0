// Two teams talking over A2A: one served as an A2A agent, the other
// hiring it as a member.
//
//	go run ./examples/10_a2a
//
// The research team (@Analyst and its person) is served by a2a.Server on
// a loopback port: its agent card at /.well-known/agent-card.json, its
// tasks over JSON-RPC. The desk team registers a card whose agent_class
// is a2a.RemoteKind and whose config is the research team's URL; its
// manager hires a Researcher by role, like any member, and the request
// becomes a task of the research team. The task's answer comes back to
// the manager as a response, and the manager answers its person. Both
// teams run offline on a scripted model.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/akgentic/akgentic-go/a2a"
	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// serveTeamAsAgent serves team as an A2A agent on ln until ctx ends: tasks are
// requests from person to entry.
func serveTeamAsAgent(ctx context.Context, team *orchestrator.Team, person, entry *message.Address, ln net.Listener) error {
	srv, err := a2a.New(ctx, team, a2a.Options{
		Person: person, // the team's HumanProxy: tasks are its requests, its questions the tasks' input-required
		Entry:  entry,  // the member a task goes to; its response to the person completes the task
		Token:  "",     // "": loopback only; set one to serve other hosts (Authorization: Bearer)
	})
	if err != nil {
		return err
	}
	return srv.Serve(ctx, ln) // or mount it: mux.Handle("/a2a/", http.StripPrefix("/a2a", srv)), with Options.URL
}

// remoteCard is the card of a member that is the A2A agent at url: hired
// by role like any card, its card fetched and checked when it starts.
func remoteCard(role, url string) (*orchestrator.AgentCard, error) {
	return orchestrator.NewAgentCard(orchestrator.AgentCard{
		AgentClass:  a2a.RemoteKind,
		Description: "A research team reached over A2A",
		Skills:      []string{"research"},
		CanBeHired:  true,
		Config: &a2a.RemoteConfig{
			Config: actor.Config{Name: "@" + role, Role: role},
			URL:    url, // its card is at url/.well-known/agent-card.json
		},
	})
}

// Conversation keeps one line per AgentMessage sent in a team.
type Conversation struct {
	mu    sync.Mutex
	lines []string
}

func (c *Conversation) OnMessage(m message.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := m.(*message.SentMessage); ok {
		if am, ok := s.Message.(*agent.AgentMessage); ok {
			c.lines = append(c.lines, fmt.Sprintf("%s -> %s (%s): %s", s.Sender.Name(), s.Recipient.Name(), am.Type, am.Content))
		}
	}
}

func (c *Conversation) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// answer is one model output: a StructuredOutput sending one message.
func answer(intent agent.Intent, to, text string) llmtest.Step {
	out, _ := json.Marshal(agent.StructuredOutput{Messages: []agent.OutboundRequest{{MessageType: intent, Recipient: to, Message: text}}})
	return llmtest.Final(string(out))
}

// newTeam makes a team of a person (@Human) and an agent on model, and
// returns the team, the person, the agent and the person's answers.
func newTeam(ctx context.Context, sys *actor.System, model *llmtest.Server, name, role string) (*orchestrator.Team, *message.Address, *message.Address, *Conversation, <-chan *agent.AgentMessage, error) {
	conv := &Conversation{}
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(conv))
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	answers := make(chan *agent.AgentMessage, 10)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }}, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	cfg := agent.NewConfig(name, role)
	cfg.Model = model.ModelConfig("gpt-4.1")
	member, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: model.HTTPClient(), Rand: func(int) int { return 0 }}}, cfg)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	return team, human, member, conv, answers, nil
}

func run(ctx context.Context, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Analyst").Enqueue(answer(agent.Response, "@Human", "Three papers: bounded mailboxes, work stealing, back-pressure."))
	model.Model("@Desk").Enqueue(
		answer(agent.Request, "Researcher", "Which papers on actor mailboxes should we read?"),
		answer(agent.Response, "@Human", "The research team says: Three papers: bounded mailboxes, work stealing, back-pressure."),
	)

	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { err = errors.Join(err, shutdown(sys)) }()

	// The research team, served as an A2A agent.
	research, rHuman, analyst, rConv, _, err := newTeam(ctx, sys, model, "@Analyst", "Analyst")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serveTeamAsAgent(sctx, research, rHuman, analyst, ln) }()
	defer func() { stop(); err = errors.Join(err, <-served) }()

	// The desk team: its catalog has the research team as a role.
	desk, human, manager, conv, answers, err := newTeam(ctx, sys, model, "@Desk", "Desk")
	if err != nil {
		return err
	}
	card, err := remoteCard("Researcher", "http://"+ln.Addr().String()+"/")
	if err != nil {
		return err
	}
	if err := desk.Register(ctx, card); err != nil {
		return err
	}
	if err := agent.Say(ctx, human, manager, agent.NewRequest("Ask the research team which papers on actor mailboxes to read.")); err != nil {
		return err
	}
	select {
	case final := <-answers:
		if _, err := desk.Members(ctx); err != nil { // every record so far seen by the subscribers
			return err
		}
		if _, err := research.Members(ctx); err != nil {
			return err
		}
		fmt.Fprintln(out, "the desk team:")
		for _, l := range conv.Lines() {
			fmt.Fprintln(out, "  "+l)
		}
		fmt.Fprintln(out, "the research team (its person is the A2A client):")
		for _, l := range rConv.Lines() {
			fmt.Fprintln(out, "  "+l)
		}
		fmt.Fprintf(out, "final answer (%s from %s): %s\n", final.Type, final.Sender.Name(), final.Content)
	case <-ctx.Done():
		return fmt.Errorf("waiting for the desk's answer: %w", ctx.Err())
	}
	if failures := model.Failures(); len(failures) > 0 {
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
		fmt.Fprintln(os.Stderr, "a2a:", err)
		os.Exit(1)
	}
}
