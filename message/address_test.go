package message_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// fakeHandle is a live address's delivery side, recording what it got.
type fakeHandle struct {
	alive bool
	told  []any
}

var errFakeDead = errors.New("fake: dead")

func (h *fakeHandle) Alive() bool { return h.alive }

func (h *fakeHandle) Tell(msg any) error {
	if !h.alive {
		return errFakeDead
	}
	h.told = append(h.told, msg)
	return nil
}

func (h *fakeHandle) Ask(ctx context.Context, msg any) (any, error) {
	if err := h.Tell(msg); err != nil {
		return nil, err
	}
	return "reply to " + message.TypeName(msg), ctx.Err()
}

// B60: a snapshot reports alive and refuses delivery, naming the address.
func TestSnapshotAddress(t *testing.T) {
	a := greeter()
	if a.Kind() != message.Snapshot || a.Kind().String() != "snapshot" {
		t.Fatalf("kind = %v", a.Kind())
	}
	if !a.IsAlive() {
		t.Error("snapshot reports not alive")
	}
	if a.Handle() != nil {
		t.Error("snapshot has a handle")
	}
	checkRefused(t, a, a.Tell(message.NewUserMessage("x")))
	_, err := a.Ask(t.Context(), message.NewUserMessage("x"))
	checkRefused(t, a, err)
	if a.Snapshot() != a {
		t.Error("Snapshot of a snapshot is not itself")
	}
}

// B60: a stopped record reports not alive and refuses delivery.
func TestStoppedAddress(t *testing.T) {
	a := message.NewStoppedAddress(greeterID)
	if a.Kind() != message.Stopped || a.Kind().String() != "stopped" {
		t.Fatalf("kind = %v", a.Kind())
	}
	if a.IsAlive() {
		t.Error("stopped address reports alive")
	}
	checkRefused(t, a, a.Tell(message.NewUserMessage("x")))
	_, err := a.Ask(t.Context(), "x")
	checkRefused(t, a, err)
	if a.Snapshot() != a {
		t.Error("Snapshot of a stopped address is not itself")
	}
	if a.Identity() != greeterID {
		t.Errorf("identity = %+v", a.Identity())
	}
}

func checkRefused(t *testing.T, a *message.Address, err error) {
	t.Helper()
	if !errors.Is(err, message.ErrNotDeliverable) {
		t.Fatalf("err = %v, want ErrNotDeliverable", err)
	}
	if !strings.Contains(err.Error(), a.Name()) || !strings.Contains(err.Error(), a.AgentID().String()) {
		t.Errorf("error %q does not name the address %v", err, a)
	}
}

// B55, B56, B60: a live address asks its handle, delivers through it, and
// converts to the snapshot and stopped kinds with the same identity.
func TestLiveAddress(t *testing.T) {
	h := &fakeHandle{alive: true}
	a := message.NewLiveAddress(greeterID, h)
	if a.Kind() != message.Live || a.Kind().String() != "live" || a.Handle() != message.Handle(h) {
		t.Fatalf("kind %v handle %v", a.Kind(), a.Handle())
	}
	if !a.IsAlive() {
		t.Error("live address with a live handle reports not alive")
	}
	m := message.NewUserMessage("x")
	if err := a.Tell(m); err != nil {
		t.Fatal(err)
	}
	reply, err := a.Ask(t.Context(), m)
	if err != nil || reply != "reply to UserMessage" {
		t.Fatalf("Ask = %v, %v", reply, err)
	}
	if len(h.told) != 2 || h.told[0] != any(m) {
		t.Fatalf("handle got %v", h.told)
	}
	// Address tell does no stamping (B56).
	if m.ID != uuid.Nil || m.Sender != nil {
		t.Errorf("Tell stamped the message: %+v", m.Base)
	}

	s := a.Snapshot()
	if s.Kind() != message.Snapshot || s.Identity() != greeterID || !s.Equal(a) {
		t.Errorf("Snapshot() = %v kind %v", s, s.Kind())
	}
	st := a.AsStopped()
	if st.Kind() != message.Stopped || st.Identity() != greeterID || st.IsAlive() {
		t.Errorf("AsStopped() = %v kind %v", st, st.Kind())
	}

	// The handle says when the actor is gone; the runtime's error passes
	// through unchanged. The identity still reads (B57).
	h.alive = false
	if a.IsAlive() {
		t.Error("live address with a dead handle reports alive")
	}
	if err := a.Tell(m); !errors.Is(err, errFakeDead) {
		t.Errorf("Tell to a dead handle = %v", err)
	}
	if a.Name() != "@Greeter" || a.AgentID() != greeterID.AgentID {
		t.Errorf("identity lost: %v", a)
	}

	// A live address without a handle cannot deliver.
	nh := message.NewLiveAddress(greeterID, nil)
	if nh.IsAlive() {
		t.Error("live address without a handle reports alive")
	}
	checkRefused(t, nh, nh.Tell(m))
}

