package message_test

import (
	"encoding/json"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/internal/ids"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// Compile-time checks of the interface families: every telemetry record is a Telemetry, every business payload a
// Message.
var (
	_ message.Telemetry = (*message.StartMessage)(nil)
	_ message.Telemetry = (*message.StopMessage)(nil)
	_ message.Telemetry = (*message.SentMessage)(nil)
	_ message.Telemetry = (*message.ReceivedMessage)(nil)
	_ message.Telemetry = (*message.ProcessedMessage)(nil)
	_ message.Telemetry = (*message.HandledMessage)(nil)
	_ message.Telemetry = (*message.StateChangedMessage)(nil)
	_ message.Telemetry = (*message.EventMessage)(nil)
	_ message.Telemetry = (*message.NotificationMessage)(nil)
	_ message.Telemetry = (*message.ErrorMessage)(nil)
	_ message.Telemetry = (*message.WarningMessage)(nil)
	_ message.Message   = (*message.UserMessage)(nil)
	_ message.Message   = (*message.ResultMessage)(nil)
	_ message.Message   = (*message.CancelMessage)(nil)
)

// The envelope's fields and their defaults.
func TestEnvelopeDefaults(t *testing.T) {
	var b message.Base
	if b.ID != uuid.Nil || b.ParentID.Valid || b.TeamID.Valid || !b.Timestamp.IsZero() || b.Sender != nil || b.Recipient != nil {
		t.Fatalf("zero Base is not empty: %+v", b)
	}
	if got := b.Display(); got != message.DisplayOther {
		t.Errorf("default display = %q, want other", got)
	}
	// Base.Team and Base.Parent are gone: the ids read as TeamID.UUID and
	// ParentID.UUID, uuid.Nil when unset.
	if b.TeamID.UUID != uuid.Nil || b.ParentID.UUID != uuid.Nil {
		t.Errorf("Team/Parent of a zero Base = %v/%v", b.TeamID.UUID, b.ParentID.UUID)
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
	if b.TeamID.UUID != teamID || b.ParentID.UUID != parentID {
		t.Errorf("Team/Parent = %v/%v", b.TeamID.UUID, b.ParentID.UUID)
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

// A send from an actor stamps sender (the actor), team (its own)
// and parent (the id of the message being handled; none outside a turn;
// always overwritten), fills a zero id and timestamp and keeps given ones.
// message.Stamp is gone (stamping is the runtime's), so a real actor sends.
// The old "team uuid.Nil stamps a null team" case has no runtime
// counterpart: every actor has a team.
func TestStamp(t *testing.T) {
	before := time.Now().UTC() // before the system's clock starts
	sys := newSystem(t)
	probe := actortest.NewProbe()
	to, err := sys.Spawn(probe, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	m := &message.ResultMessage{Content: "hi"}
	m.ParentID = uuid.NullUUID{UUID: uuid.New(), Valid: true} // overwritten below
	from, err := sys.Spawn(actor.Func(func(c *actor.Context, msg any) (any, error) {
		return nil, c.Send(to, m)
	}), &actor.Config{Name: "@Greeter", Role: "Greeter"})
	if err != nil {
		t.Fatal(err)
	}
	current := message.NewUserMessage("go")
	if _, err := sys.Ask(t.Context(), from, current); err != nil {
		t.Fatal(err)
	}
	if got, _ := actortest.Expect[*message.ResultMessage](t, probe); got != m {
		t.Fatal("the first send did not stamp and deliver the message itself")
	}
	if !m.Sender.Equal(from) {
		t.Errorf("sender = %v", m.Sender)
	}
	if m.TeamID.UUID != from.TeamID() || !m.TeamID.Valid {
		t.Errorf("team = %+v", m.TeamID)
	}
	if m.ParentID.UUID != current.ID || !m.ParentID.Valid {
		t.Errorf("parent = %+v, want the current message's id", m.ParentID)
	}
	if m.ID == uuid.Nil {
		t.Error("no id filled in")
	}
	if m.Timestamp.Before(before.Truncate(time.Millisecond)) || m.Timestamp.Location() != time.UTC {
		t.Errorf("timestamp = %v, want a UTC time from now", m.Timestamp)
	}

	// Sending it again outside a turn (a proxy call) stamps a copy: the
	// parent is cleared, id and time are kept, and the original does not
	// change.
	orig := *m
	if err := proxy.Do(t.Context(), from, func(c *actor.Context, _ actor.Actor) error { return c.Send(to, m) }); err != nil {
		t.Fatal(err)
	}
	again, _ := actortest.Expect[*message.ResultMessage](t, probe)
	if again == m {
		t.Fatal("a message sent twice was stamped in place")
	}
	if again.ParentID.Valid || again.ParentID.UUID != uuid.Nil {
		t.Errorf("parent after a send with no current message = %+v, want null", again.ParentID)
	}
	if again.ID != m.ID || !again.Timestamp.Equal(m.Timestamp) {
		t.Error("re-sending replaced the id or timestamp")
	}
	if m.ParentID != orig.ParentID || m.Sender != orig.Sender || m.TeamID != orig.TeamID {
		t.Errorf("original changed by re-sending it: %+v", m.Base)
	}

	// An id and time given at construction are kept (the id is
	// overridable); a given sender is overwritten.
	given := &message.UserMessage{Base: message.Base{ID: msgID, Timestamp: t0, Sender: human()}}
	if err := proxy.Do(t.Context(), from, func(c *actor.Context, _ actor.Actor) error { return c.Send(to, given) }); err != nil {
		t.Fatal(err)
	}
	actortest.Expect[*message.UserMessage](t, probe)
	if given.ID != msgID || !given.Timestamp.Equal(t0) {
		t.Errorf("given id/timestamp replaced: %v %v", given.ID, given.Timestamp)
	}
	if !given.Sender.Equal(from) {
		t.Errorf("sender not overwritten: %v", given.Sender)
	}
}

// Business payloads, their constructors and display types.
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
	// StopRecursively and the domain events are not messages.
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
	// The three notification records share NotificationMessage:
	// ErrorMessage and WarningMessage embed it, so its fields are theirs.
	// (The message.Notification interface and its Notice method were
	// removed from the surface: a type switch names the three types.)
	for _, v := range []message.Telemetry{&message.NotificationMessage{}, &message.ErrorMessage{}, &message.WarningMessage{}} {
		if n := notice(v); n == nil {
			t.Errorf("%T carries no NotificationMessage", v)
		}
	}
	e := &message.ErrorMessage{}
	e.Content, e.ContentType = "boom", "*errors.errorString"
	if n := notice(e); n != &e.NotificationMessage || n.Content != "boom" || n.ContentType != "*errors.errorString" {
		t.Error("ErrorMessage does not embed its notification")
	}
	w := &message.WarningMessage{}
	w.Content = "careful"
	if n := notice(w); n != &w.NotificationMessage || n.Content != "careful" {
		t.Error("WarningMessage does not embed its notification")
	}
}

// A message is claimed once; re-sending it sends a copy with the same id
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

	// Stamping the re-sent copy (the runtime writes its envelope) changes
	// nothing the first readers hold.
	orig := *m
	cu.Sender = greeter()
	cu.TeamID = uuid.NullUUID{UUID: uuid.New(), Valid: true}
	cu.ParentID = uuid.NullUUID{UUID: recordID, Valid: true}
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
	drawn := make([][]uuid.UUID, gs)
	var wg sync.WaitGroup
	for g := range gs {
		wg.Go(func() {
			for range perG {
				drawn[g] = append(drawn[g], message.NewID())
			}
		})
	}
	wg.Wait()
	seen := make(map[uuid.UUID]bool, perG*gs)
	for _, l := range drawn {
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
	// IDBlock and IDAt moved to internal/ids (the runtime's ledger draws
	// blocks); NewID draws from the same counter.
	first := ids.Block(100)
	seen := map[uuid.UUID]bool{}
	for i := range uint64(100) {
		id := ids.At(first + i)
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

// The one rule for event payloads: EventAs reads a value and a
// pointer alike (a live event and a decoded one).
func TestEventAs(t *testing.T) {
	live := &message.EventMessage{Event: message.TeamStoppingEvent{}}
	decoded := &message.EventMessage{Event: &message.TeamStoppingEvent{}}
	for _, m := range []*message.EventMessage{live, decoded} {
		if _, ok := message.EventAs[message.TeamStoppingEvent](m); !ok {
			t.Fatalf("EventAs missed %T", m.Event)
		}
	}
	if _, ok := message.EventAs[message.TeamStoppingEvent](&message.EventMessage{Event: "other"}); ok {
		t.Fatal("EventAs took a string for a TeamStoppingEvent")
	}
	var nilPtr *message.TeamStoppingEvent
	if _, ok := message.EventAs[message.TeamStoppingEvent](&message.EventMessage{Event: nilPtr}); ok {
		t.Fatal("EventAs took a nil pointer")
	}
	if _, ok := message.EventAs[message.TeamStoppingEvent](nil); ok {
		t.Fatal("EventAs took a nil message")
	}
}
