package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func waitDone(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(actortest.Timeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// stopAsync runs team.Stop on its own goroutine; the channel gets its
// result.
func stopAsync(ctx context.Context, team *orchestrator.Team) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- team.Stop(ctx) }()
	return ch
}

// waitErr returns the next value of ch, failing t after actortest.Timeout.
func waitErr(t testing.TB, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(actortest.Timeout):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// stopBegun waits until sub has been told OnStopRequest: the team's stop
// has begun.
func stopBegun(t testing.TB, sub *recordingSub) {
	t.Helper()
	sub.waitFor(t, "OnStopRequest", func(ev []event) bool {
		for _, e := range ev {
			if e.hook == "stop_request" {
				return true
			}
		}
		return false
	})
}

func tool(name string) *actor.Config { return &actor.Config{Name: name, Role: name, Tool: true} }

// The subscriber sees one TeamStoppingEvent from the
// orchestrator, then OnStopRequest, then OnStop, and no StopMessage; a
// second stop announces nothing new. Team.Stop now waits for the end (it
// returned a handle at once); Team.Done is the handle: not closed while a
// worker is busy.
func TestGracefulStopOrder(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithStopGrace(5*time.Second))
	ctx := actortest.Context(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	mustSpawn(t, team, &echo{}, tool("Tool"))
	w := newBlocker()
	worker := mustSpawn(t, team, w, named("worker"))
	_ = sys.Tell(worker, message.NewUserMessage("work"))
	<-w.entered

	first := stopAsync(ctx, team)
	stopBegun(t, sub)
	if isDone(team.Done()) {
		t.Fatal("team done while a worker is busy")
	}
	second := stopAsync(ctx, team)
	close(w.release)
	if err := waitErr(t, first, "the first Stop"); err != nil {
		t.Fatal(err)
	}
	if err := waitErr(t, second, "the second Stop"); err != nil {
		t.Fatal(err)
	}
	waitDone(t, team.Done(), "team stop")

	var order []string
	stopping := 0
	for _, e := range sub.all() {
		switch e.hook {
		case "message":
			switch m := e.msg.(type) {
			case *message.EventMessage:
				if _, ok := m.Event.(message.TeamStoppingEvent); ok {
					stopping++
					order = append(order, "event")
					if m.Sender.AgentID() != team.Address().AgentID() || m.TeamID.UUID != team.ID() {
						t.Fatalf("TeamStoppingEvent envelope %+v", m.Base)
					}
				}
			case *message.StopMessage:
				t.Fatal("a StopMessage reached the subscriber during teardown")
			}
		case "stop_request", "stop":
			if e.team != team.ID() {
				t.Fatalf("%s hook got team %s", e.hook, e.team)
			}
			order = append(order, e.hook)
		}
	}
	if fmt.Sprint(order) != "[event stop_request stop]" || stopping != 1 {
		t.Fatalf("hook order %v, want [event stop_request stop]", order)
	}
	// The log still records the members' StopMessages (roster shrinks).
	stops, _ := team.Messages(ctx, orchestrator.Filter{Type: "StopMessage"})
	if len(stops) != 2 {
		t.Fatalf("log has %d StopMessages, want 2", len(stops))
	}
	if members, _ := team.Members(ctx); len(members) != 0 {
		t.Fatalf("roster after stop: %v", members)
	}
}

// Team.Stop waits until the team and every member have ended and
// returns nil; stopping a stopped team returns nil at once, and so do
// stops racing from several goroutines.
func TestStopWaitsAndIsIdempotent(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	a := mustSpawn(t, team, &echo{}, named("a"))
	child, err := actortest.SpawnIn(ctx, a, &echo{}, named("a.child"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- team.Stop(ctx) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Stop = %v", err)
		}
	}
	// When Stop returns, the team and every descendant report not alive.
	if !isDone(team.Done()) || team.Address().IsAlive() || a.IsAlive() || child.IsAlive() {
		t.Fatalf("after Stop: done %v, orchestrator %v, a %v, child %v alive",
			isDone(team.Done()), team.Address().IsAlive(), a.IsAlive(), child.IsAlive())
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatalf("Stop of a stopped team = %v", err)
	}
	if err := orchestrator.Of(nil).Stop(ctx); err == nil {
		t.Fatal("Stop of no team succeeded")
	}
}

// Team.Stop gives up waiting when its context ends, and says so; the stop
// goes on.
func TestStopContextEnds(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithStopGrace(time.Hour))
	w := newBlocker()
	worker := mustSpawn(t, team, w, named("worker"))
	_ = sys.Tell(worker, message.NewUserMessage("work"))
	<-w.entered
	short, cancel := context.WithCancel(actortest.Context(t))
	cancel()
	if err := team.Stop(short); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with a cancelled context = %v, want context.Canceled", err)
	}
	close(w.release)
	if err := team.Stop(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
}

