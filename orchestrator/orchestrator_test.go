package orchestrator_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A new team's log holds only the orchestrator's own StartMessage.
func TestStartupState(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	msgs, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("log = %v, want one StartMessage", typeNames(msgs))
	}
	start, ok := msgs[0].(*message.StartMessage)
	if !ok || start.Sender.AgentID() != team.Address().AgentID() {
		t.Fatalf("log[0] = %#v, want the orchestrator's StartMessage", msgs[0])
	}
	members, _ := team.Members(ctx)
	states, _ := team.States(ctx)
	meta, _ := team.Metadata(ctx)
	if len(members) != 0 || len(states) != 0 || meta != nil {
		t.Fatalf("members %v states %v metadata %v: want all empty", members, states, meta)
	}
	if !team.Address().IsOrchestrator() || team.ID() != team.Address().TeamID() {
		t.Fatalf("address %v: want an orchestrator whose team id is the team's", team.Address())
	}
}

// A workflow's log holds Start/Sent/Received/Processed in
// causal order, no StateChanged, nothing sent by the orchestrator.
func TestLogContents(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	b := mustSpawn(t, team, &echo{}, named("b"))
	r := &relay{target: b, results: make(chan string, 1)}
	a := mustSpawn(t, team, r, named("a"))
	if err := sys.Tell(a, message.NewUserMessage("hi")); err != nil {
		t.Fatal(err)
	}
	if got := <-r.results; got != "echo: hi" {
		t.Fatalf("result %q", got)
	}
	msgs, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, m := range msgs {
		switch mm := m.(type) {
		case *message.StateChangedMessage:
			t.Fatal("StateChanged in the log")
		case *message.SentMessage:
			if mm.Message.Envelope().Sender.AgentID() == a.AgentID() {
				pos["sentM"] = i
			}
		case *message.ReceivedMessage:
			if mm.Sender.AgentID() == b.AgentID() {
				pos["recvM"] = i
			}
		}
		if m.Envelope().Sender.AgentID() == team.Address().AgentID() && i > 0 {
			t.Fatalf("log[%d] %s sent by the orchestrator", i, message.TypeName(m))
		}
	}
	for _, name := range []string{"StartMessage", "SentMessage", "ReceivedMessage", "ProcessedMessage"} {
		if !slices.Contains(typeNames(msgs), name) {
			t.Fatalf("log %v lacks %s", typeNames(msgs), name)
		}
	}
	if pos["sentM"] >= pos["recvM"] {
		t.Fatalf("Sent(M) at %d, Received(M) at %d: want Sent first (log %v)", pos["sentM"], pos["recvM"], typeNames(msgs))
	}
	// Filters.
	sent, _ := team.Messages(ctx, orchestrator.Filter{Type: "SentMessage", Sender: a.AgentID()})
	if len(orchestrator.Select[*message.SentMessage](sent)) != len(sent) || len(sent) != 1 {
		t.Fatalf("a's SentMessages = %v, want 1", typeNames(sent))
	}
	// Ids are stable across queries.
	again, _ := team.Messages(ctx, orchestrator.Filter{})
	for i := range msgs {
		if msgs[i].Envelope().ID != again[i].Envelope().ID {
			t.Fatalf("log[%d] id changed between queries", i)
		}
	}
}

// Sync is a barrier: a subscriber has seen what was emitted before it.
func TestSync(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	mustSpawn(t, team, &echo{}, named("a"))
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sub.messages()) != 1 {
		t.Fatalf("after Sync the subscriber has %v", typeNames(sub.messages()))
	}
	if err := orchestrator.Of(nil).Sync(ctx); err == nil {
		t.Fatal("Sync without a team")
	}
	var none *orchestrator.AgentCard
	if none.CanRouteTo("x") || orchestrator.HasSkill(none, "x") {
		t.Fatal("a nil card routes or has skills")
	}
}

