package actor_test

import (
	"context"
	"fmt"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// GreetMessage is the quick start's message: a struct embedding
// message.Base.
type GreetMessage struct {
	message.Base
	Text string `json:"text"`
}

// GreeterAgent prints a greeting for every GreetMessage.
type GreeterAgent struct{ actor.Base }

func (g *GreeterAgent) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *GreetMessage:
		fmt.Printf("Hello, %s!\n", m.Text)
		return nil, nil
	}
	return nil, actor.ErrUnhandled
}

// akgentic's quick start: spawn a greeter, tell it a message,
// shut down. Shutdown drains the mailbox first, so the greeting is printed.
func Example_quickStart() {
	sys := actor.NewSystem(actor.SystemConfig{})
	agent, err := sys.Spawn(&GreeterAgent{}, actor.Config{Name: "greeter", Role: "Greeter"})
	if err != nil {
		panic(err)
	}
	_ = sys.Tell(agent, &GreetMessage{Text: "Akgentic"})
	_ = sys.Shutdown(context.Background())
	// Output: Hello, Akgentic!
}

// Tell does not wait; Ask waits for the handler's result, bounded by the
// context.
func Example_tellAndAsk() {
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(context.Background())

	count := 0
	counter, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		switch msg.(type) {
		case *GreetMessage:
			count++
			return count, nil
		}
		return nil, actor.ErrUnhandled
	}), actor.Config{Name: "counter"})

	_ = sys.Tell(counter, &GreetMessage{Text: "one"})
	_ = sys.Tell(counter, &GreetMessage{Text: "two"})
	ctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	n, err := sys.Ask(ctx, counter, &GreetMessage{Text: "three"})
	fmt.Println(n, err)
	// Output: 3 <nil>
}

// A reply sent to the sender of a system-told message lands in the
// endpoint's listener; a private endpoint keeps its replies to itself.
func Example_listen() {
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(context.Background())
	echo, _ := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		if m, ok := msg.(*GreetMessage); ok {
			return nil, c.Send(c.Sender(), &GreetMessage{Text: "echo: " + m.Text})
		}
		return nil, actor.ErrUnhandled
	}), actor.Config{Name: "echo"})

	p := sys.Private()
	defer p.Close()
	_ = p.Tell(echo, &GreetMessage{Text: "hi"})
	reply, _ := p.Listen(context.Background())
	fmt.Println(reply.(*GreetMessage).Text)
	// Output: echo: hi
}
