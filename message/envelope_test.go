package message_test

import (
	"encoding/json"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// Compile-time checks of the interface families (B13, B15).
var (
	_ message.Telemetry    = (*message.StartMessage)(nil)
	_ message.Telemetry    = (*message.StopMessage)(nil)
	_ message.Telemetry    = (*message.SentMessage)(nil)
	_ message.Telemetry    = (*message.ReceivedMessage)(nil)
	_ message.Telemetry    = (*message.ProcessedMessage)(nil)
	_ message.Telemetry    = (*message.HandledMessage)(nil)
	_ message.Telemetry    = (*message.StateChangedMessage)(nil)
	_ message.Telemetry    = (*message.EventMessage)(nil)
	_ message.Notification = (*message.NotificationMessage)(nil)
	_ message.Notification = (*message.ErrorMessage)(nil)
	_ message.Notification = (*message.WarningMessage)(nil)
	_ message.Message      = (*message.UserMessage)(nil)
	_ message.Message      = (*message.ResultMessage)(nil)
	_ message.Message      = (*message.CancelMessage)(nil)
)

// B1: the envelope's fields and their defaults.
func TestEnvelopeDefaults(t *testing.T) {
	var b message.Base
	if b.ID != uuid.Nil || b.ParentID.Valid || b.TeamID.Valid || !b.Timestamp.IsZero() || b.Sender != nil || b.Recipient != nil {
		t.Fatalf("zero Base is not empty: %+v", b)
	}
	if got := b.Display(); got != message.DisplayOther {
		t.Errorf("default display = %q, want other", got)
	}
	if b.Team() != uuid.Nil || b.Parent() != uuid.Nil {
		t.Errorf("Team/Parent of a zero Base = %v/%v", b.Team(), b.Parent())
	}
	if b.Envelope() != &b {
		t.Error("Envelope does not return the Base itself")
	}

	// Every envelope key is present on the wire; unset ones are null.
	data, err := message.Marshal(&message.CancelMessage{})
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "timestamp"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("key %q missing from %s", k, data)
		}
	}
	for _, k := range []string{"parent_id", "team_id", "sender", "recipient"} {
		if string(obj[k]) != "null" {
			t.Errorf("key %q = %s, want null", k, obj[k])
		}
	}
	if _, ok := obj["display_type"]; ok {
		t.Errorf("unset display_type written: %s", data)
	}

	b.ParentID = uuid.NullUUID{UUID: parentID, Valid: true}
	b.TeamID = uuid.NullUUID{UUID: teamID, Valid: true}
	if b.Team() != teamID || b.Parent() != parentID {
		t.Errorf("Team/Parent = %v/%v", b.Team(), b.Parent())
	}
}

func TestDisplayTypeValid(t *testing.T) {
	for d, want := range map[message.DisplayType]bool{
		"": true, message.DisplayHuman: true, message.DisplayAI: true, message.DisplayOther: true,
		"robot": false, "Human": false,
	} {
		if got := d.Valid(); got != want {
			t.Errorf("DisplayType(%q).Valid() = %v, want %v", d, got, want)
		}
	}
	b := message.Base{DisplayType: message.DisplayAI}
	if b.Display() != message.DisplayAI {
		t.Errorf("Display() = %q", b.Display())
	}
}

