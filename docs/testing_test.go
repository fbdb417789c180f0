package docs_test

import (
	"context"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Forwarder sends every UserMessage it gets on to To, in capitals.
type Forwarder struct {
	actor.Base
	To *message.Address
}

func (f *Forwarder) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		return nil, c.Send(f.To, message.NewUserMessage(strings.ToUpper(m.Content)))
	}
	return nil, actor.ErrUnhandled
}

// An actor tested with a probe for its collaborator and a recorder of the
// team's telemetry.
func TestForwarderSendsInCapitals(t *testing.T) {
	sys, rec, root := actortest.Team(t) // shut down when the test ends
	probe := actortest.NewProbe()
	to := actortest.Spawn(t, root, probe, actor.Config{Name: "probe"})
	fwd := actortest.Spawn(t, root, &Forwarder{To: to}, actor.Config{Name: "forwarder"})

	if err := sys.Tell(fwd, message.NewUserMessage("hello")); err != nil {
		t.Fatal(err)
	}
	got, from := actortest.Expect[*message.UserMessage](t, probe) // waits for it
	if got.Content != "HELLO" || from.Sender.Name() != "forwarder" {
		t.Errorf("probe got %q from %s, want HELLO from forwarder", got.Content, from.Sender.Name())
	}
	probe.ExpectNone(t)
	rec.WaitKind(t, "ProcessedMessage", fwd, 1) // by notification, never by sleeping
	if kinds := rec.Kinds(fwd); strings.Join(kinds, " ") != "StartMessage ReceivedMessage SentMessage ProcessedMessage" {
		t.Errorf("forwarder's telemetry: %v", kinds)
	}
}

// A team of LLM agents tested on a scripted model: what the person gets,
// what the model was sent, and what the team's log holds.
func TestAssistantAnswersThePerson(t *testing.T) {
	srv := llmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Model("@Assistant").Enqueue( // requests are routed by the system prompt's roster line " - [you]"
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"Hello!"}]}`))
	_, team, _ := actortest.NewTeam(t) // a system logging to the test, and a team on it
	ctx := actortest.Context(t)

	answers := make(chan *agent.AgentMessage, 1)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.NewConfig("@Assistant", "Assistant")
	cfg.Model = srv.ModelConfig("gpt-4.1") // BaseURL: srv.URL()
	assistant, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: srv.HTTPClient()}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(ctx, human, assistant, agent.NewRequest("Hi")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-answers:
		if m.Content != "Hello!" {
			t.Errorf("the person got %q", m.Content)
		}
	case <-ctx.Done():
		t.Fatal("no answer:", context.Cause(ctx))
	}

	reqs := srv.RequestsFor("@Assistant")
	if len(reqs) != 1 || !strings.Contains(reqs[0].History()[len(reqs[0].History())-1].Text(), "Hi") {
		t.Errorf("the model was sent %d requests: %v", len(reqs), reqs)
	}
	sent, err := team.Messages(ctx, orchestrator.Filter{Type: "SentMessage"}) // a barrier: the log holds every record before it
	if err != nil || len(sent) != 2 {
		t.Errorf("the log holds %d sent messages (%v), want the request and the answer", len(sent), err)
	}
	if f := srv.Failures(); len(f) > 0 {
		t.Errorf("scripted model: %v", f)
	}
}
