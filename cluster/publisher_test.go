package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// TestAckTimeoutIsSentAgain: a record whose acknowledgement never comes
// (the client times the publish out, and reports it with its own lock
// held) is sent again, and stored once the stream takes the team's records
// again. The Ledger's answer to the time-out publishes on a goroutine of
// its own: on the client's, it waited for the client's lock forever, and
// the team with it.
func TestAckTimeoutIsSentAgain(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	cfg := Config{Logger: discard, AckTimeout: 100 * time.Millisecond}
	l, team, sys := newTeam(t, ctx, nc, cfg)
	// One record in flight, as on a replicated stream: the others wait in
	// the Ledger's queue, and the answer to a time-out sends the next.
	l.mu.Lock()
	l.depth = 1
	l.mu.Unlock()
	a, _ := spawnCounters(t, ctx, team)
	ask(t, ctx, sys, a, 2)
	assertStored(t, ctx, team, l)

	// The stream stops taking records; a plain subscriber gets them
	// instead and never answers, so each publish times out.
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	info, err := l.st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc := info.Config
	subjects := sc.Subjects
	sc.Subjects = slices.DeleteFunc(slices.Clone(subjects), func(s string) bool { return s == defaultPrefix+".rec.*" })
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 64)
	sub, err := nc.Subscribe(l.recSubj, func(*nats.Msg) {
		select {
		case got <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ask(t, ctx, sys, a, 1)
	for i := range 2 { // the record, then the same record sent again after its time-out
		select {
		case <-got:
		case <-ctx.Done():
			t.Fatalf("publish %d of the unanswered record never came: the Ledger is stuck after the time-out", i+1)
		}
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	sc.Subjects = subjects
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	assertStored(t, ctx, team, l)
}
