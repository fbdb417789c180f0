package message

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/internal/link"
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

// Base is the envelope every message embeds. Zero values are filled in
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

// claim marks m as sent and reports whether this call was the first. A
// runtime stamps a message in place only when claim returns true; otherwise
// the message was sent before (someone may be reading it) and the runtime
// stamps a clone instead. Safe for concurrent use.
func claim(m Message) bool {
	return atomic.CompareAndSwapUint32(&m.Envelope().sent, 0, 1)
}

// clone returns a shallow copy of m (a new struct with the same field
// values) that has not been sent. The copy shares slices, maps and pointers
// with m: messages are immutable, so nobody writes through them.
func clone(m Message) Message {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic(fmt.Sprintf("message: clone of %T: messages must be non-nil struct pointers", m))
	}
	c := reflect.New(v.Type().Elem())
	c.Elem().Set(v.Elem())
	out := c.Interface().(Message)
	atomic.StoreUint32(&out.Envelope().sent, 0)
	return out
}

func init() {
	link.InstallAddress(link.AddressFuncs[Identity, Address, Message]{
		NewLive: func(id Identity, h link.Handle) *Address { return &Address{id: id, kind: live, h: h} },
		HandleOf: func(a *Address) link.Handle {
			if a == nil || a.kind != live {
				return nil
			}
			return a.h
		},
		Claim: claim,
		Clone: clone,
	})
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
