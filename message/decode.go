package message

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"
)

// The hand-written decoder one pass over a record of this
// package's own types in the form the encoder writes, nested values of
// other types through the registry as before. It is a fast path only: on
// anything it does not expect (a key it does not know, in any spelling, a
// key twice, a value of an unexpected JSON type, an error of any kind) it
// gives up and the encoding/json path decodes the whole input, errors
// included. So what it accepts it decodes exactly as encoding/json would;
// FuzzUnmarshal checks the two against each other.

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
}

// nested keeps the text of the nested value under key.
func (d *decoder) nested(key string, val *any, msg *Message) (uint, bool) {
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

func (d *decoder) ws() {
	for d.i < len(d.d) && isSpace(d.d[d.i]) {
		d.i++
	}
}

// next skips whitespace and consumes c.
func (d *decoder) next(c byte) bool {
	d.ws()
	if d.i < len(d.d) && d.d[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.d) {
		return d.d[d.i]
	}
	return 0
}

// rawString consumes a string and returns its text between the quotes and
// whether it holds an escape. ok is false for a malformed string.
func (d *decoder) rawString() (s []byte, escaped, ok bool) {
	if !d.next('"') {
		return nil, false, false
	}
	start := d.i
	for d.i < len(d.d) {
		c := d.d[d.i]
		switch {
		case c == '"':
			s = d.d[start:d.i]
			d.i++
			return s, escaped, true
		case c == '\\':
			escaped = true
			d.i += 2
		case c < 0x20:
			return nil, false, false
		default:
			d.i++
		}
	}
	return nil, false, false
}

// str consumes a string value and returns it unescaped as encoding/json
// does.
func (d *decoder) str() (string, bool) {
	raw, escaped, ok := d.rawString()
	if !ok {
		return "", false
	}
	if !escaped {
		if !utf8.Valid(raw) {
			return "", false // encoding/json replaces the bad bytes: leave it that work
		}
		return string(raw), true
	}
	return unescape(raw)
}

// unescape decodes the escapes of a JSON string's text. A lone surrogate
// or invalid UTF-8 is left to encoding/json (ok false).
func unescape(s []byte) (string, bool) {
	if !utf8.Valid(s) {
		return "", false
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			out = append(out, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s[i+2:])
			if !ok || utf16.IsSurrogate(r) {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// lit consumes the literal word.
func (d *decoder) lit(word string) bool {
	d.ws()
	if len(d.d)-d.i >= len(word) && string(d.d[d.i:d.i+len(word)]) == word {
		d.i += len(word)
		return true
	}
	return false
}

func (d *decoder) boolean() (v, ok bool) {
	if d.lit("true") {
		return true, true
	}
	return false, d.lit("false")
}

// value consumes any JSON value and returns its text. It checks the
// nesting of brackets and strings only: the caller hands the text to
// encoding/json or to this decoder, which check the rest.
func (d *decoder) value() ([]byte, bool) {
	d.ws()
	start := d.i
	if d.i >= len(d.d) {
		return nil, false
	}
	switch d.d[d.i] {
	case '"':
		_, _, ok := d.rawString()
		return d.d[start:d.i], ok
	case '{', '[':
		depth := 0
		for d.i < len(d.d) {
			switch d.d[d.i] {
			case '"':
				if _, _, ok := d.rawString(); !ok {
					return nil, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					d.i++
					return d.d[start:d.i], true
				}
			}
			d.i++
		}
		return nil, false
	}
	// A number or a literal: up to the next delimiter.
	for d.i < len(d.d) {
		if c := d.d[d.i]; c == ',' || c == '}' || c == ']' || isSpace(c) {
			break
		}
		d.i++
	}
	return d.d[start:d.i], d.i > start
}

// uuidValue consumes a string holding a UUID, as uuid.UUID's UnmarshalText
// reads it.
func (d *decoder) uuidValue() (uuid.UUID, bool) {
	raw, escaped, ok := d.rawString()
	if !ok || escaped {
		return uuid.Nil, false
	}
	u, err := uuid.ParseBytes(raw)
	return u, err == nil
}

func (d *decoder) nullUUID() (uuid.NullUUID, bool) {
	if d.lit("null") {
		return uuid.NullUUID{}, true
	}
	u, ok := d.uuidValue()
	return uuid.NullUUID{UUID: u, Valid: true}, ok
}

// address consumes an address dict or null.
func (d *decoder) address() (*Address, bool) {
	if d.lit("null") {
		return nil, true
	}
	start := d.i
	if a, ok := d.fastAddress(); ok {
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

// optionalUUID consumes a string holding a UUID or nothing (uuid.Nil), as
// addressDict.identity reads it.
func (d *decoder) optionalUUID() (uuid.UUID, bool) {
	raw, escaped, ok := d.rawString()
	if !ok || escaped {
		return uuid.Nil, false
	}
	if len(raw) == 0 {
		return uuid.Nil, true
	}
	u, err := uuid.ParseBytes(raw)
	return u, err == nil
}

// shortStr is str for the short strings every address repeats (names,
// roles, types): a small shared table hands back the same string for the
// same text instead of allocating one per address.
func (d *decoder) shortStr() (string, bool) {
	d.ws()
	start := d.i
	raw, escaped, ok := d.rawString()
	if !ok || escaped || len(raw) > maxInterned || !utf8.Valid(raw) {
		d.i = start
		return d.str()
	}
	return intern(raw), true
}

// maxInterned bounds the strings the table keeps: 512 slots of at most
// 64 bytes.
const maxInterned = 64

var interned [512]atomic.Pointer[string]

// intern returns string(b), shared with earlier calls for the same text
// when its slot still holds it.
func intern(b []byte) string {
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &interned[h%uint32(len(interned))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

// object consumes an object, calling field for each key with the decoder
// at the key's value; field consumes the value and reports success.
func (d *decoder) object(field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	return d.fields(field)
}

// fields consumes `"key":value` pairs separated by commas, then the
// closing brace.
func (d *decoder) fields(field func(key []byte) bool) bool {
	for {
		key, escaped, ok := d.rawString()
		if !ok || escaped || !d.next(':') || !field(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
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
	d := &decoder{d: data, i: len(tagPrefix) + len(name) + 2}
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
		return nil, false, nil
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
		return nil, false, nil
	}
	if d.ws(); d.i != len(d.d) {
		return nil, false, nil
	}
	if d.nestedRaw != nil && !json.Valid(d.nestedRaw) {
		// The scan is lenient about a nested value's syntax: encoding/json
		// gives the error it always gave (no recursion: nothing nested
		// was decoded yet).
		return nil, false, nil
	}
	if err := d.decodeNested(); err != nil {
		return nil, true, fmt.Errorf("message: decode %s: %w", name, err)
	}
	return v, true, nil
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
