package message

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"
)

// The hand-written decoder reads, in one pass, a record of this
// package's own types in the form the encoder writes, nested values of
// other types through the type registry. It is a fast path only: on
// anything it does not expect (a key it does not know, in any spelling, a
// key twice, a value of an unexpected JSON type, an error of any kind) it
// gives up and the encoding/json path decodes the whole input, errors
// included. So what it accepts it decodes exactly as encoding/json would;
// FuzzUnmarshal checks the two against each other. Its lexer is in
// lexer.go.

// slowDecode turns the fast path off (tests compare the two paths).
var slowDecode atomic.Bool

// decoder reads one JSON text.
type decoder struct {
	d []byte
	i int

	// The record's one nested value (a message, a config, a state, an
	// event), decoded once the record's own object has been read whole:
	// were it decoded on the way, a record that then falls back to the
	// encoding/json path would have decoded it twice, and a deep nesting
	// of such records would take time exponential in its depth.
	nestedKey string
	nestedRaw []byte
	nestedAny *any     // the field, when it holds any value
	nestedMsg *Message // the field, when it holds a message

	// seen holds the addresses decoded so far in this record (a nested
	// message's decoder starts with a copy): a record's sender and
	// recipient are most often its message's too, and an address is
	// immutable, so the same text gives the same *Address. A value, not a
	// pointer, so that it stays on the stack.
	seen seenAddrs
}

// seenAddrs is a few addresses with the text each was decoded from.
type seenAddrs struct {
	n    int
	text [4][]byte
	addr [4]*Address
}

// lookup returns the address whose text data starts with.
func (s *seenAddrs) lookup(data []byte) (*Address, int) {
	for k := range s.n {
		if t := s.text[k]; len(data) >= len(t) && string(data[:len(t)]) == string(t) {
			return s.addr[k], len(t)
		}
	}
	return nil, 0
}

// add keeps a, decoded from text, while there is room.
func (s *seenAddrs) add(text []byte, a *Address) {
	if s.n < len(s.text) {
		s.text[s.n], s.addr[s.n] = text, a
		s.n++
	}
}

// nested reads the nested value under key: a message of this package's
// own types at once, in place, by the strict pass (fastOnlyAt), else its
// text is kept for decodeNested.
func (d *decoder) nested(key string, val *any, msg *Message) (uint, bool) {
	if msg != nil {
		d.ws()
		if m, n, ok := fastMessageAt(d.d[d.i:], &d.seen); ok {
			*msg = m
			d.i += n
			return 1 << 12, true
		}
	}
	raw, ok := d.value()
	d.nestedKey, d.nestedRaw, d.nestedAny, d.nestedMsg = key, raw, val, msg
	return 1 << 12, ok
}

// decodeNested decodes the nested value, if the record had one; an error
// is final (the nested value's own decode, fast or not, made it).
func (d *decoder) decodeNested() error {
	switch {
	case d.nestedMsg != nil:
		m, err := unmarshalMessage(d.nestedRaw)
		*d.nestedMsg = m
		return inField(d.nestedKey, err)
	case d.nestedAny != nil:
		v, err := unmarshalValue(d.nestedRaw)
		*d.nestedAny = v
		return inField(d.nestedKey, err)
	}
	return nil
}

// address consumes an address dict or null.
func (d *decoder) address() (*Address, bool) {
	if d.lit("null") {
		return nil, true
	}
	start := d.i
	if a, n := d.seen.lookup(d.d[d.i:]); a != nil {
		d.i += n
		return a, true
	}
	if a, ok := d.fastAddress(); ok {
		d.seen.add(d.d[start:d.i], a)
		return a, true
	}
	d.i = start
	raw, ok := d.value()
	if !ok {
		return nil, false
	}
	a := &Address{}
	return a, a.UnmarshalJSON(raw) == nil
}

