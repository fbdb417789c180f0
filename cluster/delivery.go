package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// handle takes one delivery of an input (on the consumer's goroutine).
func (ib *inbox) handle(m jetstream.Msg) {
	input, err := uuid.Parse(m.Headers().Get(jetstream.MsgIDHeader))
	if err != nil {
		ib.refuse(m, uuid.Nil, fmt.Errorf("no input id (%s header %q)", jetstream.MsgIDHeader, m.Headers().Get(jetstream.MsgIDHeader)))
		return
	}
	n := uint64(1)
	if meta, err := m.Metadata(); err == nil {
		n = meta.NumDelivered
	}
	ib.mu.Lock()
	if _, running := ib.inflight[input]; running {
		ib.inflight[input] = m // delivered again while its turn runs here: acknowledged when it is durable
		ib.mu.Unlock()
		return
	}
	for k := uint64(1); k <= n; k++ {
		// An earlier delivery's turn is durable (or this one's, the same
		// input stored again: SendOnce past the duplicate window): not
		// run again.
		if ib.done[attemptID(input, k)] {
			ib.mu.Unlock()
			ib.ack(m, input)
			return
		}
	}
	ib.inflight[input] = m
	ib.mu.Unlock()

	select {
	case <-ib.team.Done():
		ib.forget(input) // delivered again to the team's next owner
		return
	default:
	}
	if until, ok := ib.w.leaseEnd(ib.id); !ok || !time.Now().Before(until) {
		// This worker's hold on the team has ended (the process was
		// paused, its shard's renewals lag): another worker may hold the
		// team now.
		// No turn begins (no model call paid for a team it may no longer
		// hold); the shard's renewal settles whose the team is, and the input is
		// delivered again, to whichever worker holds it.
		ib.forget(input)
		ib.w.logger.Warn("cluster: an input is not run: this worker's hold on the team (its shard's lease) has ended", "team_id", ib.id, "input", input, "lease_end", until)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sayTimeout)
	defer cancel()
	if ib.person == "" {
		ib.refuse(m, input, errors.New("the team's template names no person to send input from"))
		return
	}
	d, err := ib.delivery(ctx, m)
	switch {
	case errors.Is(err, errStopping): // its next owner gets the input
		ib.forget(input)
		ib.w.logger.Warn("cluster: an input is left for the team's next owner", "team_id", ib.id, "input", input, "error", err)
		return
	case err != nil:
		ib.refuse(m, input, err)
		return
	}
	am := &agent.AgentMessage{Type: agent.Request, Content: string(m.Data())}
	if d.question != nil {
		am.Type = agent.Response
	}
	mid := attemptID(input, n)
	am.ID = mid
	ib.ledger.onClosed(mid, func() { ib.closed(input, mid) })
	if d.question != nil {
		err = agent.Answer(ctx, d.from, d.question, am)
	} else {
		err = agent.Say(ctx, d.from, d.to, am)
	}
	if err != nil {
		ib.ledger.drop(mid)
		ib.refuse(m, input, fmt.Errorf("%s: %w", d.what, err))
		return
	}
	if am.Recipient == nil {
		// Not sent as itself: a "/cancel", sent as a CancelMessage that
		// cancels the running turn at once. It is done once sent and
		// every record so far durable; it is not run again.
		ib.ledger.drop(mid)
		ib.ledger.onFlushed(func() { ib.closed(input, mid) })
	}
}

// errStopping is delivery's error when the team is stopping: the input is
// left for the team's next owner.
var errStopping = errors.New("the team is stopping")

// delivery is where an input goes: from the team's person to a member
// (Client.Send), or to the sender of the question it answers
// (Client.Answer).
type delivery struct {
	from, to *message.Address
	question message.Message // the message answered; nil for Send
	what     string          // for errors: "send to "x"", "answer <id>"
}

// delivery resolves an input's sender and recipient. An error other than
// errStopping is the input's fault: it is refused.
func (ib *inbox) delivery(ctx context.Context, m jetstream.Msg) (delivery, error) {
	var d delivery
	from, err := ib.team.Member(ctx, ib.person)
	switch {
	case err != nil:
		return d, fmt.Errorf("%w: %w", errStopping, err)
	case from == nil:
		return d, fmt.Errorf("the team has no member %q to speak for its person", ib.person)
	}
	d.from = from
	if q := m.Headers().Get(answersHeader); q != "" {
		d.what = "answer " + q
		qid, err := uuid.Parse(q)
		if err != nil {
			return d, fmt.Errorf("%s: not a message id: %w", d.what, err)
		}
		d.question, err = ib.question(ctx, qid)
		return d, err
	}
	to := m.Headers().Get(toHeader)
	d.what = fmt.Sprintf("send to %q", to)
	d.to, err = ib.team.Member(ctx, to)
	switch {
	case err != nil:
		return d, fmt.Errorf("%w: %w", errStopping, err)
	case d.to == nil:
		return d, fmt.Errorf("the team has no member named %q", to)
	}
	return d, nil
}

// question finds, in the team's log, the message id that a member sent to
// the team's person.
func (ib *inbox) question(ctx context.Context, id uuid.UUID) (message.Message, error) {
	sent, err := ib.team.Messages(ctx, orchestrator.Filter{Type: "SentMessage"})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errStopping, err)
	}
	for _, r := range slices.Backward(sent) {
		s, ok := r.(*message.SentMessage)
		if !ok || s.Message == nil || s.Message.Envelope().ID != id {
			continue
		}
		if s.Recipient == nil || s.Recipient.Name() != ib.person {
			return nil, fmt.Errorf("answer %s: the message was sent to %s, not to the team's person %q", id, nameOf(s.Recipient), ib.person)
		}
		return s.Message, nil
	}
	return nil, fmt.Errorf("answer %s: the team's log holds no such message", id)
}

// nameOf is a's name, "nobody" when nil.
func nameOf(a *message.Address) string {
	if a == nil {
		return "nobody"
	}
	return a.Name()
}

// refuse drops an input that cannot be delivered (no such member, no
// person): terminated, logged, and told to the team as a warning record.
func (ib *inbox) refuse(m jetstream.Msg, input uuid.UUID, why error) {
	ib.forget(input)
	ib.w.logger.Error("cluster: input refused", "team_id", ib.id, "input", input, "error", why)
	w := &message.WarningMessage{}
	w.ContentType, w.Content = "text/plain", fmt.Sprintf("cluster: input %s refused: %v", input, why)
	ctx, cancel := context.WithTimeout(context.Background(), sayTimeout)
	defer cancel()
	if err := ib.team.Emit(ctx, w); err != nil {
		ib.w.logger.Debug("cluster: the refusal could not be told to the team", "error", err)
	}
	ib.ack(m, input) // done with: out of the work queue, not delivered again
}

func (ib *inbox) forget(input uuid.UUID) {
	ib.mu.Lock()
	delete(ib.inflight, input)
	ib.freedLocked()
	ib.mu.Unlock()
}
