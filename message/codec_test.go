package message_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/message"
	"github.com/google/uuid"
	"go.uber.org/goleak"
)

// roundTrip marshals v, checks the type tag comes first, unmarshals it and
// checks the result equals v and re-encodes to the same bytes.
func roundTrip(t *testing.T, name string, v any) any {
	t.Helper()
	data, err := message.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal(%s): %v", name, err)
	}
	if prefix := `{"__model__":"` + name + `"`; !bytes.HasPrefix(data, []byte(prefix)) {
		t.Fatalf("Marshal(%s) does not start with %s: %s", name, prefix, data)
	}
	got, err := message.Unmarshal(data)
	if err != nil {
		t.Fatalf("Unmarshal(%s): %v\n%s", name, err, data)
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("%s round trip:\n got %#v\nwant %#v\njson %s", name, got, v, data)
	}
	again, err := message.Marshal(got)
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("%s re-encodes differently (%v):\n%s\n%s", name, err, again, data)
	}
	return got
}

// Every type message/ registers round-trips by its type name, nested
// messages, payloads and addresses included.
func TestRoundTripEveryRegisteredType(t *testing.T) {
	s := samples()
	if len(message.Builtin) == 0 || !slices.Contains(message.Builtin, "UserMessage") {
		t.Fatalf("Builtin = %v", message.Builtin)
	}
	for _, name := range message.Builtin {
		if testOnly(name) {
			continue
		}
		v, ok := s[name]
		if !ok {
			t.Errorf("registered type %s has no sample: add one to samples()", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			if got := message.TypeName(v); got != name {
				t.Fatalf("TypeName = %q", got)
			}
			got := roundTrip(t, name, v)
			if m, ok := got.(message.Message); ok {
				for _, a := range []*message.Address{m.Envelope().Sender, m.Envelope().Recipient} {
					if a != nil && message.KindOf(a) != "snapshot" {
						t.Errorf("decoded address %v is %v, want snapshot", a, message.KindOf(a))
					}
				}
			}
		})
	}
	for name := range s {
		if !slices.Contains(message.Builtin, name) {
			t.Errorf("sample %s is not registered", name)
		}
	}
}

func TestRoundTripNested(t *testing.T) {
	// EventMessage carries either domain event, decoded to its Go type.
	closed := &message.EventMessage{Base: record(), Event: &message.ClosedNotification{MessageID: msgID}}
	got := roundTrip(t, "EventMessage", closed).(*message.EventMessage)
	if ev, ok := got.Event.(*message.ClosedNotification); !ok || ev.MessageID != msgID {
		t.Errorf("event = %#v", got.Event)
	}
	stopping := roundTrip(t, "EventMessage", samples()["EventMessage"]).(*message.EventMessage)
	if _, ok := stopping.Event.(*message.TeamStoppingEvent); !ok {
		t.Errorf("event = %#v", stopping.Event)
	}

	// SentMessage.Message and the notification's CurrentMessage come back as
	// their own types with their own envelopes and addresses.
	sent := roundTrip(t, "SentMessage", samples()["SentMessage"]).(*message.SentMessage)
	um, ok := sent.Message.(*message.UserMessage)
	if !ok || um.ID != msgID || um.Content != "Hello, Akgentic!" || !um.Recipient.Equal(greeter()) || um.Display() != message.DisplayHuman {
		t.Errorf("sent message = %#v", sent.Message)
	}
	if !sent.Recipient.Equal(greeter()) || message.KindOf(sent.Recipient) != "snapshot" {
		t.Errorf("sent recipient = %v", sent.Recipient)
	}
	em := roundTrip(t, "ErrorMessage", samples()["ErrorMessage"]).(*message.ErrorMessage)
	if cm, ok := em.CurrentMessage.(*message.UserMessage); !ok || cm.ID != msgID || em.Traceback == "" {
		t.Errorf("error message = %#v", em)
	}
	// A sent message can be a record itself (nested twice).
	deep := &message.SentMessage{Base: record(), Message: samples()["ErrorMessage"].(message.Message), Recipient: orchestrator()}
	roundTrip(t, "SentMessage", deep)

	// StartMessage.Config: untagged JSON stays json.RawMessage; a
	// registered config comes back as its type; nil stays nil.
	start := roundTrip(t, "StartMessage", samples()["StartMessage"]).(*message.StartMessage)
	if _, ok := start.Config.(json.RawMessage); !ok {
		t.Errorf("untagged config decoded as %T", start.Config)
	}
	if !start.Parent.Equal(orchestrator()) || start.Parent.Name() != "@Orchestrator" {
		t.Errorf("parent = %v", start.Parent)
	}
	typed := &message.StartMessage{Base: record(), Config: &message.CancelMessage{Reason: "cfg"}}
	roundTrip(t, "StartMessage", typed)
	roundTrip(t, "StartMessage", &message.StartMessage{Base: record()})

	// StateChangedMessage.State likewise.
	roundTrip(t, "StateChangedMessage", &message.StateChangedMessage{Base: record(), State: &message.ClosedNotification{MessageID: msgID}})
	roundTrip(t, "StateChangedMessage", &message.StateChangedMessage{Base: record(), State: json.RawMessage(`[1,2,3]`)})
	roundTrip(t, "StateChangedMessage", &message.StateChangedMessage{Base: record()})
}

