package orchestrator_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
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
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// §3.42, B96-B97, B100: stop returns at once; the subscriber sees one
// TeamStoppingEvent from the orchestrator, then OnStopRequest, then OnStop,
// and no StopMessage; a second stop returns the same handle.
func TestGracefulStopOrder(t *testing.T) {
	_, team, _ := newTeam(t)
	ctx := ctxT(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	mustSpawn(t, team, &echo{}, named("#Tool"))
	w := newBlocker()
	worker := mustSpawn(t, team, w, named("worker"))
	_ = worker.Tell(message.NewUserMessage("work"))
	<-w.entered

	done, err := team.Stop(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if isDone(done) {
		t.Fatal("stop handle done while a worker is busy")
	}
	again, _ := team.Stop(ctx, 5*time.Second)
	if again != done {
		t.Fatal("second Stop returned another handle")
	}
	close(w.release)
	waitDone(t, done, "team stop")

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
				t.Fatal("a StopMessage reached the subscriber during teardown (B97)")
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

// §3.43, §4 item 2: a worker asking the orchestrator mid-handler while the
// team stops: no deadlock, the ask is answered, the stop completes.
func TestStopDuringReentrantWork(t *testing.T) {
	_, team, _ := newTeam(t)
	ctx := ctxT(t)
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
	_ = worker.Tell(message.NewUserMessage("go"))
	<-inHandler
	done, err := team.Stop(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := team.Members(ctx); err != nil { // a concurrent ask during teardown
		t.Fatal(err)
	}
	close(askNow)
	if n := <-answered; n != 1 {
		t.Fatalf("worker saw %d members mid-teardown, want 1", n)
	}
	waitDone(t, done, "team stop")
}

// §3.45, B99: a worker that ignores the stop: the backstop fires after the
// grace, logs "forcing teardown", tells the deferred tool to stop, and the
// handle completes; shutdown reaps the worker once released.
func TestBackstop(t *testing.T) {
	_, team, logs := newTeam(t)
	ctx := ctxT(t)
	tool := mustSpawn(t, team, &echo{}, named("#Tool"))
	w := newBlocker()
	worker := mustSpawn(t, team, w, named("worker"))
	_ = worker.Tell(message.NewUserMessage("work"))
	<-w.entered
	defer close(w.release)
	done, _ := team.Stop(ctx, 100*time.Millisecond)
	if tool.IsAlive() == false {
		t.Fatal("the tool was stopped before the worker")
	}
	waitDone(t, done, "backstop")
	if logs.Count(slog.LevelWarn, "forcing teardown") != 1 {
		t.Fatalf("no forcing-teardown warning:\n%s", logs.Text())
	}
	waitDone(t, actor.Done(tool), "deferred tool stop")
	if !worker.IsAlive() {
		t.Fatal("the wedged worker should still be running")
	}
}

// §3.46, B98: tools ("#" names) stop after the other members; a consumer
// can still call its tool during teardown; completion waits for tools.
func TestToolsLast(t *testing.T) {
	_, team, _ := newTeam(t)
	ctx := ctxT(t)
	tool := mustSpawn(t, team, &echo{}, named("#VectorStore"))
	w := newBlocker()
	consumer := mustSpawn(t, team, w, named("consumer"))
	_ = consumer.Tell(message.NewUserMessage("work"))
	<-w.entered
	done, _ := team.Stop(ctx, 5*time.Second)
	if !tool.IsAlive() {
		t.Fatal("tool stopped while the consumer is busy")
	}
	// The consumer's teardown-time call to its tool succeeds.
	if r, err := sysOfAsk(ctx, tool); err != nil || r == nil {
		t.Fatalf("tool call during teardown: %v %v", r, err)
	}
	close(w.release)
	waitDone(t, done, "team stop")
	if tool.IsAlive() {
		t.Fatal("tool alive after the team stopped")
	}
	stops, _ := team.Messages(ctx, orchestrator.Filter{Type: "StopMessage"})
	if len(stops) != 2 || stops[0].Envelope().Sender.Name() != "consumer" || stops[1].Envelope().Sender.Name() != "#VectorStore" {
		t.Fatalf("stop order %v, want consumer then #VectorStore", senders(stops))
	}

	// A tools-only team stops promptly.
	_, tools, _ := newTeam(t)
	mustSpawn(t, tools, &echo{}, named("#A"))
	mustSpawn(t, tools, &echo{}, named("#B"))
	if err := tools.StopAndWait(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func sysOfAsk(ctx context.Context, to *message.Address) (any, error) {
	return actor.Call(ctx, to, func(*actor.Context, actor.Actor) (any, error) { return "ok", nil })
}

func senders(msgs []message.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Envelope().Sender.Name())
	}
	return out
}

// B96: a team with no members stops at once.
func TestEmptyTeamStops(t *testing.T) {
	_, team, _ := newTeam(t)
	if err := team.StopAndWait(ctxT(t), time.Hour); err != nil {
		t.Fatal(err)
	}
	if team.Address().IsAlive() {
		t.Fatal("orchestrator alive after stop")
	}
	// Queries still answer from the final state.
	msgs, err := team.Messages(ctxT(t), orchestrator.Filter{})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("after stop: %v %v, want Start and TeamStoppingEvent", typeNames(msgs), err)
	}
}

// §3.49, B102-B103: a raw stop (System.Stop) fires OnStop once and no
// OnStopRequest, and announces nothing.
func TestRawStop(t *testing.T) {
	sys, team, _ := newTeam(t)
	ctx := ctxT(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	mustSpawn(t, team, &echo{}, named("a"))
	if err := sys.Stop(ctx, team.Address()); err != nil {
		t.Fatal(err)
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
}

// §3.58: shutdown stops two busy teams and a root agent; every subscriber
// gets OnStop once; nothing is left alive.
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
		_ = team.Subscribe(ctxT(t), sub)
		subs = append(subs, sub)
		for i := range 3 {
			a := mustSpawn(t, team, &echo{}, named(fmt.Sprint("w", i)))
			_ = a.Tell(message.NewUserMessage("busy"))
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
	}
	for _, a := range all {
		if a.IsAlive() {
			t.Fatalf("%v alive after shutdown", a)
		}
	}
}

// 1,000 members stopping at once with a subscriber attached.
func TestThousandMembersStop(t *testing.T) {
	_, team, _ := newTeam(t)
	ctx := ctxT(t)
	var count int
	_ = team.Subscribe(ctx, onMessageFunc(func(message.Message) { count++ }))
	for i := range 1000 {
		mustSpawn(t, team, &echo{}, named(fmt.Sprint("m", i)))
	}
	if members, _ := team.Members(ctx); len(members) != 1000 {
		t.Fatalf("roster %d, want 1000", len(members))
	}
	if err := team.StopAndWait(ctx, 30*time.Second); err != nil {
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
// that asks it mid-handler (§4 item 2): it is answered and the team stops.
func TestRawStopWithAskingMember(t *testing.T) {
	sys, team, _ := newTeam(t)
	ctx := ctxT(t)
	inHandler, answered := make(chan struct{}), make(chan error, 1)
	worker := mustSpawn(t, team, actor.Func(func(c *actor.Context, msg any) (any, error) {
		if _, ok := msg.(*message.UserMessage); !ok {
			return nil, nil
		}
		close(inHandler)
		<-c.StopRequested() // the orchestrator is stopping its members now
		_, err := orchestrator.Of(c.Orchestrator()).Members(context.Background())
		answered <- err
		return nil, nil
	}), named("worker"))
	_ = worker.Tell(message.NewUserMessage("go"))
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
