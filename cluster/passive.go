package cluster

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Passivation (Config.IdleAfter): an idle team is stopped on its worker
// and its lease marked passive; its next input, which the consumer of its
// shard delivers to the shard's holder, activates it there
// (heldShard.handle, Worker.activateFor), and so does the holder's
// takeover scan at its wake time, the deadline of an approval it waits
// for (lease.WakeAt).

// passivations looks for idle teams every quarter of IdleAfter (at most a
// beat) until ctx ends (Close), and passivates them, up to tendParallel
// at a time (a passivation waits on JetStream: one after another,
// thousands of idle teams would take longer than teams take to become
// idle). A look does not wait for the passivations it began: a team slow
// to stop holds back no other. While the worker runs no team it has
// nothing to look at: it waits for one to be registered (Worker.added),
// with no ticker. Once ctx ends it waits for the passivations under way,
// which end whole (bounded).
func (w *Worker) passivations(ctx context.Context) {
	every := min(max(w.cfg.IdleAfter/4, minIdleTick), w.beat)
	tick := time.NewTicker(every)
	defer tick.Stop()
	p := &passivating{sem: make(chan struct{}, tendParallel), fan: newGroup(context.Background()), ids: map[uuid.UUID]bool{}}
	defer func() {
		p.fan.Stop(nil)
		_ = p.fan.Wait(context.Background())
	}()
	for {
		w.mu.Lock()
		none := len(w.teams) == 0
		w.mu.Unlock()
		if none {
			tick.Stop()
			select {
			case <-ctx.Done():
				return
			case <-w.added:
			}
			tick.Reset(every)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.passivateIdle(ctx, p)
	}
}

// passivating is the passivations under way: at most cap(sem) at once,
// one per team (ids).
type passivating struct {
	sem chan struct{}
	fan *group
	mu  sync.Mutex
	ids map[uuid.UUID]bool
}

// passivateIdle begins the passivation of each idle team of this worker
// not being passivated already, each as soon as fewer than cap(p.sem) are
// under way. It does not wait for those it began: one slow to stop holds a
// slot, not the others (a look waits only when every slot is held).
func (w *Worker) passivateIdle(ctx context.Context, p *passivating) {
	w.mu.Lock()
	teams := maps.Clone(w.teams)
	w.mu.Unlock()
	for id, o := range teams {
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		busy := p.ids[id]
		p.mu.Unlock()
		if busy || !w.idle(o) {
			continue
		}
		select { // a slot: it waits only while cap(p.sem) passivations are all under way
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		p.mu.Lock()
		p.ids[id] = true
		p.mu.Unlock()
		p.fan.Go("passivate", func(context.Context) {
			defer func() {
				p.mu.Lock()
				delete(p.ids, id)
				p.mu.Unlock()
				<-p.sem
			}()
			w.passivate(ctx, id, o)
		})
	}
}

// minIdleTick bounds how often the passivations look for idle teams.
const minIdleTick = 5 * time.Millisecond

// idle reports whether a team this worker runs has been idle for
// IdleAfter: no turn running, no record, no input in flight.
func (w *Worker) idle(o *owned) bool {
	w.mu.Lock()
	ib := o.inbox
	w.mu.Unlock()
	if ib == nil || ib.busy() || isClosed(o.team.Done()) {
		return false // its input not consumed yet (retried), or stopped (the renewals settle it)
	}
	return o.ledger.idleFor(w.cfg.IdleAfter)
}

// busy reports whether an input delivered is not yet acknowledged.
func (ib *inbox) busy() bool {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return len(ib.inflight) > 0
}

// passivate stops an idle team and marks its lease passive: its inbox
// stopped first (the team still registered, so an input being delivered
// is delivered); when an input came meanwhile, the team goes on instead.
func (w *Worker) passivate(life context.Context, id uuid.UUID, o *owned) {
	o.leasing.Lock()
	defer o.leasing.Unlock()
	w.mu.Lock()
	ib := o.inbox
	if w.teams[id] != o || w.closed || ib == nil {
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	// Not cut short by Close: a passivation begun ends whole (bounded).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(life), w.cfg.FlushTimeout+w.beat)
	defer cancel()
	wake, err := wakeAt(ctx, o.team)
	if err != nil { // it goes on; the next look tries again
		w.logger.Warn("cluster: an idle team is not passivated: its approvals' deadlines cannot be read", "team_id", id, "error", err)
		return
	}
	left := ib.stop(ctx)
	w.mu.Lock()
	still := w.teams[id] == o && !w.closed && len(left) == 0 && !ib.busy() && o.ledger.idleFor(0)
	if still {
		delete(w.teams, id)
		// No take of it (a scan, its input's activation) until its lease
		// says passive: its copy still stops, and its lease ended long
		// ago, its shard holding it (see take).
		w.taking[id] = true
	} else if w.teams[id] == o {
		o.inbox = nil
	}
	w.mu.Unlock()
	if !still { // an input came while it stopped consuming: it goes on
		if err := w.openInbox(ctx, id, w.tmpls[o.template].Person, ib.done, left); err != nil {
			w.mu.Lock()
			o.noInbox = ib.done // the renewals try again
			w.mu.Unlock()
		}
		return
	}
	o.ledger.cutAt() // idle: no turn to cut; one begun meanwhile runs again on activation
	if err := o.team.Stop(ctx); err != nil {
		w.logger.Warn("cluster: a passivated team did not stop in time", "team_id", id, "error", err)
	}
	_, err = w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template, Passive: true, WakeAt: wake}, o.rev)
	w.mu.Lock()
	delete(w.taking, id)
	w.mu.Unlock()
	if err != nil {
		// Its lease ended long ago: the next scan takes it again.
		w.logger.Warn("cluster: a passivated team's lease could not be marked passive; it runs again", "team_id", id, "error", err)
		return
	}
	w.logger.Debug("cluster: team passivated", "team_id", id)
	if w.cfg.passivated != nil {
		w.cfg.passivated(id)
	}
	// An input that came while the team stopped, before its lease said
	// passive, is kept by its shard: the team is activated at once.
	if hs := ib.shard; hs.hasPending(id) {
		w.work.Go("activate", func(ctx context.Context) { w.activateFor(ctx, hs, id) })
	}
}

// wakeAt is when a team about to be passivated is to be activated though
// no input comes (lease.WakeAt): the earliest deadline of the approvals
// its agents wait for, whose denial at the deadline is a turn of the
// team's (zero when none has a deadline).
func wakeAt(ctx context.Context, t *orchestrator.Team) (time.Time, error) {
	asked, err := agent.PendingApprovals(ctx, t)
	if err != nil {
		return time.Time{}, err
	}
	var first time.Time
	for _, m := range asked {
		if d := m.Approval.Deadline; !d.IsZero() && (first.IsZero() || d.Before(first)) {
			first = d
		}
	}
	return first, nil
}
