package cluster

import (
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// A server whose default bound of consumers per stream is lower than the
// number of teams (JetStream's default is 1,000) still gives every team its
// inbox: the cluster's streams set their own bound. Here the server allows 3
// by default, and 6 teams each get their input.
func TestTeamsPastTheServersConsumerDefault(t *testing.T) {
	e := embedded(t)
	e.Close()
	e.opts.JetStreamLimits.DefaultMaxConsumers = 3
	if err := e.restart(); err != nil {
		t.Fatal(err)
	}
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	w := startNamed(t, ctx, nc, system(t), "w1")
	var inputs []uuid.UUID
	for range 6 {
		id, err := c.Create(ctx, "counters", nil)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, send(t, ctx, c, id, "a", "hello")...)
	}
	waitInputs(t, ctx, w.inputs, inputs...)
}

// A read of a team's records (a restore, ReadTeam) deletes its consumer when
// done: a takeover of thousands of teams does not hold a consumer per team
// for the server's inactivity threshold.
func TestReadLeavesNoConsumer(t *testing.T) {
	ctx, nc, c, w, id := teamOnW1(t)
	waitInputs(t, ctx, w.inputs, send(t, ctx, c, id, "a", "one")...)
	for range 3 {
		log, err := ReadTeam(ctx, nc.Conn, id, Config{})
		if err != nil || len(log) == 0 {
			t.Fatalf("ReadTeam: %d records, %v", len(log), err)
		}
	}
	info, err := c.ledger.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		var names []string
		for n := range c.ledger.ListConsumers(ctx).Info() {
			names = append(names, n.Name+" "+n.Config.Description)
		}
		t.Fatalf("the records stream holds %d consumers after the reads; want none: %v", info.State.Consumers, names)
	}
}
