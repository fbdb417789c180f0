package eventlog_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// A team's log is created once, fed by the orchestrator's hooks, and read
// back by a restore, which continues the same file with Append.
func Example() {
	dir, _ := os.MkdirTemp("", "eventlog")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "team.log")
	team := uuid.MustParse("7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d")
	opts := eventlog.Options{Sync: eventlog.SyncBatch, Logger: slog.New(slog.DiscardHandler)}

	w, err := eventlog.Create(path, team, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	hello := message.NewUserMessage("Hello, Akgentic!")
	w.OnMessage(&message.SentMessage{Message: hello})
	w.OnMessage(&message.EventMessage{Event: message.TeamStoppingEvent{}})
	w.OnStopRequest(team)
	w.OnStop(team)

	// Restore: read, replay without writing twice, continue.
	l, err := eventlog.ReadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err = eventlog.Append(path, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	w.SetRestoring(team, true)
	for _, m := range l.Messages {
		w.OnMessage(m) // the orchestrator replays these; they are already in the file
	}
	w.SetRestoring(team, false)
	w.OnMessage(&message.StopMessage{})
	w.OnStop(team)

	l, _ = eventlog.ReadFile(path)
	fmt.Println(l.Format, l.Version, l.TeamID)
	for _, m := range l.Messages {
		fmt.Println(message.TypeName(m))
	}
	fmt.Println("error:", w.Err())
	// Output:
	// akgentic-eventlog 2 7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d
	// SentMessage
	// EventMessage
	// StopMessage
	// error: <nil>
}
