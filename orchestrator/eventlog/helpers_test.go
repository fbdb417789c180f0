package eventlog_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// subscriber is the orchestrator's subscriber hook set, as the lead
// engineer declares it; the Writer must satisfy it structurally.
type subscriber interface {
	OnMessage(msg message.Message)
	SetRestoring(teamID uuid.UUID, restoring bool)
	OnStopRequest(teamID uuid.UUID)
	OnStop(teamID uuid.UUID)
}

var _ subscriber = (*eventlog.Writer)(nil)

var discard = slog.New(slog.DiscardHandler)

// logCapture is a *slog.Logger writing text lines into a buffer.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *logCapture) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lines returns the logged lines that contain sub.
func (c *logCapture) lines(sub string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for l := range strings.Lines(c.buf.String()) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// team builds the telemetry of a small conversation: a human tells the
// greeter hello, the greeter answers, fails once, and the team stops.
type team struct {
	id                   uuid.UUID
	orch, human, greeter *message.Address
	now                  time.Time
}

func newTeam() *team {
	id := message.NewID()
	addr := func(name, role string, proxy bool) *message.Address {
		return message.NewSnapshotAddress(message.Identity{
			AgentID: message.NewID(), Name: name, Role: role, TeamID: id, UserProxy: proxy,
		})
	}
	return &team{
		id:      id,
		orch:    addr("@Orchestrator", "Orchestrator", false),
		human:   addr("@Human", "Human", true),
		greeter: addr("@Greeter", "Greeter", false),
		now:     time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC),
	}
}

// base returns a fresh envelope sent by from, caused by parent (nil for none).
func (t *team) base(from *message.Address, parent message.Message) message.Base {
	t.now = t.now.Add(time.Millisecond)
	b := message.Base{
		ID:        message.NewID(),
		TeamID:    uuid.NullUUID{UUID: t.id, Valid: true},
		Timestamp: t.now,
		Sender:    from,
	}
	if parent != nil {
		b.ParentID = uuid.NullUUID{UUID: parent.Envelope().ID, Valid: true}
	}
	return b
}

// records returns one of each kind of telemetry record, in ledger order.
func (t *team) records() []message.Message {
	hello := &message.UserMessage{Base: t.base(t.human, nil), Content: "Hello, Akgentic!"}
	hello.Recipient = t.greeter
	hello.DisplayType = message.DisplayHuman
	reply := &message.ResultMessage{Base: t.base(t.greeter, hello), Content: "Hello, human."}
	reply.Recipient = t.human
	return []message.Message{
		&message.StartMessage{Base: t.base(t.orch, nil), Config: map[string]any{"name": "@Greeter"}, Parent: t.orch},
		&message.SentMessage{Base: t.base(t.human, nil), Message: hello, Recipient: t.greeter},
		&message.ReceivedMessage{Base: t.base(t.greeter, hello), MessageID: hello.ID},
		&message.StateChangedMessage{Base: t.base(t.greeter, hello), State: map[string]any{"greeted": 1}},
		&message.SentMessage{Base: t.base(t.greeter, hello), Message: reply, Recipient: t.human},
		&message.ErrorMessage{
			NotificationMessage: message.NotificationMessage{Base: t.base(t.greeter, hello),
				ContentType: "ValueError", Content: "boom", CurrentMessage: hello},
			Traceback: "goroutine 7 [running]:\n\tgreeter.go:42",
		},
		&message.WarningMessage{NotificationMessage: message.NotificationMessage{Base: t.base(t.greeter, hello),
			ContentType: "WarningError", Content: "slow"}},
		&message.NotificationMessage{Base: t.base(t.greeter, hello), Content: "note"},
		&message.ProcessedMessage{Base: t.base(t.greeter, hello), MessageID: hello.ID},
		&message.HandledMessage{Base: t.base(t.human, reply), MessageID: reply.ID},
		&message.EventMessage{Base: t.base(t.orch, nil), Event: message.ClosedNotification{MessageID: hello.ID}},
		&message.EventMessage{Base: t.base(t.orch, nil), Event: message.TeamStoppingEvent{}},
		&message.StopMessage{Base: t.base(t.greeter, nil)},
	}
}

// user returns a fresh UserMessage record (a small one, for counting).
func (t *team) user(content string) message.Message {
	return &message.UserMessage{Base: t.base(t.human, nil), Content: content}
}

// create creates a log in a fresh temporary directory.
func create(tb testing.TB, tm *team, opts eventlog.Options) (*eventlog.Writer, string) {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = discard
	}
	path := filepath.Join(tb.TempDir(), "team.log")
	w, err := eventlog.Create(path, tm.id, opts)
	if err != nil {
		tb.Fatalf("Create: %v", err)
	}
	tb.Cleanup(func() { w.Close() })
	return w, path
}

// sameRecords checks that got holds the records of want, in order, by
// type, id, team and parent.
func sameRecords(tb testing.TB, got, want []message.Message) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("read %d records, wrote %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if message.TypeName(g) != message.TypeName(w) {
			tb.Errorf("record %d: type %s, want %s", i, message.TypeName(g), message.TypeName(w))
			continue
		}
		ge, we := g.Envelope(), w.Envelope()
		if ge.ID != we.ID || ge.TeamID != we.TeamID || ge.ParentID != we.ParentID || !ge.Timestamp.Equal(we.Timestamp) {
			tb.Errorf("record %d (%s): envelope id %v team %v parent %v at %v, want %v %v %v at %v", i,
				message.TypeName(g), ge.ID, ge.TeamID, ge.ParentID, ge.Timestamp, we.ID, we.TeamID, we.ParentID, we.Timestamp)
		}
		if !ge.Sender.Equal(we.Sender) {
			tb.Errorf("record %d: sender %v, want %v", i, ge.Sender, we.Sender)
		}
	}
}

// readLog reads the file, failing the test on an error.
func readLog(tb testing.TB, path string) *eventlog.Log {
	tb.Helper()
	l, err := eventlog.ReadFile(path)
	if err != nil {
		tb.Fatalf("ReadFile: %v", err)
	}
	return l
}

// appendBytes appends raw bytes to the file, as a torn write would leave them.
func appendBytes(tb testing.TB, path string, data string) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// lineError returns err as a *LineError, failing the test if it is not one.
func lineError(tb testing.TB, err error) *eventlog.LineError {
	tb.Helper()
	var le *eventlog.LineError
	if !errors.As(err, &le) {
		tb.Fatalf("error %v (%T) is not a *LineError", err, err)
	}
	return le
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}
