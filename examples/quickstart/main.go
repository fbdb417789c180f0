// Quickstart is the smallest akgentic program: one agent, one message.
//
//	go run ./examples/quickstart
//
// An agent is a struct embedding actor.Base with a Receive method; a
// message is a struct embedding message.Base. The system spawns the agent,
// Tell puts the message in its mailbox, and Shutdown lets the agent finish
// its mailbox before stopping it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// GreetMessage asks a greeter to greet Text.
type GreetMessage struct {
	message.Base
	Text string `json:"text"`
}

// GreeterAgent writes a greeting for every GreetMessage.
type GreeterAgent struct {
	actor.Base
	out io.Writer
}

// Receive is the agent's only entry point: a type switch over the messages
// it understands. It runs on the agent's own goroutine, one message at a
// time.
func (g *GreeterAgent) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *GreetMessage:
		fmt.Fprintf(g.out, "Hello, %s!\n", m.Text)
		return nil, nil
	}
	return nil, actor.ErrUnhandled // reported as "Unknown message", never eaten
}

func run(ctx context.Context, out io.Writer) error {
	sys := actor.NewSystem(actor.SystemConfig{})
	greeter, err := sys.Spawn(&GreeterAgent{out: out}, actor.Config{Name: "greeter", Role: "Greeter"})
	if err != nil {
		return err
	}
	if err := sys.Tell(greeter, &GreetMessage{Text: "Akgentic"}); err != nil {
		return err
	}
	// Tell does not wait. Shutdown drains every mailbox, stops every agent
	// and joins every goroutine, so the greeting is written by the time it
	// returns.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return sys.Shutdown(ctx)
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}
