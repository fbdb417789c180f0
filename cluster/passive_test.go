package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// passiveCycles is how many times the passivation test puts its team to
// sleep and wakes it.
const passiveCycles = 100

// startIdle starts a worker that passivates its teams idle for a few
// milliseconds; passivated receives each team it passivated. Each of
// opts changes the worker's Config.
func startIdle(t *testing.T, ctx context.Context, nc *conn, owner string, opts ...func(*Config)) (w *testWorker, passivated chan uuid.UUID) {
	t.Helper()
	tw := &testWorker{resumed: make(chan uuid.UUID, passiveCycles+16), inputs: make(chan uuid.UUID, passiveCycles+16)}
	passivated = make(chan uuid.UUID, passiveCycles+16)
	cfg := Config{Logger: discard, Lease: testLease, Owner: owner, IdleAfter: 10 * time.Millisecond,
		resumed:    func(id uuid.UUID) { tw.resumed <- id },
		inputDone:  func(id uuid.UUID) { tw.inputs <- id },
		passivated: func(id uuid.UUID) { passivated <- id },
	}
	for _, o := range opts {
		o(&cfg)
	}
	var err error
	if tw.Worker, err = StartWorker(ctx, nc.Conn, system(t), cfg, counters); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tw.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return tw, passivated
}

// waitFor waits for id on ch.
func waitFor(t *testing.T, ctx context.Context, ch chan uuid.UUID, id uuid.UUID, what string) {
	t.Helper()
	for {
		select {
		case got := <-ch:
			if got == id {
				return
			}
		case <-ctx.Done():
			t.Fatalf("team %s was not %s", id, what)
		}
	}
}

// A team passivated when idle and woken by its next input, again and again,
// answers every input once: each input is acknowledged once, its turn closed
// once in the ledger, never run twice; the ledger has no gap and no
// duplicate; the team's state goes on across the cycles; a passive team
// holds no goroutine, inbox consumer or place in its worker.
func TestPassivatedTeamAnswersEveryInputOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 6*testTimeout)
	defer cancel()
	e := embedded(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	w, passivated := startIdle(t, ctx, nc, "idle")
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []uuid.UUID
	for i := range passiveCycles {
		waitFor(t, ctx, passivated, id, "passivated")
		if i == 0 {
			if w.team(id) != nil {
				t.Fatal("the passivated team still runs on its worker")
			}
			teams, err := c.Teams(ctx)
			if err != nil || len(teams) != 1 || !teams[0].Passive {
				t.Fatalf("Teams: %+v, %v; want the one team, passive", teams, err)
			}
		}
		in := send(t, ctx, c, id, "a", fmt.Sprint("input ", i))
		waitInputs(t, ctx, w.inputs, in...)
		inputs = append(inputs, in...)
	}
	select {
	case extra := <-w.inputs:
		t.Fatalf("input %s acknowledged twice", extra)
	default:
	}
	waitFor(t, ctx, passivated, id, "passivated")
	log, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil { // a gap is an error
		t.Fatal(err)
	}
	assertUnique(t, log)
	assertRunOnce(t, log, inputs) // each sent once, its turn closed once, never run again
	// The counter's state went on: one more input, then its total.
	in := send(t, ctx, c, id, "a", "last")
	waitInputs(t, ctx, w.inputs, in...)
	waitFor(t, ctx, passivated, id, "passivated") // its stop flushed the turn's state, after its close
	log, err = ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lastTotal(log); got != 2*(passiveCycles+1) {
		t.Fatalf("the counter's last total is %d; want %d (every input counted once, across the wakes)", got, 2*(passiveCycles+1))
	}
}

// lastTotal is the total in counter a's last state record of the log (-1
// when none).
func lastTotal(log []message.Message) int {
	total := -1
	for _, m := range log {
		sc, ok := m.(*message.StateChangedMessage)
		if !ok || sc.Sender == nil || sc.Sender.Name() != "a" {
			continue
		}
		b, err := json.Marshal(sc.State)
		var st counterState
		if err == nil && json.Unmarshal(b, &st) == nil {
			total = st.Total
		}
	}
	return total
}

// A passive team is activated by its input alone, published straight
// into the inbox: its shard's holder gets it and activates the team.
func TestPassiveTeamIsActivatedByItsInputAlone(t *testing.T) {
	ctx := actortest.Context(t)
	e := embedded(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	w, passivated := startIdle(t, ctx, nc, "idle")
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, passivated, id, "passivated")
	input := uuid.New()
	_, subj, err := teamShard(ctx, c.js, c.cfg, id)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: subj, Data: []byte("straight in"), Header: nats.Header{
		toHeader: {"a"}, jetstream.MsgIDHeader: {input.String()},
	}}
	if _, err := c.js.PublishMsg(ctx, m); err != nil { // not through Client.Send
		t.Fatal(err)
	}
	waitInputs(t, ctx, w.inputs, input)
}

// stallStop is a member whose stop waits, once in the process (the first
// to stop), until stallRelease is closed, saying so on stallEntered: a
// passivation under way for as long as a test needs.
type stallStop struct{}

// stallGate is the gate the first stallStop to stop waits at: set by the
// test using it.
var stallGate atomic.Pointer[gate]

