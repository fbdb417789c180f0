package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

type counterConfig struct {
	actor.Config
	Step int  `json:"step"`
	Hold bool `json:"hold,omitempty"` // when holding is set, the next turn waits for the actor's stop
}

var (
	// holding holds the next turn of a Hold counter (one turn: the hold is
	// taken by it), the turn a test cuts; the turn run again on the next
	// holder, which may begin before the test learns of the cut, runs.
	holding atomic.Bool
	entered = make(chan struct{}, 1) // a held turn began
)

type counterState struct {
	Total int `json:"total"`
	Calls int `json:"calls"`
}

// counter adds its step per UserMessage and answers the total; recreated
// by a restore, it takes its last state back.
type counter struct {
	actor.Agent[counterConfig, counterState]
}

func init() {
	actor.RegisterKind("cluster_test.counter", func() actor.Actor { return &counter{} })
}

func (w *counter) OnStart(c *actor.Context) error {
	st := &counterState{}
	if c.Restoring() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		s, ok, err := orchestrator.RestoredState[counterState](ctx, c)
		if err != nil {
			return err
		}
		if ok {
			st = s
		}
	}
	if err := w.InitState(st); err != nil {
		return err
	}
	return w.ObserveState()
}

// askContent makes a counter ask its sender the question instead of
// counting.
const (
	askContent = "ask"
	question   = "how much?"
)

func (w *counter) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*agent.AgentMessage); ok && m.Content == askContent && m.Sender != nil {
		return nil, c.Send(m.Sender, agent.NewRequest(question)) // a question for the person
	}
	switch msg.(type) {
	case *message.UserMessage, *agent.AgentMessage:
		if w.Config().Hold && holding.CompareAndSwap(true, false) { // a turn cut by a crash
			entered <- struct{}{}
			<-c.Context().Done()
			return nil, context.Cause(c.Context())
		}
		w.State().Total += w.Config().Step
		w.State().Calls++
		return w.State().Total, nil
	}
	return nil, nil
}

// system is an actor system shut down at the end of the test.
func system(t *testing.T) *actor.System {
	t.Helper()
	sys := actor.NewSystem(actor.SystemConfig{Logger: discard})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return sys
}

var discard = slog.New(slog.DiscardHandler)

// logCapture is a *slog.Logger writing text lines into a buffer.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan struct{} // signalled after each write (changed)
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		select {
		case c.ch <- struct{}{}:
		default:
		}
	}
	return c.buf.Write(p)
}

// changed returns a channel that gets a value after the next write.
func (c *logCapture) changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{}, 1)
	}
	return c.ch
}

// waitLog waits until the log holds s.
func (c *logCapture) waitLog(t *testing.T, ctx context.Context, s string) {
	t.Helper()
	for ch := c.changed(); !strings.Contains(c.String(), s); {
		select {
		case <-ctx.Done():
			t.Fatalf("the log never said %q:\n%s", s, c.String())
		case <-ch:
		}
	}
}

func (c *logCapture) logger() *slog.Logger { return slog.New(slog.NewTextHandler(c, nil)) }

func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// ask sends n UserMessages to a member and checks it answered each.
func ask(t *testing.T, ctx context.Context, sys *actor.System, to *message.Address, n int) {
	t.Helper()
	for i := range n {
		if _, err := sys.Ask(ctx, to, message.NewUserMessage(fmt.Sprint("m", i))); err != nil {
			t.Fatalf("ask %s #%d: %v", to.Name(), i, err)
		}
	}
}

// spawnCounters adds counters a (step 2) and b (step 7) to the team.
func spawnCounters(t *testing.T, ctx context.Context, team *orchestrator.Team) (a, b *message.Address) {
	t.Helper()
	a, err := team.Spawn(ctx, &counter{}, &counterConfig{Config: actor.Config{Name: "a", Role: "Counter"}, Step: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err = team.Spawn(ctx, &counter{}, &counterConfig{Config: actor.Config{Name: "b", Role: "Counter"}, Step: 7})
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// ids returns the ids of msgs, in order.
func ids(msgs []message.Message) []uuid.UUID {
	out := make([]uuid.UUID, len(msgs))
	for i, m := range msgs {
		out[i] = m.Envelope().ID
	}
	return out
}

// roster returns "name id" of each member, sorted.
func roster(t *testing.T, ctx context.Context, team *orchestrator.Team) []string {
	t.Helper()
	ms, err := team.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Name()+" "+m.AgentID().String())
	}
	slices.Sort(out)
	return out
}

// states returns the team's states as their JSON text, by agent id (a
// state replayed from the log and not yet published again by its restored
// actor is raw JSON; the text is the same).
func states(t *testing.T, ctx context.Context, team *orchestrator.Team) map[uuid.UUID]string {
	t.Helper()
	st, err := team.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uuid.UUID]string{}
	for id, v := range st {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = string(b)
	}
	return out
}

// warnings is a subscriber that passes the content of every
// WarningMessage on to a channel.
type warnings chan string

func (w warnings) OnMessage(m message.Message) {
	if wm, ok := m.(*message.WarningMessage); ok && strings.HasPrefix(wm.Content, "cluster:") {
		select {
		case w <- wm.Content:
		default:
		}
	}
}

// acked waits until every record the team emitted so far reached its
// Ledger (a query drains the team first) and was acknowledged, and
// returns the records in the stream.
func acked(ctx context.Context, team *orchestrator.Team, l *Ledger) ([]message.Message, error) {
	if team == nil || l == nil { // a team its worker no longer runs (its lease lost)
		return nil, errors.New("no such team on the worker (its lease lost?)")
	}
	if err := team.Sync(ctx); err != nil {
		return nil, err
	}
	return l.ReadHistory(ctx)
}

// assertStored checks that the stream holds every record of the team, in
// order, once each, all acknowledged.
func assertStored(t *testing.T, ctx context.Context, team *orchestrator.Team, l *Ledger) {
	t.Helper()
	got, err := acked(ctx, team, l)
	if err != nil {
		t.Fatal(err)
	}
	want, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(want) || !isSubsequence(ids(want), ids(got)) {
		t.Fatalf("stream: %d records; the team's %d are not all there in order", len(got), len(want))
	}
	assertUnique(t, got)
}
