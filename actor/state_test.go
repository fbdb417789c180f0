package actor_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

type agentState struct {
	Count  int            `json:"count"`
	Items  []string       `json:"items"`
	Tags   map[string]int `json:"tags"`
	Nested struct {
		X int `json:"x"`
	} `json:"nested"`
	Bad any `json:"bad,omitempty"`
}

type (
	rawBump    struct{}
	bump       struct{ message.Base }
	appendItem struct{ message.Base }
	setTag     struct{ message.Base }
	nestedBump struct{ message.Base }
	failAfter  struct {
		message.Base
		Warn bool
	}
	poison    struct{ message.Base }
	cure      struct{ message.Base }
	notifyNow struct{ message.Base }
	update    struct {
		message.Base
		Fields map[string]any
	}
	initSame struct{ message.Base }
)

// stateAgent is an Agent with an observed state (unless unobserved).
type stateAgent struct {
	actor.Agent[actor.Config, agentState]
	unobserved bool
}

func (s *stateAgent) OnStart(c *actor.Context) error {
	if err := s.InitState(&agentState{Tags: map[string]int{}}); err != nil {
		return err
	}
	if s.unobserved {
		return nil
	}
	return s.ObserveState()
}

func (s *stateAgent) Receive(c *actor.Context, msg any) (any, error) {
	st := s.State()
	switch m := msg.(type) {
	case rawBump:
		st.Count++
		if c.Sender() == nil {
			return "no sender", nil
		}
		return "sender", nil
	case *bump:
		st.Count++
	case *appendItem:
		st.Items = append(st.Items, "x")
	case *setTag:
		st.Tags["k"]++
	case *nestedBump:
		st.Nested.X++
	case *failAfter:
		st.Count++
		if m.Warn {
			return nil, actor.NewWarning("non-critical issue")
		}
		return nil, errors.New("critical failure")
	case *poison:
		st.Bad = make(chan int)
	case *cure:
		st.Bad = nil
	case *notifyNow:
		st.Count++
		return nil, s.NotifyStateChange()
	case *update:
		return nil, s.UpdateState(m.Fields)
	case *initSame:
		cp := *st
		return nil, s.InitState(&cp)
	default:
		return nil, actor.ErrUnhandled
	}
	return nil, nil
}

// stateChanges returns the states who published, in order (the detached
// copies the StateChangedMessages carry).
func stateChanges(rec *actortest.Recorder, who *message.Address) []*agentState {
	var out []*agentState
	for _, m := range recorded[*message.StateChangedMessage](rec, who) {
		out = append(out, m.State.(*agentState))
	}
	return out
}

