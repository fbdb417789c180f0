package message

import (
	"encoding/json"

	"github.com/google/uuid"
)

// Telemetry is implemented by every telemetry record the runtime emits to a
// team's orchestrator.
type Telemetry interface {
	Message
	telemetry()
}

// StartMessage records an actor's start: its config and its parent.
// The runtime emits it in the creator's context, before the actor's OnStart.
type StartMessage struct {
	Base
	Config any      `json:"config"`
	Parent *Address `json:"parent"`
}

// StopMessage records an actor's stop, once per actor.
type StopMessage struct {
	Base
}

// SentMessage opens the ledger record of a message: emitted by the
// sender after stamping and before delivery.
//
// Its Recipient is the sent message's recipient. In JSON it takes the
// "recipient" key, as in akgentic-core, so the record's own Base.Recipient
// (which the runtime leaves nil) is not persisted.
type SentMessage struct {
	Base
	Message   Message  `json:"message"`
	Recipient *Address `json:"recipient"`
}

// ReceivedMessage records the start of a turn for a message.
type ReceivedMessage struct {
	Base
	MessageID uuid.UUID `json:"message_id"`
}

// ProcessedMessage closes a message's ledger record after its own turn.
type ProcessedMessage struct {
	Base
	MessageID uuid.UUID `json:"message_id"`
}

// HandledMessage closes a message's ledger record when a running turn
// consumed it from the mailbox, so it never got a turn of its own.
type HandledMessage struct {
	Base
	MessageID uuid.UUID `json:"message_id"`
}

// NotificationMessage reports something about a turn. ContentType is
// the error's type name ("" for none), Content its text, CurrentMessage the
// message being handled when it happened (nil outside a turn).
type NotificationMessage struct {
	Base
	ContentType    string  `json:"content_type"`
	Content        string  `json:"content"`
	CurrentMessage Message `json:"current_message"`
}

// ErrorMessage reports a handler failure with its stack trace.
type ErrorMessage struct {
	NotificationMessage
	Traceback string `json:"traceback"`
}

// WarningMessage reports a soft failure, a WarningError.
type WarningMessage struct {
	NotificationMessage
}

// StateChangedMessage carries a detached copy of an actor's published state.
type StateChangedMessage struct {
	Base
	State any `json:"state"`
}

// EventMessage carries a domain event, e.g. a TeamStoppingEvent. An
// event emitted in the process is the value it was given; one decoded from
// a log is a pointer to a registered type: read it with EventAs, which
// takes both.
type EventMessage struct {
	Base
	Event any `json:"event"`
}

// Ephemeral is implemented by an event payload that is live only, such as
// a piece of an answer being streamed: a team's subscribers get
// its EventMessage as any other, but the team keeps it in no index (its
// events queries) and the durable log (orchestrator/eventlog) does not
// write it, so a restored team never sees it.
type Ephemeral interface {
	// Ephemeral marks the type; it does nothing.
	Ephemeral()
}

// EventAs returns m's event as a T, whether it holds a T or a *T (the one
// rule for event payloads: a live event is often a value, a decoded one a
// pointer); false when it holds neither or m is nil.
//
//	if ev, ok := message.EventAs[message.TeamStoppingEvent](m); ok { … }
func EventAs[T any](m *EventMessage) (T, bool) {
	var zero T
	if m == nil {
		return zero, false
	}
	switch v := m.Event.(type) {
	case T:
		return v, true
	case *T:
		if v != nil {
			return *v, true
		}
	}
	return zero, false
}

func (*StartMessage) telemetry()        {}
func (*StopMessage) telemetry()         {}
func (*SentMessage) telemetry()         {}
func (*ReceivedMessage) telemetry()     {}
func (*ProcessedMessage) telemetry()    {}
func (*HandledMessage) telemetry()      {}
func (*NotificationMessage) telemetry() {}
func (*StateChangedMessage) telemetry() {}
func (*EventMessage) telemetry()        {}

// JSON: the fields holding arbitrary values are written with their type tag
// (see Marshal) so that they decode back to their Go types. The records
// encode by hand (encode.go); decoding goes through the *JSON types below.

type startJSON struct {
	*startAlias
	Config json.RawMessage `json:"config"`
}
type startAlias StartMessage

