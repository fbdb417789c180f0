package message

import (
	"sort"

	"github.com/akgentic/akgentic-go/internal/link"
)

// Test hooks for the package's external tests: what the runtime reaches
// through internal/link, and the registry's internals.
var (
	Claim        = claim
	Clone        = clone
	RegisterType = registerType
	NewOf        = newOf
)

// FieldError is the decode error naming the failing JSON key (errors
// returned by Unmarshal wrap it).
type FieldError = fieldError

// Serialize returns the address's eight-key dict, the form
// MarshalJSON writes.
func Serialize(a *Address) addressDict { return a.serialize() }

// Builtin is the names message/ registers itself, sorted: the registry as
// this file's init finds it, after codec.go's init and before any package
// importing message (orchestrator, for the tests that run a team) adds its
// own.
var Builtin []string

func init() { Builtin = Registered() }

// Registered returns the registered type names, sorted.
func Registered() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.byName))
	for n := range registry.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewLive builds a live address over h, as the actor runtime does.
func NewLive(id Identity, h link.Handle) *Address {
	return link.Address[Identity, Address, Message]().NewLive(id, h)
}

// HandleOf returns a live address's handle, nil for any other address.
func HandleOf(a *Address) link.Handle {
	return link.Address[Identity, Address, Message]().HandleOf(a)
}

// KindOf names an address's kind: "live", "snapshot" or "stopped";
// a nil address is a stopped one.
func KindOf(a *Address) string {
	if a == nil {
		return "stopped"
	}
	switch a.kind {
	case live:
		return "live"
	case snapshot:
		return "snapshot"
	case stopped:
		return "stopped"
	}
	return "unknown"
}

// ReferenceMarshal is the encoding/json path Marshal replaced: the tests
// compare the two.
var ReferenceMarshal = referenceMarshal

// SlowUnmarshal is Unmarshal through the encoding/json path alone, every
// level of nesting included: the reference the fast decoder is compared
// with. Not safe to call concurrently with Unmarshal.
func SlowUnmarshal(data []byte) (any, error) {
	slowDecode.Store(true)
	defer slowDecode.Store(false)
	return Unmarshal(data)
}
