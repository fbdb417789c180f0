package orchestrator

import (
	"reflect"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/internal/ids"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

// loggedMark marks an entry holding a logged message; it is never an actor.
var loggedMark = new(message.Address)

// logged returns the entry for a message logged as it is.
func logged(m message.Message) *entry {
	r := telemetry.Record{Kind: kindOf(m), Emitter: m.Envelope().Sender, Message: m, Recipient: loggedMark}
	if sc, ok := m.(*message.StateChangedMessage); ok {
		r.Value = sc.State
	}
	return &entry{rec: r}
}

// logged returns the message a logged entry holds, nil for a member's
// record.
func (e *entry) logged() message.Message {
	if e.rec.Recipient == loggedMark {
		return e.rec.Message
	}
	return nil
}

// kindOf maps a logged message to the record kind it stands for (0 for a
// message that is no telemetry record).
func kindOf(m message.Message) telemetry.Kind {
	t := reflect.TypeOf(m)
	for k := 1; k < len(kinds); k++ {
		if kinds[k].typ == t {
			return telemetry.Kind(k)
		}
	}
	return 0
}

// message returns the telemetry message the entry stands for, as the log
// keeps it (live addresses). id is the entry's stable id: a record
// materialized twice gets the same id.
func (e *entry) message(id uint64) message.Message {
	if m := e.logged(); m != nil {
		return m
	}
	return toMessage(&e.rec, ids.At(id), nil)
}

// kindInfo describes one record kind: the message type that stands for it
// and how a member's record of that kind becomes that message.
type kindInfo struct {
	typ  reflect.Type // the message's type (a pointer)
	name string       // its registered type name (message.TypeName), set by init
	// build makes the message of record r, without its envelope; the hot
	// kinds come from sl when it is not nil.
	build func(r *telemetry.Record, sl *slabs) message.Telemetry
}

// kinds is the one table of the record kinds, indexed by kind: toMessage,
// kindOf and Record.Type read it, so that a new kind is one entry here.
var kinds = [...]kindInfo{
	telemetry.Start: {typ: reflect.TypeFor[*message.StartMessage](), build: func(r *telemetry.Record, _ *slabs) message.Telemetry {
		return &message.StartMessage{Config: r.Value, Parent: r.Recipient}
	}},
	telemetry.Stop: {typ: reflect.TypeFor[*message.StopMessage](), build: func(*telemetry.Record, *slabs) message.Telemetry {
		return &message.StopMessage{}
	}},
	telemetry.Sent: {typ: reflect.TypeFor[*message.SentMessage](), build: func(r *telemetry.Record, sl *slabs) message.Telemetry {
		m := take(sl, func(s *slabs) *[]message.SentMessage { return &s.sent })
		m.Message, m.Recipient = r.Message, r.Recipient
		return m
	}},
	telemetry.Received: {typ: reflect.TypeFor[*message.ReceivedMessage](), build: func(r *telemetry.Record, sl *slabs) message.Telemetry {
		m := take(sl, func(s *slabs) *[]message.ReceivedMessage { return &s.received })
		m.MessageID = r.Message.Envelope().ID
		return m
	}},
	telemetry.Processed: {typ: reflect.TypeFor[*message.ProcessedMessage](), build: func(r *telemetry.Record, sl *slabs) message.Telemetry {
		m := take(sl, func(s *slabs) *[]message.ProcessedMessage { return &s.processed })
		m.MessageID = r.Message.Envelope().ID
		return m
	}},
	telemetry.Handled: {typ: reflect.TypeFor[*message.HandledMessage](), build: func(r *telemetry.Record, _ *slabs) message.Telemetry {
		return &message.HandledMessage{MessageID: r.Message.Envelope().ID}
	}},
	telemetry.Error:   {typ: reflect.TypeFor[*message.ErrorMessage](), build: reportCopy},
	telemetry.Warning: {typ: reflect.TypeFor[*message.WarningMessage](), build: reportCopy},
	telemetry.StateChanged: {typ: reflect.TypeFor[*message.StateChangedMessage](), build: func(r *telemetry.Record, _ *slabs) message.Telemetry {
		return &message.StateChangedMessage{State: r.Value}
	}},
	telemetry.Event: {typ: reflect.TypeFor[*message.EventMessage](), build: func(r *telemetry.Record, _ *slabs) message.Telemetry {
		return &message.EventMessage{Event: r.Value}
	}},
}

func init() {
	for k := range kinds {
		if t := kinds[k].typ; t != nil {
			kinds[k].name = message.TypeName(reflect.Zero(t).Interface())
		}
	}
}

// kindFor returns the table's entry for k; a kind it lacks is an event.
func kindFor(k telemetry.Kind) *kindInfo {
	if int(k) < len(kinds) && kinds[k].build != nil {
		return &kinds[k]
	}
	return &kinds[telemetry.Event]
}

// reportCopy builds an Error or Warning record's message: a copy of the
// report the record holds, which is shared by every materialization (an
// empty one of the record's kind when it holds none).
func reportCopy(r *telemetry.Record, _ *slabs) message.Telemetry {
	switch v := r.Value.(type) {
	case *message.ErrorMessage:
		c := *v
		return &c
	case *message.WarningMessage:
		c := *v
		return &c
	}
	if r.Kind == telemetry.Warning {
		return &message.WarningMessage{}
	}
	return &message.ErrorMessage{}
}

// toMessage builds the telemetry message for a member's record, with the
// given id, the record's time, its emitter as sender, the emitter's team,
// and the id of the emitter's current message as parent. The hot kinds
// come from sl when it is not nil.
func toMessage(r *telemetry.Record, id uuid.UUID, sl *slabs) message.Telemetry {
	m := kindFor(r.Kind).build(r, sl)
	b := m.Envelope()
	b.ID = id
	b.Timestamp = time.Unix(0, r.Time).UTC()
	b.Sender = r.Emitter
	if r.Emitter != nil {
		team := r.Emitter.TeamID()
		b.TeamID.UUID, b.TeamID.Valid = team, team != uuid.Nil
	}
	if r.Parent != nil {
		b.ParentID.UUID, b.ParentID.Valid = r.Parent.Envelope().ID, true
	}
	return m
}

// slabs hands out the telemetry messages of the hot kinds from blocks of
// slabSize, one allocation per block instead of one per record. A message
// a subscriber keeps keeps its block alive (at most slabSize messages).
type slabs struct {
	sent      []message.SentMessage
	received  []message.ReceivedMessage
	processed []message.ProcessedMessage
}

const slabSize = 32

// take returns the next fresh element of the slab pick chooses in sl, or
// a new T when sl is nil.
func take[T any](sl *slabs, pick func(*slabs) *[]T) *T {
	if sl == nil {
		return new(T)
	}
	s := pick(sl)
	if len(*s) == 0 {
		*s = make([]T, slabSize)
	}
	v := &(*s)[0]
	*s = (*s)[1:]
	return v
}
