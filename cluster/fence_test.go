package cluster

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Once a second owner has claimed a team, JetStream refuses the first owner's
// records; the first owner stops its copy of the team at once and says so in
// its log, and the stream holds none of its records after the takeover. The
// second owner's records are stored.
func TestFencingStopsTheOldOwner(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc1, nc2 := connect(t, e), connect(t, e)
	var logs logCapture
	teamID := uuid.New()

	l1, _, err := OpenLedger(ctx, nc1.Conn, teamID, Config{Logger: logs.logger(), Owner: "first"})
	if err != nil {
		t.Fatal(err)
	}
	sys1 := system(t)
	team1, err := orchestrator.New(sys1, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(l1))
	if err != nil {
		t.Fatal(err)
	}
	l1.Attach(team1)
	a1, _ := spawnCounters(t, ctx, team1)
	ask(t, ctx, sys1, a1, 3)
	if _, err := acked(ctx, team1, l1); err != nil { // every record so far stored
		t.Fatal(err)
	}

	// The takeover: a second owner claims the team and restores it.
	l2, log2, err := OpenLedger(ctx, nc2.Conn, teamID, Config{Logger: discard, Owner: "second"})
	if err != nil {
		t.Fatal(err)
	}
	sys2 := system(t)
	seen := &idSet{m: map[uuid.UUID]bool{}} // every record team2 has
	team2, err := orchestrator.Restore(ctx, sys2, log2, orchestrator.WithSubscribers(l2, seen))
	if err != nil {
		t.Fatal(err)
	}
	l2.Attach(team2)

	// The old owner goes on: its next records are refused, and it stops.
	_, _ = sys1.Ask(ctx, a1, message.NewUserMessage("after the takeover"))
	select {
	case <-team1.Done():
	case <-ctx.Done():
		t.Fatal("the old owner's team did not stop after its records were refused")
	}
	if err := l1.Err(); !errors.Is(err, ErrFenced) {
		t.Fatalf("old owner's Err = %v, want ErrFenced", err)
	}
	if !strings.Contains(logs.String(), "taken over by another owner") {
		t.Fatalf("the old owner's log does not say it was taken over:\n%s", logs.String())
	}
	stored, err := ReadTeam(ctx, nc2.Conn, teamID, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing of the old owner after the takeover: the stream is the log
	// the second owner restored, plus its own records only.
	if len(stored) < len(log2) || !slices.Equal(ids(stored[:len(log2)]), ids(log2)) {
		t.Fatalf("stream: %d records; it does not begin with the %d restored", len(stored), len(log2))
	}
	if err := team2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range stored[len(log2):] {
		if !seen.has(m.Envelope().ID) {
			t.Fatalf("the stream holds a %s record %s after the takeover that is not the new owner's", message.TypeName(m), m.Envelope().ID)
		}
	}

	// The new owner writes.
	a2, err := team2.Member(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	ask(t, ctx, sys2, a2, 2)
	if err := team2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l2.Err(); err != nil {
		t.Fatalf("new owner's Err = %v", err)
	}
	final, err := ReadTeam(ctx, nc2.Conn, teamID, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(final) <= len(stored) {
		t.Fatalf("the new owner's records were not stored: %d, then %d", len(stored), len(final))
	}
	assertUnique(t, final)
}

// idSet is a subscriber keeping the id of every record.
type idSet struct {
	mu sync.Mutex
	m  map[uuid.UUID]bool
}

func (s *idSet) OnMessage(m message.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[m.Envelope().ID] = true
}

func (s *idSet) has(id uuid.UUID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}
