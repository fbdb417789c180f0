package orchestrator

import (
	"slices"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// Compaction is one layer's part of Compact. It is given a working copy
// of the log, the members Restore would recreate from it (in join order)
// and keep, one flag per record, and sets keep[i] for every record its
// layer's restore reads (an agent's start, a tool's). It may put in
// log[i] a record that replaces the one there (the same envelope, a
// payload its restore reads back the same: several records folded into
// one), and must then set keep[i]. It never clears a flag another part
// set: a record is dropped only when no part needs it.
type Compaction func(log []message.Message, members []*message.Address, keep []bool)

// Compact returns a compacted log: the records of log that Restore reads
// back, and those the parts mark, in their order, such that Restore of the
// result gives the team Restore of log gives (its id and orchestrator, the
// members it recreates with their configs and parents, in join order, the
// last state each member published, the metadata and the catalog). The
// orchestrator's part keeps the first record naming the team and the
// first naming its orchestrator, each member's first and last
// StartMessage, the last StateChangedMessage of every member (States
// holds those of departed members too), and the last MetadataChanged and
// CatalogChanged; it drops StopMessages and TeamStoppingEvents (the
// members to recreate are those of the first and last StartMessages
// kept), and everything else no part keeps. The records are the log's
// (not copied), but those a part replaced.
//
// A log followed by later records compacts the same way: Restore of
// Compact(log) followed by the later records equals Restore of log
// followed by them, so a compacted log can be compacted again with what
// came after it.
func Compact(log []message.Message, parts ...Compaction) []message.Message {
	keep := make([]bool, len(log))
	work := slices.Clone(log)
	var teamID, orchID uuid.UUID
	for i, m := range log {
		if m == nil {
			continue
		}
		b := m.Envelope()
		if teamID == uuid.Nil && b.TeamID.Valid {
			teamID, keep[i] = b.TeamID.UUID, true
		}
		if orchID == uuid.Nil {
			if isOrchestrator(b.Sender) {
				orchID, keep[i] = b.Sender.AgentID(), true
			} else if sm, ok := m.(*message.StartMessage); ok && isOrchestrator(sm.Parent) {
				orchID, keep[i] = sm.Parent.AgentID(), true
			}
		}
	}
	members := membersAt(log, orchID)
	recreated := make(map[uuid.UUID]bool, len(members))
	for _, a := range members {
		recreated[a.AgentID()] = true
	}
	first := map[uuid.UUID]int{}
	last := map[uuid.UUID]int{}
	state := map[uuid.UUID]int{}
	meta, cards := -1, -1
	for i, m := range log {
		switch x := m.(type) {
		case *message.StartMessage:
			if x.Sender == nil || !recreated[x.Sender.AgentID()] {
				continue
			}
			id := x.Sender.AgentID()
			if _, ok := first[id]; !ok {
				first[id] = i
			}
			last[id] = i
		case *message.StateChangedMessage:
			if x.Sender != nil {
				state[x.Sender.AgentID()] = i
			}
		case *MetadataChanged:
			meta = i
		case *CatalogChanged:
			cards = i
		}
	}
	for _, idx := range []map[uuid.UUID]int{first, last, state} {
		for _, i := range idx {
			keep[i] = true
		}
	}
	for _, i := range []int{meta, cards} {
		if i >= 0 {
			keep[i] = true
		}
	}
	for _, p := range parts {
		p(work, members, keep)
	}
	out := make([]message.Message, 0, len(log)/4)
	for i, m := range work {
		if keep[i] && m != nil {
			out = append(out, m)
		}
	}
	return out
}