func (d *decoder) fastAddress() (*Address, bool) {
	var id Identity
	var tag bool
	var seen uint
	ok := d.object(func(key []byte) bool {
		var bit uint
		var ok bool
		switch string(key) {
		case "__actor_address__":
			bit = 1
			tag, ok = d.boolean()
		case "__actor_type__":
			bit = 2
			id.Type, ok = d.shortStr()
		case "agent_id":
			bit = 4
			id.AgentID, ok = d.optionalUUID()
		case "name":
			bit = 8
			id.Name, ok = d.shortStr()
		case "role":
			bit = 16
			id.Role, ok = d.shortStr()
		case "team_id":
			bit = 32
			id.TeamID, ok = d.optionalUUID()
		case "squad_id":
			bit = 64
			id.SquadID, ok = d.optionalUUID()
		case "is_user_proxy":
			bit = 128
			id.UserProxy, ok = d.boolean()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if !ok || !tag {
		return nil, false
	}
	return &Address{id: id, kind: snapshot}, true
}

// envelope decodes one of the envelope's keys into b; bit is the key's
// bit for the caller's duplicate check (0 for a key that is not the
// envelope's).
func (d *decoder) envelope(b *Base, key []byte, withRecipient bool) (bit uint, ok bool) {
	switch string(key) {
	case "id":
		b.ID, ok = d.uuidValue()
		return 1, ok
	case "parent_id":
		b.ParentID, ok = d.nullUUID()
		return 2, ok
	case "team_id":
		b.TeamID, ok = d.nullUUID()
		return 4, ok
	case "timestamp":
		raw, escaped, ok := d.rawString()
		if !ok || escaped {
			return 8, false
		}
		// time.Time.UnmarshalJSON reads the text between the quotes as
		// it is, escapes and all.
		return 8, b.Timestamp.UnmarshalJSON(d.d[d.i-len(raw)-2:d.i]) == nil
	case "sender":
		b.Sender, ok = d.address()
		return 16, ok
	case "display_type":
		var s string
		s, ok = d.str()
		b.DisplayType = DisplayType(s)
		return 32, ok
	case "recipient":
		if withRecipient {
			b.Recipient, ok = d.address()
			return 64, ok
		}
	}
	return 0, false
}

// decodeOwn decodes data, an object that starts with the type tag naming
// one of this package's own types, in one pass; ok is false when the
// encoding/json path must decode it instead. An error is the nested
// value's, final.
func decodeOwn(name string, data []byte) (v any, ok bool, err error) {
	v, _, ok, err = decodeOwnMode(name, data, false, seenAddrs{})
	return v, ok, err
}

// fastMessageAt decodes the message of this package's own types that
// data starts with by the strict pass, and returns its length.
func fastMessageAt(data []byte, seen *seenAddrs) (m Message, n int, ok bool) {
	name, isOwn := fastTag(data)
	if !isOwn {
		return nil, 0, false
	}
	v, n, ok, _ := decodeOwnMode(name, data, true, *seen)
	if m, isMsg := v.(Message); ok && isMsg {
		return m, n, true
	}
	return nil, 0, false
}

// decodeOwnMode is decodeOwn; with fastOnly, a record is decoded only
// when its nested value, if any, is one of this package's own messages
// decoded the same way (ok is false otherwise, and never an error): what
// it accepts is then read whole by the strict scan, so it is valid JSON
// without encoding/json's check, and a failure costs no fallback. A
// fastOnly record may be followed by more text: n is its length.
func decodeOwnMode(name string, data []byte, fastOnly bool, addrs seenAddrs) (v any, n int, ok bool, err error) {
	d := &decoder{d: data, i: len(tagPrefix) + len(name) + 2, seen: addrs}
	var base *Base
	var rest func(key []byte) (bit uint, ok bool)
	withRecipient := true
	switch name {
	case "SentMessage":
		m := &SentMessage{}
		v, base, withRecipient = m, &m.Base, false
		rest = func(key []byte) (uint, bool) {
			switch string(key) {
			case "recipient":
				var ok bool
				m.Recipient, ok = d.address()
				return 1 << 8, ok
			case "message":
				return d.nested("message", nil, &m.Message)
			}
			return 0, false
		}
	case "ReceivedMessage":
		m := &ReceivedMessage{}
		v, base, rest = m, &m.Base, d.messageID(&m.MessageID)
	case "ProcessedMessage":
		m := &ProcessedMessage{}
		v, base, rest = m, &m.Base, d.messageID(&m.MessageID)
	case "HandledMessage":
		m := &HandledMessage{}
		v, base, rest = m, &m.Base, d.messageID(&m.MessageID)
	case "StopMessage":
		m := &StopMessage{}
		v, base = m, &m.Base
		rest = func([]byte) (uint, bool) { return 0, false }
	case "StartMessage":
		m := &StartMessage{}
		v, base = m, &m.Base
		config := d.anyValue("config", &m.Config)
		rest = func(key []byte) (uint, bool) {
			if string(key) == "parent" {
				var ok bool
				m.Parent, ok = d.address()
				return 1 << 8, ok
			}
			return config(key)
		}
	case "StateChangedMessage":
		m := &StateChangedMessage{}
		v, base, rest = m, &m.Base, d.anyValue("state", &m.State)
	case "EventMessage":
		m := &EventMessage{}
		v, base, rest = m, &m.Base, d.anyValue("event", &m.Event)
	case "NotificationMessage":
		m := &NotificationMessage{}
		v, base, rest = m, &m.Base, d.notice(m, nil)
	case "WarningMessage":
		m := &WarningMessage{}
		v, base, rest = m, &m.Base, d.notice(&m.NotificationMessage, nil)
	case "ErrorMessage":
		m := &ErrorMessage{}
		v, base, rest = m, &m.Base, d.notice(&m.NotificationMessage, &m.Traceback)
	case "UserMessage":
		m := &UserMessage{}
		v, base, rest = m, &m.Base, d.stringField("content", &m.Content)
	case "ResultMessage":
		m := &ResultMessage{}
		v, base, rest = m, &m.Base, d.stringField("content", &m.Content)
	case "CancelMessage":
		m := &CancelMessage{}
		v, base, rest = m, &m.Base, d.stringField("reason", &m.Reason)
	default:
		return nil, 0, false, nil
	}
	var seen uint
	field := func(key []byte) bool {
		bit, ok := d.envelope(base, key, withRecipient)
		if bit == 0 {
			bit, ok = rest(key)
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	if !d.next('}') && !(d.next(',') && d.fields(field)) {
		return nil, 0, false, nil
	}
	if fastOnly {
		if d.nestedRaw != nil { // a nested value the strict pass does not read
			return nil, 0, false, nil
		}
		return v, d.i, true, nil
	}
	if d.ws(); d.i != len(d.d) {
		return nil, 0, false, nil
	}
	if d.nestedRaw != nil && !json.Valid(d.nestedRaw) {
		// The scan is lenient about a nested value's syntax: encoding/json
		// gives the error it always gave (no recursion: nothing nested
		// was decoded yet but by the strict pass, which never falls back).
		return nil, 0, false, nil
	}
	if err := d.decodeNested(); err != nil {
		return nil, 0, true, fmt.Errorf("message: decode %s: %w", name, err)
	}
	return v, d.i, true, nil
}

func (d *decoder) messageID(id *uuid.UUID) func(key []byte) (uint, bool) {
	return func(key []byte) (uint, bool) {
		if string(key) != "message_id" {
			return 0, false
		}
		var ok bool
		*id, ok = d.uuidValue()
		return 1 << 8, ok
	}
}

func (d *decoder) stringField(name string, s *string) func(key []byte) (uint, bool) {
	return func(key []byte) (uint, bool) {
		if string(key) != name {
			return 0, false
		}
		var ok bool
		*s, ok = d.str()
		return 1 << 8, ok
	}
}

// anyValue decodes a nested value as unmarshalValue does.
func (d *decoder) anyValue(name string, v *any) func(key []byte) (uint, bool) {
	return func(key []byte) (uint, bool) {
		if string(key) != name {
			return 0, false
		}
		return d.nested(name, v, nil)
	}
}

func (d *decoder) notice(n *NotificationMessage, traceback *string) func(key []byte) (uint, bool) {
	return func(key []byte) (uint, bool) {
		var ok bool
		switch string(key) {
		case "content_type":
			n.ContentType, ok = d.str()
			return 1 << 8, ok
		case "content":
			n.Content, ok = d.str()
			return 1 << 9, ok
		case "current_message":
			return d.nested("current_message", nil, &n.CurrentMessage)
		case "traceback":
			if traceback != nil {
				*traceback, ok = d.str()
				return 1 << 11, ok
			}
		}
		return 0, false
	}
}
