package message

import "github.com/google/uuid"

// UserMessage carries human input into the agent system (display human).
type UserMessage struct {
	Base
	Content string `json:"content"`
}

// NewUserMessage returns a UserMessage with display type human.
func NewUserMessage(content string) *UserMessage {
	return &UserMessage{Base: Base{DisplayType: DisplayHuman}, Content: content}
}

// ResultMessage carries an agent's response to a UserMessage (display ai).
type ResultMessage struct {
	Base
	Content string `json:"content"`
}

// NewResultMessage returns a ResultMessage with display type ai.
func NewResultMessage(content string) *ResultMessage {
	return &ResultMessage{Base: Base{DisplayType: DisplayAI}, Content: content}
}

// CancelMessage asks an actor to abandon the turn it is running.
// The runtime acts on it when it is sent, not when the actor reaches it in
// its mailbox: the running turn's context (actor.Context.Context) is
// cancelled at once, with a cause naming the sender and Reason, so that
// the model call or tool in flight ends; the message is then delivered in
// order like any other (an agent.BaseAgent ends the cancelled turn with a
// warning; an actor that does not handle it reports it as unknown). Sent
// while no turn runs, it cancels nothing.
type CancelMessage struct {
	Base
	Reason string `json:"reason"`
}

// StopRecursively tells the receiving actor to run its recursive stop:
// children first, then itself. It is not a Message: it carries no
// envelope and produces no telemetry.
type StopRecursively struct{}

// TeamStoppingEvent is the payload of the EventMessage an orchestrator
// publishes when its team starts to stop. It has no fields: the
// envelope carries the team id, timestamp and sending orchestrator.
type TeamStoppingEvent struct{}

// ClosedNotification is a domain event saying a notification (by message id)
// was dismissed; user interfaces replay it.
type ClosedNotification struct {
	MessageID uuid.UUID `json:"message_id"`
}
