package cluster

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// A team's ledger in JetStream holds the same records, in the same order, as
// its event log; a restore from the stream gives back the team (ids, roster,
// states) as a restore from the file does, and the restored team goes on
// writing after the records it was restored from. Team.Messages past the
// in-memory window reads the stream (Archive).
func TestLedgerRestoreEqualsOriginal(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	// The whole ledger read back (snapshots off: snapshot_test.go).
	cfg := Config{Logger: discard, Owner: "first", SnapshotEvery: -1}
	teamID := uuid.New()

	l, log, err := OpenLedger(ctx, nc.Conn, teamID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 0 {
		t.Fatalf("a new team has %d records", len(log))
	}
	path := filepath.Join(t.TempDir(), "team.log")
	w, err := eventlog.Create(path, teamID, eventlog.Options{Sync: eventlog.SyncNone, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	sys := system(t)
	team, err := orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(l, w), orchestrator.WithRetention(32))
	if err != nil {
		t.Fatal(err)
	}
	l.Attach(team)
	a, b := spawnCounters(t, ctx, team)
	ask(t, ctx, sys, a, 20)
	ask(t, ctx, sys, b, 3)
	if err := team.SetMetadata(ctx, map[string]any{"topic": "ledger"}); err != nil {
		t.Fatal(err)
	}
	all, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatalf("Messages past the window of 32, read from the stream: %v", err)
	}
	if len(all) <= 32 {
		t.Fatalf("Messages: %d records, want the whole log (> 32, the window)", len(all))
	}
	wantRoster, wantStates := roster(t, ctx, team), states(t, ctx, team)
	if len(wantStates) != 2 {
		t.Fatalf("states before the stop: %v", wantStates)
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Ledger.Err after the stop: %v", err)
	}

	fileLog, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	streamLog, err := ReadTeam(ctx, nc.Conn, teamID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(streamLog), ids(fileLog.Messages)) {
		t.Fatalf("stream: %d records, file: %d; the ids differ", len(streamLog), len(fileLog.Messages))
	}
	for i, m := range streamLog {
		if message.TypeName(m) != message.TypeName(fileLog.Messages[i]) {
			t.Fatalf("record %d: %s in the stream, %s in the file", i, message.TypeName(m), message.TypeName(fileLog.Messages[i]))
		}
	}

	// Restore from the stream (a new claim) and from the file: the same team.
	l2, log2, err := OpenLedger(ctx, nc.Conn, teamID, Config{Logger: discard, Owner: "second", SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(log2), ids(streamLog)) {
		t.Fatalf("OpenLedger's log: %d records, ReadTeam's: %d", len(log2), len(streamLog))
	}
	sys2 := system(t)
	team2, err := orchestrator.Restore(ctx, sys2, log2, orchestrator.WithSubscribers(l2))
	if err != nil {
		t.Fatal(err)
	}
	l2.Attach(team2)
	sys3 := system(t)
	team3, err := orchestrator.Restore(ctx, sys3, fileLog.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if team2.ID() != teamID {
		t.Fatalf("restored team id %s, want %s", team2.ID(), teamID)
	}
	for _, got := range [][]string{roster(t, ctx, team2), roster(t, ctx, team3)} {
		if !slices.Equal(got, wantRoster) {
			t.Fatalf("restored roster %v, want %v", got, wantRoster)
		}
	}
	if got := states(t, ctx, team2); !mapsEqual(got, wantStates) {
		t.Fatalf("states restored from the stream %v, want %v", got, wantStates)
	}
	if got := states(t, ctx, team3); !mapsEqual(got, wantStates) {
		t.Fatalf("states restored from the file %v, want %v", got, wantStates)
	}
	meta, err := team2.Metadata(ctx)
	if err != nil || meta == nil {
		t.Fatalf("restored metadata %v, %v", meta, err)
	}
	if err := team3.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// The restored team goes on: its state continues, its records follow.
	a2, err := team2.Member(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	total, err := sys2.Ask(ctx, a2, message.NewUserMessage("once more"))
	if err != nil || total != 42 {
		t.Fatalf("restored a answered %v, %v; want 42 (20 steps of 2, then one more)", total, err)
	}
	if err := team2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l2.Err(); err != nil {
		t.Fatal(err)
	}
	after, err := ReadTeam(ctx, nc.Conn, teamID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) <= len(streamLog) || !slices.Equal(ids(after[:len(streamLog)]), ids(streamLog)) {
		t.Fatalf("after the restored run: %d records, want the %d before, then more", len(after), len(streamLog))
	}
}

func mapsEqual(a, b map[uuid.UUID]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// countedLedger is a team of counters on an embedded server that answered
// three asks, with its records, every one acknowledged, and the last one
// stored.
func countedLedger(t *testing.T) (context.Context, *Ledger, *orchestrator.Team, []message.Message, *jetstream.RawStreamMsg) {
	t.Helper()
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	l, team, sys := newTeam(t, ctx, nc, Config{Logger: discard})
	a, _ := spawnCounters(t, ctx, team)
	ask(t, ctx, sys, a, 3)
	before, err := acked(ctx, team, l)
	if err != nil {
		t.Fatal(err)
	}
	last, err := l.st.GetLastMsgForSubject(ctx, l.recSubj)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, l, team, before, last
}

// A record published again (its acknowledgement lost, the publish retried) is
// stored once: its record id is the deduplication id.
func TestLedgerRetryIsDeduplicated(t *testing.T) {
	ctx, l, team, before, last := countedLedger(t)
	// The last record, as if its acknowledgement had been lost: sent again.
	again := &nats.Msg{Subject: l.recSubj, Data: last.Data, Header: last.Header}
	l.mu.Lock()
	l.unacked[indexOf(again)] = again
	l.retry = append(l.retry, again)
	l.mu.Unlock()
	if !l.resend() {
		t.Fatal("resend: not handed to the client")
	}
	if err := l.flush(ctx, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	now, err := l.st.GetLastMsgForSubject(ctx, l.recSubj)
	if err != nil {
		t.Fatal(err)
	}
	if now.Sequence != last.Sequence {
		t.Fatalf("the record sent again was stored again: last sequence %d, was %d", now.Sequence, last.Sequence)
	}
	after, err := acked(ctx, team, l)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(after), ids(before)) {
		t.Fatalf("history after the retry: %d records, before: %d", len(after), len(before))
	}
	stopClean(t, ctx, team, l)
}

// A read takes every record the stream holds for the team, in as many pulls
// as they need: here the last record is stored readSlack+8 times more (a
// publish retried past the duplicate window, again and again), more than the
// first pull asks for, and the read still gives the ledger once, in order.
func TestReadTakesRecordsPastItsFirstPull(t *testing.T) {
	ctx, l, team, before, last := countedLedger(t)
	for range readSlack + 8 {
		again := &nats.Msg{Subject: l.recSubj, Data: last.Data, Header: nats.Header{}}
		for k, v := range last.Header {
			again.Header[k] = v
		}
		again.Header.Set(nats.MsgIdHdr, uuid.NewString()) // not a duplicate to the server
		if _, err := l.js.PublishMsg(ctx, again); err != nil {
			t.Fatal(err)
		}
	}
	read, _, err := readRecords(ctx, l.st, l.recSubj)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(read), ids(before)) {
		t.Fatalf("read %d records; the ledger has %d", len(read), len(before))
	}
	stopClean(t, ctx, team, l)
}

// With the NATS server down, the team keeps working while the window has
// room; its records are buffered and stored once the server is back, nothing
// lost or duplicated.
func TestLedgerServerDownWithinWindow(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	l, team, sys := newTeam(t, ctx, nc, Config{Logger: discard, Window: 256})
	a, _ := spawnCounters(t, ctx, team)
	ask(t, ctx, sys, a, 5)

	e.Close()
	ask(t, ctx, sys, a, 10)                // about 40 records: within the window
	if err := team.Sync(ctx); err != nil { // every record reached the Ledger
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Err with the server down, within the window: %v", err)
	}
	if err := e.restart(); err != nil {
		t.Fatal(err)
	}
	assertStored(t, ctx, team, l) // waits for every acknowledgement
	stopClean(t, ctx, team, l)
}

// Past the window, the failure is reported: Err wraps ErrWindowFull and the
// team gets a WarningMessage; the team itself goes on. When the server is
// back the stream holds a prefix of the ledger with no hole.
func TestLedgerWindowFullIsReported(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	cfg := Config{Logger: discard, Window: 8}
	warned := make(warnings, 1)
	l, team, sys := newTeam(t, ctx, nc, cfg, warned)
	teamID := team.ID()
	a, _ := spawnCounters(t, ctx, team)
	if _, err := acked(ctx, team, l); err != nil { // the start acknowledged
		t.Fatal(err)
	}
	e.Close()
	ask(t, ctx, sys, a, 5)                 // 2 records each at least: past 8
	if err := team.Sync(ctx); err != nil { // every record reached the Ledger
		t.Fatal(err)
	}
	if err := l.Err(); !errors.Is(err, ErrWindowFull) {
		t.Fatalf("Err = %v, want ErrWindowFull", err)
	}
	select {
	case w := <-warned:
		if !strings.Contains(w, "window full") {
			t.Fatalf("warning %q does not say the window is full", w)
		}
	case <-ctx.Done():
		t.Fatal("no WarningMessage reached the team")
	}
	ask(t, ctx, sys, a, 1) // the team goes on
	if err := e.restart(); err != nil {
		t.Fatal(err)
	}
	if err := team.Stop(ctx); err != nil { // flushes what the window held
		t.Fatal(err)
	}
	got, err := ReadTeam(ctx, nc.Conn, teamID, cfg)
	if err != nil {
		t.Fatalf("the stream has a hole: %v", err)
	}
	want, err := team.Messages(ctx, orchestrator.Filter{Type: ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= len(want) {
		t.Fatalf("stream: %d records, the team: %d; want a strict prefix", len(got), len(want))
	}
	assertUnique(t, got)
	if !errors.Is(l.Err(), ErrWindowFull) {
		t.Fatalf("Err after the stop = %v", l.Err())
	}
}

// isSubsequence reports whether every element of sub appears in s, in
// order.
func isSubsequence(sub, s []uuid.UUID) bool {
	i := 0
	for _, x := range s {
		if i < len(sub) && sub[i] == x {
			i++
		}
	}
	return i == len(sub)
}

func assertUnique(t *testing.T, msgs []message.Message) {
	t.Helper()
	seen := map[uuid.UUID]bool{}
	for _, m := range msgs {
		id := m.Envelope().ID
		if seen[id] {
			t.Fatalf("record %s (%s) stored twice", id, message.TypeName(m))
		}
		seen[id] = true
	}
}

var _ actor.Actor = (*counter)(nil)

// newTeam claims a new team with cfg and starts it on a system of its own
// with its Ledger (and subs) attached.
func newTeam(t *testing.T, ctx context.Context, nc *conn, cfg Config, subs ...orchestrator.Subscriber) (*Ledger, *orchestrator.Team, *actor.System) {
	t.Helper()
	teamID := uuid.New()
	l, log, err := OpenLedger(ctx, nc.Conn, teamID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 0 {
		t.Fatalf("a new team has %d records", len(log))
	}
	sys := system(t)
	team, err := orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(append([]orchestrator.Subscriber{l}, subs...)...))
	if err != nil {
		t.Fatal(err)
	}
	l.Attach(team)
	return l, team, sys
}

// stopClean stops the team and checks its Ledger stored every record.
func stopClean(t *testing.T, ctx context.Context, team *orchestrator.Team, l *Ledger) {
	t.Helper()
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Ledger.Err after the stop: %v", err)
	}
}
