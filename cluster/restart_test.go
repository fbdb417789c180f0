package cluster

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// restartLease is the lease of the restart tests: a restart of the
// embedded server (JetStream recovering its streams from disk, then the
// client reconnecting) takes well under a second on a quiet machine, but
// more than testLease beside the race run of every other package on two
// cores. These tests are about a restart shorter than a lease.
const restartLease = 10 * time.Second

// The embedded server restarts while a worker's team runs, for less than a
// lease: the team is not stopped, its shard's lease is renewed once the
// server is back, its publishes resume, and the stream holds every record once.
func TestWorkerSurvivesNATSRestart(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	sys := system(t)
	w := startNamedWith(t, ctx, nc, sys, "parent", func(c *Config) { c.Lease = restartLease }).Worker
	team, err := w.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := team.Member(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	ask(t, ctx, sys, a, 5)

	e.Close()
	ask(t, ctx, sys, a, 5) // buffered: the window has room
	if err := e.restart(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-nc.reconnected:
	case <-ctx.Done():
		t.Fatal("the client did not reconnect")
	}
	ask(t, ctx, sys, a, 5)
	if w.team(team.ID()) == nil {
		t.Fatal("the worker no longer runs its team after the restart")
	}
	l := w.ledgerOf(team.ID())
	assertStored(t, ctx, team, l)
	// The shard's lease is renewed after the restart: the next update of
	// its key is the worker's renewal.
	watch, err := w.kv.Watch(ctx, shardKey(w.shardOfTeam("counters", team.ID())), jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer stopWatch(watch)
	select {
	case e := <-watch.Updates():
		var l lease
		if err := json.Unmarshal(e.Value(), &l); err != nil || l.Owner != "parent" || l.Stopped {
			t.Fatalf("the shard's lease after the restart: %s, %v", e.Value(), err)
		}
	case <-ctx.Done():
		t.Fatal("the shard's lease was not renewed after the restart")
	}
	select {
	case <-team.Done():
		t.Fatal("the team stopped: its lease was lost over the restart")
	default:
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
}

// The embedded server restarts between two inputs to a running team: the
// input sent after the restart is delivered and its turn run, once, and
// the one before it is not run again.
func TestInputAfterNATSRestartIsRun(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	w := startNamedWith(t, ctx, nc, system(t), "w", func(c *Config) { c.Lease = restartLease })
	c := client(t, ctx, connect(t, e))
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	first := send(t, ctx, c, id, "a", "before")
	waitInputs(t, ctx, w.inputs, first...)

	e.Close()
	if err := e.restart(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-nc.reconnected:
	case <-ctx.Done():
		t.Fatal("the worker's connection did not reconnect")
	}
	second := send(t, ctx, c, id, "a", "after")
	waitInputs(t, ctx, w.inputs, second...)
	team := w.team(id)
	if team == nil {
		t.Fatal("the worker no longer runs its team")
	}
	if got, calls := total(t, ctx, w.sys, team, "a"); calls != 3 || got != 6 {
		t.Fatalf("a: total %d after %d calls; want 6 after 3 (each input once, then one more)", got, calls)
	}
}
