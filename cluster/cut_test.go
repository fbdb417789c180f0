package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/google/uuid"
)

// A worker that stops its own team mid-turn (a graceful Close while the turn
// runs) does not count the cut turn as done: its close is not in the ledger,
// the input is not acknowledged, and the next holder runs it again, once,
// as a message of its own.
func TestCloseMidTurnRerunsTheInput(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	c := client(t, ctx, connect(t, e))
	w1 := startNamed(t, ctx, connect(t, e), system(t), "w1")
	id, err := c.Create(ctx, "held", nil)
	if err != nil {
		t.Fatal(err)
	}
	holding.Store(true)
	t.Cleanup(func() { holding.Store(false) })
	input := send(t, ctx, c, id, "h", "cut")
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the held turn did not begin")
	}
	if err := w1.Close(ctx); err != nil { // the turn is cut by the team's stop
		t.Fatal(err)
	}
	holding.Store(false)
	select {
	case got := <-w1.inputs:
		t.Fatalf("the closing worker acknowledged input %s of a turn it cut", got)
	default:
	}

	rerunOnNextHolder(t, ctx, e, c, id, input)
}

// A worker that stops its team mid-turn because it could not renew the
// team's lease does not count the cut turn as done either: the next holder
// (the same worker here, which takes its own team back once it no longer
// runs it) runs the input again.
func TestLostLeaseMidTurnRerunsTheInput(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	c := client(t, ctx, connect(t, e))
	sys := system(t)
	w1 := startNamed(t, ctx, connect(t, e), sys, "w1")
	id, err := c.Create(ctx, "held", nil)
	if err != nil {
		t.Fatal(err)
	}
	holding.Store(true)
	t.Cleanup(func() { holding.Store(false) })
	input := send(t, ctx, c, id, "h", "cut")
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the held turn did not begin")
	}
	w1.mu.Lock()
	o := w1.teams[id]
	w1.mu.Unlock()
	if o == nil {
		t.Fatal("the team is not w1's")
	}
	w1.lose(id, o, "its lease ends unrenewed", errors.New("the leases bucket has no leader")) // as renewLease does
	select {
	case <-o.team.Done():
	case <-ctx.Done():
		t.Fatal("the team did not stop")
	}
	holding.Store(false)
	select {
	case got := <-w1.inputs:
		t.Fatalf("the worker that lost the lease acknowledged input %s of a turn it cut", got)
	default:
	}

	team := takenOver(t, ctx, w1.Worker, w1.resumed, id)
	waitInputs(t, ctx, w1.inputs, input...)
	if got, calls := total(t, ctx, sys, team, "h"); got != 10 || calls != 2 {
		t.Fatalf("h: total %d after %d calls; want 10 after 2 (the cut turn run again once, then one more)", got, calls)
	}
}

// rerunOnNextHolder starts a second worker, which takes the team over and
// runs the cut turn's input again, once: every input is acknowledged, the
// held total counts the cut turn once, and the ledger has the close of the
// input's second delivery, never of the cut one, and no record twice.
func rerunOnNextHolder(t *testing.T, ctx context.Context, e *Embedded, c *Client, id uuid.UUID, input []uuid.UUID) {
	t.Helper()
	sys := system(t)
	w2 := startNamed(t, ctx, connect(t, e), sys, "w2")
	team := takenOver(t, ctx, w2.Worker, w2.resumed, id)
	waitInputs(t, ctx, w2.inputs, input...)
	if got, calls := total(t, ctx, sys, team, "h"); got != 10 || calls != 2 {
		t.Fatalf("h: total %d after %d calls; want 10 after 2 (the cut turn run again once, then one more)", got, calls)
	}
	log, err := ReadTeam(ctx, c.nc, id, Config{})
	if err != nil {
		t.Fatal(err)
	}
	assertUnique(t, log)
	var again bool
	for _, m := range log {
		if p, ok := m.(*message.ProcessedMessage); ok {
			if p.MessageID == input[0] {
				t.Fatal("the cut turn's close is in the ledger")
			}
			again = again || p.MessageID == attemptID(input[0], 2)
		}
	}
	if !again {
		t.Fatal("the ledger has no close of the input's second delivery")
	}
}
