package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// heartbeat tends the worker's teams (tend) every beat, a third of the
// lease, until ctx ends (Close began). It stores nothing in the leases
// bucket: a team is held while its worker holds the team's shard, whose
// lease the presence loop renews (presenceBeat). Its presence, shards and
// takeovers have loops of their own: a round of thousands of teams never
// delays them.
func (w *Worker) heartbeat(ctx context.Context) {
	w.everyBeat(ctx, func() bool { w.tend(ctx); return false })
}

// presenceBeat renews the worker's presence and its shards' leases
// (renewPresence) every beat until ctx ends (Close began). It runs apart
// from the heartbeat, whose round grows with the teams running: a worker
// busy tending thousands of teams is never taken for dead, nor loses its
// shards, for it.
func (w *Worker) presenceBeat(ctx context.Context) {
	w.everyBeat(ctx, w.renewPresence)
}

// everyBeat runs round at once, then a beat after each round, or a
// quarter of a beat after a round that reports a renewal failed
// (JetStream did not answer: a leader election of the bucket, say), so
// that a lease is renewed as soon as the bucket answers again; until ctx
// ends.
func (w *Worker) everyBeat(ctx context.Context, round func() (failed bool)) {
	timer := time.NewTimer(w.beat)
	defer timer.Stop()
	for {
		next := w.beat
		if round() {
			next = w.beat / retryBeats
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// renewPresence renews the presence, then the shards' leases (see
// renewShards); it reports whether one failed, to be tried again soon.
func (w *Worker) renewPresence() (failed bool) {
	ctx, cancel := context.WithTimeout(context.Background(), w.beat)
	defer cancel()
	if w.cfg.presented != nil {
		defer w.cfg.presented()
	}
	if err := w.present(ctx); err != nil {
		w.logger.Warn("cluster: presence renewal failed", "error", err)
		failed = true
	}
	return w.renewShards(ctx) || failed
}

// retryBeats is how many times a beat a worker tries again while its
// renewals fail.
const retryBeats = 4

// tend looks at every team this worker runs, a few at a time (tendTeam).
// Once quit ends (Close began) no more look begins; those under way end on
// their own deadlines, not cancelled.
func (w *Worker) tend(quit context.Context) {
	w.mu.Lock()
	teams := maps.Clone(w.teams)
	w.mu.Unlock()
	// Several at a time, each with its own deadline: telling JetStream
	// that the inputs of hundreds of teams are under way, one after
	// another, could take longer than a beat.
	sem := make(chan struct{}, tendParallel)
	fan := newGroup(context.Background())
	defer fan.Stop(nil)
	for id, o := range teams {
		select {
		case <-quit.Done(): // Close began: it settles the teams; the looks under way end
			_ = fan.Wait(context.Background())
			return
		case sem <- struct{}{}:
		}
		fan.Go("tend", func(context.Context) {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), w.beat)
			defer cancel()
			w.tendTeam(ctx, id, o)
		})
	}
	_ = fan.Wait(context.Background())
}

// tendParallel bounds the teams of one worker tended at a time, and its
// passivations under way.
const tendParallel = 16

// tendTeam looks at one team this worker runs (see tend): one that stopped
// on its own is settled (ended); one whose ledger broke, or whose shard's
// lease ended unrenewed, is stopped; JetStream is told its inputs under
// way are still being worked on; and its inbox is opened again when that
// failed. Its lease is not stored again: its liveness is its shard's
// (a client's Stop, or another worker's takeover, is seen by the bucket's
// watcher: noticed).
func (w *Worker) tendTeam(ctx context.Context, id uuid.UUID, o *owned) {
	if !o.leasing.TryLock() {
		// Being passivated: its passivation marks the lease passive, or
		// the team goes on and the next round looks at it. Waiting would
		// hold the round, every other team with it, for as long as the
		// team takes to stop.
		return
	}
	defer o.leasing.Unlock()
	w.mu.Lock()
	gone := w.teams[id] != o // passivated (or settled) since the round began
	w.mu.Unlock()
	if gone {
		return
	}
	select {
	case <-o.team.Done():
		if w.beats.ctx.Err() == nil { // once Close began, it settles the teams it stops
			w.forget(id)
			w.ended(ctx, id, o)
		}
		return
	default:
	}
	if _, broken := o.ledger.state(); broken != nil {
		// Its records go nowhere: the team is stopped and its lease left
		// to end (its copy has stopped by then), so that it resumes, here
		// or elsewhere, from what the stream holds; the inputs of the
		// turns lost run again.
		w.lose(id, o, "its ledger stopped storing records; it resumes from the stream once its lease ends", broken)
		return
	}
	if w.heldShardOf(o.template, id) == nil {
		// Its shard's lease ended unrenewed: the team stops, once the
		// one lease stored when it was taken ended too (no other worker
		// takes it before).
		if !time.Now().Before(w.untilOf(o)) {
			w.lose(id, o, "its shard's lease ended unrenewed", errShardNotHeld)
		}
		return
	}
	w.mu.Lock()
	ib, retry := o.inbox, o.noInbox // set once the team's input is consumed
	w.mu.Unlock()
	if ib != nil {
		ib.progress()
	}
	if retry != nil && w.team(id) != nil {
		w.retryInbox(id, o, retry)
	}
}

// untilOf is the end of the lease stored when o was taken.
func (w *Worker) untilOf(o *owned) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return o.until
}

