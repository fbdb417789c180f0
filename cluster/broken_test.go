package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// limitStream sets the ledger stream's message limit (discard new: the
// next record past it is refused), -1 for none.
func limitStream(t *testing.T, ctx context.Context, js jetstream.JetStream, max int64) {
	t.Helper()
	st, err := js.Stream(ctx, defaultStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxMsgs, sc.Discard = max, jetstream.DiscardNew
	if max < 0 {
		sc.MaxMsgs = -1
	} else {
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sc.MaxMsgs = int64(info.State.Msgs)
	}
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
}

// Issue 14 (review finding): a team whose ledger broke (JetStream refused
// a record for good: here the stream is full) does not go on running with
// records that go nowhere: its worker stops it and, once its lease ended,
// resumes it from the stream, where its next input is stored again; the
// input whose turn was lost is run again (at least once), and the ledger
// has no hole.
func TestBrokenLedgerTeamResumes(t *testing.T) {
	e := embedded(t)
	ctx := ctxT(t)
	nc := connect(t, e)
	w := startNamed(t, ctx, nc, system(t), "w1")
	c := client(t, ctx, nc)
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	team, first := w.team(id), w.ledgerOf(id)
	if _, err := acked(ctx, team, first); err != nil {
		t.Fatal(err)
	}
	limitStream(t, ctx, c.js, 0) // full: the next record is refused
	lost := send(t, ctx, c, id, "a", "while full")
	select {
	case <-team.Done(): // stopped by its worker
	case <-ctx.Done():
		t.Fatal("the team with a broken ledger still runs")
	}
	if _, broken := first.state(); broken == nil {
		t.Fatal("the ledger is not broken")
	}
	limitStream(t, ctx, c.js, -1)
	resumed := takenOver(t, ctx, w.Worker, w.resumed, id)
	waitInputs(t, ctx, w.inputs, lost...) // run again on the resumed team
	after := send(t, ctx, c, id, "a", "after")
	waitInputs(t, ctx, w.inputs, after...)
	if _, err := acked(ctx, resumed, w.ledgerOf(id)); err != nil {
		t.Fatal(err)
	}
	log, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil { // no hole
		t.Fatal(err)
	}
	assertUnique(t, log)
}

// Issue 14 (review finding): a team that stopped on its own just before
// its worker closed stays stopped: Close marks its lease stopped, as a
// renewal would have, instead of handing it over to be resumed.
func TestCloseKeepsAStoppedTeamStopped(t *testing.T) {
	e := embedded(t)
	ctx := ctxT(t)
	nc := connect(t, e)
	sys := system(t)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "w1"}
	w, err := StartWorker(ctx, nc.Conn, sys, cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	team, err := w.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	teams, err := client(t, ctx, nc).Teams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(teams) != 1 || !teams[0].Stopped {
		t.Fatalf("Teams = %+v; want the team stopped", teams)
	}
}

// Issue 14 (review finding): two workers with one Owner took each other's
// teams for their own. A worker does not start while a live worker has its
// Owner; once that one closed, the name is free again.
func TestOwnerIsUnique(t *testing.T) {
	e := embedded(t)
	ctx := ctxT(t)
	nc := connect(t, e)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "same"}
	w1, err := StartWorker(ctx, nc.Conn, system(t), cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	if w2, err := StartWorker(ctx, nc.Conn, system(t), cfg, counters); err == nil || !strings.Contains(err.Error(), "must be unique") {
		if w2 != nil {
			_ = w2.Close(ctx)
		}
		t.Fatalf("a second worker with the Owner of a live one: %v; want a refusal", err)
	}
	if err := w1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	w3, err := StartWorker(ctx, nc.Conn, system(t), cfg, counters)
	if err != nil {
		t.Fatalf("the Owner of a closed worker: %v", err)
	}
	if err := w3.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
