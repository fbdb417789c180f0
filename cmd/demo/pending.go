package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// unfinished is the work a log left undone: the messages to agents whose
// turn never ran or was cut by the team's last stop, and the questions to
// the person that got no answer.
type unfinished struct {
	cut       []*message.SentMessage // to an agent
	questions []*message.SentMessage // to the person
}

func (u unfinished) empty() bool { return len(u.cut) == 0 && len(u.questions) == 0 }

// pendingWork finds the work msgs (a team's log) left unfinished. A turn
// is cut when it began before the log's last TeamStoppingEvent and ended
// after it (the stop ended it), or never ended (a crash); a message sent
// to an agent since the stop before that one and never received is cut
// too. A question is a request or an instruction to the person with no
// message from the person in reply to it.
func pendingWork(msgs []message.Message) unfinished {
	last, prev := len(msgs), -1 // the last stop, and the one before it
	for i, m := range msgs {
		if ev, ok := m.(*message.EventMessage); ok {
			if _, ok := message.EventAs[message.TeamStoppingEvent](ev); ok {
				if last < len(msgs) {
					prev = last
				}
				last = i
			}
		}
	}
	type turn struct{ received, ended int }
	turns := map[uuid.UUID]*turn{} // by message id
	answered := map[uuid.UUID]bool{}
	for i, m := range msgs {
		switch r := m.(type) {
		case *message.ReceivedMessage:
			turns[r.MessageID] = &turn{received: i, ended: -1}
		case *message.ProcessedMessage:
			if t := turns[r.MessageID]; t != nil {
				t.ended = i
			} else {
				turns[r.MessageID] = &turn{received: i, ended: i}
			}
		case *message.HandledMessage:
			turns[r.MessageID] = &turn{received: i, ended: i}
		case *message.SentMessage:
			if r.Sender != nil && r.Sender.IsUserProxy() && r.Message != nil && r.Message.Envelope().ParentID.Valid {
				answered[r.Message.Envelope().ParentID.UUID] = true
			}
		}
	}
	var u unfinished
	for i, m := range msgs {
		s, ok := m.(*message.SentMessage)
		if !ok || s.Recipient == nil || s.Message == nil || i > last {
			continue
		}
		am, ok := s.Message.(*agent.AgentMessage)
		if !ok {
			continue
		}
		id := am.Envelope().ID
		if s.Recipient.IsUserProxy() {
			if (am.Type == agent.Request || am.Type == agent.Instruction) && !answered[id] {
				u.questions = append(u.questions, s)
			}
			continue
		}
		t := turns[id]
		switch {
		case t == nil && i > prev: // never received, since the stop before the last
			u.cut = append(u.cut, s)
		case t != nil && t.received < last && (t.ended < 0 || t.ended > last):
			u.cut = append(u.cut, s)
		}
	}
	return u
}

// describe prints the unfinished work, one line each.
func (u unfinished) describe(w io.Writer) {
	for _, s := range u.cut {
		fmt.Fprintf(w, "  - %s's %s to %s was not finished: %s\n", name(s.Sender), kindOf(s), name(s.Recipient), excerpt(s))
	}
	for _, s := range u.questions {
		fmt.Fprintf(w, "  - %s's question to %s has no answer: %s\n", name(s.Sender), name(s.Recipient), excerpt(s))
	}
}

func kindOf(s *message.SentMessage) string {
	if am, ok := s.Message.(*agent.AgentMessage); ok {
		return string(am.Type)
	}
	return "message"
}

// excerpt is the start of a message's text, on one line.
func excerpt(s *message.SentMessage) string {
	am, _ := s.Message.(*agent.AgentMessage)
	if am == nil {
		return ""
	}
	text := strings.Join(strings.Fields(am.Content), " ")
	if r := []rune(text); len(r) > 60 {
		text = string(r[:57]) + "…"
	}
	return fmt.Sprintf("%q", text)
}

// resume goes on with the unfinished work on a real model: each cut
// message is sent again, from its sender to its recipient as the
// restored team has them, and each question to the person is answered
// as runTask answers one.
func (d *demo) resume(ctx context.Context, u unfinished) error {
	for _, s := range u.cut {
		from, err := d.team.Member(ctx, s.Sender.Name())
		if err != nil {
			return err
		}
		to, err := d.team.Member(ctx, s.Recipient.Name())
		if err != nil {
			return err
		}
		if from == nil || to == nil {
			gone := name(s.Recipient)
			if from == nil {
				gone = name(s.Sender)
			}
			fmt.Fprintf(d.opt.stdout, "! %s's %s to %s is not sent again: %s is not in the restored team\n", name(s.Sender), kindOf(s), name(s.Recipient), gone)
			continue
		}
		am := s.Message.(*agent.AgentMessage)
		if err := agent.Say(ctx, from, to, &agent.AgentMessage{Type: am.Type, Content: am.Content}); err != nil {
			return err
		}
	}
	for _, s := range u.questions {
		if err := orchestrator.ProcessHumanInput(ctx, d.human, realAnswer, s.Message); err != nil {
			return err
		}
	}
	return nil
}
