// Hello world: messages, agents, a team.
//
//	go run ./examples/01_hello_world
//
// A team (orchestrator.New) is the root every agent of the program reports
// to: it keeps the roster and a log of every message sent. The program
// tells a greeter whom to greet; the greeter sends a Greeting to the
// receiver, which sees who sent it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// SayHello asks a greeter to greet the agent at To.
type SayHello struct {
	message.Base
	To *message.Address `json:"to"`
}

// Greeting is what a greeter sends.
type Greeting struct {
	message.Base
	Text string `json:"text"`
}

// Greeter greets whoever a SayHello names. c.Send stamps the envelope: the
// recipient will see the greeter as the sender.
type Greeter struct{ actor.Base }

func (*Greeter) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *SayHello:
		return nil, c.Send(m.To, &Greeting{Text: "Hello, Akgentic!"})
	}
	return nil, actor.ErrUnhandled
}

// GreetingReceiver writes each greeting and hands its sender to the program
// through a channel: the program waits on the channel, never on a sleep.
type GreetingReceiver struct {
	actor.Base
	out     io.Writer
	senders chan<- *message.Address
}

func (r *GreetingReceiver) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *Greeting:
		fmt.Fprintf(r.out, "%s got %q from %s\n", c.Self().Name(), m.Text, c.Sender().Name())
		r.senders <- c.Sender()
		return nil, nil
	}
	return nil, actor.ErrUnhandled
}

func run(ctx context.Context, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { err = errors.Join(err, shutdown(sys)) }()

	team, err := orchestrator.New(sys)
	if err != nil {
		return err
	}
	// Spawn through the team, so that the agents join it and report to it.
	senders := make(chan *message.Address, 1)
	receiver, err := team.Spawn(ctx, &GreetingReceiver{out: out, senders: senders}, &actor.Config{Name: "receiver", Role: "Receiver"})
	if err != nil {
		return err
	}
	greeter, err := team.Spawn(ctx, &Greeter{}, &actor.Config{Name: "greeter", Role: "Greeter"})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "telling the greeter to greet the receiver")
	if err := sys.Tell(greeter, &SayHello{To: receiver}); err != nil {
		return err
	}

	var sender *message.Address
	select {
	case sender = <-senders:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the greeting: %w", ctx.Err())
	}
	fmt.Fprintln(out, "sender is the greeter:", sender.AgentID() == greeter.AgentID())

	// The team's queries: the roster, and the log of what was sent. The
	// program's own Tell is not in the log: only agents' sends are.
	members, err := team.Members(ctx)
	if err != nil {
		return err
	}
	fmt.Fprint(out, "members:")
	for _, m := range members {
		fmt.Fprintf(out, " %s (%s)", m.Name(), m.Role())
	}
	fmt.Fprintln(out)
	log, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		return err
	}
	for _, s := range orchestrator.Select[*message.SentMessage](log) {
		fmt.Fprintf(out, "log: %s -> %s: %s\n", s.Sender.Name(), s.Recipient.Name(), message.TypeName(s.Message))
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
		fmt.Fprintln(os.Stderr, "hello world:", err)
		os.Exit(1)
	}
}
