// Package message holds everything that travels between actors: the Message
// envelope every message embeds (Base), the business payloads of akgentic-core
// (UserMessage, ResultMessage, CancelMessage, StopRecursively), every telemetry
// record the runtime emits to a team's orchestrator (StartMessage, SentMessage,
// ReceivedMessage, ProcessedMessage, HandledMessage, NotificationMessage,
// ErrorMessage, WarningMessage, StopMessage, StateChangedMessage,
// EventMessage), domain events (TeamStoppingEvent, ClosedNotification), the
// Address of an actor, and a codec registry through which any registered
// message, record or payload round-trips through JSON by its type name.
//
// A message is a pointer to a struct that embeds Base:
//
//	type GreetMessage struct {
//		message.Base
//		Text string `json:"text"`
//	}
//
//	func init() { message.Register[GreetMessage]("GreetMessage") }
//
// Messages are immutable once sent: the runtime stamps the envelope (id,
// timestamp, sender, recipient, team, parent) before it enqueues the message
// and never changes it afterwards. Sending an already-sent message again (for
// example forwarding what a handler received) sends a shallow copy with a
// freshly stamped envelope and the same id, so the copy every earlier reader
// holds never changes under it.
package message
