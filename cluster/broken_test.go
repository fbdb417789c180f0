package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/orchestrator"
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

// A team whose ledger broke (JetStream refused a record for good: here the
// stream is full) does not go on running with records that go nowhere: its
// worker stops it and, once its lease ended, resumes it from the stream,
// where its next input is stored again; the input whose turn was lost is run
// again (at least once), and the ledger has no hole.
func TestBrokenLedgerTeamResumes(t *testing.T) {
	ctx, nc, c, w, id := teamOnW1(t)
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

// A team that stopped on its own just before its worker closed stays stopped:
// Close marks its lease stopped, as a renewal would have, instead of handing
// it over to be resumed.
func TestCloseKeepsAStoppedTeamStopped(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
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

// Two workers with one Owner took each other's teams for their own. A worker
// does not start while a live worker has its Owner; once that one closed, the
// name is free again.
func TestOwnerIsUnique(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
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

// A team with a record this worker cannot decode (a newer worker's type, say)
// is not taken over and over: the worker that failed releases the lease with
// the failure, which Teams shows, and waits a backoff before it tries again.
func TestUndecodableTeamBacksOff(t *testing.T) {
	ctx, nc, c, w1, id := teamOnW1(t)
	stored, err := acked(ctx, w1.team(id), w1.ledgerOf(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	bad := &nats.Msg{Subject: Config{}.withDefaultsT(t).recordsSubject(id), Data: []byte(`{"__model__":"FromTheFuture"}`),
		Header: nats.Header{indexHeader: {strconv.Itoa(len(stored) + 1)}}}
	if _, err := c.js.PublishMsg(ctx, bad); err != nil {
		t.Fatal(err)
	}

	var logs logCapture
	scans := make(chan struct{}, 64)
	cfg := Config{Logger: logs.logger(), Lease: testLease, Owner: "w2", scanned: func() { scans <- struct{}{} }}
	w2, err := StartWorker(ctx, nc.Conn, system(t), cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w2.Close(context.Background()) })
	for range 4 { // about a lease of scans (the first backoff): one failure
		select {
		case <-scans:
		case <-ctx.Done():
			t.Fatal("the worker does not scan")
		}
	}
	// A loaded machine may take more than the backoff for four scans: a
	// second try then waits twice as long.
	if n := strings.Count(logs.String(), "cannot resume a team"); n != 1 && (n != 2 || !strings.Contains(logs.String(), "retry_in=4s")) {
		t.Fatalf("%d failed resumes in four scans; want 1, then a backoff doubling\n%s", n, logs.String())
	}
	teams, err := c.Teams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(teams) != 1 || !strings.Contains(teams[0].Error, "w2 could not resume it") || !strings.Contains(teams[0].Error, "FromTheFuture") ||
		teams[0].Until.After(time.Now()) || w2.team(id) != nil {
		t.Fatalf("Teams = %+v; want the failure, the lease released, the team run nowhere", teams)
	}
}

func (c Config) withDefaultsT(t *testing.T) Config {
	t.Helper()
	c, err := c.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A restore that takes longer than a lease (a long ledger) keeps its lease:
// the worker renews it while it restores, so no other worker takes the team
// over meanwhile.
func TestSlowRestoreKeepsItsLease(t *testing.T) {
	ctx, nc, c, w1, id := teamOnW1(t)
	slow, entered, unblock := stuckRestore()
	w2 := startNamed(t, ctx, nc, system(t), "w2", slow)
	t.Cleanup(unblock)                    // before w2's close (cleanups run last first)
	if err := w1.Close(ctx); err != nil { // w2 takes the team over
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the restore did not begin")
	}
	scans := make(chan struct{}, 64)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "w3", scanned: func() { scans <- struct{}{} }}
	w3, err := StartWorker(ctx, nc.Conn, system(t), cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w3.Close(context.Background()) })
	for range 7 { // more than two leases
		select {
		case <-scans:
		case <-ctx.Done():
			t.Fatal("the third worker does not scan")
		}
	}
	teams, err := c.Teams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w3.team(id) != nil || len(teams) != 1 || teams[0].Owner != "w2" || !teams[0].Until.After(time.Now()) {
		t.Fatalf("during the slow restore: Teams = %+v, on w3 %v; want w2's lease running", teams, w3.team(id) != nil)
	}
	unblock()
	takenOver(t, ctx, w2.Worker, w2.resumed, id)
}

// Close keeps to its context while a takeover is under way (a restore stuck
// in a member's preparation here): it cancels it, and returns with the
// context's error when it does not end.
func TestCloseKeepsToItsContext(t *testing.T) {
	ctx, nc, _, w1, _ := teamOnW1(t)
	stuck, entered, unblock := stuckRestore()
	w2 := startNamed(t, ctx, nc, system(t), "w2", stuck)
	if err := w1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the restore did not begin")
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := w2.Close(short)
	unblock()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still running: takeovers 1") {
		t.Fatalf("Close during a stuck takeover: %v; want its context's error, naming the takeover loop", err)
	}
}

// A Build that uses up the create's context (longer than a lease) does not
// leave a team running whose input is never read: the inbox is opened with a
// context of its own.
func TestSlowBuildStillReadsInput(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	slow := map[string]Template{"slow": {Person: "@Human", Build: func(ctx context.Context, t *orchestrator.Team, p json.RawMessage) error {
		if err := hireCounters(ctx, t, p); err != nil {
			return err
		}
		<-ctx.Done() // the create's context ends while Build runs
		return nil
	}}}
	inputs := make(chan uuid.UUID, 4)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "w1", inputDone: func(id uuid.UUID) { inputs <- id }}
	w, err := StartWorker(ctx, nc.Conn, system(t), cfg, slow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	c := client(t, ctx, nc)
	id, err := c.Create(ctx, "slow", nil) // served with a context of a lease
	if err != nil {
		t.Fatalf("Create with a slow Build: %v", err)
	}
	waitInputs(t, ctx, inputs, send(t, ctx, c, id, "a", "hello")...)
}

// A team a client stops while a worker restores it is not run: the worker's
// hold on the lease sees the stop, and the restored copy is stopped before it
// is registered or reads input.
func TestStopDuringRestore(t *testing.T) {
	ctx, nc, c, w1, id := teamOnW1(t)
	slow, entered, unblock := stuckRestore()
	var logs logCapture
	sys := system(t)
	w2, err := StartWorker(ctx, nc.Conn, sys, Config{Logger: logs.logger(), Lease: testLease, Owner: "w2"}, counters, slow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w2.Close(context.Background()) })
	t.Cleanup(unblock)
	if err := w1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the restore did not begin")
	}
	if err := c.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	logs.waitLog(t, ctx, "the restore ends") // the hold's next renewal saw the stop
	unblock()
	logs.waitLog(t, ctx, "lost while this worker restored it")
	if w2.team(id) != nil {
		t.Fatal("the team stopped during its restore runs")
	}
}

