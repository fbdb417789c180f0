package orchestrator_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Leg 1 is an ordinary turn; leg 2 replies to the
// original sender through the send path; the human text is never logged.
func TestUserProxyLegs(t *testing.T) {
	sys, team, logs := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sub := newSub()
	_ = team.Subscribe(ctx, sub)
	proxy := mustSpawn(t, team, &orchestrator.UserProxy{}, named("human"))
	ag := &relay{target: proxy, results: make(chan string, 1)}
	agent := mustSpawn(t, team, ag, named("agent"))
	if err := sys.Tell(agent, message.NewUserMessage("Should I proceed?")); err != nil {
		t.Fatal(err)
	}
	evs := sub.waitFor(t, "the proxy's Processed", func(ev []event) bool {
		for _, e := range ev {
			if p, ok := e.msg.(*message.ProcessedMessage); ok && p.Sender.AgentID() == proxy.AgentID() {
				return true
			}
		}
		return false
	})
	var question message.Message
	for _, e := range evs {
		if s, ok := e.msg.(*message.SentMessage); ok && s.Recipient.AgentID() == proxy.AgentID() {
			question = s.Message
		}
	}
	if question == nil {
		t.Fatal("no SentMessage to the proxy reached the subscriber")
	}
	if err := orchestrator.ProcessHumanInput(ctx, proxy, "Yes, proceed", question); err != nil {
		t.Fatal(err)
	}
	if got := <-ag.results; got != "Yes, proceed" {
		t.Fatalf("agent got %q", got)
	}
	sent, _ := team.Messages(ctx, orchestrator.Filter{Type: "SentMessage", Sender: proxy.AgentID()})
	if len(sent) != 1 || sent[0].(*message.SentMessage).Recipient.AgentID() != agent.AgentID() {
		t.Fatalf("proxy's SentMessages %v", typeNames(sent))
	}
	if strings.Contains(logs.Text(), "proceed") {
		t.Fatalf("the human's text was logged:\n%s", logs.Text())
	}
	// No sender to reply to; not a user proxy.
	if err := orchestrator.ProcessHumanInput(ctx, proxy, "x", message.NewUserMessage("orphan")); !errors.Is(err, orchestrator.ErrNoSender) {
		t.Fatalf("reply to a message with no sender: %v", err)
	}
	if err := orchestrator.ProcessHumanInput(ctx, agent, "x", question); err == nil || !strings.Contains(err.Error(), "not a UserProxy") {
		t.Fatalf("ProcessHumanInput on a plain agent: %v", err)
	}
}

// reviewer is a derived user proxy with its own role.
type reviewer struct {
	orchestrator.UserProxy
	seen chan string
}

func (r *reviewer) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		r.seen <- m.Content
		return nil, r.Reply(c, "approved", m)
	}
	return r.UserProxy.Receive(c, msg)
}

// A derived proxy with role "worker" is a user proxy; an
// agent with role "UserProxy" is not.
func TestUserProxyIdentity(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	rv := &reviewer{seen: make(chan string, 1)}
	r := mustSpawn(t, team, rv, named("worker"))
	impostor := mustSpawn(t, team, &echo{}, &actor.Config{Name: "x", Role: "UserProxy"})
	if !r.IsUserProxy() || impostor.IsUserProxy() {
		t.Fatalf("IsUserProxy: derived %v, impostor %v", r.IsUserProxy(), impostor.IsUserProxy())
	}
	ag := &relay{target: r, results: make(chan string, 1)}
	a := mustSpawn(t, team, ag, named("agent"))
	_ = sys.Tell(a, message.NewUserMessage("review this"))
	if got := <-rv.seen; got != "review this" {
		t.Fatalf("reviewer saw %q", got)
	}
	if got := <-ag.results; got != "approved" {
		t.Fatalf("agent got %q", got)
	}
	if _, err := team.Members(ctx); err != nil {
		t.Fatal(err)
	}
}

// With no orchestrator, team queries fail with a warning
// wrapping ErrNoTeam (actor.ErrNoOrchestrator is gone: the sentinel is the
// orchestrator package's) and catalog queries return nothing.
func TestNoTeam(t *testing.T) {
	ctx := actortest.Context(t)
	none := orchestrator.Of(nil)
	if _, err := none.Members(ctx); !errors.Is(err, orchestrator.ErrNoTeam) {
		t.Fatalf("Members: %v", err)
	} else if _, ok := actor.IsWarning(err); !ok {
		t.Fatalf("Members error %v is not a warning", err)
	}
	cards, err := none.Cards(ctx)
	if err != nil || len(cards) != 0 {
		t.Fatalf("Cards = %v, %v", cards, err)
	}
	if c, err := none.Card(ctx, "x"); c != nil || err != nil {
		t.Fatalf("Card = %v, %v", c, err)
	}
	if err := none.Register(ctx); !errors.Is(err, orchestrator.ErrNoTeam) {
		t.Fatalf("Register: %v", err)
	}
	if err := none.Stop(ctx); !errors.Is(err, orchestrator.ErrNoTeam) {
		t.Fatalf("Stop: %v", err)
	}
	if none.ID().String() != "00000000-0000-0000-0000-000000000000" {
		t.Fatal("ID of no team")
	}
}