// A worker asking the orchestrator mid-handler while the
// team stops: no deadlock, the ask is answered, the stop completes.
func TestStopDuringReentrantWork(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithStopGrace(5*time.Second))
	ctx := actortest.Context(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	inHandler, askNow, answered := make(chan struct{}), make(chan struct{}), make(chan int, 1)
	worker := mustSpawn(t, team, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); !ok {
			return nil, nil
		}
		close(inHandler)
		<-askNow
		members, err := orchestrator.Of(c.Orchestrator()).Members(context.Background())
		if err != nil {
			return nil, err
		}
		answered <- len(members)
		return nil, nil
	}), named("worker"))
	_ = sys.Tell(worker, message.NewUserMessage("go"))
	<-inHandler
	stopped := stopAsync(ctx, team)
	stopBegun(t, sub)
	if _, err := team.Members(ctx); err != nil { // a concurrent ask during teardown
		t.Fatal(err)
	}
	close(askNow)
	if n := <-answered; n != 1 {
		t.Fatalf("worker saw %d members mid-teardown, want 1", n)
	}
	if err := waitErr(t, stopped, "team stop"); err != nil {
		t.Fatal(err)
	}
}

// stopWitness is a tool that reports, when its stop begins, how many
// "forcing teardown" warnings had been logged by then.
type stopWitness struct {
	actor.Base
	logs   interface{ Count(slog.Level, string) int }
	forced chan int
}

func (s *stopWitness) Receive(*actor.Context, any) (any, error) { return nil, nil }

func (s *stopWitness) OnStopRequest(*actor.Context, error) {
	s.forced <- s.logs.Count(slog.LevelWarn, "forcing teardown")
}

// A worker that ignores the stop (a wedged member): after the
// stop grace (WithStopGrace) the runtime logs "forcing teardown" naming it,
// tells the tool, which was held back until then, to stop, and the team
// still ends: Stop returns nil. The wedged worker is left running, for
// shutdown's reaper.
func TestBackstop(t *testing.T) {
	sys, team, logs := actortest.NewTeam(t, orchestrator.WithStopGrace(100*time.Millisecond))
	ctx := actortest.Context(t)
	witness := &stopWitness{logs: logs, forced: make(chan int, 1)}
	toolAddr := mustSpawn(t, team, witness, tool("Tool"))
	w := newBlocker()
	worker := mustSpawn(t, team, w, named("worker"))
	_ = sys.Tell(worker, message.NewUserMessage("work"))
	<-w.entered
	defer close(w.release)
	if err := team.Stop(ctx); err != nil {
		t.Fatalf("Stop with a wedged member = %v", err)
	}
	if !isDone(team.Done()) || team.Address().IsAlive() {
		t.Fatal("the team did not end")
	}
	if logs.Count(slog.LevelWarn, "forcing teardown") != 1 || logs.Count(slog.LevelWarn, "worker") == 0 {
		t.Fatalf("want one forcing-teardown warning naming the worker:\n%s", logs.Text())
	}
	// The tool was told to stop only by the backstop, after the warning.
	if n := <-witness.forced; n != 1 {
		t.Fatalf("the tool's stop began with %d forcing-teardown warnings logged, want 1 (told before the backstop)", n)
	}
	waitDone(t, actor.Done(toolAddr), "deferred tool stop")
	if !worker.IsAlive() {
		t.Fatal("the wedged worker should still be running")
	}
	// Shutdown reaps it: it gives up on it, and its address reports dead.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := sys.Shutdown(short); err == nil {
		t.Fatal("shutdown did not report the wedged worker")
	}
	if worker.IsAlive() {
		t.Fatal("the wedged worker is alive after the shutdown reaped it")
	}
}

