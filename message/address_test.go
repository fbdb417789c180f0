package message_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
)

// fakeHandle is a live address's delivery side as package message sees
// it: liveness only (delivery belongs to the runtime).
type fakeHandle struct{ alive bool }

func (h *fakeHandle) Alive() bool { return h.alive }

// newSystem returns a running actor system, shut down when the test ends;
// its logs go to the test's log.
func newSystem(t *testing.T) *actor.System {
	t.Helper()
	sys := actor.NewSystem(actor.SystemConfig{Logger: actortest.NewLogCapture(t).Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys) })
	return sys
}

// A snapshot reports alive and cannot deliver: the runtime (System.Tell and
// Ask) refuses it with ErrNotDeliverable naming the address.
func TestSnapshotAddress(t *testing.T) {
	sys := newSystem(t)
	a := greeter()
	if k := message.KindOf(a); k != "snapshot" {
		t.Fatalf("kind = %v", k)
	}
	if !a.IsAlive() {
		t.Error("snapshot reports not alive")
	}
	if message.HandleOf(a) != nil {
		t.Error("snapshot has a handle")
	}
	checkRefused(t, a, sys.Tell(a, message.NewUserMessage("x")))
	_, err := sys.Ask(t.Context(), a, message.NewUserMessage("x"))
	checkRefused(t, a, err)
	if a.Snapshot() != a {
		t.Error("Snapshot of a snapshot is not itself")
	}
}

// A stopped record reports not alive and cannot deliver.
func TestStoppedAddress(t *testing.T) {
	sys := newSystem(t)
	a := greeter().AsStopped()
	if k := message.KindOf(a); k != "stopped" {
		t.Fatalf("kind = %v", k)
	}
	if a.IsAlive() {
		t.Error("stopped address reports alive")
	}
	checkRefused(t, a, sys.Tell(a, message.NewUserMessage("x")))
	_, err := sys.Ask(t.Context(), a, "x")
	checkRefused(t, a, err)
	if a.Snapshot() != a {
		t.Error("Snapshot of a stopped address is not itself")
	}
	if a.AsStopped().Identity() != greeterID || message.KindOf(a.AsStopped()) != "stopped" {
		t.Error("AsStopped of a stopped address changed it")
	}
	if a.Identity() != greeterID {
		t.Errorf("identity = %+v", a.Identity())
	}
}

func checkRefused(t *testing.T, a *message.Address, err error) {
	t.Helper()
	if !errors.Is(err, actor.ErrNotDeliverable) {
		t.Fatalf("err = %v, want ErrNotDeliverable", err)
	}
	if !strings.Contains(err.Error(), a.Name()) || !strings.Contains(err.Error(), a.AgentID().String()) {
		t.Errorf("error %q does not name the address %v", err, a)
	}
}

// A live address asks its handle whether the actor is alive and
// converts to the snapshot and stopped kinds with the same identity.
func TestLiveAddress(t *testing.T) {
	h := &fakeHandle{alive: true}
	a := message.NewLive(greeterID, h)
	if k := message.KindOf(a); k != "live" || message.HandleOf(a) != h {
		t.Fatalf("kind %v handle %v", k, message.HandleOf(a))
	}
	if !a.IsAlive() {
		t.Error("live address with a live handle reports not alive")
	}

	s := a.Snapshot()
	if message.KindOf(s) != "snapshot" || s.Identity() != greeterID || !s.Equal(a) || message.HandleOf(s) != nil {
		t.Errorf("Snapshot() = %v kind %v", s, message.KindOf(s))
	}
	st := a.AsStopped()
	if message.KindOf(st) != "stopped" || st.Identity() != greeterID || st.IsAlive() || message.HandleOf(st) != nil {
		t.Errorf("AsStopped() = %v kind %v", st, message.KindOf(st))
	}

	// The handle says when the actor is gone. The identity still reads.
	h.alive = false
	if a.IsAlive() {
		t.Error("live address with a dead handle reports alive")
	}
	if a.Name() != "@Greeter" || a.AgentID() != greeterID.AgentID {
		t.Errorf("identity lost: %v", a)
	}

	// A live address without a handle is not alive, and the runtime
	// cannot deliver through it.
	nh := message.NewLive(greeterID, nil)
	if nh.IsAlive() {
		t.Error("live address without a handle reports alive")
	}
	checkRefused(t, nh, newSystem(t).Tell(nh, message.NewUserMessage("x")))
}

