package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// teamRead is one read of a team's ledger (Config.readTeam).
type teamRead struct {
	team         uuid.UUID
	fromSnapshot bool
	records      int
}

// readLog collects the reads of a Config's Ledgers.
type readLog struct {
	mu    sync.Mutex
	reads []teamRead
}

func (r *readLog) hook(team uuid.UUID, fromSnapshot bool, records int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, teamRead{team, fromSnapshot, records})
}

func (r *readLog) all() []teamRead {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reads)
}

// latestSnapshot reads a team's snapshot from the stream, failing the test
// when there is none or it cannot be read.
func latestSnapshot(t *testing.T, ctx context.Context, l *Ledger) *snapshot {
	t.Helper()
	s, err := readSnapshot(ctx, l.st, l.cfg.snapshotSubject(l.team))
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		t.Fatal("the team has no snapshot")
	}
	return s
}

// settled waits until the Ledger has every record acknowledged and no
// snapshot due or under way.
func settled(t *testing.T, ctx context.Context, l *Ledger) {
	t.Helper()
	if err := l.flush(ctx, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	for {
		l.mu.Lock()
		done := !l.snapping && !l.snapDueLocked()
		ch := l.changed
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-time.After(10 * time.Millisecond): // a snapshot's end signals nothing: polled
		case <-ctx.Done():
			t.Fatal("the Ledger's snapshot did not settle")
		}
	}
}

// processedSeen waits until n Processed records have reached l (a turn's
// Processed comes after its answer), failing t when ctx ends first.
func processedSeen(t *testing.T, ctx context.Context, l *Ledger, n int) {
	t.Helper()
	for {
		l.mu.Lock()
		seen := 0
		for _, m := range l.hist {
			if _, ok := m.(*message.ProcessedMessage); ok {
				seen++
			}
		}
		ch := l.changed
		l.mu.Unlock()
		if seen >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%d of %d Processed records reached the Ledger", seen, n)
		}
	}
}