// B2: Stamp sets sender, team and parent (always overwritten), fills a zero
// id and timestamp and keeps given ones, and returns the same message.
func TestStamp(t *testing.T) {
	current := userMessage()
	m := &message.ResultMessage{Content: "hi"}
	m.ParentID = uuid.NullUUID{UUID: uuid.New(), Valid: true} // overwritten below
	before := time.Now().UTC()
	got := message.Stamp(m, greeter(), teamID, current)
	if got != message.Message(m) {
		t.Fatal("Stamp did not return its argument")
	}
	if !m.Sender.Equal(greeter()) {
		t.Errorf("sender = %v", m.Sender)
	}
	if m.Team() != teamID || !m.TeamID.Valid {
		t.Errorf("team = %+v", m.TeamID)
	}
	if m.Parent() != msgID || !m.ParentID.Valid {
		t.Errorf("parent = %+v, want the current message's id", m.ParentID)
	}
	if m.ID == uuid.Nil {
		t.Error("no id filled in")
	}
	if m.Timestamp.Before(before.Truncate(time.Millisecond)) || m.Timestamp.Location() != time.UTC {
		t.Errorf("timestamp = %v, want a UTC time from now", m.Timestamp)
	}

	// Re-stamping outside a turn clears the parent, keeps id and time.
	id, ts := m.ID, m.Timestamp
	message.Stamp(m, human(), uuid.Nil, nil)
	if m.ParentID.Valid || m.Parent() != uuid.Nil {
		t.Errorf("parent after a stamp with no current message = %+v, want null", m.ParentID)
	}
	if m.TeamID.Valid {
		t.Errorf("team after a stamp with uuid.Nil = %+v, want null", m.TeamID)
	}
	if m.ID != id || !m.Timestamp.Equal(ts) {
		t.Error("Stamp replaced an existing id or timestamp")
	}
	if !m.Sender.Equal(human()) {
		t.Errorf("sender not overwritten: %v", m.Sender)
	}

	// An id given at construction is kept (B1: id is overridable).
	given := &message.UserMessage{Base: message.Base{ID: msgID, Timestamp: t0}}
	message.Stamp(given, human(), teamID, nil)
	if given.ID != msgID || !given.Timestamp.Equal(t0) {
		t.Errorf("given id/timestamp replaced: %v %v", given.ID, given.Timestamp)
	}
}

// B3: business payloads, their constructors and display types.
func TestBusinessPayloads(t *testing.T) {
	u := message.NewUserMessage("hello")
	if u.Content != "hello" || u.Display() != message.DisplayHuman {
		t.Errorf("NewUserMessage = %+v", u)
	}
	r := message.NewResultMessage("world")
	if r.Content != "world" || r.Display() != message.DisplayAI {
		t.Errorf("NewResultMessage = %+v", r)
	}
	var c message.CancelMessage
	if c.Reason != "" || c.Display() != message.DisplayOther {
		t.Errorf("CancelMessage default = %+v", c)
	}
	// StopRecursively and the domain events are not messages (B3, B5).
	for _, v := range []any{&message.StopRecursively{}, &message.TeamStoppingEvent{}, &message.ClosedNotification{}} {
		if _, ok := v.(message.Message); ok {
			t.Errorf("%T is a Message", v)
		}
	}
	if n := reflect.TypeFor[message.StopRecursively]().NumField(); n != 0 {
		t.Errorf("StopRecursively has %d fields", n)
	}
	if n := reflect.TypeFor[message.TeamStoppingEvent]().NumField(); n != 0 {
		t.Errorf("TeamStoppingEvent has %d fields", n)
	}
	// One case covers the three notification records (B13).
	for _, v := range []message.Telemetry{&message.NotificationMessage{}, &message.ErrorMessage{}, &message.WarningMessage{}} {
		n, ok := v.(message.Notification)
		if !ok || n.Notice() == nil {
			t.Errorf("%T is not a Notification", v)
		}
	}
	e := &message.ErrorMessage{}
	if e.Notice() != &e.NotificationMessage {
		t.Error("ErrorMessage.Notice does not return its embedded notification")
	}
}