// Tools (actor.Config.Tool) stop after the other members: the
// tool is alive and untold while the consumer works, the consumer can call
// it during teardown, and it stops after the consumer's StopMessage; the
// stop waits for the tools.
func TestToolsLast(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithStopGrace(5*time.Second))
	ctx := actortest.Context(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	toolAddr := mustSpawn(t, team, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); ok {
			return "found", nil
		}
		return nil, nil
	}), tool("VectorStore"))
	entered, release, called := make(chan struct{}), make(chan struct{}), make(chan string, 1)
	consumer := mustSpawn(t, team, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); !ok {
			return nil, nil
		}
		close(entered)
		<-release
		r, err := c.Ask(context.Background(), toolAddr, message.NewUserMessage("lookup"))
		called <- fmt.Sprint(r, " ", err)
		return nil, nil
	}), named("consumer"))
	_ = sys.Tell(consumer, message.NewUserMessage("work"))
	<-entered
	stopped := stopAsync(ctx, team)
	stopBegun(t, sub)
	if !toolAddr.IsAlive() {
		t.Fatal("tool stopped while the consumer is busy")
	}
	close(release)
	// The consumer's teardown-time call to its tool succeeds.
	if got := <-called; got != "found <nil>" {
		t.Fatalf("tool call during teardown: %s", got)
	}
	if err := waitErr(t, stopped, "team stop"); err != nil {
		t.Fatal(err)
	}
	if toolAddr.IsAlive() {
		t.Fatal("tool alive after the team stopped")
	}
	stops, _ := team.Messages(ctx, orchestrator.Filter{Type: "StopMessage"})
	if len(stops) != 2 || stops[0].Envelope().Sender.Name() != "consumer" || stops[1].Envelope().Sender.Name() != "VectorStore" {
		t.Fatalf("stop order %v, want consumer then VectorStore", senders(stops))
	}

	// A tools-only team stops promptly (not after its grace).
	_, tools, _ := actortest.NewTeam(t, orchestrator.WithStopGrace(time.Hour))
	mustSpawn(t, tools, &echo{}, tool("A"))
	mustSpawn(t, tools, &echo{}, tool("B"))
	if err := tools.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if stops, _ := tools.Messages(ctx, orchestrator.Filter{Type: "StopMessage"}); len(stops) != 2 {
		t.Fatalf("a tools-only team logged %v StopMessages, want 2", senders(stops))
	}
}

// Every tool stops after every other member, whatever the creation
// order, and a "#" name no longer makes a tool (actor.Config.Tool does).
// Siblings are told to stop concurrently (not one after another in list
// order): the only order between siblings is tools
// after the others.
func TestToolsStopAfterEveryOtherMember(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	mustSpawn(t, team, &echo{}, tool("board"))
	mustSpawn(t, team, &echo{}, named("a"))
	mustSpawn(t, team, &echo{}, tool("store"))
	mustSpawn(t, team, &echo{}, named("#b"))
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stops, _ := team.Messages(ctx, orchestrator.Filter{Type: "StopMessage"})
	names := senders(stops)
	if len(names) != 4 {
		t.Fatalf("StopMessages from %v, want 4", names)
	}
	for _, n := range names[:2] {
		if n != "a" && n != "#b" {
			t.Fatalf("stop order %v: a tool stopped before a member", names)
		}
	}
}

func senders(msgs []message.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Envelope().Sender.Name())
	}
	return out
}