// Addresses inside messages decode as snapshots, whatever kind they were.
func TestRoundTripLiveAddressBecomesSnapshot(t *testing.T) {
	live := message.NewLive(greeterID, &fakeHandle{alive: true})
	m := userMessage()
	m.Recipient = live
	data, err := message.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	snap := userMessage()
	want, _ := message.Marshal(snap)
	if !bytes.Equal(data, want) {
		t.Fatalf("a live address encodes differently from its snapshot:\n%s\n%s", data, want)
	}
	v, err := message.UnmarshalMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	r := v.Envelope().Recipient
	if message.KindOf(r) != "snapshot" || !r.Equal(live) || r.Identity() != greeterID {
		t.Errorf("decoded recipient %v (%v)", r, message.KindOf(r))
	}
}

// The serialized address has exactly the eight keys of akgentic-core's ActorAddressDict: whether the
// actor is an orchestrator is not among them, so it does not survive.
func TestAddressOrchestrateNotPersisted(t *testing.T) {
	id := orchestratorID
	id.Orchestrate = true
	m := &message.StopMessage{Base: message.Base{Sender: message.NewSnapshotAddress(id)}}
	data, _ := message.Marshal(m)
	v, err := message.UnmarshalMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	if s := v.Envelope().Sender; s.IsOrchestrator() || !s.Equal(m.Sender) {
		t.Errorf("decoded sender %+v", s.Identity())
	}
}

// Nor is whether the actor is a tool (actor.Config.Tool): a restore reads
// it from the recorded config, not from addresses.
func TestAddressToolNotPersisted(t *testing.T) {
	id := greeterID
	id.Tool = true
	m := &message.StopMessage{Base: message.Base{Sender: message.NewSnapshotAddress(id)}}
	data, _ := message.Marshal(m)
	if bytes.Contains(data, []byte("tool")) {
		t.Errorf("the tool flag is persisted: %s", data)
	}
	v, err := message.UnmarshalMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	if s := v.Envelope().Sender; s.IsTool() || s.Identity() != greeterID {
		t.Errorf("decoded sender %+v", s.Identity())
	}
}

// Marshal accepts values as well as pointers, with nested values tagged the
// same way.
func TestMarshalValueEqualsPointer(t *testing.T) {
	for _, name := range []string{"StartMessage", "SentMessage", "ErrorMessage", "WarningMessage", "EventMessage", "StateChangedMessage", "UserMessage"} {
		p := samples()[name]
		val := reflect.ValueOf(p).Elem().Interface()
		a, err1 := message.Marshal(p)
		b, err2 := message.Marshal(val)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: value and pointer encode differently (%v, %v):\n%s\n%s", name, err1, err2, a, b)
		}
	}
	// A nested value (not pointer) payload is tagged and decodes to a pointer.
	ev := &message.EventMessage{Base: record(), Event: message.ClosedNotification{MessageID: msgID}}
	data, err := message.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	v, err := message.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := v.(*message.EventMessage).Event.(*message.ClosedNotification); !ok || got.MessageID != msgID {
		t.Errorf("event = %#v", v.(*message.EventMessage).Event)
	}
}