// MarshalJSON encodes the record with its config tagged.
func (m *StartMessage) MarshalJSON() ([]byte, error) {
	return marshalUntagged(m)
}

// UnmarshalJSON decodes the record and its tagged config.
func (m *StartMessage) UnmarshalJSON(data []byte) error {
	var j startJSON
	j.startAlias = (*startAlias)(m)
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	v, err := unmarshalValue(j.Config)
	m.Config = v
	return inField("config", err)
}

type sentJSON struct {
	*sentAlias
	Message json.RawMessage `json:"message"`
}
type sentAlias SentMessage

// MarshalJSON encodes the record with the sent message tagged.
func (m *SentMessage) MarshalJSON() ([]byte, error) {
	return marshalUntagged(m)
}

// UnmarshalJSON decodes the record and the tagged message.
func (m *SentMessage) UnmarshalJSON(data []byte) error {
	var j sentJSON
	j.sentAlias = (*sentAlias)(m)
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	msg, err := unmarshalMessage(j.Message)
	m.Message = msg
	return inField("message", err)
}

type noticeAlias NotificationMessage
type noticeJSON struct {
	*noticeAlias
	CurrentMessage json.RawMessage `json:"current_message"`
}

func (n *NotificationMessage) toJSON() (noticeJSON, error) {
	raw, err := marshalValue(n.CurrentMessage)
	return noticeJSON{(*noticeAlias)(n), raw}, err
}

func (n *NotificationMessage) fromJSON(j noticeJSON) error {
	msg, err := unmarshalMessage(j.CurrentMessage)
	n.CurrentMessage = msg
	return inField("current_message", err)
}

// MarshalJSON encodes the record with its current message tagged.
func (n *NotificationMessage) MarshalJSON() ([]byte, error) {
	return marshalUntagged(n)
}

// UnmarshalJSON decodes the record; legacy keys are ignored.
func (n *NotificationMessage) UnmarshalJSON(data []byte) error {
	j := noticeJSON{noticeAlias: (*noticeAlias)(n)}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	return n.fromJSON(j)
}

type errorJSON struct {
	noticeJSON
	Traceback string `json:"traceback"`
}

// MarshalJSON encodes the record with its current message tagged.
func (e *ErrorMessage) MarshalJSON() ([]byte, error) {
	return marshalUntagged(e)
}

// UnmarshalJSON decodes the record; legacy keys are ignored.
func (e *ErrorMessage) UnmarshalJSON(data []byte) error {
	j := errorJSON{noticeJSON: noticeJSON{noticeAlias: (*noticeAlias)(&e.NotificationMessage)}}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	e.Traceback = j.Traceback
	return e.NotificationMessage.fromJSON(j.noticeJSON)
}

// MarshalJSON encodes the record with its current message tagged.
func (w *WarningMessage) MarshalJSON() ([]byte, error) {
	return marshalUntagged(w)
}

// UnmarshalJSON decodes the record; legacy keys are ignored.
func (w *WarningMessage) UnmarshalJSON(data []byte) error {
	return w.NotificationMessage.UnmarshalJSON(data)
}

type stateJSON struct {
	*stateAlias
	State json.RawMessage `json:"state"`
}
type stateAlias StateChangedMessage

// MarshalJSON encodes the record with its state tagged when registered.
func (m *StateChangedMessage) MarshalJSON() ([]byte, error) {
	return marshalUntagged(m)
}

// UnmarshalJSON decodes the record. A tagged state decodes to its registered
// type; an untagged one is kept as json.RawMessage for the caller to decode.
func (m *StateChangedMessage) UnmarshalJSON(data []byte) error {
	var j stateJSON
	j.stateAlias = (*stateAlias)(m)
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	v, err := unmarshalValue(j.State)
	m.State = v
	return inField("state", err)
}

type eventJSON struct {
	*eventAlias
	Event json.RawMessage `json:"event"`
}
type eventAlias EventMessage

// MarshalJSON encodes the record with its event tagged.
func (m *EventMessage) MarshalJSON() ([]byte, error) {
	return marshalUntagged(m)
}

// UnmarshalJSON decodes the record and its tagged event.
func (m *EventMessage) UnmarshalJSON(data []byte) error {
	var j eventJSON
	j.eventAlias = (*eventAlias)(m)
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	v, err := unmarshalValue(j.Event)
	m.Event = v
	return inField("event", err)
}
