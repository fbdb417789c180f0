package orchestrator_test

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// seen is one thing a lossySub was told: a record's id, or a run it missed.
type seen struct {
	id     uuid.UUID
	missed orchestrator.Missed
}

// lossySub is a LossySubscriber whose hooks block until its gate opens; it
// notes every record and every run it missed, in order.
type lossySub struct {
	gate chan struct{}
	mu   sync.Mutex
	got  []seen
}

var _ orchestrator.LossySubscriber = (*lossySub)(nil)

func newLossy() *lossySub { return &lossySub{gate: make(chan struct{})} }

func (l *lossySub) OnMessage(m message.Message) {
	<-l.gate
	l.mu.Lock()
	l.got = append(l.got, seen{id: m.Envelope().ID})
	l.mu.Unlock()
}

func (l *lossySub) OnMissed(m orchestrator.Missed) {
	l.mu.Lock()
	l.got = append(l.got, seen{missed: m})
	l.mu.Unlock()
}

func (l *lossySub) seen() []seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]seen(nil), l.got...)
}

// opener returns a function that opens gate once; it is also run at the
// test's end, so that a failed test still lets the team stop.
func opener(t *testing.T, gate chan struct{}) func() {
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	return open
}

// sendMany has src tell dst n messages in one turn, on another goroutine;
// the channel gets the turn's result.
func sendMany(ctx context.Context, src, dst *message.Address, n int) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- proxy.Do(ctx, src, func(c *actor.Context, _ actor.Actor) error {
			for range n {
				if err := c.Send(dst, message.NewUserMessage("x")); err != nil {
					return err
				}
			}
			return nil
		})
	}()
	return done
}

// checkTold checks that what l was told accounts for the log, record by
// record: each record either given to it or inside a run it was told it
// missed, with the run's exact count and first and last ids. It returns
// the number of records missed.
func checkTold(t *testing.T, l *lossySub, log []message.Message) int {
	t.Helper()
	i, missed := 0, 0
	for k, s := range l.seen() {
		if s.missed.Records == 0 {
			if i >= len(log) || log[i].Envelope().ID != s.id {
				t.Fatalf("item %d: the subscriber got %s; the log has %s at %d", k, s.id, idAt(log, i), i)
			}
			i++
			continue
		}
		m := s.missed
		last := i + m.Records - 1
		if last >= len(log) || log[i].Envelope().ID != m.First || log[last].Envelope().ID != m.Last {
			t.Fatalf("item %d: told it missed %d records %s..%s; the log has %s..%s at %d", k, m.Records, m.First, m.Last, idAt(log, i), idAt(log, last), i)
		}
		i += m.Records
		missed += m.Records
	}
	if i != len(log) {
		t.Fatalf("the subscriber accounts for %d records of %d", i, len(log))
	}
	return missed
}

func idAt(log []message.Message, i int) any {
	if i < 0 || i >= len(log) {
		return "nothing"
	}
	return log[i].Envelope().ID
}

// awaitBackpressure returns once a member of team waits for room in its
// backlog, the sender's turn (done) still running: it polls the ledger's
// state, which is the state under test. It fails if the backlog holds more
// than its bound while a member waits.
func awaitBackpressure(ctx context.Context, t *testing.T, team *orchestrator.Team, done <-chan error) {
	t.Helper()
	for {
		pending, waiting := orchestrator.Backlog(team)
		if waiting {
			if pending > int64(orchestrator.MaxBacklog) {
				t.Fatalf("%d records pending with a member waiting; the bound is %d", pending, orchestrator.MaxBacklog)
			}
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the sender finished (%v) while the subscriber consumed nothing", err)
		case <-ctx.Done():
			t.Fatal("no member ever waited for the backlog")
		default:
			runtime.Gosched()
		}
	}
}

func quiet() actor.Actor {
	return actor.Func(func(*actor.Context, any) (any, error) { return nil, nil })
}

