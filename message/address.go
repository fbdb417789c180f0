package message

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/internal/link"
)

// addressKind says what an Address can do.
type addressKind uint8

const (
	// live addresses belong to a running runtime and deliver to its actor.
	live addressKind = iota
	// snapshot addresses were deserialized or built from an identity; they
	// report alive but cannot deliver (the Python ActorAddressProxy).
	snapshot
	// stopped addresses record an actor known to be stopped; they report
	// not alive and cannot deliver (the Python ActorAddressStopped).
	stopped
)

// Identity is everything an address says about its actor. It is captured
// once, when the address is built, and never re-read from the actor.
type Identity struct {
	AgentID     uuid.UUID // unique agent identity
	Name        string    // e.g. "@Summarizer"
	Role        string    // e.g. "SummaryAgent"
	TeamID      uuid.UUID // team membership; always set for live actors
	SquadID     uuid.UUID // optional sub-grouping; uuid.Nil when none
	UserProxy   bool      // the actor is a user proxy (by kind, not by name)
	Type        string    // the actor's concrete type, "" if unknown
	Orchestrate bool      // the actor is a team root (orchestrator)
	Tool        bool      // the actor is a tool of its team, stopped after the others
}

// Address is a reference to an actor, like a mailbox address: a snapshot of
// the actor's identity plus, for a live address, a weak handle used only to
// deliver. Holding an address never keeps a stopped actor's memory alive, and
// every identity accessor keeps working after the actor stopped or was
// collected.
//
// Compare addresses with Equal (by agent id); two *Address values for the
// same actor need not be the same pointer.
type Address struct {
	id   Identity
	kind addressKind
	h    link.Handle
}

// NewSnapshotAddress builds a snapshot address: alive, never deliverable.
// Tests use it as a fake address.
func NewSnapshotAddress(id Identity) *Address {
	return &Address{id: id, kind: snapshot}
}

// ident returns the identity without copying it; the zero identity for a
// nil address. The accessors below read one field through it, so that the
// hot paths that ask an address for its id or team copy 16 bytes, not the
// whole identity.
func (a *Address) ident() *Identity {
	if a == nil {
		return &zeroIdentity
	}
	return &a.id
}

var zeroIdentity Identity

// Identity returns the identity snapshot.
func (a *Address) Identity() Identity {
	if a == nil {
		return Identity{}
	}
	return a.id
}

// AgentID returns the actor's unique id.
func (a *Address) AgentID() uuid.UUID { return a.ident().AgentID }

// Name returns the actor's name.
func (a *Address) Name() string { return a.ident().Name }

// Role returns the actor's role.
func (a *Address) Role() string { return a.ident().Role }

// TeamID returns the actor's team id.
func (a *Address) TeamID() uuid.UUID { return a.ident().TeamID }

// SquadID returns the actor's squad id, uuid.Nil when it has none.
func (a *Address) SquadID() uuid.UUID { return a.ident().SquadID }

// IsUserProxy reports whether the actor is a user proxy: true for the
// UserProxy actor and anything built on it, whatever its name or role.
func (a *Address) IsUserProxy() bool { return a.ident().UserProxy }

// IsOrchestrator reports whether the actor is a team root.
func (a *Address) IsOrchestrator() bool { return a.ident().Orchestrate }

// IsTool reports whether the actor is a tool of its team (actor.Config's
// Tool): stopped after the team's other members and restored before them.
func (a *Address) IsTool() bool { return a.ident().Tool }

// ActorType returns the actor's concrete type name, "" if unknown.
func (a *Address) ActorType() string { return a.ident().Type }

// IsAlive reports whether the actor can still receive. For a live address it
// is false once the actor stopped or was collected; a snapshot reports true
// and a stopped record false. It never panics and is safe to poll.
func (a *Address) IsAlive() bool {
	if a == nil {
		return false
	}
	switch a.kind {
	case live:
		return a.h != nil && a.h.Alive()
	case snapshot:
		return true
	}
	return false
}

