// Package orchestrator is the root of an agent team: it records the team's
// telemetry, fans it out to subscribers, keeps the roster, the latest state
// of every member, the team metadata and the AgentCard catalog, runs the
// team's stop, and restores a team from its log (akgentic-core's
// Orchestrator, AgentCard and UserProxy).
//
// # A team
//
//	sys := actor.NewSystem(actor.SystemConfig{})
//	team, err := orchestrator.New(sys)
//	worker, err := team.Spawn(ctx, &Worker{}, &actor.Config{Name: "worker", Role: "Worker"})
//	members, err := team.Members(ctx)           // the roster
//	log, err := team.Messages(ctx, orchestrator.Filter{Type: "SentMessage"})
//	err = team.Stop(ctx)                        // announces, stops the members, waits
//
// Every actor spawned in the team (by Team.Spawn, or by a member with
// actor.Context.Spawn) reports to the orchestrator: StartMessage,
// SentMessage, ReceivedMessage, ProcessedMessage, ErrorMessage, events and
// state changes. A member reaches its team with Of(c.Orchestrator()).
//
// # The ledger
//
// The log is a ledger members append to directly (an 80-byte record copy
// under a short lock; nothing allocated); the orchestrator's goroutine
// consumes the records in order. Its order keeps cause before
// effect (a Sent before its Received), each actor's own order, and the
// barrier rule: what a member emitted before answering an ask is visible to
// any team query made after the answer. Nothing is dropped for a lossless
// subscriber; a LossySubscriber that falls behind is told what it missed.
// The memory is bounded: the ledger keeps a window
// of the most recent records (4,096 by default, WithRetention), the
// roster, states, metadata, cards and events live in indexes, and older
// history is read from the team's Archive (a durable event log) when one
// is attached.
//
// # Subscribers
//
// A Subscriber sees every logged message, in order, as its own copy with
// snapshot addresses; the optional RestoringSubscriber,
// StopRequestSubscriber and StopSubscriber hooks follow the team's
// lifecycle. Each subscriber has a bounded queue and a goroutine of its
// own, owned by the team: the orchestrator never runs a hook. A lossless
// subscriber (the default: durable sinks) makes the members wait when its
// queue is full; a LossySubscriber (viewers, exporters) is dropped to
// instead and told, in order, what it missed (OnMissed). A hook that
// panics is logged and skipped; the others lose nothing.
//
// # Stop
//
// Team.Stop publishes a TeamStoppingEvent, calls OnStopRequest, tells the
// members to stop (tools, marked with actor.Config.Tool, after the others)
// and returns once they have all ended, or once the stop grace
// (WithStopGrace) has expired without them: the force-stop backstop logs
// "actor: stop grace expired; forcing teardown". The orchestrator never
// blocks on a member: members can still query the team while it stops.
// Afterwards queries answer from the team's final view and changes fail
// with actor.ErrActorDead. System.Shutdown runs the same stop; System.Stop
// (or a StopRecursively) on the orchestrator stops the members the same way
// but announces nothing.
//
// # Durable log and restore
//
// Package eventlog writes a team's log to a JSON-lines file as a
// subscriber; Restore recreates a team from it, after a crash as well as a
// clean stop:
//
//	w, _ := eventlog.Create(path, teamID, eventlog.Options{Sync: eventlog.SyncBatch})
//	team, _ := orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(w))
//	...
//	log, _ := eventlog.ReadFile(path)
//	w, _ = eventlog.Append(path, eventlog.Options{})
//	team, err := orchestrator.Restore(ctx, sys, log.Messages, orchestrator.WithSubscribers(w))
//
// Restore needs every actor kind registered (actor.RegisterKind) so it can
// recreate members with their ids and configs; RestoredState gives a member
// its last published state.
package orchestrator