// A live address from the runtime delivers (through System.Tell and Ask);
// once the actor stopped it reports not alive, delivery fails with
// ErrActorDead, and its identity still reads.
func TestLiveAddressDelivers(t *testing.T) {
	sys := newSystem(t)
	probe := actortest.NewProbe()
	probe.Reply = func(_ *actor.Context, msg any) (any, error) { return "reply to " + message.TypeName(msg), nil }
	a, err := sys.Spawn(probe, &actor.Config{Name: "@Greeter", Role: "Greeter"})
	if err != nil {
		t.Fatal(err)
	}
	if message.KindOf(a) != "live" || !a.IsAlive() {
		t.Fatalf("spawned address is %v, alive %v", message.KindOf(a), a.IsAlive())
	}
	m := message.NewUserMessage("x")
	if err := sys.Tell(a, m); err != nil {
		t.Fatal(err)
	}
	if got, _ := actortest.Expect[*message.UserMessage](t, probe); got != m {
		t.Errorf("delivered %p, want the message told %p", got, m)
	}
	reply, err := sys.Ask(t.Context(), a, message.NewUserMessage("y"))
	if err != nil || reply != "reply to UserMessage" {
		t.Fatalf("Ask = %v, %v", reply, err)
	}
	// Address.Tell stamped nothing; System.Tell stamps the system endpoint
	// as sender and the recipient's team, and no parent.
	if !m.Sender.Equal(sys.Address()) || m.TeamID.UUID != a.TeamID() || !m.TeamID.Valid || m.ParentID.Valid {
		t.Errorf("System.Tell stamped %+v", m.Base)
	}

	if err := sys.Stop(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if a.IsAlive() {
		t.Error("address of a stopped actor reports alive")
	}
	if err := sys.Tell(a, message.NewUserMessage("z")); !errors.Is(err, actor.ErrActorDead) {
		t.Errorf("Tell to a stopped actor = %v, want ErrActorDead", err)
	}
	if _, err := sys.Ask(t.Context(), a, message.NewUserMessage("z")); !errors.Is(err, actor.ErrActorDead) {
		t.Errorf("Ask to a stopped actor = %v, want ErrActorDead", err)
	}
	if a.Name() != "@Greeter" || a.Role() != "Greeter" {
		t.Errorf("identity lost: %v", a)
	}
}

// The identity accessors, and a nil address that never panics.
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

	tid := greeterID
	tid.Tool = true
	if tool := message.NewSnapshotAddress(tid); !tool.IsTool() || greeter().IsTool() {
		t.Errorf("IsTool = %v for a tool, %v for an agent", tool.IsTool(), greeter().IsTool())
	}

	var n *message.Address
	if n.IsAlive() || message.KindOf(n) != "stopped" || message.HandleOf(n) != nil || n.Snapshot() != nil || n.AsStopped() != nil {
		t.Error("nil address misbehaves")
	}
	if n.Identity() != (message.Identity{}) || n.Name() != "" || n.AgentID() != uuid.Nil || n.String() != "<nil address>" || n.IsTool() {
		t.Errorf("nil address identity = %+v", n.Identity())
	}
	// Sending to a nil address is an error naming it (it was
	// Address.Tell's ErrNotDeliverable, delivery is the runtime's now).
	// AddressKind and its String are gone: KindOf is a test hook.
	sys := newSystem(t)
	if err := sys.Tell(n, "x"); err == nil || !strings.Contains(err.Error(), "nil address") {
		t.Errorf("nil Tell = %v", err)
	}
	if _, err := sys.Ask(t.Context(), n, "x"); err == nil || !strings.Contains(err.Error(), "nil address") {
		t.Errorf("nil Ask = %v", err)
	}
}

