// Command demo runs akgentic's quick start: a greeter actor that prints
// "Hello, Akgentic!". It works offline, with nothing to configure.
//
// Until the LLM agent team lands, this is the core runtime's quick start
// (the seed README's first example); the agent team demo will replace it.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// GreetMessage asks the greeter to greet someone.
type GreetMessage struct {
	message.Base
	Text string `json:"text"`
}

func init() { message.Register[GreetMessage]("GreetMessage") }

// GreeterAgent prints a greeting for each GreetMessage.
type GreeterAgent struct {
	actor.Base
	out io.Writer
}

// Receive handles GreetMessage.
func (g *GreeterAgent) Receive(_ *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *GreetMessage:
		_, err := fmt.Fprintf(g.out, "Hello, %s!\n", m.Text)
		return nil, err
	}
	return nil, actor.ErrUnhandled
}

func run(ctx context.Context, out io.Writer, logger *slog.Logger) error {
	sys := actor.NewSystem(actor.SystemConfig{Logger: logger})
	agent, err := sys.Spawn(&GreeterAgent{out: out}, actor.Config{Name: "greeter", Role: "Greeter"})
	if err != nil {
		return err
	}
	if err := sys.Tell(agent, &GreetMessage{Text: "Akgentic"}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return sys.Shutdown(ctx)
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(context.Background(), os.Stdout, logger); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