// ChildOrCreate returns the live child with that name, or a
// new one once it stopped.
func TestChildOrCreate(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	first, err := team.ChildOrCreate(ctx, &echo{}, named("#Foo"))
	if err != nil {
		t.Fatal(err)
	}
	second, _ := team.ChildOrCreate(ctx, &echo{}, named("#Foo"))
	if !first.Equal(second) {
		t.Fatal("second call created another child")
	}
	starts, _ := team.Messages(ctx, orchestrator.Filter{Type: "StartMessage", Sender: first.AgentID()})
	if len(starts) != 1 {
		t.Fatalf("%d StartMessages for #Foo", len(starts))
	}
	_ = sys.Stop(ctx, first)
	third, _ := team.ChildOrCreate(ctx, &echo{}, named("#Foo"))
	if third.Equal(first) || !third.IsAlive() {
		t.Fatal("no new child after the first stopped")
	}
}

// WithRetention bounds the in-memory log; the roster and subscribers are
// unaffected.
func TestRetention(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t, orchestrator.WithRetention(100))
	ctx := actortest.Context(t)
	var seen int
	_ = team.Subscribe(ctx, onMessageFunc(func(message.Message) { seen++ }))
	e := mustSpawn(t, team, &echo{}, named("e"))
	const n = 3000
	for range n {
		_ = sys.Tell(e, message.NewUserMessage("x"))
	}
	if _, err := sys.Ask(ctx, e, message.NewUserMessage("last")); err != nil {
		t.Fatal(err)
	}
	// The window keeps what the lossless subscriber has not been given
	// yet: once it has, the next query's drain releases the older records.
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	log, err := team.Messages(ctx, orchestrator.Filter{})
	if !errors.Is(err, orchestrator.ErrOutsideWindow) {
		t.Fatalf("Messages past the window without an archive: err %v, want ErrOutsideWindow", err)
	}
	if len(log) < 100 || len(log) > 100+2048 {
		t.Fatalf("retained %d records, want about 100", len(log))
	}
	log = slices.DeleteFunc(log, func(m message.Message) bool { // the orchestrator's reports of members' waits
		_, report := m.(*message.WarningMessage)
		return report && m.Envelope().Sender.AgentID() == team.Address().AgentID()
	})
	if last := log[len(log)-1]; message.TypeName(last) != "ProcessedMessage" {
		t.Fatalf("last retained %s, want the newest record", message.TypeName(last))
	}
	if members, _ := team.Members(ctx); len(members) != 1 {
		t.Fatal("roster lost with retention")
	}
	_ = team.Stop(ctx)
	if seen < 2*n+1 { // Start + Received/Processed per message; read after stop
		t.Fatalf("subscriber saw %d messages, want every record", seen)
	}
	for _, n := range []int{-1, 0} {
		if _, err := orchestrator.New(sys, orchestrator.WithRetention(n)); err == nil || !strings.Contains(err.Error(), "WithRetention") {
			t.Fatalf("WithRetention(%d): err %v, want an error naming it", n, err)
		}
	}
}

// Hire creates a member from a catalog card: its kind, a copy of its
// config, the card's role, the given name.
func TestHire(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	// "UserProxy" is UserProxy's registered kind (persisted in logs).
	card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: "UserProxy",
		Description: "a person", Config: &actor.Config{Name: "@Person", Role: "Person"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := team.Register(ctx, card); err != nil {
		t.Fatal(err)
	}
	a, err := team.Hire(ctx, "Person", "@Ada")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "@Ada" || a.Role() != "Person" || !a.IsUserProxy() {
		t.Fatalf("hired %v", a)
	}
	b, _ := team.Hire(ctx, "Person", "")
	if b == nil || b.Name() != "@Person" {
		t.Fatalf("hired with the card's name: %v", b)
	}
	if _, err := team.Hire(ctx, "Pilot", ""); err == nil || !strings.Contains(err.Error(), "roles: Person") {
		t.Fatalf("unknown role: %v", err)
	}
	if _, err := orchestrator.Of(nil).Hire(ctx, "Person", ""); !errors.Is(err, orchestrator.ErrNoTeam) {
		t.Fatalf("no team: %v", err)
	}
}

// ProcessHumanInput to a nil address is an error, not a panic.
func TestProcessHumanInputToNobody(t *testing.T) {
	if err := orchestrator.ProcessHumanInput(actortest.Context(t), nil, "x", nil); err == nil {
		t.Error("ProcessHumanInput to nobody")
	}
}