// A lossy subscriber that does not consume at all never makes a member
// wait: the team's sends all complete (a wait would hang: the stall limit
// is an hour here), records that do not fit its queue are dropped for it
// alone, and once it resumes it is told, in order, exactly which runs of
// records it missed.
func TestSlowLossySubscriberDoesNotSlowTheTeam(t *testing.T) {
	defer orchestrator.SetStallTimeout(time.Hour)()
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithRetention(math.MaxInt))
	ctx := actortest.Context(t)
	sink := mustSpawn(t, team, quiet(), named("sink"))
	src := mustSpawn(t, team, quiet(), named("src"))
	lossy := newLossy()
	open := opener(t, lossy.gate)
	if err := team.Subscribe(ctx, lossy); err != nil {
		t.Fatal(err)
	}
	before, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	n := orchestrator.MaxBacklog // 3n records: far more than its queue, and than the backlog
	if err := <-sendMany(ctx, src, sink, n); err != nil {
		t.Fatalf("the sender did not complete while the lossy subscriber was stuck: %v", err)
	}
	if _, err := sys.Ask(ctx, sink, message.NewUserMessage("barrier")); err != nil {
		t.Fatal(err) // every Received and Processed of the n is in the log
	}
	log, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	open()
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	missed := checkTold(t, lossy, log[len(before):])
	if missed == 0 {
		t.Fatal("the stuck subscriber missed nothing: its queue is not bounded")
	}
}

// A lossless subscriber that does not consume makes the members wait
// once its queue is full, and it is the only one that does: with a lossy
// subscriber stuck beside it, releasing the lossless one alone lets the
// sender finish; the lossless one then gets every record.
func TestSlowLosslessSubscriberAloneMakesTheTeamWait(t *testing.T) {
	defer orchestrator.SetReportEvery(0)()
	defer orchestrator.SetStallTimeout(time.Hour)()
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithRetention(math.MaxInt))
	ctx := actortest.Context(t)
	sink := mustSpawn(t, team, quiet(), named("sink"))
	src := mustSpawn(t, team, quiet(), named("src"))
	lossy, lossless := newLossy(), &gateSub{gate: make(chan struct{})}
	openLossy, openLossless := opener(t, lossy.gate), opener(t, lossless.gate)
	for _, s := range []orchestrator.Subscriber{lossy, lossless} {
		if err := team.Subscribe(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	n := 2 * orchestrator.MaxBacklog
	done := sendMany(ctx, src, sink, n)
	awaitBackpressure(ctx, t, team, done)
	openLossless()
	if err := <-done; err != nil {
		t.Fatalf("with the lossy subscriber still stuck, the sender did not finish: %v", err)
	}
	if _, err := sys.Ask(ctx, sink, message.NewUserMessage("barrier")); err != nil {
		t.Fatal(err)
	}
	openLossy()
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Sent, Received and Processed of each message, the barrier's
	// Received and Processed.
	if want := 3*n + 2; lossless.n < want {
		t.Fatalf("the lossless subscriber saw %d records, want at least %d", lossless.n, want)
	}
	if len(lossy.seen()) == 0 {
		t.Fatal("the lossy subscriber was told nothing")
	}
	// The wait is on the record: a warning of the orchestrator's names the
	// subscriber the members waited for.
	warnings, err := team.Messages(ctx, orchestrator.Filter{Type: "WarningMessage"})
	if err != nil {
		t.Fatal(err)
	}
	reported := false
	for _, w := range orchestrator.Select[*message.WarningMessage](warnings) {
		reported = reported || (w.Sender.AgentID() == team.Address().AgentID() && strings.Contains(w.Content, "members waited") && strings.Contains(w.Content, "gateSub"))
	}
	if !reported {
		for _, w := range orchestrator.Select[*message.WarningMessage](warnings) {
			t.Logf("%s: %s", w.Sender, w.Content)
		}
		t.Fatal("no warning reports the members' wait")
	}
}
