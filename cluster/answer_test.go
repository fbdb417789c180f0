package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
)

// questionOf watches the team from index from until a member sends the
// person the counters' question, and returns its id.
func questionOf(t *testing.T, ctx context.Context, c *Client, team uuid.UUID, from uint64) uuid.UUID {
	t.Helper()
	var q uuid.UUID
	watchUntil(t, ctx, c, team, from, func(m message.Message) bool {
		if s, ok := m.(*message.SentMessage); ok && s.Recipient.Name() == "@Human" {
			if am, ok := s.Message.(*agent.AgentMessage); ok && am.Content == question {
				q = am.ID
			}
		}
		return q != uuid.Nil
	})
	if q == uuid.Nil {
		t.Fatal("no question for the person")
	}
	return q
}

// answered returns the person's answer to q as the team's log holds it
// (nil when none) and whether its turn was processed.
func answered(t *testing.T, ctx context.Context, c *Client, team, input, q uuid.UUID) (*agent.AgentMessage, bool) {
	t.Helper()
	log, err := ReadTeam(ctx, c.nc, team, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var answer *agent.AgentMessage
	processed := false
	for _, m := range log {
		switch r := m.(type) {
		case *message.SentMessage:
			if am, ok := r.Message.(*agent.AgentMessage); ok && am.ID == input {
				if r.Sender.Name() != "@Human" || r.Recipient.Name() != "a" {
					t.Fatalf("answer sent by %s to %s; want @Human to a", r.Sender.Name(), r.Recipient.Name())
				}
				answer = am
			}
		case *message.ProcessedMessage:
			processed = processed || r.MessageID == input
		}
	}
	if answer != nil && (answer.Type != agent.Response || answer.ParentID.UUID != q) {
		t.Fatalf("answer %+v; want a response parented to the question %s", answer, q)
	}
	return answer, processed
}

// A person's answer to a member's question (what
// orchestrator.ProcessHumanInput does in one process) goes through the
// inbox: sent while no worker owns the team, it waits, and the team's next
// owner finds the question in the restored log and sends the answer from
// the person to the question's sender, parented to it; acknowledged once
// its turn is durable. Answers to no such message, or to a
// message that was not the person's, are refused and said so, not retried.
func TestAnswerThroughInbox(t *testing.T) {
	ctx, nc, c, w1, id := teamOnW1(t)
	ask := send(t, ctx, c, id, "a", askContent)
	waitInputs(t, ctx, w1.inputs, ask...)
	q := questionOf(t, ctx, c, id, 0)
	if err := w1.Close(ctx); err != nil { // no owner now
		t.Fatal(err)
	}
	input, err := c.Answer(ctx, id, q, "5")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := c.Answer(ctx, id, uuid.New(), "to nothing")
	if err != nil {
		t.Fatal(err)
	}
	notPersons, err := c.Answer(ctx, id, ask[0], "the person's own message")
	if err != nil {
		t.Fatal(err)
	}

	sys := system(t)
	w2 := startNamed(t, ctx, nc, sys, "w2")
	team := takenOver(t, ctx, w2.Worker, w2.resumed, id)
	waitInputs(t, ctx, w2.inputs, input, bad, notPersons)
	if got, calls := total(t, ctx, sys, team, "a"); got != 4 || calls != 2 {
		t.Fatalf("a: total %d after %d calls; want 4 after 2 (the answer counted once, then one more)", got, calls)
	}
	if am, processed := answered(t, ctx, c, id, input, q); am == nil || !processed || am.Content != "5" {
		t.Fatalf("answer %+v processed %v; want \"5\" sent and processed", am, processed)
	}
	inboxEmpty(t, ctx, c, id)
	log, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The person's own message may be compacted away by the snapshot of
	// w1's handover (a restore reads the snapshot): then it is refused as
	// not in the log, else as not sent to the person.
	for _, want := range []struct {
		input   uuid.UUID
		reasons []string
	}{
		{bad, []string{"the team's log holds no such message"}},
		{notPersons, []string{"not to the team's person", "the team's log holds no such message"}},
	} {
		told := false
		for _, m := range log {
			if w, ok := m.(*message.WarningMessage); ok && strings.Contains(w.Content, want.input.String()) {
				for _, r := range want.reasons {
					told = told || strings.Contains(w.Content, r)
				}
			}
		}
		if !told {
			t.Fatalf("no refusal of input %s (%s) told to the team", want.input, strings.Join(want.reasons, " or "))
		}
	}
	if _, err := c.Answer(ctx, id, uuid.Nil, "x"); err == nil {
		t.Error("Answer to the nil id: no error")
	}
	if _, err := c.Answer(ctx, id, q, " "); err == nil {
		t.Error("an empty answer: no error")
	}
}

// A person's answer to a passive team's question activates the team: the
// team, passivated while its question waited, is restored on its shard's
// holder and given the answer, which its log shows sent from the person to
// the question's sender and processed once.
func TestAnswerWakesAPassiveTeam(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	w, passivated := startIdle(t, ctx, nc, "w", func(cfg *Config) { cfg.IdleAfter = 100 * time.Millisecond })
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	ask := send(t, ctx, c, id, "a", askContent)
	waitInputs(t, ctx, w.inputs, ask...)
	q := questionOf(t, ctx, c, id, 0)
	for w.team(id) != nil { // passivated with its question waiting
		waitFor(t, ctx, passivated, id, "passivated")
	}
	input, err := c.Answer(ctx, id, q, "5")
	if err != nil {
		t.Fatal(err)
	}
	waitInputs(t, ctx, w.inputs, input)
	if am, processed := answered(t, ctx, c, id, input, q); am == nil || !processed || am.Content != "5" {
		t.Fatalf("answer %+v processed %v; want \"5\" sent and processed", am, processed)
	}
}
