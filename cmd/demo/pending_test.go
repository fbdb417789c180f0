package main

import (
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
)

// The work a log leaves unfinished, from its records: after a crash (no
// stop) a turn that never ended and a message never received are cut;
// a question to the person is open until the person replies to it; with
// a stop, the turns the last stop ended and the messages never received
// are cut (a turn that ended before it is done).
func TestPendingWork(t *testing.T) {
	addr := func(name string, person bool) *message.Address {
		return message.NewSnapshotAddress(message.Identity{AgentID: uuid.New(), Name: name, Role: name[1:], UserProxy: person})
	}
	human, manager, qa := addr("@Human", true), addr("@Manager", false), addr("@QA", false)
	sent := func(from, to *message.Address, intent agent.Intent, parent uuid.UUID) (*message.SentMessage, uuid.UUID) {
		am := &agent.AgentMessage{Type: intent, Content: "text"}
		am.ID = uuid.New()
		if parent != uuid.Nil {
			am.ParentID = uuid.NullUUID{UUID: parent, Valid: true}
		}
		return &message.SentMessage{Base: message.Base{Sender: from}, Message: am, Recipient: to}, am.ID
	}
	received := func(who *message.Address, id uuid.UUID) message.Message {
		return &message.ReceivedMessage{Base: message.Base{Sender: who}, MessageID: id}
	}
	processed := func(who *message.Address, id uuid.UUID) message.Message {
		return &message.ProcessedMessage{Base: message.Base{Sender: who}, MessageID: id}
	}
	stopping := &message.EventMessage{Event: message.TeamStoppingEvent{}}

	task, taskID := sent(human, manager, agent.Request, uuid.Nil)
	review, reviewID := sent(manager, qa, agent.Request, taskID)
	ask, askID := sent(qa, human, agent.Request, reviewID)
	reply, _ := sent(human, qa, agent.Response, askID)
	done, doneID := sent(manager, qa, agent.Notification, taskID)

	crash := pendingWork([]message.Message{task, received(manager, taskID), review, received(qa, reviewID), processed(manager, taskID), ask, done})
	if len(crash.cut) != 2 || crash.cut[0] != review || crash.cut[1] != done || len(crash.questions) != 1 || crash.questions[0] != ask {
		t.Errorf("after a crash: cut %v, questions %v; want the review and the notification cut, the question open", crash.cut, crash.questions)
	}
	stopped := pendingWork([]message.Message{task, received(manager, taskID), processed(manager, taskID), review, received(qa, reviewID), ask, reply,
		done, received(qa, doneID), processed(qa, doneID), stopping, processed(qa, reviewID)})
	if len(stopped.cut) != 2 || stopped.cut[0] != review || stopped.cut[1] != reply || len(stopped.questions) != 0 {
		t.Errorf("after a stop: cut %v, questions %v; want the review (the stop ended its turn) and the answer (never received) cut, no question", stopped.cut, stopped.questions)
	}
	if !pendingWork([]message.Message{task, received(manager, taskID), processed(manager, taskID), stopping}).empty() {
		t.Error("a log whose work was done before its stop has unfinished work")
	}
}
