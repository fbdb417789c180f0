package message_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// TestMarshalMatchesReference checks the hand-written encoder against the
// encoding/json path it replaced, byte for byte, on every sample and on
// values that take its less travelled branches.
func TestMarshalMatchesReference(t *testing.T) {
	values := map[string]any{}
	for name, v := range samples() {
		values[name] = v
	}
	odd := userMessage()
	odd.Content = "quotes \" \\ \n\t\b\f\r\x01\x1f <&> é € \u2028\u2029 \xff\xfe bad utf-8"
	odd.Timestamp = time.Date(2024, 2, 29, 23, 59, 59, 999_999_999, time.FixedZone("x", 5*3600+1800))
	odd.DisplayType = "robot"
	odd.ParentID = uuid.NullUUID{}
	odd.Sender = message.NewSnapshotAddress(message.Identity{Name: "<odd>", Type: "a&b"})
	values["odd UserMessage"] = odd
	values["value payload"] = &message.EventMessage{Base: record(), Event: message.ClosedNotification{MessageID: msgID}}
	values["map config"] = &message.StartMessage{Base: record(), Config: map[string]any{"a": []any{1, "<x>"}}}
	values["nil state"] = &message.StateChangedMessage{Base: record()}
	values["raw state"] = &message.StateChangedMessage{Base: record(), State: json.RawMessage(" { \"a\" : \"<\" } ")}
	values["nested sent"] = &message.SentMessage{Base: record(), Message: &message.SentMessage{Base: record(), Message: odd}}
	values["zero"] = &message.SentMessage{}
	for name, v := range values {
		got, err := message.Marshal(v)
		if err != nil {
			t.Errorf("%s: Marshal: %v", name, err)
			continue
		}
		want, err := message.ReferenceMarshal(v)
		if err != nil {
			t.Errorf("%s: reference: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\ngot  %s\nwant %s", name, got, want)
		}
	}
}

// FuzzMarshalMatchesReference builds records from fuzzed strings, ids and
// times and checks that the hand-written encoder writes what the
// encoding/json path writes, byte for byte.
func FuzzMarshalMatchesReference(f *testing.F) {
	f.Add("Hello, Akgentic!", "@Human", "Human", "human", int64(1741964966535000000), int64(0), []byte{1, 2, 3})
	f.Add("<\u2028\xff\"\\\n>", "&", "", "", int64(-62135596800000000), int64(-3600), []byte{})
	f.Fuzz(func(t *testing.T, content, name, role, display string, nanos, offset int64, id []byte) {
		var u uuid.UUID
		copy(u[:], id)
		ts := time.Unix(0, nanos).UTC()
		if offset != 0 {
			ts = ts.In(time.FixedZone("z", int(offset%(48*3600))))
		}
		addr := message.NewSnapshotAddress(message.Identity{AgentID: u, Name: name, Role: role, Type: content, UserProxy: nanos%2 == 0})
		user := &message.UserMessage{Base: message.Base{ID: u, TeamID: uuid.NullUUID{UUID: u, Valid: offset%2 == 0},
			Timestamp: ts, Sender: addr, DisplayType: message.DisplayType(display)}, Content: content}
		for _, v := range []any{
			user,
			&message.SentMessage{Base: message.Base{ID: u, Timestamp: ts, Sender: addr}, Message: user, Recipient: addr},
			&message.ErrorMessage{NotificationMessage: message.NotificationMessage{Base: user.Base, ContentType: name,
				Content: content, CurrentMessage: user}, Traceback: role},
			&message.StartMessage{Base: user.Base, Config: map[string]string{name: content}, Parent: addr},
		} {
			got, gerr := message.Marshal(v)
			want, werr := message.ReferenceMarshal(v)
			if (gerr != nil) != (werr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("%T:\ngot  %s (%v)\nwant %s (%v)", v, got, gerr, want, werr)
			}
		}
	})
}