// gate holds one caller (the first) until released; the others pass.
type gate struct {
	taken   atomic.Bool
	entered chan struct{} // told when the first caller waits
	release chan struct{} // closed to let it go
}

func init() { actor.RegisterKind("cluster.test.stallStop", func() actor.Actor { return &stallStop{} }) }

func (*stallStop) Receive(*actor.Context, any) (any, error) { return nil, nil }

func (*stallStop) OnStop(*actor.Context) {
	if g := stallGate.Load(); g != nil && g.taken.CompareAndSwap(false, true) {
		g.entered <- struct{}{}
		<-g.release
	}
}

// A passivation that takes long (a team slow to stop) holds back neither
// the passivation of the worker's other idle teams nor the renewals: the
// second team is passivated while the first one's stop still waits.
func TestSlowPassivationHoldsBackNoOther(t *testing.T) {
	ctx := actortest.Context(t)
	w, g, free, passivated, _ := stallWorker(t, ctx)

	first, err := w.Create(ctx, "stall", nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.entered: // its passivation began, and waits in its stop
	case <-ctx.Done():
		t.Fatal("the first team was never passivated")
	}
	second, err := w.Create(ctx, "stall", nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-passivated:
		if id != second.ID() {
			t.Fatalf("team %s passivated first; want the second, %s, while the first one's stop waits", id, second.ID())
		}
	case <-ctx.Done():
		t.Fatal("the second team was not passivated while the first one's passivation waited")
	}
	free()
	waitFor(t, ctx, passivated, first.ID(), "passivated")
}

// A team whose passivation outlasts its own lease (its copy slow to stop)
// is not taken over meanwhile by its worker's scan: its lease ended long
// ago, as every running team's does, but until the passivation marks it
// passive its copy still stops, and a take would restore a second copy
// beside it (its agents' ids still registered) and then have its lease
// overwritten as passive while it runs.
func TestTeamBeingPassivatedIsNotTakenOver(t *testing.T) {
	ctx := actortest.Context(t)
	w, g, free, passivated, resumed := stallWorker(t, ctx)

	team, err := w.Create(ctx, "stall", nil)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := w.kv.Get(ctx, team.ID().String())
	if err != nil {
		t.Fatal(err)
	}
	stored := leaseOf(t, ctx, w.kv, team.ID())
	select {
	case <-g.entered: // its passivation began, and waits in its stop
	case <-ctx.Done():
		t.Fatal("the team was never passivated")
	}
	select { // the behaviour under test is the passing of the lease's end
	case <-time.After(time.Until(stored.Until) + 50*time.Millisecond):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	w.takeExpired(ctx) // a scan, the team's lease ended in a shard the worker holds
	select {
	case id := <-resumed:
		t.Fatalf("team %s taken over while its passivation stops it", id)
	default:
	}
	if now, err := w.kv.Get(ctx, team.ID().String()); err != nil || now.Revision() != entry.Revision() {
		t.Fatalf("the team's lease while its passivation stops it: %s, %v; want it as stored at the create (a scan tried to take it)", now.Value(), err)
	}
	free()
	waitFor(t, ctx, passivated, team.ID(), "passivated")
	if l := leaseOf(t, ctx, w.kv, team.ID()); !l.Passive || l.Error != "" {
		t.Fatalf("the lease after the passivation: %+v; want passive, with no error", l)
	}
	if w.team(team.ID()) != nil {
		t.Fatal("the worker runs the passivated team")
	}
}

// stallWorker starts a worker passivating its teams idle for 10 ms, with
// the template "stall", whose member s waits in its stop at the gate g
// (the first to stop in the test) until free is called (at the latest
// when the test ends, before the worker's Close): a passivation under way
// for as long as the test needs. passivated and resumed receive the teams
// the worker passivated and took over.
func stallWorker(t *testing.T, ctx context.Context) (w *Worker, g *gate, free func(), passivated, resumed chan uuid.UUID) {
	t.Helper()
	nc := connect(t, embedded(t))
	g = &gate{entered: make(chan struct{}, 1), release: make(chan struct{})}
	stallGate.Store(g)
	t.Cleanup(func() { stallGate.Store(nil) })
	passivated, resumed = make(chan uuid.UUID, 8), make(chan uuid.UUID, 8)
	// A passivation gives up on a team's stop after FlushTimeout and a
	// beat: longer than the test, so that one holds until released.
	cfg := Config{Logger: discard, Lease: testLease, Owner: "idle", IdleAfter: 10 * time.Millisecond, FlushTimeout: time.Hour,
		passivated: func(id uuid.UUID) { passivated <- id }, resumed: func(id uuid.UUID) { resumed <- id }}
	tmpls := map[string]Template{"stall": {Person: "@Human", Build: func(ctx context.Context, t *orchestrator.Team, _ json.RawMessage) error {
		if _, err := t.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
			return err
		}
		_, err := t.Spawn(ctx, &stallStop{}, &actor.Config{Name: "s", Role: "Stall"})
		return err
	}}}
	w, err := StartWorker(ctx, nc.Conn, system(t), cfg, tmpls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	var release sync.Once
	free = func() { release.Do(func() { close(g.release) }) }
	t.Cleanup(free) // before the worker's Close
	return w, g, free, passivated, resumed
}
