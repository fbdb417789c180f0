package eventlog_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// The writer is the team's Archive: history older than the in-memory
// window is read back from the file.
var _ orchestrator.Archive = (*eventlog.Writer)(nil)

type echoActor struct{ actor.Base }

func (*echoActor) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		return nil, c.Send(c.Sender(), message.NewResultMessage("echo: "+m.Content))
	}
	return nil, nil
}

// A team whose in-memory window (50 records) has moved far past
// its start answers Messages with its whole log, read from its durable
// log, filtered, in order; while it runs and after it stopped.
func TestMessagesOutsideTheWindowFromTheLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	teamID := uuid.New()
	path := filepath.Join(t.TempDir(), "team.log")
	w, err := eventlog.Create(path, teamID, eventlog.Options{Sync: eventlog.SyncBatch, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	defer func() { _ = sys.Shutdown(context.Background()) }()
	team, err := orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithRetention(50), orchestrator.WithSubscribers(w))
	if err != nil {
		t.Fatal(err)
	}
	e, err := team.Spawn(ctx, &echoActor{}, &actor.Config{Name: "echo", Role: "Echo"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		if _, err := sys.Ask(ctx, e, message.NewUserMessage("x")); err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	check := func(when string) {
		t.Helper()
		all, err := team.Messages(ctx, orchestrator.Filter{})
		if err != nil {
			t.Fatalf("%s: Messages: %v", when, err)
		}
		if _, ok := all[0].(*message.StartMessage); !ok || all[0].Envelope().Sender.Name() != "orchestrator" {
			t.Fatalf("%s: first message %s from %v, want the orchestrator's StartMessage", when, message.TypeName(all[0]), all[0].Envelope().Sender)
		}
		received, err := team.Messages(ctx, orchestrator.Filter{Type: "ReceivedMessage", Sender: e.AgentID()})
		if err != nil || len(received) != n {
			t.Fatalf("%s: the echo's ReceivedMessages: %d, %v; want %d", when, len(received), err, n)
		}
	}
	check("running")
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	check("stopped")
}