// teamOnW1 is the start of many worker tests: an embedded server, a
// connection, a client and a worker "w1" running one team of counters.
func teamOnW1(t *testing.T) (context.Context, *conn, *Client, *testWorker, uuid.UUID) {
	t.Helper()
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	w1 := startNamed(t, ctx, nc, system(t), "w1")
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, nc, c, w1, id
}

// stuckRestore is a worker option whose first restored member waits for
// unblock: a restore under way for as long as a test needs. entered
// receives a value when it waits.
func stuckRestore() (opt orchestrator.Option, entered <-chan struct{}, unblock func()) {
	in, release := make(chan struct{}, 1), make(chan struct{})
	var once, released sync.Once
	opt = orchestrator.WithPrepare(func(actor.Actor) {
		once.Do(func() { in <- struct{}{}; <-release })
	})
	return opt, in, func() { released.Do(func() { close(release) }) }
}

// A team that dies without being asked to stop (a raw stop here) is resumed
// after a backoff, the cause in its lease (TeamInfo.Error), not restored
// again at once in a loop.
func TestDeadTeamResumesAfterBackoff(t *testing.T) {
	ctx, _, c, w1, id := teamOnW1(t)
	team := w1.team(id)
	watch, err := w1.kv.Watch(ctx, id.String(), jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer stopWatch(watch)
	if err := w1.sys.Stop(ctx, team.Address()); err != nil { // a raw stop: no Team.Stop
		t.Fatal(err)
	}
	for {
		var e jetstream.KeyValueEntry
		select {
		case e = <-watch.Updates():
		case <-ctx.Done():
			t.Fatal("the dead team's lease was not settled")
		}
		var l lease
		if err := json.Unmarshal(e.Value(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Error == "" {
			continue // a renewal before the death was seen
		}
		if l.Stopped || !strings.Contains(l.Error, "without being asked") || !l.Until.After(time.Now()) {
			t.Fatalf("the dead team's lease %+v; want it released after a backoff, the cause said", l)
		}
		break
	}
	takenOver(t, ctx, w1.Worker, w1.resumed, id) // after the backoff
	teams, err := c.Teams(ctx)
	if err != nil || len(teams) != 1 || teams[0].Error != "" {
		t.Fatalf("Teams after the resume = %+v, %v; want the error cleared", teams, err)
	}
}

// A worker dead for a few leases leaves no presence behind (workers with the
// default Owner, a new name each start, would pile up in the bucket every
// scan reads).
func TestDeadPresenceIsPurged(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	scans := make(chan struct{}, 64)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "alive", scanned: func() { scans <- struct{}{} }}
	w, err := StartWorker(ctx, nc.Conn, system(t), cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	ghost, err := json.Marshal(presence{Owner: "ghost", Until: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.kv.Put(ctx, presenceKey("ghost"), ghost); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the next scan read it
		select {
		case <-scans:
		case <-ctx.Done():
			t.Fatal("the worker does not scan")
		}
	}
	if _, err := w.kv.Get(ctx, presenceKey("ghost")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the dead worker's presence: %v; want it purged", err)
	}
	if _, err := w.kv.Get(ctx, presenceKey("alive")); err != nil {
		t.Fatalf("the live worker's presence: %v", err)
	}
}