// B4: a message is claimed once; re-sending it sends a copy with the same id
// and leaves the original untouched.
func TestClaimAndClone(t *testing.T) {
	m := userMessage()
	if !message.Claim(m) {
		t.Fatal("first Claim = false")
	}
	if message.Claim(m) {
		t.Fatal("second Claim = true")
	}

	c := message.Clone(m)
	cu, ok := c.(*message.UserMessage)
	if !ok {
		t.Fatalf("Clone returned %T", c)
	}
	if cu == m {
		t.Fatal("Clone returned the original")
	}
	if cu.ID != m.ID || cu.Content != m.Content || !cu.Sender.Equal(m.Sender) {
		t.Errorf("clone differs: %+v vs %+v", cu, m)
	}
	if !message.Claim(c) {
		t.Error("a clone starts claimed")
	}

	// Stamping the re-sent copy changes nothing the first readers hold.
	orig := *m
	message.Stamp(c, greeter(), uuid.New(), result())
	cu.Content = "changed"
	if m.Sender != orig.Sender || m.TeamID != orig.TeamID || m.ParentID != orig.ParentID || m.Content != orig.Content || m.ID != orig.ID {
		t.Errorf("original changed by stamping its clone: %+v", m)
	}
	if cu.ID != m.ID {
		t.Error("re-stamping the clone changed its id")
	}

	// Clone works through embedding (the notification family).
	e := &message.ErrorMessage{NotificationMessage: message.NotificationMessage{Content: "x"}, Traceback: "tb"}
	message.Claim(e)
	ce := message.Clone(e).(*message.ErrorMessage)
	if ce.Content != "x" || ce.Traceback != "tb" || !message.Claim(ce) {
		t.Errorf("Clone(ErrorMessage) = %+v", ce)
	}
}

func result() message.Message { return message.NewResultMessage("r") }

func TestClaimIsExclusiveUnderConcurrency(t *testing.T) {
	m := userMessage()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if message.Claim(m) {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d goroutines claimed the message, want 1", n)
	}
}

func TestCloneOfNilPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Clone((*UserMessage)(nil)) did not panic")
		}
	}()
	message.Clone((*message.UserMessage)(nil))
}

func checkV4(t *testing.T, id uuid.UUID) {
	t.Helper()
	if id.Version() != 4 || id.Variant() != uuid.RFC4122 {
		t.Fatalf("%v: version %d variant %v, want 4 / RFC4122", id, id.Version(), id.Variant())
	}
}

func TestNewIDUniqueAndV4(t *testing.T) {
	const perG, gs = 5000, 8
	ids := make([][]uuid.UUID, gs)
	var wg sync.WaitGroup
	for g := range gs {
		wg.Go(func() {
			for range perG {
				ids[g] = append(ids[g], message.NewID())
			}
		})
	}
	wg.Wait()
	seen := make(map[uuid.UUID]bool, perG*gs)
	for _, l := range ids {
		for _, id := range l {
			checkV4(t, id)
			if seen[id] {
				t.Fatalf("duplicate id %v", id)
			}
			seen[id] = true
		}
	}
	// Parsed back from its string it is the same valid UUID.
	id := message.NewID()
	if p, err := uuid.Parse(id.String()); err != nil || p != id {
		t.Fatalf("uuid.Parse(%s) = %v, %v", id, p, err)
	}
}

func TestIDBlock(t *testing.T) {
	first := message.IDBlock(100)
	seen := map[uuid.UUID]bool{}
	for i := range uint64(100) {
		id := message.IDAt(first + i)
		checkV4(t, id)
		seen[id] = true
	}
	if len(seen) != 100 {
		t.Fatalf("IDBlock(100) gave %d distinct ids", len(seen))
	}
	// The shared counter moved past the block.
	for range 1000 {
		if id := message.NewID(); seen[id] {
			t.Fatalf("NewID returned %v from a reserved block", id)
		}
	}
}

func TestTypeName(t *testing.T) {
	type local struct{}
	for v, want := range map[any]string{
		&message.UserMessage{}:       "UserMessage",
		message.UserMessage{}:        "UserMessage",
		&message.TeamStoppingEvent{}: "TeamStoppingEvent",
		local{}:                      "local",
		&local{}:                     "local",
		7:                            "int",
	} {
		if got := message.TypeName(v); got != want {
			t.Errorf("TypeName(%T) = %q, want %q", v, got, want)
		}
	}
	if got := message.TypeName(nil); got != "<nil>" {
		t.Errorf("TypeName(nil) = %q", got)
	}
	if got := message.TypeName([]int{1}); got != "[]int" {
		t.Errorf("TypeName([]int) = %q", got)
	}
}