// A team passivated and woken again and again, with snapshots every few
// records and at each passivation, answers every input once (each
// acknowledged once, its turn closed once, the ledger without gap or
// duplicate, the counter's total carried across): each activation reads
// the latest snapshot and only the records after it, none here (the
// passivation's snapshot covers them all).
func TestPassivatedTeamWokenFromSnapshotsAnswersEveryInputOnce(t *testing.T) {
	const cycles = 25
	ctx, cancel := context.WithTimeout(t.Context(), 4*testTimeout)
	defer cancel()
	e := embedded(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	reads := &readLog{}
	w, passivated := startIdle(t, ctx, nc, "idle", func(cfg *Config) {
		cfg.SnapshotEvery = 15
		cfg.readTeam = reads.hook
	})
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []uuid.UUID
	for i := range cycles {
		waitFor(t, ctx, passivated, id, "passivated")
		// Two inputs a wake: over 15 records, a snapshot every few wakes too.
		in := send(t, ctx, c, id, "a", fmt.Sprint("input ", i), fmt.Sprint("more ", i))
		waitInputs(t, ctx, w.inputs, in...)
		inputs = append(inputs, in...)
	}
	waitFor(t, ctx, passivated, id, "passivated")
	select {
	case extra := <-w.inputs:
		t.Fatalf("input %s acknowledged twice", extra)
	default:
	}
	got := reads.all()
	if len(got) < cycles+1 {
		t.Fatalf("%d reads of the team; want its creation's and one per activation (%d)", len(got), cycles)
	}
	for i, r := range got[1:] { // the first: the new team's, empty
		if r.team != id || !r.fromSnapshot || r.records != 0 {
			t.Fatalf("activation %d read %+v; want the team's snapshot and no record after it", i+1, r)
		}
	}
	log, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil { // a gap is an error
		t.Fatal(err)
	}
	assertUnique(t, log)
	assertRunOnce(t, log, inputs) // each sent once, its turn closed once, never run again
	if got, want := lastTotal(log), 2*2*cycles; got != want {
		t.Fatalf("the counter's last total is %d; want %d (every input counted once, across the wakes)", got, want)
	}
}

// A restore after snapshots taken every few records, the old owner still
// running (a takeover after a crash), reads the latest snapshot and only
// the records stored after it, and gives the team a restore of the whole
// ledger gives: the same roster and states, and the team goes on. A
// Watch from after the snapshot reads from where it ends, in the ledger's
// order.
func TestRestoreReadsOnlyTheRecordsAfterTheLatestSnapshot(t *testing.T) {
	ctx := actortest.Context(t)
	e := embedded(t)
	nc := connect(t, e)
	teamID := uuid.New()
	logs := &logCapture{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("the first owner's log:\n", logs.String())
		}
	})
	l, _, err := OpenLedger(ctx, nc.Conn, teamID, Config{Logger: logs.logger(), Owner: "first", SnapshotEvery: 40})
	if err != nil {
		t.Fatal(err)
	}
	sys := system(t)
	team, err := orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(l))
	if err != nil {
		t.Fatal(err)
	}
	l.Attach(team)
	a, b := spawnCounters(t, ctx, team)
	for range 10 { // one at a time, so that the ledger is quiet between them
		ask(t, ctx, sys, a, 3)
		ask(t, ctx, sys, b, 1)
		synced(t, ctx, team, l)
	}
	// One now, so that the records after it are the few that follow.
	forceSnapshot(t, ctx, l)
	if s := latestSnapshot(t, ctx, l); s.Index < 80 {
		t.Fatalf("the latest snapshot covers %d records; want the 80 and more stored", s.Index)
	}
	if err := team.SetMetadata(ctx, map[string]any{"topic": "snapshots"}); err != nil {
		t.Fatal(err)
	}
	ask(t, ctx, sys, a, 1)
	synced(t, ctx, team, l)
	snap := latestSnapshot(t, ctx, l)
	full, err := ReadTeam(ctx, nc.Conn, teamID, Config{})
	if err != nil {
		t.Fatal(err)
	}
	after := uint64(len(full)) - snap.Index
	if snap.Index < 80 || after == 0 || after >= 40 {
		t.Fatalf("the snapshot covers %d of %d records; want most, and some after it", snap.Index, len(full))
	}
	if len(snap.Records) >= int(snap.Index)/4 {
		t.Fatalf("the snapshot keeps %d records of %d", len(snap.Records), snap.Index)
	}

	reads := &readLog{}
	l2, log2, err := OpenLedger(ctx, nc.Conn, teamID, Config{Logger: discard, Owner: "second", readTeam: reads.hook})
	if err != nil {
		t.Fatal(err)
	}
	if got := reads.all(); len(got) != 1 || !got[0].fromSnapshot || got[0].records != int(after) {
		t.Fatalf("the restore read %+v; want the snapshot and the %d records after it", got, after)
	}
	if want := len(snap.Records) + int(after); len(log2) != want {
		t.Fatalf("the restore's log has %d records; want the snapshot's %d and the %d after it", len(log2), len(snap.Records), after)
	}
	sys2 := system(t)
	team2, err := orchestrator.Restore(ctx, sys2, log2, orchestrator.WithSubscribers(l2))
	if err != nil {
		t.Fatal(err)
	}
	l2.Attach(team2)
	sys3 := system(t)
	team3, err := orchestrator.Restore(ctx, sys3, full)
	if err != nil {
		t.Fatal(err)
	}
	if r2, r3 := roster(t, ctx, team2), roster(t, ctx, team3); !slices.Equal(r2, r3) {
		t.Fatalf("roster from the snapshot %v; from the whole ledger %v", r2, r3)
	}
	if s2, s3 := states(t, ctx, team2), states(t, ctx, team3); !mapsEqual(s2, s3) || len(s2) != 2 {
		t.Fatalf("states from the snapshot %v; from the whole ledger %v", s2, s3)
	}
	m2, _ := team2.Metadata(ctx)
	m3, _ := team3.Metadata(ctx)
	if j2, j3 := fmt.Sprint(m2), fmt.Sprint(m3); j2 != j3 || !strings.Contains(j2, "snapshots") {
		t.Fatalf("metadata from the snapshot %s; from the whole ledger %s", j2, j3)
	}
	if err := team3.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The team goes on from the snapshot: a's total (31 steps of 2) and
	// its records after the ones read.
	a2, err := team2.Member(ctx, "a")
	if err != nil || a2 == nil {
		t.Fatalf("no a in the restored team (%v)", err)
	}
	if total, err := sys2.Ask(ctx, a2, message.NewUserMessage("once more")); err != nil || total != 64 {
		t.Fatalf("a answered %v, %v; want 64", total, err)
	}
	// A watch from after the snapshot starts where the records after it
	// are stored, and yields the ledger's records from its index on, the
	// second owner's included.
	c := client(t, ctx, nc)
	putLease(t, ctx, c, teamID, lease{Owner: "second", Template: "counters", Until: time.Now().Add(time.Hour).UTC()})
	synced(t, ctx, team2, l2)
	if s := latestSnapshot(t, ctx, l2); s.Index != snap.Index {
		t.Fatalf("the latest snapshot covers %d records; want the first owner's, %d", s.Index, snap.Index)
	}
	mid, err := ReadTeam(ctx, nc.Conn, teamID, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if seq, index, _, ok := c.snapshotBefore(ctx, teamID, snap.Index+1); !ok || seq != snap.From || index != snap.Index {
		t.Fatalf("the watch from %d starts at stream sequence %d after record %d (%v); want the snapshot's %d after %d",
			snap.Index+1, seq, index, ok, snap.From, snap.Index)
	}
	if _, _, _, ok := c.snapshotBefore(ctx, teamID, snap.Index); ok {
		t.Fatalf("a watch from the snapshot's last record %d starts after the snapshot", snap.Index)
	}
	for _, from := range []uint64{snap.Index + 1, snap.Index + 3, snap.Index, 2} {
		want := ids(mid[from-1:])
		if got := ids(watchN(t, ctx, c, teamID, from, len(want))); !slices.Equal(got, want) {
			t.Fatalf("the watch from %d yields %v; want the ledger's %v", from, got, want)
		}
	}
	if err := team2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l2.Err(); err != nil {
		t.Fatal(err)
	}
	full2, err := ReadTeam(ctx, nc.Conn, teamID, Config{})
	if err != nil {
		t.Fatal(err)
	}
	assertUnique(t, full2)
	if !slices.Equal(ids(full2[:len(full)]), ids(full)) || len(full2) <= len(full) {
		t.Fatalf("the ledger after the restored team's turn: %d records, the first %d not the ones before", len(full2), len(full))
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}

}