// B57: the identity accessors, and a nil address that never panics.
func TestAddressIdentity(t *testing.T) {
	oid := orchestratorID
	oid.Orchestrate = true
	o := message.NewSnapshotAddress(oid)
	if o.Name() != "@Orchestrator" || o.Role() != "Orchestrator" || o.TeamID() != teamID ||
		o.SquadID() != uuid.Nil || !o.IsOrchestrator() || o.IsUserProxy() ||
		o.ActorType() != "akgentic.core.orchestrator.Orchestrator" {
		t.Errorf("orchestrator identity = %+v", o.Identity())
	}
	u := human()
	if !u.IsUserProxy() || u.IsOrchestrator() {
		t.Errorf("user proxy identity = %+v", u.Identity())
	}
	if g := greeter(); g.SquadID() != squadID {
		t.Errorf("squad = %v", g.SquadID())
	}
	if s := greeter().String(); s != "@Greeter(Greeter, 33333333-3333-4333-8333-333333333333)" {
		t.Errorf("String() = %q", s)
	}

	var n *message.Address
	if n.IsAlive() || n.Kind() != message.Stopped || n.Handle() != nil || n.Snapshot() != nil || n.AsStopped() != nil {
		t.Error("nil address misbehaves")
	}
	if n.Identity() != (message.Identity{}) || n.Name() != "" || n.AgentID() != uuid.Nil || n.String() != "<nil address>" {
		t.Errorf("nil address identity = %+v", n.Identity())
	}
	err := n.Tell("x")
	if !errors.Is(err, message.ErrNotDeliverable) || !strings.Contains(err.Error(), "nil address") {
		t.Errorf("nil Tell = %v", err)
	}
	if _, err := n.Ask(t.Context(), "x"); !errors.Is(err, message.ErrNotDeliverable) {
		t.Errorf("nil Ask = %v", err)
	}
	if got := message.AddressKind(9).String(); got != "AddressKind(9)" {
		t.Errorf("AddressKind(9) = %q", got)
	}
}

