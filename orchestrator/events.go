package orchestrator

import (
	"slices"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// eventIndex keeps every event entry of the log, in ledger order and
// by emitting agent, however far the window has moved: agents read their
// own model and usage events back from it. Its size follows the events it
// holds, not the team's traffic.
type eventIndex struct {
	all     []indexed
	byAgent map[uuid.UUID][]int32
}

// indexed is an entry and its stable id.
type indexed struct {
	e  entry
	id uint64
}

func (x *eventIndex) add(e *entry, id uint64) {
	if x.byAgent == nil {
		x.byAgent = map[uuid.UUID][]int32{}
	}
	if e.rec.Emitter != nil {
		a := e.rec.Emitter.AgentID()
		x.byAgent[a] = append(x.byAgent[a], int32(len(x.all)))
	}
	x.all = append(x.all, indexed{*e, id})
}

// each calls fn with every event of agent (every event when agent is
// uuid.Nil), in order.
func (x *eventIndex) each(agent uuid.UUID, fn func(m *message.EventMessage)) {
	if agent == uuid.Nil {
		for i := range x.all {
			fn(x.all[i].event())
		}
		return
	}
	for _, i := range x.byAgent[agent] {
		fn(x.all[i].event())
	}
}

// frozen returns a copy no later add can change (the final view).
func (x *eventIndex) frozen() eventIndex {
	return eventIndex{all: slices.Clip(x.all), byAgent: x.byAgent}
}

func (i *indexed) event() *message.EventMessage {
	m, _ := i.e.message(i.id).(*message.EventMessage)
	return m
}