// A team with no members stops at once.
func TestEmptyTeamStops(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithStopGrace(time.Hour))
	if _, err := orchestrator.New(sys, orchestrator.WithStopGrace(-time.Second)); err == nil {
		t.Fatal("a negative stop grace accepted")
	}
	if err := team.Stop(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if team.Address().IsAlive() {
		t.Fatal("orchestrator alive after stop")
	}
	// Queries still answer from the final state.
	msgs, err := team.Messages(actortest.Context(t), orchestrator.Filter{})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("after stop: %v %v, want Start and TeamStoppingEvent", typeNames(msgs), err)
	}
}

// After the stop, every query answers from the team's final view,
// concurrently from several goroutines (run under -race).
func TestConcurrentQueriesAfterStop(t *testing.T) {
	ctx := actortest.Context(t)
	sys, team, _ := actortest.NewTeam(t)
	a := mustSpawn(t, team, &tally{}, &tallyConfig{Config: actor.Config{Name: "a", Role: "Tally"}, Step: 1})
	if _, err := sys.Ask(ctx, a, message.NewUserMessage("x")); err != nil {
		t.Fatal(err)
	}
	_ = team.SetMetadata(ctx, map[string]any{"k": "v"})
	_ = team.Register(ctx, mustCard(orchestrator.AgentCard{AgentClass: "UserProxy", Description: "a person",
		Skills: []string{"judgement"}, Config: &actor.Config{Name: "@Person", Role: "Person"}}))
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if msgs, err := team.Messages(ctx, orchestrator.Filter{}); err != nil || len(msgs) == 0 {
					t.Errorf("after stop: %d messages, %v", len(msgs), err)
				}
				if ev, err := team.Events(ctx, orchestrator.EventFilter{Payload: "TeamStoppingEvent"}); err != nil || len(ev) != 1 {
					t.Errorf("after stop: %d stopping events, %v", len(ev), err)
				}
				if m, err := team.Members(ctx); err != nil || len(m) != 0 {
					t.Errorf("after stop: members %v, %v", m, err)
				}
				if m, err := team.Member(ctx, "a"); err != nil || m != nil {
					t.Errorf("after stop: Member(a) = %v, %v", m, err)
				}
				if s, err := team.States(ctx); err != nil || s[a.AgentID()].(*tallyState).Total != 1 {
					t.Errorf("after stop: states %v, %v", s, err)
				}
				if m, err := team.Metadata(ctx); err != nil || fmt.Sprint(m) != "map[k:v]" {
					t.Errorf("after stop: metadata %v, %v", m, err)
				}
				if r, err := team.Roles(ctx); err != nil || fmt.Sprint(r) != "[Person]" {
					t.Errorf("after stop: roles %v, %v", r, err)
				}
				if s, err := team.Skills(ctx); err != nil || fmt.Sprint(s) != "[judgement]" {
					t.Errorf("after stop: skills %v, %v", s, err)
				}
				if c, err := team.Card(ctx, "Person"); err != nil || c == nil {
					t.Errorf("after stop: card %v, %v", c, err)
				}
				if err := team.Sync(ctx); err != nil {
					t.Errorf("after stop: Sync %v", err)
				}
			}
		})
	}
	wg.Wait()
}

// After the stop, every mutation fails with actor.ErrActorDead.
func TestMutationsAfterStop(t *testing.T) {
	ctx := actortest.Context(t)
	_, team, _ := actortest.NewTeam(t)
	_ = team.Register(ctx, mustCard(orchestrator.AgentCard{AgentClass: "UserProxy", Description: "a person",
		Config: &actor.Config{Name: "@Person", Role: "Person"}}))
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	card := mustCard(orchestrator.AgentCard{AgentClass: "UserProxy", Description: "d", Config: &actor.Config{Role: "R"}})
	for what, err := range map[string]error{
		"Spawn":         second(team.Spawn(ctx, &echo{}, named("late"))),
		"ChildOrCreate": second(team.ChildOrCreate(ctx, &echo{}, named("late"))),
		"Hire":          second(team.Hire(ctx, "Person", "")),
		"ReserveName":   second(orchestrator.ReserveName(ctx, team, "late")),
		"ReleaseName":   orchestrator.ReleaseName(ctx, team, "late"),
		"SetMetadata":   team.SetMetadata(ctx, "m"),
		"Subscribe":     team.Subscribe(ctx, newSub()),
		"Unsubscribe":   team.Unsubscribe(ctx, newSub()),
		"Emit":          team.Emit(ctx, message.NewUserMessage("late")),
		"Register":      team.Register(ctx, card),
	} {
		if !errors.Is(err, actor.ErrActorDead) {
			t.Errorf("%s after the stop = %v, want ErrActorDead", what, err)
		}
	}
	if roles, _ := team.Roles(ctx); fmt.Sprint(roles) != "[Person]" {
		t.Errorf("the final view changed: roles %v", roles)
	}
}

