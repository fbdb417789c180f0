package cluster

import (
	"context"
	"testing"
	"time"

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

// A worker that stops its team mid-turn because it could not keep the
// team's shard does not count the cut turn as done either: the next holder
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
	w1.lose(id, o, "its shard's lease ended unrenewed", errShardNotHeld) // as tendTeam does
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

// A worker's Close hands its teams over at once, whatever its lease: the
// other worker's takeover scan runs when it sees the released lease (not
// at its next beat, a third of the lease later), and the cut turn's input
// is handed back to JetStream (not left for its ack wait, two beats), so
// the next holder runs it again within a fraction of a beat.
func TestCloseHandsOverAtOnce(t *testing.T) {
	const lease = 3 * time.Minute // a beat of 60 s, an ack wait of 120 s: far past the deadline below
	e := embedded(t)
	// Longer than the package's test bound: the deadline below is the
	// test's, and a loaded machine (a coverage run) takes a while to get
	// there.
	ctx, stop := context.WithTimeout(context.Background(), 3*testTimeout)
	t.Cleanup(stop)
	c := client(t, ctx, connect(t, e))
	start := func(owner string, scans chan struct{}) (*Worker, chan uuid.UUID) {
		done := make(chan uuid.UUID, 16)
		cfg := Config{Logger: discard, Lease: lease, Owner: owner, inputDone: func(id uuid.UUID) { done <- id }}
		if scans != nil {
			cfg.scanned = func() {
				select {
				case scans <- struct{}{}:
				default:
				}
			}
		}
		w, err := StartWorker(ctx, connect(t, e).Conn, system(t), cfg, counters)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := w.Close(context.Background()); err != nil {
				t.Error(err)
			}
		})
		return w, done
	}
	w1, _ := start("w1", nil)
	scans := make(chan struct{}, 1)
	w2, done2 := start("w2", scans)
	select { // w2's first scan, at its start: its next is a beat (60 s) away
	case <-scans:
	case <-ctx.Done():
		t.Fatal("w2 never scanned the leases")
	}
	waitShares(t, ctx, "held", w1, w2)       // w1 handed w2 its share
	team, err := w1.Create(ctx, "held", nil) // in a shard of w1's
	if err != nil {
		t.Fatal(err)
	}
	id := team.ID()
	holding.Store(true)
	t.Cleanup(func() { holding.Store(false) })
	input := send(t, ctx, c, id, "h", "cut")
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the held turn did not begin")
	}
	if err := w1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	holding.Store(false)
	closed := time.Now()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second) // half a beat; a quarter of the ack wait
	defer cancel()
	waitInputs(t, wait, done2, input...)
	t.Logf("the cut turn's input answered on w2 %v after w1's Close", time.Since(closed).Round(time.Millisecond))
}
