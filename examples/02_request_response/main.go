// Request/response: replying to the sender; tell, listen and ask.
//
//	go run ./examples/02_request_response
//
// A calculator answers every Calculate with a CalcResult sent back to the
// sender. Three ways to talk to it: from another agent (the reply is a
// message to that agent), from the program with Tell and Listen (the reply
// lands in a private endpoint), and with Ask (which also returns the
// handler's return value).
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

// Calculate asks for the value of "a op b".
type Calculate struct {
	message.Base
	Expr string `json:"expr"`
}

// CalcResult is a calculator's reply.
type CalcResult struct {
	message.Base
	Expr  string `json:"expr"`
	Value int    `json:"value"`
}

// Calculator replies to each Calculate's sender, and returns the value: an
// Ask receives what Receive returns.
type Calculator struct{ actor.Base }

func (*Calculator) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *Calculate:
		var a, b int
		var op string
		if _, err := fmt.Sscanf(m.Expr, "%d %s %d", &a, &op, &b); err != nil {
			return nil, fmt.Errorf("calculator: %q: %w", m.Expr, err)
		}
		values := map[string]int{"+": a + b, "-": a - b, "*": a * b}
		v, ok := values[op]
		if !ok {
			return nil, fmt.Errorf("calculator: %q: unknown operator %q", m.Expr, op)
		}
		if err := c.Send(c.Sender(), &CalcResult{Expr: m.Expr, Value: v}); err != nil {
			return nil, err
		}
		return v, nil
	}
	return nil, actor.ErrUnhandled
}

// CalcClient sends the expressions the program gives it (as UserMessages)
// to its calculator, and hands the results it gets back to a channel.
type CalcClient struct {
	actor.Base
	calc    *message.Address
	results chan<- *CalcResult
}

func (cl *CalcClient) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *message.UserMessage:
		return nil, c.Send(cl.calc, &Calculate{Expr: m.Content})
	case *CalcResult:
		cl.results <- m
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
	calc, err := team.Spawn(ctx, &Calculator{}, &actor.Config{Name: "calculator", Role: "Calculator"})
	if err != nil {
		return err
	}

	// 1. Agent to agent: the client's request, the calculator's reply.
	results := make(chan *CalcResult, 1)
	client, err := team.Spawn(ctx, &CalcClient{calc: calc, results: results}, &actor.Config{Name: "client", Role: "Client"})
	if err != nil {
		return err
	}
	if err := sys.Tell(client, message.NewUserMessage("10 + 5")); err != nil {
		return err
	}
	select {
	case r := <-results:
		fmt.Fprintf(out, "agent to agent: %s = %d (reply from %s)\n", r.Expr, r.Value, r.Sender.Name())
	case <-ctx.Done():
		return fmt.Errorf("waiting for the client's result: %w", ctx.Err())
	}

	// 2. From the program: a private endpoint receives the replies to what
	// it tells, and Listen waits for the next one.
	p := sys.Private()
	defer p.Close()
	if err := p.Tell(calc, &Calculate{Expr: "6 * 7"}); err != nil {
		return err
	}
	reply, err := p.Listen(ctx)
	if err != nil {
		return err
	}
	r := reply.(*CalcResult)
	fmt.Fprintf(out, "tell and listen: %s = %d\n", r.Expr, r.Value)

	// 3. Ask waits for the handler's return value. The reply message the
	// calculator sends to the asker lands in the endpoint as well.
	v, err := p.Ask(ctx, calc, &Calculate{Expr: "2 - 9"})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "ask: 2 - 9 =", v)
	reply, err = p.Listen(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "listen after the ask:", reply.(*CalcResult).Value)

	// 4. A handler's error is the asker's error.
	_, err = p.Ask(ctx, calc, &Calculate{Expr: "2 / 9"})
	fmt.Fprintln(out, "ask with an error:", err)
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
		fmt.Fprintln(os.Stderr, "request/response:", err)
		os.Exit(1)
	}
}