func second[T any](_ T, err error) error { return err }

// A query made while the orchestrator runs its last hooks waits and answers
// from the final state, instead of failing with a dead actor.
func TestQueryDuringFinalStop(t *testing.T) {
	ctx := actortest.Context(t)
	_, team, _ := actortest.NewTeam(t)
	h := &held{entered: make(chan struct{}), release: make(chan struct{})}
	_ = team.Subscribe(ctx, h)
	mustSpawn(t, team, &echo{}, named("a"))
	stopped := stopAsync(ctx, team)
	<-h.entered // OnStop is running
	got := make(chan error, 1)
	go func() {
		_, err := team.Members(ctx)
		got <- err
	}()
	close(h.release)
	if err := <-got; err != nil {
		t.Fatalf("Members during the team's last step: %v", err)
	}
	if err := waitErr(t, stopped, "team stop"); err != nil {
		t.Fatal(err)
	}
}

// A raw stop (System.Stop, or a StopRecursively told to
// the team root) fires OnStop once and no OnStopRequest, and announces
// nothing: no TeamStoppingEvent reaches the subscriber or the log.
func TestRawStop(t *testing.T) {
	for name, stop := range map[string]func(t *testing.T, sys *actor.System, team *orchestrator.Team) error{
		"System.Stop": func(t *testing.T, sys *actor.System, team *orchestrator.Team) error {
			return sys.Stop(actortest.Context(t), team.Address())
		},
		"StopRecursively": func(t *testing.T, sys *actor.System, team *orchestrator.Team) error {
			if err := sys.Tell(team.Address(), message.StopRecursively{}); err != nil {
				return err
			}
			waitDone(t, team.Done(), "the team's end")
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			sys, team, _ := actortest.NewTeam(t)
			ctx := actortest.Context(t)
			sub := newSub()
			_ = team.Subscribe(ctx, sub)
			a := mustSpawn(t, team, &echo{}, named("a"))
			if err := stop(t, sys, team); err != nil {
				t.Fatal(err)
			}
			if a.IsAlive() {
				t.Fatal("a member outlived the raw stop")
			}
			if n := len(sub.hooks("stop")); n != 1 {
				t.Fatalf("OnStop fired %d times", n)
			}
			if n := len(sub.hooks("stop_request")); n != 0 {
				t.Fatalf("OnStopRequest fired %d times on a raw stop", n)
			}
			for _, m := range sub.messages() {
				if ev, ok := m.(*message.EventMessage); ok {
					t.Fatalf("raw stop announced %v", ev.Event)
				}
			}
			if ev, _ := team.Events(ctx, orchestrator.EventFilter{}); len(ev) != 0 {
				t.Fatalf("raw stop logged %d events", len(ev))
			}
		})
	}
}

