package agent

import (
	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Compaction is the agent layer's part of orchestrator.Compact: it keeps
// the records an LLM agent's restore (its start with Context.Restoring)
// and the team's spend guard read, so that an agent restored from the
// compacted log has the model context, usage and spend totals, pending
// approvals and cut turn it has restored from the whole log:
//
//   - every UsageEvent of every sender (an agent's lifetime usage, its
//     spend and the team's; kept whole: the runs they count and the
//     prices they are costed at are the restoring process's);
//   - every approval event, and every approval request an agent sent;
//   - a request (an AgentMessage of intent request) sent to a user proxy
//     that no message answers yet (a question the person may still answer
//     through the log);
//   - per member, its model context: its MessageEvents from its last
//     ClearedEvent or CompactedEvent on (a compaction's record is
//     replaced by one that replaces no message, with the messages it kept
//     before it), all of them when the compaction kept a summary of its
//     own; a turn cut by a crash (its ReceivedMessage without a
//     ProcessedMessage): that record, the message's SentMessage and every
//     LLM event of the member from the cut turn's first on; and, from its
//     last approval request on, its ReceivedMessages and ProcessedMessages
//     with the SentMessages received (the messages a paused run holds).
//
// Tool calls and returns, streamed text, closed turns' records and
// superseded context are dropped.
var Compaction orchestrator.Compaction = compactAgents

func compactAgents(log []message.Message, members []*message.Address, keep []bool) {
	sentAt := map[uuid.UUID]int{}    // message id → its SentMessage's index
	answered := map[uuid.UUID]bool{} // message ids some later message is sent in answer to
	for i, m := range log {
		switch x := m.(type) {
		case *message.SentMessage:
			if x.Message == nil {
				continue
			}
			b := x.Message.Envelope()
			sentAt[b.ID] = i
			if b.ParentID.Valid {
				answered[b.ParentID.UUID] = true
			}
			if am, ok := x.Message.(*AgentMessage); ok && am.Approval != nil {
				keep[i] = true
			}
		case *message.EventMessage:
			switch asLLMEvent(x.Event).(type) {
			case llm.UsageEvent, llm.ApprovalRequestedEvent, llm.ApprovalGrantedEvent, llm.ApprovalDeniedEvent:
				keep[i] = true
			}
		}
	}
	for i, m := range log {
		s, ok := m.(*message.SentMessage)
		if !ok || s.Message == nil || s.Recipient == nil || !s.Recipient.IsUserProxy() {
			continue
		}
		if am, ok := s.Message.(*AgentMessage); ok && am.Type == Request && !answered[am.ID] {
			keep[i] = true
		}
	}
	for _, a := range members {
		compactMember(log, a.AgentID(), sentAt, keep)
	}
}

// compactMember marks the records member id's restore reads.
func compactMember(log []message.Message, id uuid.UUID, sentAt map[uuid.UUID]int, keep []bool) {
	by := func(m message.Message) bool {
		s := m.Envelope().Sender
		return s != nil && s.AgentID() == id
	}
	// Its turn cut by a crash, as cutTurn finds it; its last approval
	// request, as restoreHeld reads from.
	cut, cutAt, lastAsk := uuid.Nil, -1, -1
	for i, m := range log {
		if m == nil || !by(m) {
			continue
		}
		switch x := m.(type) {
		case *message.ReceivedMessage:
			cut, cutAt = x.MessageID, i
		case *message.ProcessedMessage:
			if x.MessageID == cut {
				cut, cutAt = uuid.Nil, -1
			}
		case *message.EventMessage:
			if _, ok := asLLMEvent(x.Event).(llm.ApprovalRequestedEvent); ok {
				lastAsk = i
			}
		}
	}
	from := len(log) // the cut turn's first LLM event
	if cut != uuid.Nil {
		keep[cutAt] = true
		if j, ok := sentAt[cut]; ok {
			keep[j] = true
		}
		for i, m := range log {
			if ev, ok := m.(*message.EventMessage); ok && by(m) && asLLMEvent(ev.Event) != nil &&
				ev.ParentID.Valid && ev.ParentID.UUID == cut {
				from = i
				break
			}
		}
		for i := from; i < len(log); i++ {
			if ev, ok := log[i].(*message.EventMessage); ok && by(log[i]) && asLLMEvent(ev.Event) != nil {
				keep[i] = true
			}
		}
	}
	if lastAsk >= 0 {
		for i := lastAsk; i < len(log); i++ {
			switch x := log[i].(type) {
			case *message.ReceivedMessage:
				if by(x) {
					keep[i] = true
					if j, ok := sentAt[x.MessageID]; ok {
						keep[j] = true
					}
				}
			case *message.ProcessedMessage:
				if by(x) {
					keep[i] = true
				}
			}
		}
	}
	compactContext(log, by, from, keep)
}

// compactContext marks the history events (MessageEvent, CompactedEvent,
// ClearedEvent) of one member before from that its model context is made
// of: those from its last fold (a clear, or a compaction whose kept
// messages are its own MessageEvents) on, that compaction replaced by one
// replacing none, with the MessageEvents it kept.
func compactContext(log []message.Message, by func(message.Message) bool, from int, keep []bool) {
	var hist []int // indexes of the member's history events before from
	for i := 0; i < from && i < len(log); i++ {
		if ev, ok := log[i].(*message.EventMessage); ok && by(ev) {
			switch asLLMEvent(ev.Event).(type) {
			case llm.MessageEvent, llm.CompactedEvent, llm.ClearedEvent:
				hist = append(hist, i)
			}
		}
	}
	start := 0 // the first history event kept as it is
	for k := len(hist) - 1; k >= 0; k-- {
		ev := log[hist[k]].(*message.EventMessage)
		switch e := asLLMEvent(ev.Event).(type) {
		case llm.ClearedEvent:
			start = k
		case llm.CompactedEvent:
			folded, ok := foldable(log, hist[:k], e.ReplacedMessageCount)
			if !ok {
				continue // its kept messages include an earlier summary: an earlier fold, or all
			}
			for _, i := range folded {
				keep[i] = true
			}
			e.ReplacedMessageCount = 0
			cp := *ev
			if _, ptr := ev.Event.(*llm.CompactedEvent); ptr {
				cp.Event = &e
			} else {
				cp.Event = e
			}
			log[hist[k]] = &cp
			start = k
		default:
			continue
		}
		break
	}
	for _, i := range hist[start:] {
		keep[i] = true
	}
}

// foldable returns the MessageEvents among before (history events, in
// order) whose messages a compaction replacing n of the history keeps,
// and whether the kept messages are all MessageEvents (not an earlier
// compaction's summary).
func foldable(log []message.Message, before []int, n int) ([]int, bool) {
	var h []int // the history as historyOf folds it: each message's event index, -1 for a summary
	for _, i := range before {
		switch e := asLLMEvent(log[i].(*message.EventMessage).Event).(type) {
		case llm.MessageEvent:
			h = append(h, i)
		case llm.CompactedEvent:
			r := min(max(e.ReplacedMessageCount, 0), len(h))
			h = append([]int{-1}, h[r:]...)
		case llm.ClearedEvent:
			h = nil
		}
	}
	kept := h[min(max(n, 0), len(h)):]
	for _, i := range kept {
		if i < 0 {
			return nil, false
		}
	}
	return kept, true
}