// watchN watches the team from index from until it yielded n records.
func watchN(t *testing.T, ctx context.Context, c *Client, team uuid.UUID, from uint64, n int) []message.Message {
	t.Helper()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var got []message.Message
	for m, err := range c.Watch(wctx, team, from) {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, m); len(got) == n {
			break
		}
	}
	return got
}

// An old owner fenced off by another's claim cannot store a snapshot:
// JetStream refuses it as it refuses its records, and the team's latest
// snapshot stays the one before.
func TestFencedOwnersSnapshotIsRefused(t *testing.T) {
	ctx := actortest.Context(t)
	e := embedded(t)
	nc := connect(t, e)
	teamID := uuid.New()
	l, _, err := OpenLedger(ctx, nc.Conn, teamID, Config{Logger: discard, Owner: "old", SnapshotEvery: 1000})
	if err != nil {
		t.Fatal(err)
	}
	sys := system(t)
	team, err := orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(l))
	if err != nil {
		t.Fatal(err)
	}
	l.Attach(team)
	a, _ := spawnCounters(t, ctx, team)
	ask(t, ctx, sys, a, 3)
	// The last turn's Processed record comes after its answer: wait for it,
	// so that no record of the old owner's is written (and refused) after the
	// new owner's claim, and the refusal tested is the snapshot's own.
	processedSeen(t, ctx, l, 3)
	if err := l.flush(ctx, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenLedger(ctx, nc.Conn, teamID, Config{Logger: discard, Owner: "new"}); err != nil {
		t.Fatal(err)
	}
	stored, err := l.writeSnapshot(ctx, true)
	if stored || !errors.Is(err, errSnapshotFenced) {
		l.mu.Lock()
		fenced, unacked := l.fenced, len(l.unacked)
		l.mu.Unlock()
		t.Fatalf("the fenced owner's snapshot: stored %v, %v (ledger fenced %v, %d records unacknowledged); want it refused (%v)",
			stored, err, fenced, unacked, errSnapshotFenced)
	}
	if s, err := readSnapshot(ctx, l.st, l.cfg.snapshotSubject(teamID)); s != nil || err != nil {
		t.Fatalf("the team's snapshot after the refusal: %+v, %v; want none", s, err)
	}
	_ = team.Stop(ctx) // fenced: its stop stores nothing either
	if s, err := readSnapshot(ctx, l.st, l.cfg.snapshotSubject(teamID)); s != nil || err != nil {
		t.Fatalf("the team's snapshot after the fenced team's stop: %+v, %v; want none", s, err)
	}
}

