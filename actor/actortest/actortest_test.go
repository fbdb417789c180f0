package actortest_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type ping struct{ message.Base }

// The kit's own contract: a Recorder team records Start, Received and
// Processed; a Probe hands messages to Expect in order; LogCapture counts.
func TestKit(t *testing.T) {
	sys, rec, root := actortest.Team(t)
	probe := actortest.NewProbe()
	probe.Reply = func(*actor.Context, any) (any, error) { return "pong", nil }
	addr := actortest.Spawn(t, root, probe, actor.Config{Name: "probe"})
	v, err := sys.Ask(t.Context(), addr, &ping{})
	if err != nil || v != "pong" {
		t.Fatalf("ask %v %v", v, err)
	}
	if _, r := actortest.Expect[*ping](t, probe); r.Sender == nil {
		t.Fatal("no sender recorded")
	}
	probe.ExpectNone(t)
	recs := rec.WaitKind(t, "ProcessedMessage", addr, 1)
	// The team's records include the orchestrator's own StartMessage (sender
	// = root), then the probe's Start, Received and Processed.
	starts := 0
	for _, m := range recs {
		if _, ok := m.(*message.StartMessage); ok {
			starts++
		}
	}
	if starts != 2 || len(rec.Kinds(root)) != 1 || rec.Kinds(root)[0] != "StartMessage" ||
		len(rec.Kinds(addr)) != 3 || actortest.Describe(recs) == "" {
		t.Fatalf("records: %s", actortest.Describe(rec.Records()))
	}
	if _, err := actortest.SpawnIn(t.Context(), addr.Snapshot(), probe, nil); err == nil {
		t.Fatal("spawn under a snapshot address succeeded")
	}

	logs := actortest.NewLogCapture(t)
	l := logs.Logger().With("k", "v").WithGroup("g")
	l.Warn("hello", "n", 1)
	if logs.Count(slog.LevelWarn, "hello") != 1 || logs.Count(slog.LevelError, "hello") != 0 || len(logs.Records()) != 1 {
		t.Fatalf("log capture: %s", logs.Text())
	}
}

// relayer tells each ping on to its next actor; the last one fails.
type relayer struct {
	next *message.Address
}

func (r *relayer) Receive(c *actor.Context, msg any) (any, error) {
	if r.next == nil {
		return nil, errors.New("end of the line")
	}
	return nil, c.Send(r.next, &ping{})
}

// The test kit: Settle waits until a chain of tells has been
// handled to its end and the failing turn's Error record is recorded,
// with no no-op calls or Sync in the test; WaitFor finds it by type.
func TestSettleAndWaitFor(t *testing.T) {
	sys, rec, root := actortest.Team(t)
	last := actortest.Spawn(t, root, &relayer{}, actor.Config{Name: "c"})
	mid := actortest.Spawn(t, root, &relayer{next: last}, actor.Config{Name: "b"})
	first := actortest.Spawn(t, root, &relayer{next: mid}, actor.Config{Name: "a"})
	for range 3 {
		if err := sys.Tell(first, &ping{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Settle(t.Context(), root); err != nil {
		t.Fatal(err)
	}
	var errs int
	for _, m := range rec.Records() {
		if e, ok := m.(*message.ErrorMessage); ok && e.Sender.Equal(last) {
			errs++
		}
	}
	if errs != 3 {
		t.Fatalf("after Settle: %d Error records from c, want 3%s", errs, actortest.Describe(rec.Records()))
	}
	got := actortest.WaitFor(t, rec, func(m *message.ErrorMessage) bool { return m.Sender.Equal(last) })
	if !strings.Contains(got.Content, "end of the line") {
		t.Fatalf("WaitFor found %q", got.Content)
	}
	if p := actortest.WaitFor[*message.ProcessedMessage](t, rec, nil); p == nil {
		t.Fatal("WaitFor with a nil match found nothing")
	}
}

// Reloaded gives back new messages that encode as the originals did: what a
// durable log returns, never the live values.
func TestReloadedGivesNewValuesThatEncodeTheSame(t *testing.T) {
	in := &message.UserMessage{Content: "hello"}
	in.ID = uuid.New()
	out := actortest.Reloaded(t, []message.Message{in})
	if len(out) != 1 {
		t.Fatalf("Reloaded returned %d messages, want 1", len(out))
	}
	back, ok := out[0].(*message.UserMessage)
	if !ok || back == in {
		t.Fatalf("Reloaded returned %T (same pointer: %v); want a new *message.UserMessage", out[0], back == in)
	}
	a, errA := message.Marshal(in)
	b, errB := message.Marshal(back)
	if errA != nil || errB != nil || string(a) != string(b) {
		t.Fatalf("reloaded message encodes as %s, original as %s (%v, %v)", b, a, errB, errA)
	}
}
