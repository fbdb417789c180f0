// Multi-agent workflow: a coordinator, two specialists, and a person in
// the loop.
//
//	go run ./examples/05_multi_agent
//
// The coordinator has the researcher research and the writer write, then
// asks the person (@Human, a user proxy) to approve the draft. A user
// interface sees the question through a team Subscriber and answers with
// orchestrator.ProcessHumanInput; here the program plays the person.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// The workflow's messages.
type (
	StartProject    struct{ message.Base }
	ResearchRequest struct{ message.Base }
	ResearchResult  struct {
		message.Base
		Findings []string `json:"findings"`
	}
	WriteRequest struct {
		message.Base
		Findings []string `json:"findings"`
	}
	DraftReady struct {
		message.Base
		Draft string `json:"draft"`
	}
)

// Coordinator drives the workflow; it reports the person's verdict on done.
type Coordinator struct {
	actor.Base
	out  io.Writer
	done chan<- string
}

func (a *Coordinator) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *StartProject:
		fmt.Fprintln(a.out, "coordinator: asking the researcher")
		return nil, sendTo(c, withRole("Researcher"), &ResearchRequest{})
	case *ResearchResult:
		fmt.Fprintf(a.out, "coordinator: %d findings, asking the writer\n", len(m.Findings))
		return nil, sendTo(c, withRole("Writer"), &WriteRequest{Findings: m.Findings})
	case *DraftReady:
		fmt.Fprintf(a.out, "coordinator: draft %q, asking the person\n", m.Draft)
		return nil, sendTo(c, (*message.Address).IsUserProxy, message.NewUserMessage("Approve the draft?"))
	case *message.ResultMessage: // the person's answer
		a.done <- m.Content
		return nil, nil
	}
	return nil, actor.ErrUnhandled
}

// sendTo sends msg to the first team member that match accepts. An agent
// reaches its team with orchestrator.Of(c.Orchestrator()).
func sendTo(c *actor.Context, match func(*message.Address) bool, msg message.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	members, err := orchestrator.Of(c.Orchestrator()).Members(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(members, match)
	if i < 0 {
		return fmt.Errorf("%s: no teammate for a %s", c.Self().Name(), message.TypeName(msg))
	}
	return c.Send(members[i], msg)
}

func withRole(role string) func(*message.Address) bool {
	return func(a *message.Address) bool { return a.Role() == role }
}

// Researcher and Writer answer their requests' senders.
type (
	Researcher struct{ actor.Base }
	Writer     struct{ actor.Base }
)

func (*Researcher) Receive(c *actor.Context, msg any) (any, error) {
	if _, ok := msg.(*ResearchRequest); ok {
		return nil, c.Send(c.Sender(), &ResearchResult{Findings: []string{"isolate state", "share nothing", "talk by messages"}})
	}
	return nil, actor.ErrUnhandled
}

func (*Writer) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*WriteRequest); ok {
		return nil, c.Send(c.Sender(), &DraftReady{Draft: "Actors " + strings.Join(m.Findings, ", ") + "."})
	}
	return nil, actor.ErrUnhandled
}

// Inbox is a team subscriber playing the user interface: it passes on the
// questions sent to the person. OnMessage runs on the team's goroutine and
// must not block, hence a buffered channel.
type Inbox chan *message.UserMessage

func (in Inbox) OnMessage(m message.Message) {
	if sent, ok := m.(*message.SentMessage); ok && sent.Recipient.IsUserProxy() {
		if q, ok := sent.Message.(*message.UserMessage); ok {
			in <- q
		}
	}
}

func run(ctx context.Context, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { err = errors.Join(err, shutdown(sys)) }()
	inbox := make(Inbox, 10)
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(inbox))
	if err != nil {
		return err
	}
	done := make(chan string, 1)
	coordinator, err := team.Spawn(ctx, &Coordinator{out: out, done: done}, &actor.Config{Name: "coordinator", Role: "Coordinator"})
	if err != nil {
		return err
	}
	if _, err := team.Spawn(ctx, &Researcher{}, &actor.Config{Name: "researcher", Role: "Researcher"}); err != nil {
		return err
	}
	if _, err := team.Spawn(ctx, &Writer{}, &actor.Config{Name: "writer", Role: "Writer"}); err != nil {
		return err
	}
	// The person's proxy: orchestrator.UserProxy, or any actor embedding it.
	human, err := team.Spawn(ctx, &orchestrator.UserProxy{}, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		return err
	}

	if err := sys.Tell(coordinator, &StartProject{}); err != nil {
		return err
	}
	// The person's side: wait for the question, answer it.
	select {
	case q := <-inbox:
		fmt.Fprintf(out, "%s is asked %q by %s, answers Approved\n", human.Name(), q.Content, q.Sender.Name())
		if err := orchestrator.ProcessHumanInput(ctx, human, "Approved", q); err != nil {
			return err
		}
	case <-ctx.Done():
		return fmt.Errorf("waiting for the question: %w", ctx.Err())
	}
	select {
	case verdict := <-done:
		fmt.Fprintln(out, "the coordinator got the verdict:", verdict)
	case <-ctx.Done():
		return fmt.Errorf("waiting for the workflow: %w", ctx.Err())
	}

	// A team query sees everything the agents emitted before it.
	log, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "the team's log:")
	for _, s := range orchestrator.Select[*message.SentMessage](log) {
		fmt.Fprintf(out, "  %s -> %s: %s\n", s.Sender.Name(), s.Recipient.Name(), message.TypeName(s.Message))
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
		fmt.Fprintln(os.Stderr, "multi-agent:", err)
		os.Exit(1)
	}
}