// A snapshot that cannot be read (not JSON), or whose records do not
// decode, is passed over: the restore reads the whole ledger, logs why,
// and gets every record.
func TestBadSnapshotFallsBackToTheWholeLedger(t *testing.T) {
	ctx := actortest.Context(t)
	e := embedded(t)
	nc := connect(t, e)
	teamID := uuid.New()
	l, _, err := OpenLedger(ctx, nc.Conn, teamID, Config{Logger: discard, Owner: "first", SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	sys := system(t)
	team, err := orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(l))
	if err != nil {
		t.Fatal(err)
	}
	l.Attach(team)
	a, b := spawnCounters(t, ctx, team)
	ask(t, ctx, sys, a, 4)
	ask(t, ctx, sys, b, 2)
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	full, err := ReadTeam(ctx, nc.Conn, teamID, Config{})
	if err != nil {
		t.Fatal(err)
	}
	undecodable, err := json.Marshal(snapshot{Version: snapshotVersion, Index: 3, From: 1,
		Records: []json.RawMessage{json.RawMessage(`{"__model__":"NoSuchRecord"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		data []byte
		log  string
	}{
		{"not JSON", []byte("not a snapshot"), "the team's snapshot cannot be read"},
		{"undecodable records", undecodable, "the team's snapshot does not decode"},
	} {
		if _, err := l.js.Publish(ctx, l.cfg.snapshotSubject(teamID), bad.data); err != nil {
			t.Fatal(err)
		}
		logs := &logCapture{}
		reads := &readLog{}
		_, log, err := OpenLedger(ctx, nc.Conn, teamID, Config{Logger: logs.logger(), Owner: "reader " + bad.name, readTeam: reads.hook})
		if err != nil {
			t.Fatalf("%s: %v", bad.name, err)
		}
		if !slices.Equal(ids(log), ids(full)) {
			t.Fatalf("%s: the restore's log has %d records; want the whole ledger's %d", bad.name, len(log), len(full))
		}
		if got := reads.all(); len(got) != 1 || got[0].fromSnapshot || got[0].records != len(full) {
			t.Fatalf("%s: the restore read %+v; want the whole ledger", bad.name, got)
		}
		if !strings.Contains(logs.String(), bad.log) {
			t.Fatalf("%s: the log says %q; want %q", bad.name, logs.String(), bad.log)
		}
	}
}

// synced waits until l has every record team's members emitted so far
// (the team's subscribers are given them on a queue of their own), then
// for it to be settled.
func synced(t *testing.T, ctx context.Context, team *orchestrator.Team, l *Ledger) {
	t.Helper()
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	settled(t, ctx, l)
}

// forceSnapshot makes the latest snapshot of l's team cover every record
// l stored: it stores one, waiting for the ledger to be quiet (every
// record acknowledged) when it is not, unless one stored meanwhile does.
func forceSnapshot(t *testing.T, ctx context.Context, l *Ledger) {
	t.Helper()
	for {
		stored, err := l.writeSnapshot(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if stored {
			return
		}
		settled(t, ctx, l)
		l.mu.Lock()
		last := l.next - 1
		l.mu.Unlock()
		if s, err := readSnapshot(ctx, l.st, l.cfg.snapshotSubject(l.team)); err == nil && s != nil && s.Index == last {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the ledger was never quiet for a snapshot")
		}
	}
}
