package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Passivation (Config.IdleAfter): an idle team is stopped on its worker
// and its lease marked passive; its next input activates it. The client
// that stores the input tells the workers serving the team's template on
// <prefix>.wake.<template> (one of them, by queue group, takes the team);
// a wake lost (no worker then, a connection cut) is made up by the
// takeover scan, which takes the passive teams whose inbox holds input.

// wakeSubject is the subject on which a client tells the workers serving
// a template that a passive team of it has input.
func (c Config) wakeSubject(template string) string { return c.Prefix + ".wake." + template }

// passivations looks for idle teams every quarter of IdleAfter (at most a
// beat) until ctx ends (Close), and passivates them. While the worker runs
// no team it has nothing to look at: it waits for one to be registered
// (Worker.added), with no ticker.
func (w *Worker) passivations(ctx context.Context) {
	every := min(max(w.cfg.IdleAfter/4, minIdleTick), w.beat)
	tick := time.NewTicker(every)
	defer tick.Stop()
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
		w.mu.Lock()
		teams := maps.Clone(w.teams)
		w.mu.Unlock()
		for id, o := range teams {
			if ctx.Err() != nil {
				return
			}
			if w.idle(o) {
				w.passivate(ctx, id, o)
			}
		}
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
// consumer stopped first (the team still registered, so an input being
// delivered is delivered), then, still idle, deleted; when an input came
// meanwhile, the team goes on instead.
func (w *Worker) passivate(life context.Context, id uuid.UUID, o *owned) {
	w.renewing.Lock()
	defer w.renewing.Unlock()
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
	ib.stop(ctx)
	w.mu.Lock()
	still := w.teams[id] == o && !w.closed && !ib.busy() && o.ledger.idleFor(0)
	if still {
		delete(w.teams, id)
	} else if w.teams[id] == o {
		o.inbox = nil
	}
	w.mu.Unlock()
	if !still { // an input came while it stopped consuming: it goes on
		if err := w.openInbox(ctx, id, w.tmpls[o.template].Person, ib.done, nil); err != nil {
			w.mu.Lock()
			o.noInbox = ib.done // the renewals try again
			w.mu.Unlock()
		}
		return
	}
	w.dropInbox(ctx, id) // nothing in flight: the inputs wait in the stream for the next consumer
	o.ledger.cutAt()     // idle: no turn to cut; one begun meanwhile runs again on activation
	if err := o.team.Stop(ctx); err != nil {
		w.logger.Warn("cluster: a passivated team did not stop in time", "team_id", id, "error", err)
	}
	if _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template, Passive: true}, o.rev); err != nil {
		// Its lease ends by itself: a worker then resumes it as any other.
		w.logger.Warn("cluster: a passivated team's lease could not be marked passive", "team_id", id, "error", err)
		return
	}
	w.logger.Debug("cluster: team passivated", "team_id", id)
	if w.cfg.passivated != nil {
		w.cfg.passivated(id)
	}
	// An input stored while the team stopped consuming, before its lease
	// said passive, came without a wake: the team is activated at once,
	// not at the next scan.
	if _, err := w.inbox.GetLastMsgForSubject(ctx, w.cfg.inboxSubject(id)); err == nil {
		w.work.Go("wake", func(ctx context.Context) { w.activate(ctx, id) })
	}
}

// serveWake answers a client's word that a passive team of the template
// has input: the team is taken (activated) on a goroutine of the work
// group; once Close began, the word is left to the other workers' scans.
func (w *Worker) serveWake(m *nats.Msg) {
	id, err := uuid.ParseBytes(m.Data)
	if err != nil {
		w.logger.Debug("cluster: a wake names no team", "data", string(m.Data))
		return
	}
	w.work.Go("wake", func(ctx context.Context) { w.activate(ctx, id) })
}

// activate takes a passive team whose lease is still passive.
func (w *Worker) activate(ctx context.Context, id uuid.UUID) {
	e, err := w.kv.Get(ctx, id.String())
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			w.logger.Warn("cluster: a passive team's lease could not be read; the scan takes it", "team_id", id, "error", err)
		}
		return
	}
	var l lease
	if json.Unmarshal(e.Value(), &l) != nil || !l.Passive || l.Stopped {
		return // activated already, or stopped
	}
	if _, ok := w.tmpls[l.Template]; !ok {
		return
	}
	w.take(ctx, teamLease{id: id, rev: e.Revision(), lease: l})
}

// pendingInput returns the teams whose inbox holds input (one read of
// the inbox stream's subjects, which lists only those holding input); the
// scan reads it when passive teams of its templates are known.
func (w *Worker) pendingInput(ctx context.Context) map[uuid.UUID]bool {
	info, err := w.inbox.Info(ctx, jetstream.WithSubjectFilter(w.cfg.Prefix+".in.>"))
	if err != nil {
		w.logger.Warn("cluster: the inbox's pending input could not be read; passive teams wait for a wake", "error", err)
		return nil
	}
	out := map[uuid.UUID]bool{}
	prefix := w.cfg.Prefix + ".in."
	for subj, n := range info.State.Subjects {
		if id, err := uuid.Parse(strings.TrimPrefix(subj, prefix)); err == nil && n > 0 {
			out[id] = true
		}
	}
	return out
}
