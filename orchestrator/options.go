package orchestrator

import (
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
)

// Option configures a team created by New or Restore.
type Option func(*options)

type options struct {
	teamID    uuid.UUID
	agentID   uuid.UUID // the orchestrator's (Restore: its recorded id)
	subs      []Subscriber
	retention int
	retained  bool // WithRetention was given
	grace     time.Duration
	spawn     []actor.SpawnOption
	prepare   []func(actor.Actor) // Restore: called on each recreated actor, in order
}

// WithStopGrace sets how long the team's stop waits for its members before
// it ends without them; 30 s by default. System.Shutdown
// uses its own context's deadline instead.
func WithStopGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithTeamID gives the team a chosen id instead of a fresh one.
func WithTeamID(id uuid.UUID) Option { return func(o *options) { o.teamID = id } }

// WithSubscribers attaches subscribers from the start, so that they see the
// whole log, including a restore's replay.
func WithSubscribers(s ...Subscriber) Option {
	return func(o *options) { o.subs = append(o.subs, s...) }
}

// WithRetention sets the team's in-memory window: about n of the most
// recent records are kept in memory (n > 0; 4,096 by default, 320 KiB
// of records plus the messages they hold); older ones are released once
// the orchestrator has consumed them (fanned them out to the subscribers,
// such as a durable event log). Messages reads history older than the
// window from the team's Archive (ErrOutsideWindow without one). The
// roster, states, metadata, cards and events are indexes, not part of the
// window: they are never dropped. Use math.MaxInt to keep everything.
func WithRetention(n int) Option {
	return func(o *options) { o.retention, o.retained = n, true }
}

// WithUser passes a user id and email to the orchestrator and, by
// inheritance, to every member (actor.WithUser).
func WithUser(id, email string) Option {
	return func(o *options) { o.spawn = append(o.spawn, actor.WithUser(id, email)) }
}

// WithPrepare adds a function Restore calls with every actor it
// recreates, before spawning it: it hands the actor what its recorded
// config does not carry because it is not configuration (an agent's model
// client and clocks: agent.WithEnv; a person's delivery hook:
// agent.WithHumanDelivery). Several WithPrepare options all apply, in the
// order given. New ignores them.
func WithPrepare(f func(a actor.Actor)) Option {
	return func(o *options) {
		if f != nil {
			o.prepare = append(o.prepare, f)
		}
	}
}
