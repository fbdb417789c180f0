package orchestrator

import (
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

// Subscriber receives every telemetry message of a team, in ledger order.
// Each subscriber has its own queue and its own goroutine, owned by the
// team: its hooks run there, one at a time, never on the orchestrator's
// goroutine, so a slow subscriber never delays the team's bookkeeping or
// another subscriber.
//
// A Subscriber is lossless unless it is a LossySubscriber: nothing is
// dropped for it, and once 4,096 records wait for it the team's members
// wait too, at most 5 s at a time (past that the stall is logged and the
// members go on past the bound until it consumes again). A lossless
// subscriber's hook must therefore not wait for a member, and must not
// call the team: a query or mutation waits for every lossless subscriber
// to have been given what came before it, itself included.
//
// The message is the subscriber's own copy: its sender, recipient and the
// addresses of a sent message are snapshot addresses, so holding it
// keeps no actor alive. It must not be modified.
//
// The other hooks are optional: implement RestoringSubscriber,
// StopRequestSubscriber or StopSubscriber to receive them. A hook
// with a different signature silently fails to implement its interface, so
// assert it at compile time:
//
//	var _ orchestrator.StopSubscriber = (*MySubscriber)(nil)
type Subscriber interface {
	OnMessage(msg message.Message)
}

// RecordSubscriber is a Subscriber that receives the team's records as
// views instead of messages: OnRecord is called for each record, in the
// same order and with the same isolation as OnMessage would be, and
// OnMessage only for what is not a record (MetadataChanged). A view
// materializes the record's message only when asked (Record.Message), so a
// subscriber that looks at a few kinds (Record.Type) costs the team almost
// nothing on the others.
type RecordSubscriber interface {
	Subscriber
	OnRecord(r *Record)
}

// Record is a read-only view of one record of the team's log, valid only
// during the OnRecord call it is passed to: keep its Message, not the view.
type Record struct {
	mat *materializer
	e   *entry
	id  uint64
	m   message.Message
}

// Message returns the record's message, as OnMessage would receive it
// (snapshot addresses): made on the first call for this record, on the
// subscriber's goroutine (each subscriber has its own copy). It must not
// be modified.
func (r *Record) Message() message.Message {
	if r.m == nil && r.e != nil {
		r.m = r.mat.forSubscribers(r.e, r.id)
	}
	return r.m
}

// Type returns the registered type name of the record's message (as
// message.TypeName would, e.g. "SentMessage") without making it.
func (r *Record) Type() string {
	if r.e == nil {
		return ""
	}
	if m := r.e.logged(); m != nil {
		return message.TypeName(m)
	}
	if k := r.e.rec.Kind; k == telemetry.Error || k == telemetry.Warning {
		if m, ok := r.e.rec.Value.(message.Message); ok {
			return message.TypeName(m)
		}
	}
	return kindFor(r.e.rec.Kind).name
}

// RestoringSubscriber is told when a restore replay starts (true) and ends
// (false). Messages it receives in between are replayed history.
type RestoringSubscriber interface {
	SetRestoring(teamID uuid.UUID, restoring bool)
}

// StopRequestSubscriber is told that the team's stop has begun, right after
// the TeamStoppingEvent was published: release resources and stop
// timers now.
type StopRequestSubscriber interface {
	OnStopRequest(teamID uuid.UUID)
}

// StopSubscriber is told, once, that the team has stopped. It is the
// last call a subscriber receives from the team.
type StopSubscriber interface {
	OnStop(teamID uuid.UUID)
}

// guard runs one subscriber hook, turning a panic into a logged error so
// that the other subscribers and the ledger lose nothing.
func guard(logger *slog.Logger, hook string, s any, f func()) {
	defer func() {
		if r := recover(); r != nil {
			logPanic(logger, hook, s, r)
		}
	}()
	f()
}

// logPanic logs a subscriber hook's panic with its stack.
func logPanic(logger *slog.Logger, hook string, s any, r any) {
	logger.Error("orchestrator: subscriber hook panicked; skipped",
		"hook", hook, "subscriber", fmt.Sprintf("%T", s), "panic", fmt.Sprint(r),
		"stack", string(debug.Stack()))
}
