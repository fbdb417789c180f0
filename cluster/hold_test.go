package cluster

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// A team's lease is stored when its worker takes it and not renewed: the
// worker holds the team while it holds the team's shard. An input sent
// after that first lease's end is run, and the team's lease in the bucket
// still ends where it was first stored.
func TestInputPastTheTeamsOwnLeaseIsRun(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	w := startNamed(t, ctx, connect(t, e), system(t), "w")
	c := client(t, ctx, connect(t, e))
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	stored := leaseOf(t, ctx, w.kv, id)
	if stored.Until.IsZero() || stored.Owner != "w" || stored.Instance != w.instance {
		t.Fatalf("the created team's lease: %+v; want w's, stamped with its instance", stored)
	}
	teams, err := c.Teams(ctx)
	if err != nil || len(teams) != 1 || teams[0].Until.Before(stored.Until) {
		t.Fatalf("Teams = %+v, %v; want the team held at least to its lease's end", teams, err)
	}
	select { // the behaviour under test is the passing of the lease's end
	case <-time.After(time.Until(stored.Until) + 50*time.Millisecond):
	case <-ctx.Done():
		t.Fatal("the test ran out of time before the team's lease ended")
	}
	if w.team(id) == nil {
		t.Fatal("the worker stopped its team at its own lease's end, while holding its shard")
	}
	input := send(t, ctx, c, id, "a", "late")
	waitInputs(t, ctx, w.inputs, input...)
	if _, calls := total(t, ctx, w.sys, w.team(id), "a"); calls != 2 {
		t.Fatalf("a made %d calls; want 2 (the input, then the check's own)", calls)
	}
	if now := leaseOf(t, ctx, w.kv, id); !now.Until.Equal(stored.Until) || now.Instance != stored.Instance {
		t.Fatalf("the team's lease changed from %+v to %+v; want it as stored when the team was taken", stored, now)
	}
	// Past its own lease's end, a client sees the team held for as long
	// as its worker holds its shard.
	teams, err = c.Teams(ctx)
	if err != nil || len(teams) != 1 || !teams[0].Until.After(time.Now()) || teams[0].Owner != "w" {
		t.Fatalf("Teams = %+v, %v; want the team held by w, its hold ending in the future", teams, err)
	}
}

// A worker's heartbeat writes the leases of its shards and its presence,
// never one per team: over two renewals of every shard it holds, with
// twenty teams running, no team's key is written.
func TestHeartbeatWritesShardsNotTeams(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	w := startNamedWith(t, ctx, nc, system(t), "w", func(c *Config) { c.Shards = 4 })
	c := client(t, ctx, nc)
	for range 20 {
		if _, err := c.Create(ctx, "counters", nil); err != nil {
			t.Fatal(err)
		}
	}
	if w.count() != 20 {
		t.Fatalf("the worker runs %d teams; want 20", w.count())
	}
	watch, err := w.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer stopWatch(watch)
	renewed := map[string]int{} // by shard key
	for {
		var e jetstream.KeyValueEntry
		select {
		case e = <-watch.Updates():
		case <-ctx.Done():
			t.Fatalf("the shards' renewals seen: %v; want two of each of the 8 (4 shards of 2 templates)", renewed)
		}
		if e == nil {
			continue
		}
		if _, err := uuid.Parse(e.Key()); err == nil {
			t.Fatalf("team %s's lease written by the heartbeat: %s", e.Key(), e.Value())
		}
		if _, ok := parseShardKey(e.Key()); ok {
			renewed[e.Key()]++
		}
		done := len(renewed) == 4*len(counters)
		for _, n := range renewed {
			done = done && n >= 2
		}
		if done {
			return
		}
	}
}
