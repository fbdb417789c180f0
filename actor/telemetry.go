package actor

import (
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// RecordKind says which telemetry record a Record is.
type RecordKind uint8

// The telemetry records (B6-B16).
const (
	RecordStart RecordKind = iota + 1
	RecordStop
	RecordSent
	RecordReceived
	RecordProcessed
	RecordHandled
	RecordError
	RecordWarning
	RecordStateChanged
	RecordEvent
)

var recordNames = [...]string{"", "Start", "Stop", "Sent", "Received", "Processed", "Handled", "Error", "Warning", "StateChanged", "Event"}

// String names the value for logs and errors.
func (k RecordKind) String() string {
	if int(k) < len(recordNames) && k != 0 {
		return recordNames[k]
	}
	return "RecordKind(?)"
}

// Record is one telemetry record, as the runtime hands it to a team's sink.
// It is passed by value and holds only pointers to values that are
// immutable once emitted, so a sink may keep it as it is; To builds the
// corresponding message on demand.
type Record struct {
	Kind RecordKind
	// Time is the emission time in nanoseconds since the epoch (1 ms
	// resolution: one coarse clock read per record).
	Time int64
	// Emitter is the actor that emitted the record (the telemetry's sender).
	Emitter *message.Address
	// Parent is the emitter's current message (nil outside a turn); the
	// record's parent id is its id. Nil for Error and Warning (B33).
	Parent message.Message
	// Message is the message the record is about: the sent message for Sent,
	// the turn's message for Received/Processed/Handled, the current message
	// for Error/Warning.
	Message message.Message
	// Recipient is the recipient of a Sent message.
	Recipient *message.Address
	// Value holds the config (Start), the detached state copy
	// (StateChanged), the event (Event), or the *message.ErrorMessage /
	// *message.WarningMessage (Error, Warning).
	Value any
}

// ToMessage builds the telemetry message the record stands for, with a fresh
// id, its timestamp, sender, team and parent.
func (r Record) ToMessage() message.Telemetry { return r.ToMessageID(uuid.Nil) }

// ToMessageID is ToMessage with a given id (a fresh one when id is
// uuid.Nil), for a sink that must give a record the same id every time it
// builds its message.
func (r Record) ToMessageID(id uuid.UUID) message.Telemetry {
	var m message.Telemetry
	switch r.Kind {
	case RecordStart:
		var parent *message.Address
		if p, ok := r.Value.(startValue); ok {
			parent = p.parent
			m = &message.StartMessage{Config: p.config, Parent: parent}
		} else {
			m = &message.StartMessage{Config: r.Value}
		}
	case RecordStop:
		m = &message.StopMessage{}
	case RecordSent:
		m = &message.SentMessage{Message: r.Message, Recipient: r.Recipient}
	case RecordReceived:
		m = &message.ReceivedMessage{MessageID: r.Message.Envelope().ID}
	case RecordProcessed:
		m = &message.ProcessedMessage{MessageID: r.Message.Envelope().ID}
	case RecordHandled:
		m = &message.HandledMessage{MessageID: r.Message.Envelope().ID}
	case RecordError, RecordWarning:
		// A copy: the record's value is shared by every materialization.
		switch v := r.Value.(type) {
		case *message.ErrorMessage:
			c := *v
			m = &c
		case *message.WarningMessage:
			c := *v
			m = &c
		default:
			m = &message.ErrorMessage{}
		}
	case RecordStateChanged:
		m = &message.StateChangedMessage{State: r.Value}
	case RecordEvent:
		m = &message.EventMessage{Event: r.Value}
	default:
		m = &message.EventMessage{Event: r.Value}
	}
	b := m.Envelope()
	switch {
	case id != uuid.Nil:
		b.ID = id
	case b.ID == uuid.Nil:
		b.ID = message.NewID()
	}
	b.Timestamp = time.Unix(0, r.Time).UTC()
	b.Sender = r.Emitter
	if r.Emitter != nil {
		team := r.Emitter.TeamID()
		b.TeamID.UUID, b.TeamID.Valid = team, team != [16]byte{}
	}
	if r.Parent != nil {
		b.ParentID.UUID, b.ParentID.Valid = r.Parent.Envelope().ID, true
	}
	return m
}

// startValue carries a StartMessage's config and parent in Record.Value.
type startValue struct {
	config any
	parent *message.Address
}

// StartInfo returns the config and parent of a Start record.
func (r Record) StartInfo() (config any, parent *message.Address) {
	if p, ok := r.Value.(startValue); ok {
		return p.config, p.parent
	}
	return r.Value, nil
}

// Sink receives the telemetry of a team. The team's orchestrator implements
// it: an actor whose value implements Sink becomes the telemetry sink and
// orchestrator of every actor spawned under it (B77), and emits no telemetry
// of its own (B79).
type Sink interface {
	// Attach is called once per actor joining the team, in its creator's
	// context, before the actor's Start record. The returned Emitter is then
	// used by one goroutine at a time: first the creator (the Start record),
	// then the actor's own goroutine. Returning nil disables the actor's
	// telemetry.
	Attach(actor *message.Address) Emitter
}

// Emitter receives one actor's records in emission order. Emit must not
// block for long and must not call back into the actor; it should not
// allocate on the hot path (Sent, Received, Processed).
type Emitter interface {
	Emit(r Record)
	// Close is called once, after the actor's last record (its Stop).
	Close()
}
