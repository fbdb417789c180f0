package lineage_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/internal/lineage"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sent is a SentMessage record of a message with id and parent, to.
func sent(id, parent message.Message, to *message.Address) *message.SentMessage {
	b := id.Envelope()
	if parent != nil {
		b.ParentID.UUID, b.ParentID.Valid = parent.Envelope().ID, true
	}
	return &message.SentMessage{Message: id, Recipient: to}
}

// TestWorkFollowsTheMessagesItStarted: a message whose parent is the
// work's is the work's; the work is quiet when the last of its messages
// to members has been handled (not the ones to the person), its last
// error is kept, and forgetting it forgets its messages.
func TestWorkFollowsTheMessagesItStarted(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	person := spawn(t, ctx, team, "@Human", true)
	a, b := spawn(t, ctx, team, "@A", false), spawn(t, ctx, team, "@B", false)
	tree := lineage.New[string]()
	first, second, toPerson, other := message.NewUserMessage("go"), message.NewUserMessage("on"), message.NewUserMessage("done"), message.NewUserMessage("x")
	for _, m := range []message.Message{first, second, toPerson, other} {
		m.Envelope().ID = message.NewID()
	}
	tree.Own("w", first.Envelope().ID)
	if v, ok := tree.Sent(sent(first, nil, a), person.AgentID()); !ok || v != "w" {
		t.Fatalf("the first message: %q %v", v, ok)
	}
	if _, ok := tree.Sent(sent(second, first, b), person.AgentID()); !ok {
		t.Fatal("a message sent while handling the work's is not the work's")
	}
	if _, ok := tree.Sent(sent(toPerson, second, person), person.AgentID()); !ok {
		t.Fatal("the answer to the person is not the work's")
	}
	if _, ok := tree.Sent(sent(other, nil, a), person.AgentID()); ok {
		t.Fatal("an unrelated message is the work's")
	}
	// Busy counts the turns that have begun: @A's only, until @B's does
	// (Received reports each once, with its member).
	if busy := tree.Busy("w"); len(busy) != 0 {
		t.Fatalf("busy before any turn began: %v", busy)
	}
	if v, to, ok := tree.Received(first.Envelope().ID); !ok || v != "w" || to.AgentID() != a.AgentID() {
		t.Fatalf("the first message's turn: %q %v %v", v, to, ok)
	}
	if _, _, ok := tree.Received(first.Envelope().ID); ok {
		t.Fatal("a turn reported as beginning twice")
	}
	if _, _, ok := tree.Received(toPerson.Envelope().ID); ok {
		t.Fatal("the person's turn counted")
	}
	if busy := tree.Busy("w"); len(busy) != 1 || busy[0].AgentID() != a.AgentID() {
		t.Fatalf("busy: %v; want @A", busy)
	}
	tree.Received(second.Envelope().ID)
	if busy := tree.Busy("w"); len(busy) != 2 {
		t.Fatalf("busy: %v; want @A and @B", busy)
	}
	tree.Failure(message.NotificationMessage{Content: "boom", CurrentMessage: second})
	if _, quiet := tree.Handled(first.Envelope().ID); quiet {
		t.Fatal("quiet while @B still works")
	}
	if _, quiet := tree.Handled(toPerson.Envelope().ID); quiet {
		t.Fatal("the person's handling counted")
	}
	if v, quiet := tree.Handled(second.Envelope().ID); !quiet || v != "w" {
		t.Fatal("not quiet after the last message was handled")
	}
	if tree.LastErr("w") != "boom" {
		t.Fatalf("last error %q", tree.LastErr("w"))
	}
	tree.Forget("w")
	if _, ok := tree.Of(second.Envelope().ID); ok {
		t.Fatal("a forgotten work's message is still known")
	}
}

// TestCheckNamesWhatIsWrong: the endpoints' members are checked with an
// error naming the problem.
func TestCheckNamesWhatIsWrong(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	person, member := spawn(t, ctx, team, "@Human", true), spawn(t, ctx, team, "@A", false)
	for _, tc := range []struct {
		person, entry *message.Address
		want          string
	}{
		{nil, member, "Options.Person is nil"},
		{person, nil, "Options.Entry is nil"},
		{member, member, "not a user proxy"},
		{person, person, "is the person"},
	} {
		if err := lineage.Check("x", team.ID(), tc.person, tc.entry); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check: %v; want %q", err, tc.want)
		}
	}
	if err := lineage.Check("x", team.ID(), person, member); err != nil {
		t.Fatal(err)
	}
}

func spawn(t *testing.T, ctx context.Context, team *orchestrator.Team, name string, person bool) *message.Address {
	t.Helper()
	var a actor.Actor = actor.Func(func(*actor.Context, any) (any, error) { return nil, nil })
	if person {
		a = &orchestrator.UserProxy{}
	}
	addr, err := team.Spawn(ctx, a, &actor.Config{Name: name, Role: name[1:]})
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
