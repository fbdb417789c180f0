package orchestrator_test

// Short examples of the team's API. The runnable programs under examples/
// (quickstart, 01..07) show whole workflows; their tests check their whole
// output.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Echo answers each UserMessage it is asked with its content.
type Echo struct{ actor.Base }

func (*Echo) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		return "echo: " + m.Content, nil
	}
	return nil, actor.ErrUnhandled
}

// A team's queries: its roster, one member by name, and its log, filtered
// by sender and by type. A query sees everything a member emitted before
// answering an ask made before it.
func ExampleTeam_Members() {
	ctx := context.Background()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys.Shutdown(ctx) }()
	team, _ := orchestrator.New(sys)
	a, _ := team.Spawn(ctx, &Echo{}, &actor.Config{Name: "a", Role: "Echo"})
	_, _ = team.Spawn(ctx, &Echo{}, &actor.Config{Name: "b", Role: "Echo"})
	reply, _ := sys.Ask(ctx, a, message.NewUserMessage("hi"))
	fmt.Println(reply)

	members, _ := team.Members(ctx)
	for _, m := range members {
		fmt.Println("member:", m.Name(), m.Role())
	}
	b, _ := team.Member(ctx, "b")
	fmt.Println("found:", b.Name())
	log, _ := team.Messages(ctx, orchestrator.Filter{Sender: a.AgentID()})
	for _, m := range log {
		fmt.Println("a:", message.TypeName(m))
	}
	starts, _ := team.Messages(ctx, orchestrator.Filter{Type: "StartMessage"})
	fmt.Println("starts:", len(starts)) // the orchestrator's own, a's, b's
	// Output:
	// echo: hi
	// member: a Echo
	// member: b Echo
	// found: b
	// a: StartMessage
	// a: ReceivedMessage
	// a: ProcessedMessage
	// starts: 3
}

// Watcher is a subscriber following a team's lifecycle. Its hooks run on
// the orchestrator's goroutine, one at a time: it records, and the example
// reads after the stop.
type Watcher struct{ seen []string }

var (
	_ orchestrator.StopRequestSubscriber = (*Watcher)(nil)
	_ orchestrator.StopSubscriber        = (*Watcher)(nil)
)

func (w *Watcher) OnMessage(m message.Message) {
	what := message.TypeName(m)
	if ev, ok := m.(*message.EventMessage); ok {
		what += " " + message.TypeName(ev.Event)
	}
	w.seen = append(w.seen, fmt.Sprintf("%s from %s", what, m.Envelope().Sender.Name()))
}
func (w *Watcher) OnStopRequest(uuid.UUID) { w.seen = append(w.seen, "OnStopRequest") }
func (w *Watcher) OnStop(uuid.UUID)        { w.seen = append(w.seen, "OnStop") }

// A subscriber given to New sees every message the team logs, in order,
// then the stop: the announcement, OnStopRequest, and OnStop last. The
// members' StopMessages of the teardown are logged but not fanned out.
func ExampleWithSubscribers() {
	ctx := context.Background()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys.Shutdown(ctx) }()
	w := &Watcher{}
	team, _ := orchestrator.New(sys, orchestrator.WithSubscribers(w))
	a, _ := team.Spawn(ctx, &Echo{}, &actor.Config{Name: "a", Role: "Echo"})
	_, _ = sys.Ask(ctx, a, message.NewUserMessage("hi"))
	_ = team.Stop(ctx)
	for _, s := range w.seen {
		fmt.Println(s)
	}
	// Output:
	// StartMessage from orchestrator
	// StartMessage from a
	// ReceivedMessage from a
	// ProcessedMessage from a
	// EventMessage TeamStoppingEvent from orchestrator
	// OnStopRequest
	// OnStop
}

// Stop announces the stop, stops the members, tools (actor.Config.Tool)
// after the others, and waits for the end. The stopped team still answers
// queries, from its final view; a change is refused.
func ExampleTeam_Stop() {
	ctx := context.Background()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys.Shutdown(ctx) }()
	team, _ := orchestrator.New(sys, orchestrator.WithStopGrace(5*time.Second))
	_, _ = team.Spawn(ctx, &Echo{}, &actor.Config{Name: "board", Role: "Board", Tool: true})
	worker, _ := team.Spawn(ctx, &Echo{}, &actor.Config{Name: "worker", Role: "Echo"})

	err := team.Stop(ctx)
	<-team.Done() // closed by then
	fmt.Println("stopped:", err, "worker alive:", worker.IsAlive())
	stops, _ := team.Messages(ctx, orchestrator.Filter{Type: "StopMessage"})
	for _, m := range stops {
		fmt.Println("stop of", m.Envelope().Sender.Name())
	}
	announced, _ := team.Events(ctx, orchestrator.EventFilter{Payload: "TeamStoppingEvent"})
	fmt.Println("announced:", len(announced))
	err = team.SetMetadata(ctx, "late")
	fmt.Println("change after the stop refused:", errors.Is(err, actor.ErrActorDead))
	fmt.Println("stop again:", team.Stop(ctx))
	// Output:
	// stopped: <nil> worker alive: false
	// stop of worker
	// stop of board
	// announced: 1
	// change after the stop refused: true
	// stop again: <nil>
}

