package orchestrator

import (
	"context"
	"time"
	"unsafe"

	"github.com/akgentic/akgentic-go/message"
)

// Test hooks for the package's external tests.

// Replay replays recorded messages into a running team's log as Restore
// does: SetRestoring(true), every message in order (a
// TeamStoppingEvent skipped), SetRestoring(false).
func Replay(ctx context.Context, t *Team, log []message.Message) error {
	return t.live(ctx, func(o *orchestrator) { o.replay(log) })
}

// SetRestoring fans SetRestoring(on) out to the team's subscribers, as a
// restore does around its replay.
func SetRestoring(ctx context.Context, t *Team, on bool) error {
	return t.live(ctx, func(o *orchestrator) { o.setRestoring(on) })
}

// IsLive reports whether a is a live address (the runtime's), not a
// snapshot or a stopped record.
func IsLive(a *message.Address) bool { return isLive(a) }

// LedgerEntrySize is the size of one ledger entry.
const LedgerEntrySize = unsafe.Sizeof(entry{})

// HasSkill reports whether c lists skill s (nil-safe).
func HasSkill(c *AgentCard, s string) bool { return c.hasSkill(s) }

// ReserveName and ReleaseName reach the team's name reservations (used by
// package teamtool through internal/link).
func ReserveName(ctx context.Context, t *Team, name string) (bool, error) {
	return t.reserveName(ctx, name)
}

// ReleaseName gives back a reserved name.
func ReleaseName(ctx context.Context, t *Team, name string) error { return t.releaseName(ctx, name) }

// Retained returns the number of records the team's ledger keeps in memory
// and the number it has released (the window, WithRetention).
func Retained(ctx context.Context, t *Team) (kept, released int64, err error) {
	err = t.live(ctx, func(o *orchestrator) {
		o.drain()
		kept, released = o.led.retained(), o.led.base
	})
	return kept, released, err
}

// DefaultRetention is the default in-memory window.
const DefaultRetention = defaultRetention

// Backlog reads, without asking the orchestrator (which may be busy), the
// number of records appended but not yet consumed and the number of
// members waiting for room.
func Backlog(t *Team) (pending int64, waiting bool) {
	l := &t.o.led
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n - l.done, l.room != nil
}

// SetStallTimeout changes how long members wait for a stuck consumer, and
// returns a function that restores it.
func SetStallTimeout(d time.Duration) (restore func()) {
	old := stallTimeout
	stallTimeout = d
	return func() { stallTimeout = old }
}

// SetReportEvery changes how often at most the team reports its members'
// waits, and returns a function that restores it.
func SetReportEvery(d time.Duration) (restore func()) {
	old := reportEvery
	reportEvery = d
	return func() { reportEvery = old }
}

// MaxBacklog is the number of unconsumed records past which members wait.
const MaxBacklog = maxBacklog

// Version reads the team's roster-and-catalog version as package teamtool
// does (internal/link).
func Version(t *Team) (uint64, bool) { return t.version() }
