package orchestrator_test

import (
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// B78: a new team's log holds only the orchestrator's own StartMessage.
func TestStartupState(t *testing.T) {
	_, team, _ := newTeam(t)
	ctx := ctxT(t)
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

// §3.17, §3.38: a workflow's log holds Start/Sent/Received/Processed in
// causal order, no StateChanged, nothing sent by the orchestrator.
func TestLogContents(t *testing.T) {
	sys, team, _ := newTeam(t)
	ctx := ctxT(t)
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
	// Filters (B82).
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
	_, team, _ := newTeam(t)
	ctx := ctxT(t)
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
	if none.CanRouteTo("x") || none.HasSkill("x") {
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
	if _, err := team.Members(ctxT(t)); err == nil {
		t.Fatal("nil team answered Members")
	}
}