// B61: addresses are equal when their agent ids are, whatever their kind.
func TestAddressEqual(t *testing.T) {
	g := greeter()
	renamed := greeterID
	renamed.Name = "@Renamed"
	other := greeterID
	other.AgentID = uuid.MustParse("44444444-4444-4444-8444-444444444444")
	live := message.NewLiveAddress(greeterID, &fakeHandle{alive: true})

	for _, c := range []struct {
		a, b *message.Address
		want bool
	}{
		{g, greeter(), true},
		{g, message.NewSnapshotAddress(renamed), true},
		{g, message.NewStoppedAddress(greeterID), true},
		{g, live, true},
		{live, g, true},
		{g, message.NewSnapshotAddress(other), false},
		{g, nil, false},
		{nil, g, false},
		{nil, nil, true},
	} {
		if got := c.a.Equal(c.b); got != c.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// B58: exactly eight keys, ids as canonical strings, nil ids as "".
func TestAddressSerialize(t *testing.T) {
	live := message.NewLiveAddress(greeterID, &fakeHandle{alive: true})
	for _, a := range []*message.Address{live, greeter(), message.NewStoppedAddress(greeterID)} {
		data, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"__actor_address__": true,
			"__actor_type__":    "examples.greeter.Greeter",
			"agent_id":          "33333333-3333-4333-8333-333333333333",
			"name":              "@Greeter",
			"role":              "Greeter",
			"team_id":           "7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d",
			"squad_id":          "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d",
			"is_user_proxy":     false,
		}
		if len(obj) != 8 {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			t.Fatalf("%v serializes %d keys: %v", a.Kind(), len(obj), keys)
		}
		for k, v := range want {
			if obj[k] != v {
				t.Errorf("%v: %s = %#v, want %#v", a.Kind(), k, obj[k], v)
			}
		}
	}

	d := message.NewSnapshotAddress(message.Identity{Name: "@Anon"}).Serialize()
	if d.AgentID != "" || d.TeamID != "" || d.SquadID != "" || d.ActorType != "" || !d.Tag {
		t.Errorf("nil ids serialize as %+v, want empty strings", d)
	}
	var n *message.Address
	if d := n.Serialize(); !d.Tag || d.AgentID != "" {
		t.Errorf("nil address serializes as %+v", d)
	}
}

// B59: a dict becomes a snapshot without a resolver, or what the resolver
// returns.
func TestAddressDeserialize(t *testing.T) {
	d := greeter().Serialize()

	a, err := message.Deserialize(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Kind() != message.Snapshot || a.Identity() != greeterID {
		t.Errorf("Deserialize without resolver = %+v (%v)", a.Identity(), a.Kind())
	}

	live := message.NewLiveAddress(greeterID, &fakeHandle{alive: true})
	var asked message.Identity
	a, err = message.Deserialize(d, func(id message.Identity) *message.Address {
		asked = id
		return live
	})
	if err != nil || a != live {
		t.Fatalf("Deserialize with resolver = %v, %v", a, err)
	}
	if asked != greeterID {
		t.Errorf("resolver got %+v", asked)
	}

	a, err = message.Deserialize(d, func(message.Identity) *message.Address { return nil })
	if err != nil || a.Kind() != message.Snapshot {
		t.Errorf("Deserialize with an unresolving resolver = %v (%v), %v", a, a.Kind(), err)
	}

	// "" squad and team => uuid.Nil.
	d.SquadID, d.TeamID = "", ""
	a, err = message.Deserialize(d, nil)
	if err != nil || a.SquadID() != uuid.Nil || a.TeamID() != uuid.Nil {
		t.Errorf("empty ids = %v / %v, %v", a.SquadID(), a.TeamID(), err)
	}

	// A malformed id is an error naming the field.
	for _, field := range []string{"agent_id", "team_id", "squad_id"} {
		bad := greeter().Serialize()
		switch field {
		case "agent_id":
			bad.AgentID = "not-a-uuid"
		case "team_id":
			bad.TeamID = "not-a-uuid"
		case "squad_id":
			bad.SquadID = "not-a-uuid"
		}
		if _, err := message.Deserialize(bad, nil); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("malformed %s: err = %v", field, err)
		}
		raw, _ := json.Marshal(bad)
		var a message.Address
		if err := json.Unmarshal(raw, &a); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("UnmarshalJSON with malformed %s: err = %v", field, err)
		}
	}
}

func TestAddressUnmarshalJSON(t *testing.T) {
	// Absent is_user_proxy => false; "" squad => nil; unknown keys ignored.
	in := `{"__actor_address__":true,"__actor_type__":"x.Y","agent_id":"33333333-3333-4333-8333-333333333333",
		"name":"@Greeter","role":"Greeter","team_id":"7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d","squad_id":"","extra":1}`
	var a message.Address
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if a.Kind() != message.Snapshot || a.IsUserProxy() || a.SquadID() != uuid.Nil ||
		a.Name() != "@Greeter" || a.ActorType() != "x.Y" || a.AgentID() != greeterID.AgentID {
		t.Errorf("decoded %+v (%v)", a.Identity(), a.Kind())
	}
	if !a.IsAlive() {
		t.Error("a decoded address reports not alive")
	}
	checkRefused(t, &a, a.Tell("x"))

	in = `{"__actor_address__":true,"agent_id":"33333333-3333-4333-8333-333333333333","is_user_proxy":true}`
	if err := json.Unmarshal([]byte(in), &a); err != nil || !a.IsUserProxy() {
		t.Errorf("is_user_proxy true: %v, %v", a.IsUserProxy(), err)
	}

	// The tag is required.
	for _, bad := range []string{
		`{"agent_id":"33333333-3333-4333-8333-333333333333"}`,
		`{"__actor_address__":false}`,
		`[1]`,
	} {
		var b message.Address
		if err := json.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("%s decoded as an address", bad)
		}
	}

	// null leaves the address alone (a nil *Address field stays nil).
	var holder struct {
		A *message.Address `json:"a"`
	}
	if err := json.Unmarshal([]byte(`{"a":null}`), &holder); err != nil || holder.A != nil {
		t.Errorf("null = %v, %v", holder.A, err)
	}
	b := greeter()
	if err := b.UnmarshalJSON([]byte(" null ")); err != nil || b.Identity() != greeterID {
		t.Errorf("UnmarshalJSON(null) = %v, changed to %+v", err, b.Identity())
	}
}