// Note is the state of a Notebook.
type Note struct {
	Lines []string `json:"lines"`
}

// Notebook keeps the lines it is told in a published state, and takes its
// last state back when a restore recreates it.
type Notebook struct {
	actor.Agent[actor.Config, Note]
}

func init() { actor.RegisterKind("example.Notebook", func() actor.Actor { return &Notebook{} }) }

func (n *Notebook) OnStart(c *actor.Context) error {
	st := &Note{}
	if c.Restoring() {
		if s, ok, err := orchestrator.RestoredState[Note](c.Context(), c); err == nil && ok {
			st = s
		}
	}
	_ = n.InitState(st)
	return n.ObserveState()
}

func (n *Notebook) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		n.State().Lines = append(n.State().Lines, m.Content)
		return n.State().Lines, nil
	}
	return nil, actor.ErrUnhandled
}

// Logbook keeps a team's log as a durable event log would: encoded.
type Logbook struct{ records [][]byte }

func (l *Logbook) OnMessage(m message.Message) {
	data, _ := message.Marshal(m)
	l.records = append(l.records, data)
}

// Restore recreates a team from its log, after a crash or a clean stop: the
// same team and agent ids, the members' configs and last states.
func ExampleRestore() {
	ctx := context.Background()
	sys := actor.NewSystem(actor.SystemConfig{})
	book := &Logbook{}
	team, _ := orchestrator.New(sys, orchestrator.WithSubscribers(book))
	notes, _ := team.Spawn(ctx, &Notebook{}, &actor.Config{Name: "notes", Role: "Notebook"})
	_, _ = sys.Ask(ctx, notes, message.NewUserMessage("first"))
	_ = sys.Shutdown(ctx) // the team stops: its log ends with the stop

	var log []message.Message
	for _, data := range book.records {
		m, _ := message.UnmarshalMessage(data)
		log = append(log, m)
	}
	sys2 := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys2.Shutdown(ctx) }()
	team2, err := orchestrator.Restore(ctx, sys2, log)
	fmt.Println("restored:", err, team2.ID() == team.ID())
	again, _ := team2.Member(ctx, "notes")
	fmt.Println("same agent:", again.AgentID() == notes.AgentID(), "alive:", again.IsAlive())
	lines, _ := sys2.Ask(ctx, again, message.NewUserMessage("second"))
	fmt.Println(lines)
	// Output:
	// restored: <nil> true
	// same agent: true alive: true
	// [first second]
}

// The catalog: cards describing agent kinds, looked up by role and skill;
// Hire creates a member from a card.
func ExampleTeam_Register() {
	ctx := context.Background()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { _ = sys.Shutdown(ctx) }()
	team, _ := orchestrator.New(sys)
	_ = team.Register(ctx,
		mustCard(orchestrator.AgentCard{AgentClass: "example.Notebook", Description: "Takes notes",
			Skills: []string{"writing"}, Config: &actor.Config{Name: "notes", Role: "Scribe"}, CanBeHired: true}),
		mustCard(orchestrator.AgentCard{AgentClass: "UserProxy", Description: "A person",
			Skills: []string{"judgement", "writing"}, Config: &actor.Config{Name: "@Human", Role: "Human"}}))

	roles, _ := team.Roles(ctx)
	skills, _ := team.Skills(ctx)
	fmt.Println("roles:", roles, "skills:", skills)
	card, _ := team.Card(ctx, "Scribe")
	fmt.Println("Scribe:", card.Description, "can be hired:", card.CanBeHired)
	writers, _ := team.CardsWithSkill(ctx, "writing")
	fmt.Println("writing:", len(writers))
	none, _ := team.Card(ctx, "Pilot")
	fmt.Println("Pilot:", none)
	hired, _ := team.Hire(ctx, "Scribe", "scribe-1")
	fmt.Println("hired:", hired.Name(), hired.Role(), hired.ActorType())
	members, _ := team.Members(ctx)
	fmt.Println("members:", len(members), members[0].Name())
	// Output:
	// roles: [Scribe Human] skills: [judgement writing]
	// Scribe: Takes notes can be hired: true
	// writing: 2
	// Pilot: <nil>
	// hired: scribe-1 Scribe example.Notebook
	// members: 1 scribe-1
}
