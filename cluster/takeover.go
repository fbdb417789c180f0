package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// wakeSlack is how long after the end of a lease the takeover scan that
// awaits it runs (the clocks of two workers may differ a little; a scan
// that comes too early waits for the next).
const wakeSlack = 10 * time.Millisecond

// takeovers runs the takeover scans until ctx ends (Close): every third of
// a lease, at the end of the next lease of another worker's team this
// worker could take (so that a dead worker's team is resumed right when
// its lease ends, not up to a third of a lease later), when a shard of
// another worker may be free (nextShardEnd: its lease's end, or its dead
// holder's presence end), when a worker that joined may be handed shards
// (settledAt), and when another worker released a lease (w.freed).
func (w *Worker) takeovers(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-w.freed:
		}
		next := w.takeExpired(ctx)
		wait := w.beat
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next)+wakeSlack, wakeSlack))
		}
		timer.Reset(wait)
	}
}

// takeExpired scans the worker's view of the bucket: first the shards
// (scanShards: its share taken, its surplus handed over), then the teams
// of the shards it holds (its index: the leases ended there, not every
// lease): it takes over each team of those shards whose lease ended and
// that it does not run (toResume), in a random order. It returns when the
// earliest lease still running of such a team ends, or a shard of another
// worker may be free (nextShardEnd), or a worker that joined may be handed
// shards (settledAt), whichever comes first (zero when none). The scan's reads are bounded by a lease;
// the takeovers end with life.
func (w *Worker) takeExpired(life context.Context) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Lease)
	defer cancel()
	if w.cfg.scanned != nil {
		defer w.cfg.scanned()
	}
	workers, ok := w.view.presences()
	var fresh *leaseIndex
	if !ok { // the view not filled yet: one read of the bucket, indexed
		teams, ws, err := readBucket(ctx, w.kv)
		if err != nil {
			w.logger.Warn("cluster: cannot read the leases", "error", err)
			return time.Time{}
		}
		fresh, workers = indexLeases(w.nshards, teams, ws), ws
	}
	now := time.Now()
	w.purgeDead(ctx, workers, now)
	sctx, scancel := context.WithTimeout(life, w.cfg.Lease) // a handover's wait for its turns ends with Close
	w.scanShards(sctx, workers, now)
	scancel()
	held := w.heldShards()
	me := w.self(time.Now())
	var todo []teamLease
	var next time.Time
	if fresh != nil {
		todo, next = fresh.due(me, held, time.Now())
	} else {
		todo, next = w.view.due(me, held, time.Now())
	}
	rand.Shuffle(len(todo), func(i, j int) { todo[i], todo[j] = todo[j], todo[i] })
	w.takeSome(life, todo, len(todo))
	present := make(map[string]time.Time, len(workers))
	for _, p := range workers {
		present[p.Owner] = p.Until
	}
	if e := w.view.nextShardEnd(w.cfg.Owner, w.tmpls, present, w.cfg.Lease, time.Now()); !e.IsZero() && (next.IsZero() || e.Before(next)) {
		next = e
	}
	if e := w.settledAt(workers, now); !e.IsZero() && (next.IsZero() || e.Before(next)) {
		next = e // a worker that joined is handed its share then
	}
	return next
}

// heldShards is the set of the shards this worker holds.
func (w *Worker) heldShards() map[shardRef]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := make(map[shardRef]bool, len(w.shards))
	for r := range w.shards {
		held[r] = true
	}
	return held
}

// self is this worker as its takeover scan at now sees it (fairShare).
// Backoffs that ended long ago are forgotten: the team resumed elsewhere,
// or stopped.
func (w *Worker) self(now time.Time) taker {
	me := taker{owner: w.cfg.Owner, instance: w.instance, templates: make(map[string]bool, len(w.tmpls)),
		running: w.runs, waiting: map[uuid.UUID]bool{}}
	for name := range w.tmpls {
		me.templates[name] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, b := range w.backoff {
		me.waiting[id] = now.Before(b.until) // failed here lately (take): left to others, or for later
		if now.After(b.until.Add(maxBackoff)) {
			delete(w.backoff, id)
		}
	}
	return me
}

// runs reports whether this worker runs team id (registered).
func (w *Worker) runs(id uuid.UUID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.teams[id]
	return ok
}

// Dead workers' presences are purged from the leases bucket a few leases
// after they ended (every scan reads the presences: workers started with
// the default Owner, a new name each time, would pile up), and the bucket's
// delete markers older than 30 minutes every purgeEvery scans.
const (
	deadPresence = 3 // leases
	purgeEvery   = 64
)

// purgeDead purges the presences of workers dead for a while (compare
// and set on their revision: a worker that came back is kept).
func (w *Worker) purgeDead(ctx context.Context, workers []presence, now time.Time) {
	for _, p := range workers {
		if p.Owner != w.cfg.Owner && p.Until.Add(deadPresence*w.cfg.Lease).Before(now) {
			if err := w.kv.Purge(ctx, p.key, jetstream.LastRevision(p.rev)); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				w.logger.Debug("cluster: a dead worker's presence could not be purged", "owner", p.Owner, "error", err)
			}
		}
	}
	w.scans++
	if w.scans%purgeEvery == 0 {
		if err := w.kv.PurgeDeletes(ctx); err != nil {
			w.logger.Debug("cluster: the leases bucket's delete markers could not be purged", "error", err)
		}
	}
}

// takeParallel bounds the takeovers of one worker in flight: a restore
// waits on JetStream much of its time.
const takeParallel = 4

