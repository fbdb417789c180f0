package actor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/akgentic/akgentic-go/actor"
)

// Echo is a base actor: it answers any string.
type Echo struct{ actor.Base }

// Receive implements actor.Actor.
func (Echo) Receive(_ *actor.Context, msg any) (any, error) {
	if s, ok := msg.(string); ok {
		return "echo: " + s, nil
	}
	return nil, actor.ErrUnhandled
}

// Shouter embeds Echo and shouts back what ends with "!"; it declines the
// rest to its base.
type Shouter struct{ Echo }

// Receive handles what shout takes and falls back to the embedded Echo.
func (s *Shouter) Receive(c *actor.Context, msg any) (any, error) {
	if text, ok := msg.(string); ok {
		res, err := s.shout(text)
		if !errors.Is(err, actor.ErrUnhandled) {
			return res, err
		}
	}
	return s.Echo.Receive(c, msg)
}

func (*Shouter) shout(text string) (any, error) {
	if !strings.HasSuffix(text, "!") {
		return nil, actor.ErrUnhandled // declined: not for this handler
	}
	return strings.ToUpper(text), nil
}

// The decline idiom: a specific handler returns ErrUnhandled and the type
// falls back to its embedded base.
func Example_decline() {
	ctx := context.Background()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys.Shutdown(ctx) }()
	addr, err := sys.Spawn(&Shouter{}, actor.Config{Name: "shouter"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, in := range []string{"hello!", "hello"} {
		out, err := sys.Ask(ctx, addr, in)
		fmt.Println(out, err)
	}
	// Output:
	// HELLO! <nil>
	// echo: hello <nil>
}
