// Package telemetry is the contract between the actor runtime and a team's
// telemetry sink (the orchestrator): the compact record a member emits for
// each step of its life and of each message it handles, and the sink that
// receives them. It is internal: users see telemetry as messages, through
// the orchestrator's subscribers and queries.
package telemetry

import "github.com/akgentic/akgentic-go/message"

// Kind says which telemetry record a Record is.
type Kind uint8

// The kinds of telemetry record.
const (
	Start Kind = iota + 1
	Stop
	Sent
	Received
	Processed
	Handled
	Error
	Warning
	StateChanged
	Event
)

var names = [...]string{"", "Start", "Stop", "Sent", "Received", "Processed", "Handled", "Error", "Warning", "StateChanged", "Event"}

// String names the kind for logs and test failures.
func (k Kind) String() string {
	if int(k) < len(names) && k != 0 {
		return names[k]
	}
	return "Kind(?)"
}

// Record is one telemetry record, as the runtime hands it to a sink. It is
// passed by value and holds only pointers to values that are immutable once
// emitted, so a sink may keep it as it is.
type Record struct {
	Kind Kind
	// Time is the emission time in nanoseconds since the epoch (1 ms
	// resolution: one coarse clock read per record).
	Time int64
	// Emitter is the actor that emitted the record (the telemetry's sender).
	Emitter *message.Address
	// Parent is the emitter's current message (nil outside a turn); the
	// record's parent id is its id. Nil for Error and Warning.
	Parent message.Message
	// Message is the message the record is about: the sent message for Sent,
	// the turn's message for Received/Processed/Handled, the current message
	// for Error/Warning.
	Message message.Message
	// Recipient is the recipient of a Sent message; the parent of the
	// started actor for Start.
	Recipient *message.Address
	// Value holds the config (Start), the detached state copy
	// (StateChanged), the event (Event), or the *message.ErrorMessage /
	// *message.WarningMessage (Error, Warning).
	Value any
}

// Sink receives the telemetry of a team. The runtime gives it to the team's
// root actor at spawn (never by inspecting the actor's type); every actor
// spawned under that root reports to it, and the root emits no
// telemetry of its own.
type Sink interface {
	// Start is called once, when the root is spawned and before any member
	// can emit. wake schedules a call to Drain on the root's own goroutine;
	// it never blocks and may be called from any goroutine.
	Start(wake func())
	// Attach is called once per actor joining the team, in its creator's
	// context, before the actor's Start record. The returned Emitter is then
	// used by one goroutine at a time: first the creator (the Start record),
	// then the actor's own goroutine.
	Attach(member *message.Address) Emitter
	// Drain runs on the root's goroutine after a wake.
	Drain()
}

// Emitter receives one actor's records in emission order. Emit must not
// block for long and must not call back into the actor; it should not
// allocate on the hot path (Sent, Received, Processed).
type Emitter interface {
	Emit(r Record)
	// EmitPair is Emit(a) then Emit(b) as one step: the runtime uses it
	// for a turn's Processed record and the next turn's Received record,
	// between which no user code runs.
	EmitPair(a, b Record)
}