// takeSome takes over teams of xs, in order, until it took n of them (a
// team another worker took first is skipped) or life ends (Close).
func (w *Worker) takeSome(life context.Context, xs []teamLease, n int) {
	var mu sync.Mutex
	next := 0
	fan := newGroup(life)
	defer fan.Stop(nil)
	for range min(takeParallel, n) {
		fan.Go("take", func(ctx context.Context) {
			for {
				mu.Lock()
				if ctx.Err() != nil {
					n = 0
				}
				if n <= 0 || next == len(xs) {
					mu.Unlock()
					return
				}
				x := xs[next]
				next++
				n-- // one more try in flight
				mu.Unlock()
				if !w.take(ctx, x) {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		})
	}
	_ = fan.Wait(context.Background())
}

// restoreTimeout bounds a takeover's claim, restore and inbox: a long
// ledger takes a while to read (some 150,000 records a second on a
// two-core machine: a million records take seconds), longer
// than a lease, which the worker renews meanwhile (hold).
const restoreTimeout = 5 * time.Minute

// take takes over a team whose lease ended: the lease by compare-and-set
// on its revision (false when another worker took it first, or NATS is
// unreachable), then the team, restored from its ledger, the lease renewed
// meanwhile. A team that cannot be restored (a record this worker cannot
// decode, a Build error...) has its lease released with the failure
// (TeamInfo.Error) and is tried again by this worker after a backoff.
func (w *Worker) take(ctx context.Context, x teamLease) bool {
	if w.heldShardOf(x.Template, x.id) == nil {
		return false // its shard's holder runs it
	}
	w.mu.Lock()
	_, running := w.teams[x.id]
	busy := running || w.taking[x.id] // a wake and a scan at once, say
	if !busy {
		w.taking[x.id] = true
	}
	w.mu.Unlock()
	if busy {
		return false
	}
	defer func() {
		w.mu.Lock()
		delete(w.taking, x.id)
		w.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, max(restoreTimeout, w.cfg.Lease))
	defer cancel()
	l := w.newLease(x.Template)
	rev, err := w.put(ctx, x.id, l, x.rev)
	if err != nil {
		return false // taken by another worker, or NATS unreachable: next beat
	}
	ctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	h := w.hold(x.id, x.Template, rev, l.Until, lost)
	defer h.release()
	t, log, err := w.run(ctx, x.id, h.release, x.Template)
	if _, _, lostErr := h.release(); lostErr != nil {
		// A client stopped it, or another worker took it: not ours.
		w.logger.Info("cluster: a team's lease was lost while this worker restored it", "team_id", x.id, "error", lostErr)
		return false
	}
	if err != nil {
		w.failedResume(ctx, x, h, err)
		return false
	}
	w.resumed(ctx, x, t, log)
	return true
}

// resumed finishes the takeover of a team restored and registered here:
// the template's Resume, then its inbox.
func (w *Worker) resumed(ctx context.Context, x teamLease, t *orchestrator.Team, log []message.Message) {
	if resume := w.tmpls[x.Template].Resume; resume != nil {
		if err := resume(ctx, t); err != nil {
			w.logger.Error("cluster: the template's Resume failed; the team runs as restored", "team_id", x.id, "error", err)
		}
	}
	if err := w.startInbox(x.id, w.tmpls[x.Template].Person, log); err != nil {
		w.logger.Error("cluster: the resumed team's input is not consumed yet; tried again on the next renewals", "team_id", x.id, "error", err)
	}
	w.logger.Info("cluster: team resumed on this worker", "team_id", x.id)
	if w.cfg.resumed != nil {
		w.cfg.resumed(x.id)
	}
}

// Backoff of a team this worker failed to resume: a lease, doubling up to
// maxBackoff.
const maxBackoff = 5 * time.Minute

// failedResume releases the lease of a team this worker took but could
// not resume, with the failure in it, and waits a while before trying it
// again (another worker may succeed meanwhile: a newer version that
// decodes what this one does not). A failure of JetStream to answer (a
// leader election, a server restarting) is not the team's: its lease is
// released without an error and it is tried again at the next scan, with
// no backoff (which, doubling, would keep a team down for minutes after a
// short election).
func (w *Worker) failedResume(ctx context.Context, x teamLease, h *heldLease, err error) {
	if notReady(err) && ctx.Err() == nil {
		w.logger.Warn("cluster: JetStream did not answer while this worker resumed a team; its lease is released, tried again at the next scan",
			"team_id", x.id, "error", err)
		w.release(ctx, x.id, &owned{template: x.Template, rev: h.revision()})
		return
	}
	wait := w.backOff(x.id)
	w.logger.Error("cluster: cannot resume a team whose lease this worker took; its lease is released, tried again later",
		"team_id", x.id, "error", err, "retry_in", wait)
	rev, _, _ := h.release()
	why := fmt.Sprintf("%s could not resume it: %v", w.cfg.Owner, err)
	if _, perr := w.put(ctx, x.id, lease{Owner: w.cfg.Owner, Template: x.Template, Error: why}, rev); perr != nil {
		w.logger.Warn("cluster: the lease of a team not resumed could not be released; it ends by itself", "team_id", x.id, "error", perr)
	}
}

// backOff records one more failure of team id on this worker and returns
// how long it waits before it takes the team again: a lease, doubling up
// to maxBackoff while failures follow each other (an entry is forgotten
// maxBackoff after its wait ended).
func (w *Worker) backOff(id uuid.UUID) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.backoff[id]
	b.wait = min(max(2*b.wait, w.cfg.Lease), maxBackoff)
	b.until = time.Now().Add(b.wait)
	w.backoff[id] = b
	return b.wait
}