// Equal reports whether a and b name the same actor (same agent id).
func (a *Address) Equal(b *Address) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.id.AgentID == b.id.AgentID
}

// String returns "name(role, agent id)" for logs and errors.
func (a *Address) String() string {
	if a == nil {
		return "<nil address>"
	}
	return fmt.Sprintf("%s(%s, %s)", a.id.Name, a.id.Role, a.id.AgentID)
}

// Snapshot returns a snapshot address with the same identity: a value safe to
// hand to subscribers and persist. A snapshot or stopped address is returned
// unchanged.
func (a *Address) Snapshot() *Address {
	if a == nil || a.kind != live {
		return a
	}
	return &Address{id: a.id, kind: snapshot}
}

// AsStopped returns a stopped record with the same identity.
func (a *Address) AsStopped() *Address {
	if a == nil {
		return nil
	}
	return &Address{id: a.id, kind: stopped}
}

// addressDict is the serialized form of an address: exactly the eight keys of
// akgentic-core's ActorAddressDict.
type addressDict struct {
	Tag         bool   `json:"__actor_address__"`
	ActorType   string `json:"__actor_type__"`
	AgentID     string `json:"agent_id"`
	Name        string `json:"name"`
	Role        string `json:"role"`
	TeamID      string `json:"team_id"`
	SquadID     string `json:"squad_id"`
	IsUserProxy bool   `json:"is_user_proxy"`
}

func uuidString(u uuid.UUID) string {
	if u == uuid.Nil {
		return ""
	}
	return u.String()
}

// serialize returns the address as an addressDict; nil ids are "".
func (a *Address) serialize() addressDict {
	id := a.Identity()
	return addressDict{
		Tag:         true,
		ActorType:   id.Type,
		AgentID:     uuidString(id.AgentID),
		Name:        id.Name,
		Role:        id.Role,
		TeamID:      uuidString(id.TeamID),
		SquadID:     uuidString(id.SquadID),
		IsUserProxy: id.UserProxy,
	}
}

// identity decodes the dict's identity. An absent or empty id is uuid.Nil; a
// malformed id is an error naming the field.
func (d addressDict) identity() (Identity, error) {
	var id Identity
	var err error
	if id.AgentID, err = parseOptionalUUID("agent_id", d.AgentID); err != nil {
		return id, err
	}
	if id.TeamID, err = parseOptionalUUID("team_id", d.TeamID); err != nil {
		return id, err
	}
	if id.SquadID, err = parseOptionalUUID("squad_id", d.SquadID); err != nil {
		return id, err
	}
	id.Name, id.Role, id.UserProxy, id.Type = d.Name, d.Role, d.IsUserProxy, d.ActorType
	return id, nil
}

func parseOptionalUUID(field, s string) (uuid.UUID, error) {
	if s == "" {
		return uuid.Nil, nil
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("address field %s: %w", field, err)
	}
	return u, nil
}

// MarshalJSON encodes the address as the eight keys of akgentic-core's
// ActorAddressDict: "__actor_address__": true, "__actor_type__",
// "agent_id", "name", "role", "team_id", "squad_id" (nil ids as "") and
// "is_user_proxy". UnmarshalJSON turns that form back into a snapshot
// address.
func (a *Address) MarshalJSON() ([]byte, error) {
	if a == nil {
		a = &Address{}
	}
	return appendAddress(make([]byte, 0, 256), a), nil
}

// UnmarshalJSON decodes an AddressDict into a snapshot address. The object
// must carry "__actor_address__": true.
func (a *Address) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	var d addressDict
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("decode address: %w", err)
	}
	if !d.Tag {
		return fmt.Errorf(`decode address: missing "__actor_address__": true`)
	}
	id, err := d.identity()
	if err != nil {
		return fmt.Errorf("decode address: %w", err)
	}
	*a = Address{id: id, kind: snapshot}
	return nil
}