// Attach publishes once; a changed turn publishes after
// its ProcessedMessage, with the turn's message as parent; a clean turn
// publishes nothing; an explicit notify moves the baseline.
func TestStateTurnCheckpoint(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := actortest.Spawn(t, root, &stateAgent{}, actor.Config{Name: "s"})
	rec.WaitKind(t, kStateChanged, agent, 1)
	start := len(rec.Kinds(agent))

	m := &bump{}
	_ = sys.Tell(agent, m)
	synced(t, root, agent)
	got := kindsOf(rec, agent, start)
	want := []string{kReceived, kProcessed, kStateChanged}
	if !equalKinds(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	sc := recorded[*message.StateChangedMessage](rec, agent)
	last := sc[len(sc)-1]
	if last.ParentID.UUID != m.ID || !last.ParentID.Valid || last.State.(*agentState).Count != 1 {
		t.Fatalf("state change parent %v value %+v", last.ParentID, last.State)
	}

	// A clean turn publishes nothing.
	start = len(rec.Kinds(agent))
	_ = sys.Tell(agent, &unrelated{})
	synced(t, root, agent)
	if got := kindsOf(rec, agent, start); !equalKinds(got, []string{kReceived, kProcessed}) {
		t.Fatalf("clean turn kinds %v", got)
	}

	// Explicit notify publishes once, mid-turn; the checkpoint stays silent.
	start = len(rec.Kinds(agent))
	_ = sys.Tell(agent, &notifyNow{})
	synced(t, root, agent)
	if got := kindsOf(rec, agent, start); !equalKinds(got, []string{kReceived, kStateChanged, kProcessed}) {
		t.Fatalf("explicit notify kinds %v", got)
	}
	// The published value is a detached copy.
	copies := stateChanges(rec, agent)
	copies[len(copies)-1].Count = 1000
	if v, _ := proxy.Ask(actortest.Context(t), agent, func(_ *actor.Context, a *stateAgent) (int, error) {
		return a.State().Count, nil
	}); v != 2 {
		t.Fatalf("live state count %v: the published copy aliases it", v)
	}
}

// Deep mutation: list append, map write and nested change each
// publish exactly once.
func TestDeepMutationPublishesOnce(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := actortest.Spawn(t, root, &stateAgent{}, actor.Config{Name: "deep"})
	rec.WaitKind(t, kStateChanged, agent, 1)
	for i, m := range []message.Message{&appendItem{}, &setTag{}, &nestedBump{}} {
		_ = sys.Tell(agent, m)
		_ = sys.Tell(agent, &unrelated{}) // a second checkpoint: silent
		synced(t, root, agent)
		if n := len(stateChanges(rec, agent)); n != i+2 {
			t.Fatalf("after %T: %d publications, want %d", m, n, i+2)
		}
	}
}

// A failing turn publishes its state
// before Processed and the ErrorMessage / WarningMessage.
func TestFailingTurnPublishesItsStateFirst(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := actortest.Spawn(t, root, &stateAgent{}, actor.Config{Name: "f"})
	rec.WaitKind(t, kStateChanged, agent, 1)
	for _, warn := range []bool{false, true} {
		start := len(rec.Kinds(agent))
		_ = sys.Tell(agent, &failAfter{Warn: warn})
		synced(t, root, agent)
		last := kError
		if warn {
			last = kWarning
		}
		want := []string{kReceived, kStateChanged, kProcessed, last}
		if got := kindsOf(rec, agent, start); !equalKinds(got, want) {
			t.Fatalf("warn=%v kinds %v, want %v", warn, got, want)
		}
	}
}

// Stop checkpoints: a mutation made through a proxy call
// publishes nothing until stop, then once, before the StopMessage; an
// unchanged state stops with no publication.
func TestStopCheckpointsTheState(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := actortest.Spawn(t, root, &stateAgent{}, actor.Config{Name: "p"})
	rec.WaitKind(t, kStateChanged, agent, 1)
	start := len(rec.Kinds(agent))
	if err := proxy.Do(actortest.Context(t), agent, func(_ *actor.Context, a *stateAgent) error {
		a.State().Count = 7
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	synced(t, root)
	if got := kindsOf(rec, agent, start); len(got) != 0 {
		t.Fatalf("proxy call emitted %v", got)
	}
	if err := sys.Stop(actortest.Context(t), agent); err != nil {
		t.Fatal(err)
	}
	synced(t, root)
	if got := kindsOf(rec, agent, start); !equalKinds(got, []string{kStateChanged, kStop}) {
		t.Fatalf("stop kinds %v", got)
	}
	if c := stateChanges(rec, agent); c[len(c)-1].Count != 7 {
		t.Fatalf("stop published %+v", c[len(c)-1])
	}

	clean := actortest.Spawn(t, root, &stateAgent{}, actor.Config{Name: "clean"})
	rec.WaitKind(t, kStateChanged, clean, 1)
	start = len(rec.Kinds(clean))
	if err := sys.Stop(actortest.Context(t), clean); err != nil {
		t.Fatal(err)
	}
	synced(t, root)
	if got := kindsOf(rec, clean, start); !equalKinds(got, []string{kStop}) {
		t.Fatalf("clean stop kinds %v", got)
	}
}

// Unserializable state: an asked turn returns the
// serialization error with one Processed and no publication and no warning;
// a failing told turn still reports its ErrorMessage and logs one warning.
func TestUnserializableState(t *testing.T) {
	sys, rec, root, logs := newTeam(t)
	agent := actortest.Spawn(t, root, &stateAgent{}, actor.Config{Name: "u"})
	rec.WaitKind(t, kStateChanged, agent, 1)
	start := len(rec.Kinds(agent))
	_, err := sys.Ask(actortest.Context(t), agent, &poison{})
	if err == nil {
		t.Fatal("asked turn with unserializable state returned no error")
	}
	synced(t, root)
	if got := kindsOf(rec, agent, start); !equalKinds(got, []string{kReceived, kProcessed}) {
		t.Fatalf("ask kinds %v", got)
	}
	if n := logs.Count(slog.LevelWarn, "checkpoint"); n != 0 {
		t.Fatalf("%d checkpoint warnings on the ask path", n)
	}
	start = len(rec.Kinds(agent))
	_ = sys.Tell(agent, &failAfter{})
	synced(t, root, agent)
	if got := kindsOf(rec, agent, start); !equalKinds(got, []string{kReceived, kProcessed, kError}) {
		t.Fatalf("told failing turn kinds %v", got)
	}
	if n := logs.Count(slog.LevelWarn, "checkpoint failed"); n != 1 {
		t.Fatalf("%d checkpoint warnings, want 1:\n%s", n, logs.Text())
	}
	// A told turn that succeeds but cannot checkpoint reports the error.
	start = len(rec.Kinds(agent))
	_ = sys.Tell(agent, &bump{})
	synced(t, root, agent)
	if got := kindsOf(rec, agent, start); !equalKinds(got, []string{kReceived, kProcessed, kError}) {
		t.Fatalf("told clean turn kinds %v", got)
	}
	_ = sys.Tell(agent, &cure{}) // so that the stop checkpoint succeeds
}

// InitState publishes once, even an identical state; UpdateState sets
// fields from a map.
func TestInitAndUpdateState(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	agent := actortest.Spawn(t, root, &stateAgent{}, actor.Config{Name: "i"})
	rec.WaitKind(t, kStateChanged, agent, 1)

	// init_state with an identical state still publishes once; the next
	// checkpoint is silent; the observer is kept.
	_ = sys.Tell(agent, &initSame{})
	_ = sys.Tell(agent, &unrelated{})
	synced(t, root, agent)
	if n := len(stateChanges(rec, agent)); n != 2 {
		t.Fatalf("%d publications after init_state, want 2", n)
	}

	_, err := sys.Ask(actortest.Context(t), agent, &update{Fields: map[string]any{"count": 5}})
	if err != nil {
		t.Fatal(err)
	}
	_ = sys.Tell(agent, &unrelated{})
	synced(t, root, agent)
	c := stateChanges(rec, agent)
	if len(c) != 3 || c[2].Count != 5 {
		t.Fatalf("update_state publications %d, last %+v", len(c), c[len(c)-1])
	}

	// An update that cannot be decoded: an ErrorMessage naming the decoder's
	// error type, state unchanged.
	_ = sys.Tell(agent, &update{Fields: map[string]any{"count": "five"}})
	synced(t, root, agent)
	errs := recorded[*message.ErrorMessage](rec, agent)
	if len(errs) == 0 {
		t.Fatal("no ErrorMessage for a bad update")
	}
	em := errs[0]
	if em.ContentType != "UnmarshalTypeError" {
		t.Fatalf("content type %q", em.ContentType)
	}
	v, _ := proxy.Ask(actortest.Context(t), agent, func(_ *actor.Context, a *stateAgent) (int, error) {
		return a.State().Count, nil
	})
	if v != 5 {
		t.Fatalf("state changed by a failed update: %v", v)
	}

	// Unobserved: init_state publishes nothing and stays unobserved.
	quiet := actortest.Spawn(t, root, &stateAgent{unobserved: true}, actor.Config{Name: "quiet"})
	_ = sys.Tell(quiet, &initSame{})
	_ = sys.Tell(quiet, &bump{})
	synced(t, root, quiet)
	if n := len(stateChanges(rec, quiet)); n != 0 {
		t.Fatalf("unobserved agent published %d times", n)
	}
}

// A stateful agent: a counter with a max increment and a
// prefix; typed config reaches the agent as its own copy.
type counterConfig struct {
	actor.Config
	MaxIncrement int    `json:"max_increment"`
	Prefix       string `json:"prefix"`
}

type counterState struct {
	Count   int      `json:"count"`
	History []string `json:"history"`
}

type incMsg struct {
	message.Base
	By int
}
type resetMsg struct{ message.Base }

type counterAgent struct {
	actor.Agent[counterConfig, counterState]
}

func (a *counterAgent) OnStart(*actor.Context) error {
	_ = a.InitState(&counterState{})
	return a.ObserveState()
}

func (a *counterAgent) Receive(c *actor.Context, msg any) (any, error) {
	st, cfg := a.State(), a.Config()
	switch m := msg.(type) {
	case *incMsg:
		by := min(m.By, cfg.MaxIncrement)
		st.Count += by
		st.History = append(st.History, "["+cfg.Prefix+"] +"+string(rune('0'+by)))
	case *resetMsg:
		st.Count = 0
		st.History = append(st.History, "["+cfg.Prefix+"] reset")
	default:
		return nil, actor.ErrUnhandled
	}
	return st.Count, nil
}

func TestStatefulCounterAgent(t *testing.T) {
	sys, rec, root, _ := newTeam(t)
	cfg := &counterConfig{Config: actor.Config{Name: "counter"}, MaxIncrement: 5, Prefix: "DEMO"}
	agent := actortest.Spawn(t, root, &counterAgent{}, cfg)
	rec.WaitKind(t, kStateChanged, agent, 1)
	for _, m := range []message.Message{&incMsg{By: 5}, &incMsg{By: 3}, &incMsg{By: 10}, &resetMsg{}, &incMsg{By: 10}} {
		_ = sys.Tell(agent, m)
	}
	synced(t, root, agent)
	final := recorded[*message.StateChangedMessage](rec, agent)
	st := final[len(final)-1].State.(*counterState)
	if st.Count != 5 || len(st.History) != 5 || st.History[0] != "[DEMO] +5" || st.History[2] != "[DEMO] +5" {
		t.Fatalf("final state %+v", st)
	}
	if cfg.Role != "" {
		t.Fatalf("spawn changed the caller's config: %+v", cfg)
	}
	v, _ := proxy.Ask(actortest.Context(t), agent, func(_ *actor.Context, a *counterAgent) (string, error) {
		return a.Config().Role, nil
	})
	if v != "counterAgent" {
		t.Fatalf("defaulted role %v", v)
	}
	// A config of the wrong type is refused at spawn.
	if _, err := actortest.SpawnIn(actortest.Context(t), root, &counterAgent{}, actor.Config{Name: "wrong"}); err == nil {
		t.Fatal("spawn with a config of the wrong type succeeded")
	}
}

// panicState panics when it is encoded once Boom is set.
type panicState struct{ Boom bool }

func (s panicState) MarshalJSON() ([]byte, error) {
	if s.Boom {
		panic("state cannot be encoded")
	}
	return []byte(`{}`), nil
}

type panicky struct {
	actor.Agent[actor.Config, panicState]
}

func (p *panicky) OnStart(*actor.Context) error {
	if err := p.InitState(&panicState{}); err != nil {
		return err
	}
	return p.ObserveState()
}

func (p *panicky) Receive(*actor.Context, any) (any, error) {
	p.State().Boom = true // the turn's checkpoint will panic
	return "ok", nil
}

// A panic while checkpointing the state is a reported failure: the
// actor and the process go on.
func TestCheckpointPanicIsAFailure(t *testing.T) {
	sys, rec, root := actortest.Team(t)
	a := actortest.Spawn(t, root, &panicky{}, actor.Config{Name: "p"})
	if _, err := sys.Ask(context.Background(), a, message.NewUserMessage("x")); err == nil {
		t.Fatal("the ask whose checkpoint panicked succeeded")
	}
	_ = sys.Tell(a, message.NewUserMessage("y"))
	rec.WaitKind(t, kError, a, 1)
	if !a.IsAlive() {
		t.Fatal("the actor died of a checkpoint panic")
	}
}
