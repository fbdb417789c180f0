package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// client is a Client of the default Config on nc.
func client(t *testing.T, ctx context.Context, nc *conn) *Client {
	t.Helper()
	c, err := NewClient(ctx, nc.Conn, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// watchUntil watches the team from index from until match takes a record
// (true), and reports whether one did before ctx ended.
func watchUntil(t *testing.T, ctx context.Context, c *Client, team uuid.UUID, from uint64, match func(message.Message) bool) bool {
	t.Helper()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	for m, err := range c.Watch(wctx, team, from) {
		if err != nil {
			t.Fatal(err)
		}
		if match(m) {
			return true
		}
	}
	return false
}

// send sends each text to the member and returns the inputs' ids.
func send(t *testing.T, ctx context.Context, c *Client, team uuid.UUID, to string, texts ...string) []uuid.UUID {
	t.Helper()
	var out []uuid.UUID
	for _, s := range texts {
		id, err := c.Send(ctx, team, to, s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// waitInputs waits until the worker acknowledged (or refused) each of the
// inputs, and fails on any other.
func waitInputs(t *testing.T, ctx context.Context, inputs chan uuid.UUID, want ...uuid.UUID) {
	t.Helper()
	var got []uuid.UUID
	for len(got) < len(want) {
		select {
		case id := <-inputs:
			if !slices.Contains(want, id) {
				t.Fatalf("input %s acknowledged; want only %v", id, want)
			}
			got = append(got, id)
		case <-ctx.Done():
			t.Fatalf("inputs acknowledged: %v; want %v", got, want)
		}
	}
}

// total asks a counter of the team for one more step and returns its
// total and its number of calls (the step included).
func total(t *testing.T, ctx context.Context, sys *actor.System, team *orchestrator.Team, name string) (int, int) {
	t.Helper()
	a, err := team.Member(ctx, name)
	if err != nil || a == nil {
		t.Fatalf("member %s: %v, %v", name, a, err)
	}
	v, err := sys.Ask(ctx, a, message.NewUserMessage("one more"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := team.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := -1
	if s, ok := st[a.AgentID()].(*counterState); ok {
		calls = s.Calls
	}
	return v.(int), calls
}

// inboxEmpty checks that the inbox holds no input of the team (each
// acknowledged).
func inboxEmpty(t *testing.T, ctx context.Context, c *Client, team uuid.UUID) {
	t.Helper()
	n, err := teamInputs(ctx, c.js, c.cfg, team)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the inbox holds %d inputs of team %s; want none", n, team)
	}
}

// A team created through the client from a template by name; input sent to
// members by name is delivered from the team's person, each exactly once when
// nothing crashes, and acknowledged once the record closing its turn is
// durable; the client watches the records, lists the team with its owner and
// stops it.
func TestClientInboxDeliversOnce(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	sys := system(t)
	w := startNamed(t, ctx, nc, sys, "w1")
	c := client(t, ctx, nc)

	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	team := w.team(id)
	if team == nil {
		t.Fatal("the created team is not on the worker")
	}
	inputs := send(t, ctx, c, id, "a", "one", "two", "three")
	waitInputs(t, ctx, w.inputs, inputs...)
	if got, calls := total(t, ctx, sys, team, "a"); got != 8 || calls != 4 {
		t.Fatalf("a: total %d after %d calls; want 8 after 4 (each input once, then one more)", got, calls)
	}
	inboxEmpty(t, ctx, c, id)

	// Watch: each input's message from the person, and its turn's close.
	wctx, stop := context.WithCancel(ctx)
	sent, closed := map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
	for m, err := range c.Watch(wctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch r := m.(type) {
		case *message.SentMessage:
			if am, ok := r.Message.(*agent.AgentMessage); ok && slices.Contains(inputs, am.ID) {
				if r.Sender.Name() != "@Human" || r.Recipient.Name() != "a" {
					t.Fatalf("input %s sent by %s to %s; want @Human to a", am.ID, r.Sender.Name(), r.Recipient.Name())
				}
				sent[am.ID] = true
			}
		case *message.ProcessedMessage:
			if slices.Contains(inputs, r.MessageID) {
				closed[r.MessageID] = true
			}
		}
		if len(sent) == len(inputs) && len(closed) == len(inputs) {
			stop()
		}
	}
	stop()
	if len(sent) != 3 || len(closed) != 3 {
		t.Fatalf("watched %d inputs sent and %d processed; want 3 and 3", len(sent), len(closed))
	}

	// An input for no member is refused (acknowledged away), not retried.
	bad := send(t, ctx, c, id, "nobody", "hello")
	waitInputs(t, ctx, w.inputs, bad...)
	inboxEmpty(t, ctx, c, id)

	teams, err := c.Teams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(teams) != 1 || teams[0].ID != id || teams[0].Owner != "w1" || teams[0].Template != "counters" || teams[0].Stopped {
		t.Fatalf("Teams = %+v; want team %s of w1 from counters, running", teams, id)
	}
	if err := c.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-team.Done():
	case <-ctx.Done():
		t.Fatal("the stopped team still runs on its worker")
	}
	if err := c.Stop(ctx, id); err != nil {
		t.Fatalf("Stop of a stopped team: %v", err)
	}
	if teams, err = c.Teams(ctx); err != nil || len(teams) != 1 || !teams[0].Stopped {
		t.Fatalf("Teams after Stop = %+v, %v; want the team stopped", teams, err)
	}
	if _, err := c.Send(ctx, id, "a", "late"); !errors.Is(err, ErrNoSuchTeam) {
		t.Fatalf("Send to a stopped team: %v; want ErrNoSuchTeam", err)
	}
	// Watch of a stopped team: its records, then the end (ctx is not cancelled).
	stored, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range c.Watch(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < len(stored) || n == 0 { // its copy's last records may land after the read
		t.Fatalf("Watch of the stopped team yielded %d records; want its %d", n, len(stored))
	}
	for _, err := range c.Watch(ctx, uuid.New(), 0) {
		if !errors.Is(err, ErrNoSuchTeam) {
			t.Fatalf("Watch of an unknown team: %v; want ErrNoSuchTeam", err)
		}
		n = -1
	}
	if n != -1 {
		t.Fatal("Watch of an unknown team yielded nothing")
	}
}

// The client's errors name what was wrong.
func TestClientErrors(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	if _, err := c.Create(ctx, "nope", nil); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("Create from a template no worker has: %v; want ErrNoTemplate", err)
	}
	if _, err := c.Create(ctx, "a.b", nil); err == nil {
		t.Error("Create from a template name with a dot: no error")
	}
	if _, err := c.Send(ctx, uuid.New(), "a", "hi"); !errors.Is(err, ErrNoSuchTeam) {
		t.Errorf("Send to an unknown team: %v; want ErrNoSuchTeam", err)
	}
	if _, err := c.Send(ctx, uuid.New(), "", "hi"); err == nil {
		t.Error("Send to no member: no error")
	}
	if err := c.Stop(ctx, uuid.New()); !errors.Is(err, ErrNoSuchTeam) {
		t.Errorf("Stop of an unknown team: %v; want ErrNoSuchTeam", err)
	}
	if _, err := NewClient(ctx, nil, Config{}); err == nil {
		t.Error("NewClient(nil): no error")
	}
	sys := system(t)
	if _, err := StartWorker(ctx, nc.Conn, sys, Config{}, map[string]Template{"x y": {Build: hireCounters}}); err == nil {
		t.Error("StartWorker with a template name with a space: no error")
	}
	if _, err := StartWorker(ctx, nc.Conn, sys, Config{}, map[string]Template{"x": {}}); err == nil {
		t.Error("StartWorker with a template without Build: no error")
	}
	w := startNamed(t, ctx, nc, sys, "w")
	if _, err := w.Create(ctx, "counters", []byte("{bad")); err == nil {
		t.Error("Worker.Create with parameters that are not JSON: no error")
	}
	if _, err := c.Create(ctx, "counters", func() {}); err == nil {
		t.Error("Client.Create with parameters that do not encode: no error")
	}
}

// Input sent while no worker owns the team waits in the stream and is
// delivered, once each, when a worker resumes it.
func TestInboxWaitsForAnOwner(t *testing.T) {
	ctx, nc, c, w1, id := teamOnW1(t)
	first := send(t, ctx, c, id, "b", "before")
	waitInputs(t, ctx, w1.inputs, first...)
	if err := w1.Close(ctx); err != nil { // the team's lease released: no owner now
		t.Fatal(err)
	}
	waiting := send(t, ctx, c, id, "b", "while", "nobody", "owns it")

	sys := system(t)
	w2 := startNamed(t, ctx, nc, sys, "w2")
	team := takenOver(t, ctx, w2.Worker, w2.resumed, id)
	waitInputs(t, ctx, w2.inputs, waiting...)
	if got, calls := total(t, ctx, sys, team, "b"); got != 35 || calls != 5 {
		t.Fatalf("b: total %d after %d calls; want 35 after 5 (four inputs once each, then one more)", got, calls)
	}
	inboxEmpty(t, ctx, c, id)
	log, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil {
		t.Fatal(err)
	}
	assertUnique(t, log)
}

// A turn cut by a crash (the owner's connection closed while the turn runs:
// its close never stored) is run again by the team's next owner, as a message
// of its own, and the input is then acknowledged.
func TestInboxRerunsACutTurn(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	c := client(t, ctx, connect(t, e))
	nc1 := connect(t, e)
	startNamed(t, ctx, nc1, system(t), "w1")
	id, err := c.Create(ctx, "held", nil)
	if err != nil {
		t.Fatal(err)
	}
	holding.Store(true)
	t.Cleanup(func() { holding.Store(false) })
	input := send(t, ctx, c, id, "h", "cut")
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the held turn did not begin")
	}
	holding.Store(false)
	nc1.Close() // the crash: nothing more of w1 reaches NATS

	rerunOnNextHolder(t, ctx, e, c, id, input)
}

// A team that stops on its own (not through the client) is marked stopped in
// its lease, after its inbox consumer is deleted; input to it is then refused
// (ErrNoSuchTeam).
func TestStoppedTeamLeavesNoConsumer(t *testing.T) {
	ctx, _, c, w, id := teamOnW1(t)
	watch, err := c.kv.Watch(ctx, id.String(), jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer stopWatch(watch)
	if err := w.team(id).Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for stopped := false; !stopped; {
		select {
		case e := <-watch.Updates():
			var l lease
			if e != nil && json.Unmarshal(e.Value(), &l) == nil && l.Stopped {
				stopped = true
			}
		case <-ctx.Done():
			t.Fatal("the stopped team's lease is not marked stopped")
		}
	}
	if _, err := c.Send(ctx, id, "a", "late"); !errors.Is(err, ErrNoSuchTeam) {
		t.Fatalf("Send to a stopped team: %v; want ErrNoSuchTeam", err)
	}
}

// Watch from a record index catches up from that record of the ledger on, in
// the ledger's order, then follows the records stored after it.
func TestWatchFromIndex(t *testing.T) {
	ctx, nc, c, w, id := teamOnW1(t)
	waitInputs(t, ctx, w.inputs, send(t, ctx, c, id, "a", "one", "two")...)
	log, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(log) < 4 {
		t.Fatalf("the ledger holds %d records; want at least 4", len(log))
	}
	from := uint64(len(log)/2 + 1)
	want := log[from-1:]

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var got []message.Message
	var later []uuid.UUID
	live := false
	for m, err := range c.Watch(wctx, id, from) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
		if len(got) == len(want) { // caught up: a new input must follow
			later = send(t, ctx, c, id, "a", "three")
		}
		if s, ok := m.(*message.SentMessage); ok && len(later) == 1 && s.Message.Envelope().ID == later[0] {
			live = true
			stop()
		}
	}
	if !live {
		t.Fatalf("the watch from record %d ended before the input sent after its catch-up (%d records)", from, len(got))
	}
	for i, m := range want {
		if got[i].Envelope().ID != m.Envelope().ID {
			t.Fatalf("record %d of the watch from %d is %s (%T); want the ledger's record %d, %s (%T)",
				i+1, from, got[i].Envelope().ID, got[i], int(from)+i, m.Envelope().ID, m)
		}
	}
}

// LastRecord is the ledger index and stored time of a team's last record
// (one of the ledger's, read after it); 0 with the zero time and no error
// for an id that names no team and for a team with no record; 0 with the
// time stored for a last record without an index.
func TestLastRecordIsTheLedgersLast(t *testing.T) {
	ctx, nc, c, w, id := teamOnW1(t)
	waitInputs(t, ctx, w.inputs, send(t, ctx, c, id, "a", "one")...)
	index, at, err := c.LastRecord(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	log, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if index == 0 || index > uint64(len(log)) || at.IsZero() || at.After(time.Now()) {
		t.Fatalf("LastRecord = %d at %v; want one of the ledger's %d records, stored by now", index, at, len(log))
	}
	if index, at, err := c.LastRecord(ctx, uuid.New()); err != nil || index != 0 || !at.IsZero() {
		t.Fatalf("LastRecord of an id that names no team = %d, %v, %v; want 0, the zero time, nil", index, at, err)
	}
	team, _, js, subj := rawTeam(t, ctx, nc) // its ledger claimed, no record stored
	if index, at, err := c.LastRecord(ctx, team); err != nil || index != 0 || !at.IsZero() {
		t.Fatalf("LastRecord of a team with no record = %d, %v, %v; want 0, the zero time, nil", index, at, err)
	}
	b, err := message.Marshal(message.NewUserMessage("no index"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, subj, b); err != nil {
		t.Fatal(err)
	}
	if index, at, err := c.LastRecord(ctx, team); err != nil || index != 0 || at.IsZero() {
		t.Fatalf("LastRecord of a last record without an index = %d, %v, %v; want 0, the time it was stored, nil", index, at, err)
	}
}