// noticed stops a team this worker runs when the bucket's watcher sees
// its lease change to one this worker did not store (e, later than the
// revision the worker knows): a client stopped it (Client.Stop), or
// another worker took it (its claim then fences this worker's copy off
// anyway), or the key was deleted.
func (w *Worker) noticed(e jetstream.KeyValueEntry) {
	id, err := uuid.Parse(e.Key())
	if err != nil || id.String() != e.Key() {
		return
	}
	w.mu.Lock()
	o := w.teams[id]
	known := o != nil && e.Revision() <= o.rev
	w.mu.Unlock()
	if o == nil || known {
		return
	}
	var l lease
	switch {
	case e.Operation() != jetstream.KeyValuePut:
		w.loseLater(id, o, "its lease was deleted", errLeaseTaken)
	case json.Unmarshal(e.Value(), &l) != nil:
	case l.Stopped:
		w.loseLater(id, o, "a client stopped it", nil)
	case l.Instance != w.instance:
		w.loseLater(id, o, "another worker took its lease", errLeaseTaken)
	}
}

// errLeaseTaken is why a team is stopped whose lease the bucket's watcher
// saw another worker store.
var errLeaseTaken = errors.New("cluster: the team's lease is no longer this worker's")

// loseLater is lose, off the watcher's goroutine (stopping the team's
// inbox waits a while).
func (w *Worker) loseLater(id uuid.UUID, o *owned, why string, err error) {
	if !w.work.Go("lose", func(context.Context) {
		if w.team(id) == o.team {
			w.lose(id, o, why, err)
		}
	}) {
		w.lose(id, o, why, err) // Close began: it settles what is left
	}
}

// ended settles the lease of a team of this worker's that stopped: one
// taken over (fenced) is the new owner's; one whose ledger broke, or that
// stopped without Team.Stop (its actor system shut down before the
// worker's Close, say), is released, to resume from the stream; one
// stopped with Team.Stop is marked stopped (resumed nowhere).
func (w *Worker) ended(ctx context.Context, id uuid.UUID, o *owned) {
	switch fenced, broken := o.ledger.state(); {
	case fenced:
	case broken != nil:
		w.logger.Error("cluster: a team stopped with its ledger broken; it resumes from the stream", "team_id", id, "error", broken)
		w.release(ctx, id, o)
	case errors.Is(o.team.StopCause(), actor.ErrShutdown):
		// Its actor system shut down before the worker's Close: it
		// resumes at once, here or elsewhere.
		w.logger.Warn("cluster: a team stopped with its actor system; it resumes from the stream", "team_id", id)
		w.release(ctx, id, o)
	case !errors.Is(o.team.StopCause(), orchestrator.ErrStopRequested):
		// It died (a raw stop, its orchestrator failed): it resumes after a
		// backoff that doubles while it keeps dying, the cause in its
		// lease (TeamInfo.Error), so a team that dies on every restore is
		// not restored in a loop.
		wait := w.backOff(id)
		cause := fmt.Sprintf("it stopped on %s without being asked to (%v); resumed after %v", w.cfg.Owner, o.team.StopCause(), wait)
		w.logger.Warn("cluster: a team stopped without being asked to; it resumes from the stream after a backoff", "team_id", id, "cause", o.team.StopCause(), "retry_in", wait)
		l := lease{Owner: w.cfg.Owner, Template: o.template, Until: time.Now().Add(wait).UTC(), Error: cause}
		if _, err := w.put(ctx, id, l, o.rev); err != nil && !errors.Is(err, errStopped) {
			w.logger.Warn("cluster: a team's lease could not be released; it is resumed once it ends", "team_id", id, "error", err)
		}
	default:
		if _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template, Stopped: true}, o.rev); err != nil && !errors.Is(err, errStopped) {
			w.logger.Warn("cluster: a stopped team's lease could not be marked stopped; another worker may resume it",
				"team_id", id, "error", err)
		}
	}
}