// Addresses are equal when their agent ids are, whatever their kind.
func TestAddressEqual(t *testing.T) {
	g := greeter()
	renamed := greeterID
	renamed.Name = "@Renamed"
	other := greeterID
	other.AgentID = uuid.MustParse("44444444-4444-4444-8444-444444444444")
	live := message.NewLive(greeterID, &fakeHandle{alive: true})

	for _, c := range []struct {
		a, b *message.Address
		want bool
	}{
		{g, greeter(), true},
		{g, message.NewSnapshotAddress(renamed), true},
		{g, greeter().AsStopped(), true},
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

// The serialized form: exactly eight keys, ids as canonical strings, nil ids as "".
func TestAddressSerialize(t *testing.T) {
	live := message.NewLive(greeterID, &fakeHandle{alive: true})
	for _, a := range []*message.Address{live, greeter(), greeter().AsStopped()} {
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
			t.Fatalf("%v serializes %d keys: %v", message.KindOf(a), len(obj), keys)
		}
		for k, v := range want {
			if obj[k] != v {
				t.Errorf("%v: %s = %#v, want %#v", message.KindOf(a), k, obj[k], v)
			}
		}
	}

	d := message.Serialize(message.NewSnapshotAddress(message.Identity{Name: "@Anon"}))
	if d.AgentID != "" || d.TeamID != "" || d.SquadID != "" || d.ActorType != "" || !d.Tag {
		t.Errorf("nil ids serialize as %+v, want empty strings", d)
	}
	var n *message.Address
	if d := message.Serialize(n); !d.Tag || d.AgentID != "" {
		t.Errorf("nil address serializes as %+v", d)
	}
}

// A serialized address decodes to a snapshot with the same identity.
// message.Deserialize and its resolver are gone (message/ is data only):
// UnmarshalJSON is the one decoding path, and resolving a snapshot to the
// running actor is the runtime's (UserProxy.Answer does it; see the
// orchestrator's TestUserProxyLegs, which answers a subscriber's snapshot
// copy of the question).
func TestAddressDeserialize(t *testing.T) {
	decode := func(d any) (*message.Address, error) {
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var a message.Address
		return &a, json.Unmarshal(raw, &a)
	}
	d := message.Serialize(greeter())
	a, err := decode(d)
	if err != nil {
		t.Fatal(err)
	}
	if message.KindOf(a) != "snapshot" || a.Identity() != greeterID {
		t.Errorf("decoded = %+v (%v)", a.Identity(), message.KindOf(a))
	}

	// "" squad and team => uuid.Nil.
	d.SquadID, d.TeamID = "", ""
	a, err = decode(d)
	if err != nil || a.SquadID() != uuid.Nil || a.TeamID() != uuid.Nil {
		t.Errorf("empty ids = %v / %v, %v", a.SquadID(), a.TeamID(), err)
	}

	// A malformed id is an error naming the field.
	for _, field := range []string{"agent_id", "team_id", "squad_id"} {
		bad := message.Serialize(greeter())
		switch field {
		case "agent_id":
			bad.AgentID = "not-a-uuid"
		case "team_id":
			bad.TeamID = "not-a-uuid"
		case "squad_id":
			bad.SquadID = "not-a-uuid"
		}
		if _, err := decode(bad); err == nil || !strings.Contains(err.Error(), field) {
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
	if message.KindOf(&a) != "snapshot" || a.IsUserProxy() || a.SquadID() != uuid.Nil ||
		a.Name() != "@Greeter" || a.ActorType() != "x.Y" || a.AgentID() != greeterID.AgentID {
		t.Errorf("decoded %+v (%v)", a.Identity(), message.KindOf(&a))
	}
	if !a.IsAlive() {
		t.Error("a decoded address reports not alive")
	}
	checkRefused(t, &a, newSystem(t).Tell(&a, "x"))

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
