package message_test

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// Fixed identities, ids and times: the goldens and the round-trip tests are
// built from these so that their JSON is deterministic.
var (
	teamID  = uuid.MustParse("7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d")
	squadID = uuid.MustParse("5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d")

	orchestratorID = message.Identity{
		AgentID: uuid.MustParse("11111111-1111-4111-8111-111111111111"),
		Name:    "@Orchestrator",
		Role:    "Orchestrator",
		TeamID:  teamID,
		Type:    "akgentic.core.orchestrator.Orchestrator",
		// Orchestrate is not part of the serialized form: the
		// fixture leaves it false so that decoded values compare equal.
	}
	userID = message.Identity{
		AgentID:   uuid.MustParse("22222222-2222-4222-8222-222222222222"),
		Name:      "@Human",
		Role:      "Human",
		TeamID:    teamID,
		UserProxy: true,
		Type:      "akgentic.core.user_proxy.UserProxy",
	}
	greeterID = message.Identity{
		AgentID: uuid.MustParse("33333333-3333-4333-8333-333333333333"),
		Name:    "@Greeter",
		Role:    "Greeter",
		TeamID:  teamID,
		SquadID: squadID,
		Type:    "examples.greeter.Greeter",
	}

	msgID    = uuid.MustParse("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa") // the business message
	parentID = uuid.MustParse("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") // what caused it
	recordID = uuid.MustParse("cccccccc-cccc-4ccc-8ccc-cccccccccccc") // a telemetry record

	t0 = time.Date(2025, time.March, 14, 15, 9, 26, 535_000_000, time.UTC)
	t1 = t0.Add(7 * time.Millisecond)
)

func orchestrator() *message.Address { return message.NewSnapshotAddress(orchestratorID) }
func human() *message.Address        { return message.NewSnapshotAddress(userID) }
func greeter() *message.Address      { return message.NewSnapshotAddress(greeterID) }

// userMessage is the business message the records talk about: human to
// greeter, stamped.
func userMessage() *message.UserMessage {
	m := message.NewUserMessage("Hello, Akgentic!")
	m.ID = msgID
	m.ParentID = uuid.NullUUID{UUID: parentID, Valid: true}
	m.TeamID = uuid.NullUUID{UUID: teamID, Valid: true}
	m.Timestamp = t0
	m.Sender = human()
	m.Recipient = greeter()
	return m
}

// record returns the envelope of a telemetry record emitted by the greeter
// while handling userMessage.
func record() message.Base {
	return message.Base{
		ID:        recordID,
		ParentID:  uuid.NullUUID{UUID: msgID, Valid: true},
		TeamID:    uuid.NullUUID{UUID: teamID, Valid: true},
		Timestamp: t1,
		Sender:    greeter(),
	}
}

// samples returns one fully populated value of every type message/
// registers, keyed by registered name, as Unmarshal returns them
// (pointers; nested values as they decode).
func samples() map[string]any {
	result := message.NewResultMessage("Hello, Human!")
	result.ID = recordID
	result.ParentID = uuid.NullUUID{UUID: msgID, Valid: true}
	result.TeamID = uuid.NullUUID{UUID: teamID, Valid: true}
	result.Timestamp = t1
	result.Sender = greeter()
	result.Recipient = human()

	cancel := &message.CancelMessage{Base: record(), Reason: "user pressed stop"}
	cancel.Sender, cancel.Recipient = human(), greeter()

	notice := message.NotificationMessage{
		Base:           record(),
		ContentType:    "",
		Content:        "context window 80% full",
		CurrentMessage: userMessage(),
	}
	errNotice := notice
	errNotice.ContentType = "*errors.errorString"
	errNotice.Content = "greeter: boom"
	warnNotice := notice
	warnNotice.ContentType = "actor.WarningError"
	warnNotice.Content = "greeter: rate limited, retrying"

	return map[string]any{
		"UserMessage":        userMessage(),
		"ResultMessage":      result,
		"CancelMessage":      cancel,
		"StopRecursively":    &message.StopRecursively{},
		"TeamStoppingEvent":  &message.TeamStoppingEvent{},
		"ClosedNotification": &message.ClosedNotification{MessageID: msgID},
		"StartMessage": &message.StartMessage{
			Base:   withParent(record(), uuid.Nil),
			Config: json.RawMessage(`{"name":"@Greeter","role":"Greeter","squad_id":"5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d"}`),
			Parent: orchestrator(),
		},
		"StopMessage": &message.StopMessage{Base: withParent(record(), uuid.Nil)},
		"SentMessage": &message.SentMessage{
			Base:      withSender(withParent(record(), parentID), human()),
			Message:   userMessage(),
			Recipient: greeter(),
		},
		"ReceivedMessage":     &message.ReceivedMessage{Base: record(), MessageID: msgID},
		"ProcessedMessage":    &message.ProcessedMessage{Base: record(), MessageID: msgID},
		"HandledMessage":      &message.HandledMessage{Base: record(), MessageID: msgID},
		"NotificationMessage": &notice,
		"ErrorMessage": &message.ErrorMessage{
			NotificationMessage: errNotice,
			Traceback:           "goroutine 7 [running]:\nexamples/greeter.(*Greeter).Receive(...)\n\tgreeter.go:42",
		},
		"WarningMessage": &message.WarningMessage{NotificationMessage: warnNotice},
		"StateChangedMessage": &message.StateChangedMessage{
			Base:  record(),
			State: json.RawMessage(`{"greeted":["@Human"],"count":1}`),
		},
		"EventMessage": &message.EventMessage{
			Base:  withSender(withParent(record(), uuid.Nil), orchestrator()),
			Event: &message.TeamStoppingEvent{},
		},
	}
}

func withParent(b message.Base, parent uuid.UUID) message.Base {
	b.ParentID = uuid.NullUUID{UUID: parent, Valid: parent != uuid.Nil}
	return b
}

func withSender(b message.Base, sender *message.Address) message.Base {
	b.Sender = sender
	return b
}

// testOnly reports whether a registered name was registered by these tests
// rather than by message/ itself.
func testOnly(name string) bool {
	return name == "GreetMessage" || len(name) > 5 && name[:5] == "test."
}

// notice returns the NotificationMessage of a notification record: the
// value itself, or the one ErrorMessage and WarningMessage embed (the
// Notification interface is gone; its Notice method did this).
func notice(v any) *message.NotificationMessage {
	switch m := v.(type) {
	case *message.NotificationMessage:
		return m
	case *message.ErrorMessage:
		return &m.NotificationMessage
	case *message.WarningMessage:
		return &m.NotificationMessage
	}
	return nil
}