// release ends the lease of a team this worker no longer runs now, so
// that a worker resumes it at its next scan.
func (w *Worker) release(ctx context.Context, id uuid.UUID, o *owned) {
	if _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template}, o.rev); err != nil && !errors.Is(err, errStopped) {
		w.logger.Warn("cluster: a team's lease could not be released; it is resumed once it ends", "team_id", id, "error", err)
	}
}

// lose stops a team this worker no longer holds the lease of (err nil: a
// client stopped it).
func (w *Worker) lose(id uuid.UUID, o *owned, why string, err error) {
	w.forget(id)
	if err == nil {
		w.logger.Info("cluster: stopping a team: "+why, "team_id", id)
	} else {
		w.logger.Error("cluster: stopping a team this worker no longer holds: "+why, "team_id", id, "error", err)
	}
	if err != nil {
		o.ledger.cutAt() // not its own any more: a turn the stop cuts runs again on the next holder
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // ask for the stop; do not wait for it
	_ = o.team.Stop(ctx)
}

// forget drops a team from the worker's and stops consuming its input.
func (w *Worker) forget(id uuid.UUID) {
	w.mu.Lock()
	var ib *inbox
	if o := w.teams[id]; o != nil {
		ib = o.inbox
	}
	delete(w.teams, id)
	w.mu.Unlock()
	if ib != nil {
		ctx, cancel := context.WithTimeout(context.Background(), w.beat) // the renewals wait no longer
		defer cancel()
		ib.stop(ctx)
	}
}

// heldLease is a team's lease a worker renews while it starts the team (a
// restore may outlast the lease), until the team is registered (release).
type heldLease struct {
	renewals *group // the one goroutine renewing it
	mu       sync.Mutex
	rev      uint64
	until    time.Time
	lost     error // a client stopped the team, or another worker took its lease
}

// hold renews the lease of team id, stored at rev and ending at until,
// every beat until release; lost is told when the lease is lost.
func (w *Worker) hold(id uuid.UUID, template string, rev uint64, until time.Time, lost context.CancelCauseFunc) *heldLease {
	h := &heldLease{renewals: newGroup(context.Background()), rev: rev, until: until}
	h.renewals.Go("hold", func(ctx context.Context) {
		tick := time.NewTicker(w.beat)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := w.renewHeld(id, template, h); err != nil {
				lost(err) // the restore ends
				return
			}
		}
	})
	return h
}

// renewHeld renews a held lease once; it returns why the lease was lost,
// nil when it was renewed or could not be (tried again next beat).
func (w *Worker) renewHeld(id uuid.UUID, template string, h *heldLease) error {
	l := w.newLease(template)
	ctx, cancel := context.WithTimeout(context.Background(), w.beat)
	defer cancel()
	h.mu.Lock()
	rev := h.rev
	h.mu.Unlock()
	n, err := w.put(ctx, id, l, rev)
	if errors.Is(err, errStopped) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		err = fmt.Errorf("cluster: the lease of team %s was lost while it was restored: %w", id, err)
		h.mu.Lock()
		h.lost = err
		h.mu.Unlock()
		w.logger.Info("cluster: the lease of a team being restored was lost; the restore ends", "team_id", id, "error", err)
		return err
	}
	if err != nil {
		w.logger.Warn("cluster: a lease could not be renewed while its team is restored", "team_id", id, "error", err)
		return nil
	}
	h.mu.Lock()
	h.rev, h.until = n, l.Until
	h.mu.Unlock()
	return nil
}

// revision is the held lease's revision once its renewals have stopped
// (release).
func (h *heldLease) revision() uint64 {
	rev, _, _ := h.release()
	return rev
}

// release stops the renewals and waits for them to end, then returns the
// lease's revision and end, or why it was lost. It may be called again.
func (h *heldLease) release() (uint64, time.Time, error) {
	h.renewals.Stop(nil)
	_ = h.renewals.Wait(context.Background())
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev, h.until, h.lost
}