// A nil team handle answers instead of panicking.
func TestNilTeam(t *testing.T) {
	var team *orchestrator.Team
	if team.Address() != nil || team.ID().String() != "00000000-0000-0000-0000-000000000000" {
		t.Fatal("nil team has an identity")
	}
	select {
	case <-team.Done():
	default:
		t.Fatal("a nil team is not done")
	}
	if _, err := team.Members(actortest.Context(t)); err == nil {
		t.Fatal("nil team answered Members")
	}
}

// States returns copies: editing one changes nothing in the team. Only
// actors that publish a state have one (the orchestrator has none).
func TestStatesAreCopies(t *testing.T) {
	ctx := actortest.Context(t)
	sys, team, _ := actortest.NewTeam(t)
	a := mustSpawn(t, team, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 1})
	mustSpawn(t, team, &echo{}, named("stateless"))
	if _, err := sys.Ask(ctx, a, message.NewUserMessage("x")); err != nil {
		t.Fatal(err)
	}
	s1, _ := team.States(ctx)
	if len(s1) != 1 {
		t.Fatalf("states of %d agents, want only a's", len(s1))
	}
	s1[a.AgentID()].(*tallyState).Total = 999
	s2, _ := team.States(ctx)
	if got := s2[a.AgentID()].(*tallyState).Total; got != 1 {
		t.Fatalf("state after a caller's edit: %d, want 1", got)
	}
}

// A Spawn whose caller gave up while it waited does not spawn.
func TestSpawnCancelledWhileQueued(t *testing.T) {
	ctx := actortest.Context(t)
	_, team, _ := actortest.NewTeam(t)
	// The orchestrator held on its own goroutine: the Spawn below waits
	// in its mailbox behind this call.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // a failure below does not leave the team's stop waiting
	if err := proxy.Tell(team.Address(), func(*actor.Context, actor.Actor) error {
		close(entered)
		<-release
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	<-entered
	short, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := team.Spawn(short, &echo{}, named("late"))
		done <- err
	}()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled Spawn succeeded")
	}
	free()
	if m, _ := team.Member(ctx, "late"); m != nil {
		t.Fatalf("the cancelled Spawn created %s", m)
	}
}

// Nil arguments give errors, not panics (the card and the user proxy
// halves are in catalog_test.go and userproxy_test.go).
func TestNilArguments(t *testing.T) {
	ctx := actortest.Context(t)
	_, team, _ := actortest.NewTeam(t)
	if _, err := team.ChildOrCreate(ctx, &echo{}, nil); err == nil {
		t.Error("ChildOrCreate with no config")
	}
	if _, err := team.Spawn(ctx, nil, nil); err == nil {
		t.Error("Spawn(nil)")
	}
	if err := team.Emit(ctx, nil); err == nil {
		t.Error("Emit(nil)")
	}
}

// stepState is the published state of an agent of the workflow below.
type stepState struct {
	Status string `json:"status"`
	Done   int    `json:"done"`
}

// stepper is an agent of the workflow below: a specialist answers every
// UserMessage to its sender (done + 1); the coordinator (next set) sends
// the job to the member whose role next names, and the last answer ends it.
type stepper struct {
	actor.Agent[actor.Config, stepState]
	next   map[string]string // sender role -> the next role to ask ("" ends)
	finish chan<- struct{}
}

func (s *stepper) OnStart(*actor.Context) error {
	_ = s.InitState(&stepState{Status: "idle"})
	return s.ObserveState()
}

func (s *stepper) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *message.UserMessage:
		if s.next == nil { // a specialist
			s.State().Done++
			return nil, c.Send(c.Sender(), message.NewResultMessage(m.Content+" done"))
		}
		return nil, s.ask(c, s.next["start"], m.Content)
	case *message.ResultMessage:
		role := c.Sender().Role()
		if c.Sender().IsUserProxy() {
			role = "human"
		}
		if s.next[role] == "" {
			s.State().Status = "complete: " + m.Content
			close(s.finish)
			return nil, nil
		}
		return nil, s.ask(c, s.next[role], m.Content)
	}
	return nil, actor.ErrUnhandled
}

