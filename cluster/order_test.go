package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
)

// SendOnce with the caller's key is idempotent: sent again with the same key
// (a retry after a lost answer) it returns the same input id, and the input
// runs once; another key is another input.
func TestSendOnceRunsOnce(t *testing.T) {
	ctx, _, c, w, id := teamOnW1(t)
	first, err := c.SendOnce(ctx, id, "request-1", "a", "hello")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.SendOnce(ctx, id, "request-1", "a", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("SendOnce with the same key: input %s, then %s; want the same", first, again)
	}
	other, err := c.SendOnce(ctx, id, "request-2", "a", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if other == first {
		t.Fatal("SendOnce with another key gave the same input id")
	}
	waitInputs(t, ctx, w.inputs, first, other)
	if got, calls := total(t, ctx, w.sys, w.team(id), "a"); got != 6 || calls != 3 {
		t.Fatalf("a: total %d after %d calls; want 6 after 3 (two inputs once each, then one more)", got, calls)
	}
	if _, err := c.SendOnce(ctx, id, "", "a", "hello"); err == nil {
		t.Fatal("SendOnce with an empty key: no error")
	}
}

// Watch yields a team's records in the team's own record order, whatever
// order the stream holds them in: records stored out of order (a publish
// retried after a later one was stored) come in index order, an index stored
// twice comes once, and an old owner's records after a hole, which the next
// owner wrote over, never come.
func TestWatchInRecordOrder(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	team := uuid.New()
	data, err := json.Marshal(lease{Owner: "nobody", Template: "counters", Until: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.kv.Create(ctx, team.String(), data); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]message.Message{}
	publish := func(claim uint64, index uint64, name string) {
		t.Helper()
		m := message.NewUserMessage(name)
		if recs[name] != nil {
			m = recs[name].(*message.UserMessage) // the same record again
		} else {
			m.ID = uuid.New()
			recs[name] = m
		}
		b, err := message.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		msg := &nats.Msg{Subject: cfg.recordsSubject(team), Data: b, Header: nats.Header{
			indexHeader:                             {strconv.FormatUint(index, 10)},
			jetstream.ExpectedLastSubjSeqHeader:     {strconv.FormatUint(claim, 10)},
			jetstream.ExpectedLastSubjSeqSubjHeader: {cfg.claimsSubject(team)},
		}}
		if _, err := c.js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	one, err := claimTeam(ctx, c.js, c.ledger, cfg, team)
	if err != nil {
		t.Fatal(err)
	}
	publish(one, 2, "r2") // stored before r1: r1's publish was retried
	publish(one, 1, "r1")
	publish(one, 1, "r1")   // stored twice
	publish(one, 4, "old4") // after a hole (3 never stored): an orphan
	two, err := claimTeam(ctx, c.js, c.ledger, cfg, team)
	if err != nil {
		t.Fatal(err)
	}
	publish(two, 3, "r3") // the next owner resumed from record 2
	publish(two, 5, "r5")
	publish(two, 4, "r4")

	for _, tc := range []struct {
		from uint64
		want []string
	}{{0, []string{"r1", "r2", "r3", "r4", "r5"}}, {3, []string{"r3", "r4", "r5"}}} {
		wctx, stop := context.WithCancel(ctx)
		var got []string
		for m, err := range c.Watch(wctx, team, tc.from) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.(*message.UserMessage).Content)
			if len(got) == len(tc.want) {
				stop()
			}
		}
		stop()
		if !slices.Equal(got, tc.want) {
			t.Fatalf("Watch from %d: %v; want %v", tc.from, got, tc.want)
		}
	}

	// A record that does not decode is reported (ErrBadRecord) and the
	// watch goes on with the next.
	bad := &nats.Msg{Subject: cfg.recordsSubject(team), Data: []byte("not a record"), Header: nats.Header{
		indexHeader:                             {"6"},
		jetstream.ExpectedLastSubjSeqHeader:     {strconv.FormatUint(two, 10)},
		jetstream.ExpectedLastSubjSeqSubjHeader: {cfg.claimsSubject(team)},
	}}
	if _, err := c.js.PublishMsg(ctx, bad); err != nil {
		t.Fatal(err)
	}
	publish(two, 7, "r7")
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var got []string
	for m, err := range c.Watch(wctx, team, 6) {
		switch {
		case errors.Is(err, ErrBadRecord):
			got = append(got, "bad")
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, m.(*message.UserMessage).Content)
			stop()
		}
	}
	if !slices.Equal(got, []string{"bad", "r7"}) {
		t.Fatalf("Watch from 6: %v; want the bad record reported, then r7", got)
	}
}

