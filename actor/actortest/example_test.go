package actortest_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Question is what the asker sends to its collaborator.
type Question struct {
	message.Base
	Text string `json:"text"`
}

// Asker passes every Question it gets on to the collaborator at To.
type Asker struct {
	actor.Base
	To *message.Address
}

func (a *Asker) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *Question:
		return nil, c.Send(a.To, &Question{Text: "asker wants: " + m.Text})
	}
	return nil, actor.ErrUnhandled
}

// exampleT stands in for the *testing.T a test would pass to the kit: an
// Example has none. Only Helper and Fatalf are used by the calls below.
type exampleT struct{ testing.TB }

func (exampleT) Helper() {}
func (exampleT) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// A Recorder subscribes to a team and records the telemetry of every
// actor spawned under the team's root; a Probe stands in for a
// collaborator and records what it receives. In a test, actortest.Team(t)
// does the first steps (and shuts down at the end of the test), and t
// replaces exampleT{}.
func Example() {
	t := exampleT{}
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			fmt.Println("shutdown:", err)
		}
	}()
	rec := actortest.NewRecorder()
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(rec))
	if err != nil {
		panic(err)
	}
	root := team.Address()

	// The probe answers asks with Reply; the asker under test talks to it.
	probe := actortest.NewProbe()
	probe.Reply = func(*actor.Context, any) (any, error) { return "noted", nil }
	probeAddr := actortest.Spawn(t, root, probe, actor.Config{Name: "probe", Role: "Probe"})
	asker := actortest.Spawn(t, root, &Asker{To: probeAddr}, actor.Config{Name: "asker", Role: "Asker"})

	// Tell the asker something; Expect waits for what reached the probe.
	_ = sys.Tell(asker, &Question{Text: "the plan"})
	q, got := actortest.Expect[*Question](t, probe)
	fmt.Printf("probe got %q from %s\n", q.Text, got.Sender.Name())

	// An ask to the probe returns its Reply.
	v, err := sys.Ask(context.Background(), probeAddr, &Question{Text: "ping"})
	fmt.Println("ask:", v, err)
	actortest.Expect[*Question](t, probe) // take the ask's message too
	probe.ExpectNone(t)

	// WaitKind waits, without sleeping, until the asker's turn is processed;
	// the recorder then holds its telemetry messages in order.
	rec.WaitKind(t, "ProcessedMessage", asker, 1)
	fmt.Println("asker:", rec.Kinds(asker))
	for _, m := range orchestrator.Select[*message.SentMessage](rec.Records()) {
		fmt.Printf("sent: %s -> %s: %s\n", m.Sender.Name(), m.Recipient.Name(), message.TypeName(m.Message))
	}
	// Output:
	// probe got "asker wants: the plan" from asker
	// ask: noted <nil>
	// asker: [StartMessage ReceivedMessage SentMessage ProcessedMessage]
	// sent: asker -> probe: Question
}
