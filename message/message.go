package message

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// DisplayType tells a user interface how to present a message.
type DisplayType string

const (
	// DisplayHuman marks content written by a person.
	DisplayHuman DisplayType = "human"
	// DisplayAI marks content written by a model or an agent.
	DisplayAI DisplayType = "ai"
	// DisplayOther is the default.
	DisplayOther DisplayType = "other"
)

// Valid reports whether d is one of the three display types ("" counts as
// other).
func (d DisplayType) Valid() bool {
	switch d {
	case "", DisplayHuman, DisplayAI, DisplayOther:
		return true
	}
	return false
}

// Message is implemented by every message: a pointer to a struct that
// embeds Base.
type Message interface {
	// Envelope returns the embedded envelope.
	Envelope() *Base
}

// Base is the envelope every message embeds (B1). Zero values are filled in
// when the message is first sent: a fresh ID, the current Timestamp (UTC, 1 ms
// resolution), the sender, recipient and team, and ParentID, the id of the
// message whose handling caused this one (nil outside a turn).
type Base struct {
	ID          uuid.UUID     `json:"id"`
	ParentID    uuid.NullUUID `json:"parent_id"`
	TeamID      uuid.NullUUID `json:"team_id"`
	Timestamp   time.Time     `json:"timestamp"`
	Sender      *Address      `json:"sender"`
	Recipient   *Address      `json:"recipient"`
	DisplayType DisplayType   `json:"display_type,omitempty"`

	sent uint32 // 1 once a runtime has stamped and sent the message (atomic)
}

// Envelope returns b; promoted to every message that embeds Base.
func (b *Base) Envelope() *Base { return b }

// Display returns the display type, DisplayOther when unset.
func (b *Base) Display() DisplayType {
	if b.DisplayType == "" {
		return DisplayOther
	}
	return b.DisplayType
}

// Team returns the team id, uuid.Nil when unset.
func (b *Base) Team() uuid.UUID {
	return b.TeamID.UUID
}

// Parent returns the parent id, uuid.Nil when unset.
func (b *Base) Parent() uuid.UUID {
	return b.ParentID.UUID
}

// Stamp sets the causal fields (B2): sender, team id and parent id (the id
// of current, or nil when current is nil; always overwritten). It fills in
// a zero ID and Timestamp. It returns m. A runtime stamps a message only
// after Claim (or on a Clone); call Stamp directly only on a message no one
// else holds.
func Stamp(m Message, sender *Address, team uuid.UUID, current Message) Message {
	b := m.Envelope()
	b.Sender = sender
	b.TeamID = uuid.NullUUID{UUID: team, Valid: team != uuid.Nil}
	if current != nil {
		b.ParentID = uuid.NullUUID{UUID: current.Envelope().ID, Valid: true}
	} else {
		b.ParentID = uuid.NullUUID{}
	}
	if b.ID == uuid.Nil {
		b.ID = NewID()
	}
	if b.Timestamp.IsZero() {
		b.Timestamp = time.Now().UTC()
	}
	return m
}

// Claim marks m as sent and reports whether this call was the first. A
// runtime stamps a message in place only when Claim returns true; otherwise
// the message was sent before (someone may be reading it) and the runtime
// stamps a Clone instead. Safe for concurrent use.
func Claim(m Message) bool {
	return atomic.CompareAndSwapUint32(&m.Envelope().sent, 0, 1)
}

// Clone returns a shallow copy of m (a new struct with the same field
// values) that has not been sent. The copy shares slices, maps and pointers
// with m: messages are immutable, so nobody writes through them.
func Clone(m Message) Message {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic(fmt.Sprintf("message: Clone of %T: messages must be non-nil struct pointers", m))
	}
	c := reflect.New(v.Type().Elem())
	c.Elem().Set(v.Elem())
	out := c.Interface().(Message)
	atomic.StoreUint32(&out.Envelope().sent, 0)
	return out
}

// TypeName returns the name a message or payload is registered under, or
// its Go type name when it is not registered.
func TypeName(v any) string {
	if v == nil {
		return "<nil>"
	}
	t := reflect.TypeOf(v)
	if name, ok := nameOf(t); ok {
		return name
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}