// A team's inputs run in the order they were sent, one turn closed before
// the next begins: a burst sent to a running team, and a burst sent to a
// passive one (kept by its shard while it is activated, then given to it),
// each close in the ledger in the order of their sending.
func TestInputsRunInTheOrderSent(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	w, passivated := startIdle(t, ctx, nc, "w", func(cfg *Config) { cfg.IdleAfter = 200 * time.Millisecond })
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	const burst = 20
	texts := make([]string, burst)
	for i := range texts {
		texts[i] = "input " + strconv.Itoa(i)
	}
	var sent []uuid.UUID
	for _, phase := range []string{"running", "passive"} {
		if phase == "passive" {
			for w.team(id) != nil { // passivated after the first burst, not before it
				waitFor(t, ctx, passivated, id, "passivated")
			}
		} else if w.team(id) == nil {
			t.Fatal("the created team does not run on its worker")
		}
		ids := send(t, ctx, c, id, "a", texts...)
		waitInputs(t, ctx, w.inputs, ids...)
		sent = append(sent, ids...)
		log, err := ReadTeam(ctx, nc.Conn, id, Config{})
		if err != nil {
			t.Fatal(err)
		}
		var closed []uuid.UUID
		for _, m := range log {
			if p, ok := m.(*message.ProcessedMessage); ok && slices.Contains(sent, p.MessageID) {
				closed = append(closed, p.MessageID)
			}
		}
		if !slices.Equal(closed, sent) {
			t.Fatalf("%s team: the inputs' turns closed in the order %v; want the order sent, %v", phase, closed, sent)
		}
	}
}

// A flood of inputs to one team (sixteen senders at once) is given to the
// team a few open turns at a time, so its ledger's window of records not
// yet acknowledged never fills: every input runs once on the team as
// created, which is never stopped and resumed, and its ledger reports no
// failure. Given every input at once, the team made records faster than
// JetStream acknowledged them and its ledger stopped it.
func TestAFloodOfInputsKeepsTheLedgerWithinItsWindow(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	const inputs = 400
	w := startNamedWith(t, ctx, nc, system(t), "w", func(cfg *Config) { cfg.Window = 64 })
	w.inputs = make(chan uuid.UUID, inputs)
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	team, l := w.team(id), w.ledgerOf(id)
	if team == nil || l == nil {
		t.Fatal("the created team does not run on its worker")
	}
	sent := make(chan uuid.UUID, inputs)
	errs := make(chan error, inputs)
	var senders sync.WaitGroup
	for s := range 16 {
		senders.Go(func() {
			for k := s; k < inputs; k += 16 {
				in, err := c.Send(ctx, id, "a", "hello")
				if err != nil {
					errs <- err
					return
				}
				sent <- in
			}
		})
	}
	senders.Wait()
	close(sent)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var all []uuid.UUID
	for in := range sent {
		all = append(all, in)
	}
	waitInputs(t, ctx, w.inputs, all...)
	if err := l.Err(); err != nil {
		t.Fatalf("the team's ledger failed under the flood: %v", err)
	}
	if w.team(id) != team {
		t.Fatal("the team was stopped and resumed under the flood")
	}
	select {
	case got := <-w.resumed:
		t.Fatalf("team %s resumed under the flood", got)
	default:
	}
	if _, calls := total(t, ctx, w.sys, team, "a"); calls != inputs+1 {
		t.Fatalf("a: %d calls; want %d (each input once, then one more)", calls, inputs+1)
	}
}