// Shutdown stops two busy teams and a root agent; every
// subscriber is told OnStopRequest once, after one TeamStoppingEvent
// (shutdown announces, as Team.Stop does), and OnStop once; nothing is
// left alive.
func TestShutdownStopsTeams(t *testing.T) {
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	var subs []*recordingSub
	var all []*message.Address
	for range 2 {
		team, err := orchestrator.New(sys)
		if err != nil {
			t.Fatal(err)
		}
		sub := newSub()
		_ = team.Subscribe(actortest.Context(t), sub)
		subs = append(subs, sub)
		for i := range 3 {
			a := mustSpawn(t, team, &echo{}, named(fmt.Sprint("w", i)))
			_ = sys.Tell(a, message.NewUserMessage("busy"))
			all = append(all, a)
		}
		all = append(all, team.Address())
	}
	root, _ := sys.Spawn(&echo{}, named("root"))
	all = append(all, root)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if n := len(s.hooks("stop")); n != 1 {
			t.Fatalf("a subscriber got %d OnStop", n)
		}
		if n := len(s.hooks("stop_request")); n != 1 {
			t.Fatalf("a subscriber got %d OnStopRequest", n)
		}
		announced := 0
		for _, m := range s.messages() {
			if ev, ok := m.(*message.EventMessage); ok {
				if _, ok := ev.Event.(message.TeamStoppingEvent); ok {
					announced++
				}
			}
		}
		if announced != 1 {
			t.Fatalf("a subscriber saw %d TeamStoppingEvents, want 1", announced)
		}
	}
	for _, a := range all {
		if a.IsAlive() {
			t.Fatalf("%v alive after shutdown", a)
		}
	}
}

// 1,000 members stopping at once with a subscriber attached.
func TestThousandMembersStop(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	var count int
	_ = team.Subscribe(ctx, onMessageFunc(func(message.Message) { count++ }))
	for i := range 1000 {
		mustSpawn(t, team, &echo{}, named(fmt.Sprint("m", i)))
	}
	if members, _ := team.Members(ctx); len(members) != 1000 {
		t.Fatalf("roster %d, want 1000", len(members))
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stops, _ := team.Messages(ctx, orchestrator.Filter{Type: "StopMessage"})
	if len(stops) != 1000 {
		t.Fatalf("%d StopMessages logged, want 1000", len(stops))
	}
	if count != 1001 { // 1000 Starts + the TeamStoppingEvent; read after stop
		t.Fatalf("subscriber got %d messages, want 1001", count)
	}
}

// A raw stop (System.Stop) of the orchestrator does not block on a member
// that asks it mid-handler: it is answered and the team stops.
func TestRawStopWithAskingMember(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	inHandler, answered := make(chan struct{}), make(chan error, 1)
	worker := mustSpawn(t, team, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); !ok {
			return nil, nil
		}
		close(inHandler)
		<-c.Context().Done() // the orchestrator is stopping its members now
		_, err := orchestrator.Of(c.Orchestrator()).Members(context.Background())
		answered <- err
		return nil, nil
	}), named("worker"))
	_ = sys.Tell(worker, message.NewUserMessage("go"))
	<-inHandler
	stopped := make(chan error, 1)
	go func() { stopped <- sys.Stop(ctx, team.Address()) }()
	if err := <-answered; err != nil {
		t.Fatalf("the member's query during the raw stop: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// Team.StopCause tells a stop asked for (Team.Stop) from the system's
// shutdown and from a raw stop: what a supervisor needs to know whether the
// team should run again (the cluster's workers resume all but the first).
func TestStopCause(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	if c := team.StopCause(); c != nil {
		t.Fatalf("a running team's stop cause: %v", c)
	}
	if c := orchestrator.Of(team.Address()).StopCause(); c != nil {
		t.Fatalf("a handle made by Of: %v", c)
	}
	if err := team.Stop(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if c := team.StopCause(); !errors.Is(c, orchestrator.ErrStopRequested) {
		t.Fatalf("after Team.Stop: %v; want ErrStopRequested", c)
	}

	shut, err := orchestrator.New(sys)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := orchestrator.New(sys)
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Stop(actortest.Context(t), raw.Address()); err != nil {
		t.Fatal(err)
	}
	if c := raw.StopCause(); c == nil || errors.Is(c, orchestrator.ErrStopRequested) {
		t.Fatalf("after a raw stop: %v; want a cause, not ErrStopRequested", c)
	}
	if err := sys.Shutdown(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if c := shut.StopCause(); !errors.Is(c, actor.ErrShutdown) || errors.Is(c, orchestrator.ErrStopRequested) {
		t.Fatalf("after the system's shutdown: %v; want actor.ErrShutdown", c)
	}
}
