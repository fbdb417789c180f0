package cluster

import (
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// An owner whose hold on a team (the lease it stored for the team's
// shard) has ended by its own clock (its process was paused past it, its
// renewals lag) starts no turn for the team: an input
// delivered to it then is left unacknowledged, for whichever worker holds the
// team, and no member sees it (no model call paid for a team it may no
// longer hold).
func TestEndedLeaseStartsNoTurn(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	var logs logCapture
	sys := system(t)
	// A long lease: no renewal of the shard's lease (every third of it)
	// stores a new end while the test runs, and no input is delivered
	// again.
	presented := make(chan struct{}, 1)
	cfg := Config{Logger: logs.logger(), Lease: time.Minute, Owner: "paused", presented: func() {
		select {
		case presented <- struct{}{}:
		default:
		}
	}}
	w, err := StartWorker(ctx, nc.Conn, sys, cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(actortest.Context(t)); err != nil {
			t.Error(err)
		}
	})
	team, err := w.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	select { // the first renewal round, at the worker's start, ended: the next is a beat (20 s) away
	case <-presented:
	case <-ctx.Done():
		t.Fatal("the worker's presence was never renewed")
	}
	w.mu.Lock()
	past := time.Now().Add(-time.Second) // as a paused process finds its leases when it goes on
	w.teams[team.ID()].until = past
	w.shards[w.shardOfTeam("counters", team.ID())].until = past
	w.mu.Unlock()
	input := send(t, ctx, c, team.ID(), "a", "while paused")
	logs.waitLog(t, ctx, "an input is not run: this worker's hold on the team (its shard's lease) has ended")
	if _, calls := total(t, ctx, sys, team, "a"); calls != 1 {
		t.Fatalf("a: %d calls; want 1 (the input %s not run, then one more)", calls, input[0])
	}
	n, err := teamInputs(ctx, c.js, c.cfg, team.ID())
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the inbox holds %d inputs of the team; want the one input still there", n)
	}
}