// The persisted shape of a SentMessage has one "recipient": the sent
// message's.
func TestSentMessageRecipientKey(t *testing.T) {
	s := samples()["SentMessage"].(*message.SentMessage)
	s.Base.Recipient = orchestrator()
	data, err := message.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte(`"recipient":`)); n != 2 { // the record's and the nested message's
		t.Fatalf("%d recipient keys in %s", n, data)
	}
	v, _ := message.Unmarshal(data)
	got := v.(*message.SentMessage)
	if !got.Recipient.Equal(greeter()) || got.Base.Recipient != nil {
		t.Errorf("recipient = %v, envelope recipient = %v", got.Recipient, got.Base.Recipient)
	}
}

// Legacy keys are ignored; null and absent fields decode to defaults.
func TestNotificationLegacyPayloads(t *testing.T) {
	for _, name := range []string{"NotificationMessage", "ErrorMessage", "WarningMessage"} {
		in := `{"__model__":"` + name + `","id":"cccccccc-cccc-4ccc-8ccc-cccccccccccc",
			"timestamp":"2024-05-01T10:00:00.123456Z","content_type":null,
			"exception_type":"ValueError","exception_value":"boom","traceback":null}`
		v, err := message.Unmarshal([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := notice(v)
		if n.ContentType != "" || n.Content != "" || n.CurrentMessage != nil || n.ID != recordID {
			t.Errorf("%s decoded as %#v", name, n)
		}
		if e, ok := v.(*message.ErrorMessage); ok && e.Traceback != "" {
			t.Errorf("traceback = %q", e.Traceback)
		}
		if reflect.TypeOf(v).Elem().Name() != name {
			t.Errorf("decoded %T", v)
		}
	}
	// A payload written before the fields existed: just the envelope.
	v, err := message.Unmarshal([]byte(`{"__model__":"ErrorMessage"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e := v.(*message.ErrorMessage); e.Content != "" || e.Traceback != "" || e.CurrentMessage != nil {
		t.Errorf("empty ErrorMessage = %#v", e)
	}
}

func TestUnmarshalUnknownType(t *testing.T) {
	for _, in := range []string{
		`{"__model__":"NoSuchMessage","content":"x"}`,
		`{"__model__":"SentMessage","message":{"__model__":"NoSuchMessage"}}`,
		`{"__model__":"EventMessage","event":{"__model__":"NoSuchEvent"}}`,
		`{"__model__":"ErrorMessage","current_message":{"__model__":"NoSuchMessage"}}`,
	} {
		_, err := message.Unmarshal([]byte(in))
		if !errors.Is(err, message.ErrUnknownType) {
			t.Errorf("%s: err = %v, want ErrUnknownType", in, err)
			continue
		}
		if !strings.Contains(err.Error(), "NoSuch") {
			t.Errorf("%s: error %q does not name the type", in, err)
		}
	}
	if _, err := message.NewOf("NoSuchMessage"); !errors.Is(err, message.ErrUnknownType) {
		t.Errorf("NewOf: %v", err)
	}
	v, err := message.NewOf("UserMessage")
	if _, ok := v.(*message.UserMessage); !ok || err != nil {
		t.Errorf("NewOf(UserMessage) = %T, %v", v, err)
	}
}

func TestUnmarshalMissingOrBadTag(t *testing.T) {
	for in, want := range map[string]string{
		`{"content":"x"}`:               `missing "__model__"`,
		`{"__model__":null}`:            `missing "__model__"`,
		`{"__model__":5,"content":"x"}`: `"__model__" is 5, not a type name`,
		`[1,2]`:                         "decode",
		`"UserMessage"`:                 "decode",
		`{"__model__":"UserMessage"`:    "decode",
		``:                              "decode",
	} {
		_, err := message.Unmarshal([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Unmarshal(%s) = %v, want an error containing %q", in, err, want)
		}
	}
}

type testNested struct {
	Inner struct {
		N int `json:"n"`
	} `json:"inner"`
}

// A field of the wrong type is an error naming the type and the field.
func TestUnmarshalWrongFieldType(t *testing.T) {
	message.Register[testNested]("test.nested")
	for _, c := range []struct{ in, typ, field string }{
		{`{"__model__":"UserMessage","content":5}`, "UserMessage", "content"},
		{`{"__model__":"UserMessage","timestamp":5}`, "UserMessage", "timestamp"},
		{`{"__model__":"UserMessage","timestamp":"yesterday"}`, "UserMessage", "timestamp"},
		{`{"__model__":"UserMessage","id":"nope"}`, "UserMessage", "id"},
		{`{"__model__":"UserMessage","parent_id":7}`, "UserMessage", "parent_id"},
		{`{"__model__":"UserMessage","sender":"@Human"}`, "UserMessage", "sender"},
		{`{"__model__":"UserMessage","sender":{"__actor_address__":true,"team_id":"x"}}`, "UserMessage", "team_id"},
		{`{"__model__":"CancelMessage","reason":["a"]}`, "CancelMessage", "reason"},
		{`{"__model__":"ClosedNotification","message_id":"bad"}`, "ClosedNotification", "message_id"},
		{`{"__model__":"ReceivedMessage","message_id":true}`, "ReceivedMessage", "message_id"},
		{`{"__model__":"ErrorMessage","content_type":5}`, "ErrorMessage", "content_type"},
		{`{"__model__":"ErrorMessage","traceback":{}}`, "ErrorMessage", "traceback"},
		{`{"__model__":"WarningMessage","content":1.5}`, "WarningMessage", "content"},
		{`{"__model__":"StartMessage","parent":[]}`, "StartMessage", "parent"},
		{`{"__model__":"SentMessage","message":"hello"}`, "SentMessage", "message"},
		{`{"__model__":"SentMessage","message":{"__model__":"TeamStoppingEvent"}}`, "SentMessage", "message"},
		{`{"__model__":"SentMessage","message":{"__model__":"UserMessage","content":5}}`, "SentMessage", "content"},
		{`{"__model__":"NotificationMessage","current_message":{"__model__":"ClosedNotification"}}`, "NotificationMessage", "current_message"},
		{`{"__model__":"EventMessage","event":{"__model__":7}}`, "EventMessage", "event"},
		{`{"__model__":"StateChangedMessage","state":{"__model__":"ClosedNotification","message_id":1}}`, "StateChangedMessage", "message_id"},
		{`{"__model__":"SentMessage","timestamp":false}`, "SentMessage", "timestamp"},
		{`{"__model__":"StateChangedMessage","team_id":1}`, "StateChangedMessage", "team_id"},
		{`{"__model__":"EventMessage","recipient":1}`, "EventMessage", "recipient"},
		{`{"__model__":"StopMessage","display_type":1}`, "StopMessage", "display_type"},
		{`{"__model__":"test.nested","inner":{"n":"x"}}`, "test.nested", "inner.n"},
	} {
		_, err := message.Unmarshal([]byte(c.in))
		if err == nil {
			t.Errorf("%s decoded", c.in)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "decode "+c.typ) || !strings.Contains(msg, c.field) {
			t.Errorf("%s:\n  error %q\n  does not name type %s and field %s", c.in, msg, c.typ, c.field)
		}
		var fe *message.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %q is not a FieldError", c.in, err)
		}
	}
	// The Go type the JSON should have had is named too.
	_, err := message.Unmarshal([]byte(`{"__model__":"UserMessage","content":5}`))
	if want := `message: decode UserMessage: field "content": cannot decode a JSON number as string`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		t.Errorf("error does not wrap *json.UnmarshalTypeError: %v", err)
	}

	// When no single key is to blame (here a duplicate key: the last value
	// is fine alone), the decoder's own error is returned.
	_, err = message.Unmarshal([]byte(`{"__model__":"UserMessage","content":5,"content":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "UserMessage.content") {
		t.Errorf("duplicate key: %v", err)
	}
}

func TestUnmarshalMessage(t *testing.T) {
	data, _ := message.Marshal(userMessage())
	m, err := message.UnmarshalMessage(data)
	if err != nil || m.Envelope().ID != msgID {
		t.Fatalf("UnmarshalMessage = %v, %v", m, err)
	}
	data, _ = message.Marshal(&message.TeamStoppingEvent{})
	if _, err := message.UnmarshalMessage(data); err == nil || !strings.Contains(err.Error(), "not a Message") {
		t.Errorf("UnmarshalMessage(TeamStoppingEvent) = %v", err)
	}
	if _, err := message.UnmarshalMessage([]byte(`{}`)); err == nil {
		t.Error("UnmarshalMessage({}) succeeded")
	}
}

type unregistered struct{ A int }

type testArrayMarshaler struct{}

func (testArrayMarshaler) MarshalJSON() ([]byte, error) { return []byte(`[1]`), nil }

type testFailingMarshaler struct{}

func (testFailingMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot encode") }

func TestMarshalErrors(t *testing.T) {
	if _, err := message.Marshal(nil); err == nil {
		t.Error("Marshal(nil) succeeded")
	}
	_, err := message.Marshal(&unregistered{})
	if !errors.Is(err, message.ErrUnknownType) || !strings.Contains(err.Error(), "unregistered") {
		t.Errorf("Marshal(unregistered) = %v", err)
	}
	message.Register[testArrayMarshaler]("test.array")
	if _, err := message.Marshal(testArrayMarshaler{}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("Marshal of a non-object = %v", err)
	}
	message.Register[testFailingMarshaler]("test.failing")
	if _, err := message.Marshal(testFailingMarshaler{}); err == nil || !strings.Contains(err.Error(), "test.failing") {
		t.Errorf("Marshal of a failing type = %v", err)
	}
	// A nested value that cannot be encoded fails the whole record.
	for _, v := range []any{
		&message.StartMessage{Config: func() {}},
		&message.StartMessage{Config: testFailingMarshaler{}},
		&message.SentMessage{Message: &message.StartMessage{Config: make(chan int)}},
		&message.ErrorMessage{NotificationMessage: message.NotificationMessage{CurrentMessage: &message.StartMessage{Config: func() {}}}},
		&message.WarningMessage{NotificationMessage: message.NotificationMessage{CurrentMessage: &message.StartMessage{Config: func() {}}}},
		&message.StateChangedMessage{State: func() {}},
		&message.EventMessage{Event: make(chan int)},
	} {
		if _, err := message.Marshal(v); err == nil {
			t.Errorf("Marshal(%T with an unencodable value) succeeded", v)
		}
	}
	// A typed nil nested value encodes as null.
	data, err := message.Marshal(&message.EventMessage{Event: (*message.ClosedNotification)(nil)})
	if err != nil || !bytes.Contains(data, []byte(`"event":null`)) {
		t.Errorf("typed nil event: %s, %v", data, err)
	}
}

type testConflictA struct{ A int }
type testConflictB struct{ B int }

// Type names are forever; a conflicting registration panics.
func TestRegisterConflicts(t *testing.T) {
	message.Register[testConflictA]("test.conflict")
	message.Register[testConflictA]("test.conflict")                         // the same pair again is fine
	message.RegisterType("test.conflict", reflect.TypeFor[*testConflictA]()) // pointer types resolve to the struct
	for what, f := range map[string]func(){
		"same name, other type": func() { message.Register[testConflictB]("test.conflict") },
		"same type, other name": func() { message.Register[testConflictA]("test.conflict2") },
		"empty name":            func() { message.Register[testConflictB]("") },
		"not a struct":          func() { message.Register[int]("test.int") },
		"built-in name reused":  func() { message.Register[testConflictB]("UserMessage") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", what)
				}
			}()
			f()
		}()
	}
	if v, err := message.NewOf("test.conflict"); err != nil || reflect.TypeOf(v) != reflect.TypeFor[*testConflictA]() {
		t.Errorf("NewOf(test.conflict) = %T, %v", v, err)
	}
	names := message.Registered()
	if !slices.IsSorted(names) || !slices.Contains(names, "test.conflict") || slices.Contains(names, "test.conflict2") {
		t.Errorf("Registered() = %v", names)
	}
}

// The domain events' persisted names are their identity.
func TestDomainEventNames(t *testing.T) {
	for v, want := range map[any]string{
		&message.TeamStoppingEvent{}:  `{"__model__":"TeamStoppingEvent"}`,
		&message.StopRecursively{}:    `{"__model__":"StopRecursively"}`,
		&message.ClosedNotification{}: `{"__model__":"ClosedNotification","message_id":"00000000-0000-0000-0000-000000000000"}`,
	} {
		data, err := message.Marshal(v)
		if err != nil || string(data) != want {
			t.Errorf("Marshal(%T) = %s, %v; want %s", v, data, err, want)
		}
	}
	v, err := message.Unmarshal([]byte(`{"__model__":"ClosedNotification","message_id":"` + msgID.String() + `"}`))
	if err != nil || v.(*message.ClosedNotification).MessageID != msgID {
		t.Errorf("ClosedNotification = %#v, %v", v, err)
	}
	_ = uuid.Nil
}

func nestedEvents(depth int, leaf string) []byte {
	return []byte(strings.Repeat(`{"__model__":"EventMessage","event":`, depth) + leaf + strings.Repeat("}", depth))
}

// Nested payloads decode in time linear in their depth on the error path
// (naming the failing field used to re-probe every level: 2^depth).
func TestUnmarshalDeepNesting(t *testing.T) {
	_, err := message.Unmarshal(nestedEvents(60, `{"__model__":"UserMessage","content":5}`))
	if err == nil || !strings.Contains(err.Error(), `field "content"`) || !strings.Contains(err.Error(), `field "event"`) {
		t.Fatalf("deep bad leaf: %v", err)
	}
	v, err := message.Unmarshal(nestedEvents(200, `{"__model__":"TeamStoppingEvent"}`))
	if err != nil {
		t.Fatalf("200 levels: %v", err)
	}
	depth := 0
	for e, ok := v.(*message.EventMessage); ok; e, ok = e.Event.(*message.EventMessage) {
		depth++
		v = e.Event
	}
	if _, ok := v.(*message.TeamStoppingEvent); !ok || depth != 200 {
		t.Fatalf("decoded %d levels down to %T", depth, v)
	}

	// Past the bound: refused before any decoding.
	_, err = message.Unmarshal(nestedEvents(300, `{}`))
	if err == nil || !strings.Contains(err.Error(), "nested more than 256") {
		t.Fatalf("300 levels: %v", err)
	}
	// Brackets inside strings do not count.
	s := `{"__model__":"UserMessage","content":"` + strings.Repeat(`{[\"`, 400) + `"}`
	if v, err := message.Unmarshal([]byte(s)); err != nil || !strings.HasPrefix(v.(*message.UserMessage).Content, `{["{["`) {
		t.Fatalf("brackets in a string: %v", err)
	}
}

// Marshal of a nil message pointer is an error naming the type, for every
// type (some panicked before).
func TestMarshalNilPointers(t *testing.T) {
	for _, v := range []any{(*message.SentMessage)(nil), (*message.StartMessage)(nil), (*message.EventMessage)(nil),
		(*message.UserMessage)(nil), (*message.ErrorMessage)(nil), (*message.StateChangedMessage)(nil), (*message.ProcessedMessage)(nil)} {
		_, err := message.Marshal(v)
		if err == nil || !strings.Contains(err.Error(), "nil") {
			t.Errorf("Marshal(%T(nil)) = %v, want an error", v, err)
		}
	}
}

// TestMain checks every test of the package for leaked goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
