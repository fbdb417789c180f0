// Package link joins the library's own packages where one must reach what
// another deliberately does not export: the delivery handle inside a
// message.Address, the sent flag of a message, the actor runtime's closure
// call under package proxy, and the spawn option that gives a team root its
// telemetry sink. Nothing outside the module can import it, so none of this
// is public API.
//
// Each hook is installed once, by the package that owns the thing, in its
// init function, and read by its siblings after that (Go initializes an
// imported package before its importers). The hooks are typed by the
// reader through type parameters, because this package cannot import the
// packages it links (they import it).
package link

import (
	"context"
	"encoding/json"
	"time"
)

// Handle is the delivery side of a live address, implemented by the actor
// runtime. Package message needs only its liveness.
type Handle interface {
	Alive() bool
}

// AddressFuncs are installed by package message: A is message.Address, I
// message.Identity, M message.Message.
type AddressFuncs[I, A, M any] struct {
	// NewLive builds a live address over h.
	NewLive func(id I, h Handle) *A
	// HandleOf returns a live address's handle, nil for any other address.
	HandleOf func(a *A) Handle
	// Claim marks a message as sent and reports whether this call was the
	// first (a runtime stamps a message in place only then).
	Claim func(m M) bool
	// Clone returns a shallow, unsent copy of a message.
	Clone func(m M) M
}

var address any

// InstallAddress is called by package message.
func InstallAddress[I, A, M any](f AddressFuncs[I, A, M]) { address = f }

// Address returns what package message installed.
func Address[I, A, M any]() AddressFuncs[I, A, M] { return address.(AddressFuncs[I, A, M]) }

// MarshalValue and UnmarshalValue are installed by package message: they
// encode a value nested in a message the way the runtime's own records do
// (null for nil, tagged when its type is registered, plain JSON otherwise),
// and decode it back (the raw JSON when untagged).
var (
	MarshalValue   func(v any) (json.RawMessage, error)
	UnmarshalValue func(raw json.RawMessage) (any, error)
)

// RuntimeFuncs are installed by package actor: C is *actor.Context, X
// actor.Actor, P *message.Address, M message.Message, O actor.SpawnOption,
// S the sink type.
type RuntimeFuncs[C, X, P, M, O, S any] struct {
	// Call runs fn on the goroutine of the actor at addr and waits for it.
	Call func(ctx context.Context, addr P, fn func(c C, a X) (any, error)) (any, error)
	// Cast runs fn later on the actor's goroutine.
	Cast func(addr P, fn func(c C, a X) error) error
	// WithSink makes the spawned actor a team root whose members report
	// their telemetry to s; grace bounds its stop when the request has no
	// deadline.
	WithSink func(s S, grace time.Duration) O
	// Restoring marks the spawned actor as recreated by a restore.
	Restoring func() O
	// SendFor sends msg as Context.Send does, but as if cause were the
	// message being handled (a user proxy answering a person's input).
	SendFor func(c C, cause M, to P, msg any) error
	// Resolve returns the live address, in c's system, of the actor a names
	// (a itself when live), nil when it is not running.
	Resolve func(c C, a P) P
	// NewKind returns a new actor of the kind registered under name.
	NewKind func(name string) (X, error)
	// DecodeConfig decodes a recorded JSON config into the config type the
	// actor declares.
	DecodeConfig func(a X, data []byte) (any, error)
	// Stop requests the stop of the actor at addr with cause, without
	// waiting.
	Stop func(addr P, cause error) error
}

var runtime any

// InstallRuntime is called by package actor.
func InstallRuntime[C, X, P, M, O, S any](f RuntimeFuncs[C, X, P, M, O, S]) { runtime = f }

// Runtime returns what package actor installed.
func Runtime[C, X, P, M, O, S any]() RuntimeFuncs[C, X, P, M, O, S] {
	return runtime.(RuntimeFuncs[C, X, P, M, O, S])
}

// TeamNames are installed by package orchestrator (T is *orchestrator.Team):
// member names claimed before the member exists, so that two agents hiring
// at once cannot pick one name.
type TeamNames[T any] struct {
	// Reserve claims name; false when a member or a reservation has it.
	Reserve func(t T, ctx context.Context, name string) (bool, error)
	// Release gives back a name reserved for a member not created.
	Release func(t T, ctx context.Context, name string) error
	// Version returns the team's roster-and-catalog version: it changes
	// when a member's Start or Stop record is appended to the ledger and
	// when cards are registered, so an agent may keep what it built from
	// the roster and the roles while the version stays the same. false when
	// the team is not running in this process.
	Version func(t T) (uint64, bool)
}

var teamNames any

// InstallTeamNames is called by package orchestrator.
func InstallTeamNames[T any](f TeamNames[T]) { teamNames = f }

// Names returns what package orchestrator installed.
func Names[T any]() TeamNames[T] { return teamNames.(TeamNames[T]) }