// ask sends content to the first member with role ("human": the user proxy).
func (s *stepper) ask(c *actor.Context, role, content string) error {
	members, err := orchestrator.Of(c.Orchestrator()).Members(c.Context())
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.Role() == role || role == "human" && m.IsUserProxy() {
			s.State().Status = "waiting for " + role
			return c.Send(m, message.NewUserMessage(content))
		}
	}
	return fmt.Errorf("no %s in the team", role)
}

// approver is a derived user proxy standing for a person who
// approves everything.
type approver struct{ orchestrator.UserProxy }

func (p *approver) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		return nil, p.Reply(c, "Approved", m)
	}
	return p.UserProxy.Receive(c, msg)
}

// A multi-agent workflow (example 05's): the
// coordinator has a researcher research, a writer write and the person
// approve through a derived user proxy, and reaches status "complete"; the
// log holds at least 12 messages with every hop's SentMessage, the roster
// the 4 members, 3 states are tracked, and a subscriber given to New saw
// the question put to the person.
func TestMultiAgentWorkflow(t *testing.T) {
	ctx := actortest.Context(t)
	var questions []string
	var seen int
	watch := onMessageFunc(func(m message.Message) {
		seen++
		if s, ok := m.(*message.SentMessage); ok && s.Recipient.IsUserProxy() {
			questions = append(questions, s.Message.(*message.UserMessage).Content)
		}
	})
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithSubscribers(watch))
	finish := make(chan struct{})
	coordinator := mustSpawn(t, team, &stepper{finish: finish,
		next: map[string]string{"start": "Researcher", "Researcher": "Writer", "Writer": "human", "human": ""}},
		named("coordinator"))
	mustSpawn(t, team, &stepper{}, &actor.Config{Name: "researcher", Role: "Researcher"})
	mustSpawn(t, team, &stepper{}, &actor.Config{Name: "writer", Role: "Writer"})
	mustSpawn(t, team, &approver{}, &actor.Config{Name: "@Human", Role: "Human"})
	if err := sys.Tell(coordinator, message.NewUserMessage("report")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, finish, "the workflow")
	// The coordinator's last turn has published its state before a call
	// queued after it runs; the queries below see it.
	if err := proxy.Do(ctx, coordinator, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
		t.Fatal(err)
	}
	states, _ := team.States(ctx)
	if st := states[coordinator.AgentID()].(*stepState); st.Status != "complete: Approved" {
		t.Fatalf("coordinator status %q", st.Status)
	}
	if len(states) != 3 {
		t.Fatalf("%d states tracked, want 3 (the user proxy has none)", len(states))
	}
	members, _ := team.Members(ctx)
	var names []string
	for _, m := range members {
		names = append(names, m.Name())
	}
	if fmt.Sprint(names) != "[coordinator researcher writer @Human]" {
		t.Fatalf("roster %v", names)
	}
	log, _ := team.Messages(ctx, orchestrator.Filter{})
	var hops []string
	for _, s := range orchestrator.Select[*message.SentMessage](log) {
		hops = append(hops, fmt.Sprintf("%s->%s:%s", s.Sender.Name(), s.Recipient.Name(), message.TypeName(s.Message)))
	}
	if len(log) < 12 || fmt.Sprint(hops) != "[coordinator->researcher:UserMessage researcher->coordinator:ResultMessage "+
		"coordinator->writer:UserMessage writer->coordinator:ResultMessage coordinator->@Human:UserMessage @Human->coordinator:ResultMessage]" {
		t.Fatalf("log of %d messages, hops %v", len(log), hops)
	}
	if err := team.Stop(ctx); err != nil { // the subscriber's counts are read after its last call
		t.Fatal(err)
	}
	if seen == 0 || fmt.Sprint(questions) != "[report done done]" {
		t.Fatalf("subscriber saw %d messages, questions %q", seen, questions)
	}
}
