package orchestrator_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// gate is a member that blocks in its first turn until released (so the
// tells after it queue up) and closes done once it has handled total
// messages.
type gate struct {
	release chan struct{}
	done    chan struct{}
	n       int
	total   int
}

func (g *gate) Receive(*actor.Context, any) (any, error) {
	if g.n == 0 {
		<-g.release
	}
	g.n++
	if g.n == g.total {
		close(g.done)
	}
	return nil, nil
}

// sendNumbered has the member at from send n fresh messages to to, in one
// proxy call on from's goroutine, and returns their ids in send order.
func sendNumbered(t *testing.T, from, to *message.Address, n int) []uuid.UUID {
	t.Helper()
	ids := make([]uuid.UUID, 0, n)
	err := proxy.Do(actortest.Context(t), from, func(c *actor.Context, _ actor.Actor) error {
		for i := range n {
			m := &benchMsg{N: i}
			if err := c.Send(to, m); err != nil {
				return err
			}
			ids = append(ids, m.Envelope().ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// A stream of tells, queued while the recipient is busy and then handled
// back to back: the team's log holds, for each message, one Sent, one
// Received and one Processed record, in that order, and each turn's
// Processed record before the next turn's Received.
func TestStreamOfTellsRecordsEveryTurnInOrder(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	const n = 600 // more than two of the mailbox's segments
	g := &gate{release: make(chan struct{}), done: make(chan struct{}), total: n}
	b := mustSpawn(t, team, g, named("b"))
	a := mustSpawn(t, team, actor.Func(func(*actor.Context, any) (any, error) { return nil, nil }), named("a"))
	ids := sendNumbered(t, a, b, n)
	close(g.release)
	<-g.done
	// b's last turn ended: a proxy call on b runs after it.
	if err := proxy.Do(ctx, b, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
		t.Fatal(err)
	}
	msgs, err := team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// pos[kind][id] is the record's place in the log.
	pos := map[string]map[uuid.UUID]int{"Sent": {}, "Received": {}, "Processed": {}}
	note := func(kind string, id uuid.UUID, i int) {
		if _, twice := pos[kind][id]; twice {
			t.Fatalf("two %s records for one message (log[%d])", kind, i)
		}
		pos[kind][id] = i
	}
	for i, m := range msgs {
		switch r := m.(type) {
		case *message.SentMessage:
			if r.Sender.AgentID() == a.AgentID() {
				note("Sent", r.Message.Envelope().ID, i)
			}
		case *message.ReceivedMessage:
			if r.Sender.AgentID() == b.AgentID() {
				note("Received", r.MessageID, i)
			}
		case *message.ProcessedMessage:
			if r.Sender.AgentID() == b.AgentID() {
				note("Processed", r.MessageID, i)
			}
		}
	}
	for k, byID := range pos {
		if len(byID) != n {
			t.Fatalf("%d %s records, want %d", len(byID), k, n)
		}
	}
	prev := -1 // the previous turn's Processed
	for i, id := range ids {
		s, r, p := pos["Sent"][id], pos["Received"][id], pos["Processed"][id]
		if s >= r || r >= p || r <= prev {
			t.Fatalf("message %d: Sent at %d, Received at %d, Processed at %d, the previous turn's Processed at %d: want them in that order with the previous Processed first",
				i, s, r, p, prev)
		}
		prev = p
	}
}

// The Processed record of the last tell of a stream reaches the team's
// subscribers with nothing sent after it: the member emits it when it
// goes idle.
func TestLastProcessedRecordOfAStreamGoesOutWhenTheMemberIdles(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	ctx := actortest.Context(t)
	sub := newSub()
	if err := team.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	const n = 50
	done := make(chan struct{})
	b := mustSpawn(t, team, &countTo{total: n, done: done}, named("b"))
	a := mustSpawn(t, team, actor.Func(func(*actor.Context, any) (any, error) { return nil, nil }), named("a"))
	ids := sendNumbered(t, a, b, n)
	<-done
	last := ids[n-1]
	for {
		for _, m := range sub.messages() {
			if p, ok := m.(*message.ProcessedMessage); ok && p.MessageID == last {
				return
			}
		}
		select {
		case <-sub.change:
		case <-ctx.Done():
			t.Fatalf("the last message's Processed record never reached the subscriber: %v", ctx.Err())
		}
	}
}
