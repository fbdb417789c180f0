package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// The shards a worker holds (see shard.go for the rules): their leases,
// their input's consumers, and the dispatch of each input to its team.

// shardMaxPending bounds the inputs of one shard delivered to its holder
// and not yet acknowledged (their turns not yet durable).
const shardMaxPending = 4096

// shardPull is how many inputs of a shard one pull request asks for.
const shardPull = 64

// heldShard is a shard this worker holds: its input's consumer, the
// inboxes of its teams that run here, and the inputs of its teams that do
// not run here yet (kept for their activation or takeover).
type heldShard struct {
	w   *Worker
	ref shardRef
	cc  jetstream.ConsumeContext

	rev   uint64    // the lease's revision (w.mu)
	until time.Time // the lease's end, as last stored (w.mu)

	mu      sync.Mutex
	inboxes map[uuid.UUID]*inbox
	pending map[uuid.UUID][]jetstream.Msg
	waking  map[uuid.UUID]bool // an activation of the team is under way
	closed  bool               // no longer held: nothing is dispatched
}

// shardOfTeam is the shard of a team of template.
func (w *Worker) shardOfTeam(template string, id uuid.UUID) shardRef {
	return shardRef{template: template, n: shardOf(id, w.nshards)}
}

// heldShardOf returns the shard of a team of template when this worker
// holds it, nil when not.
func (w *Worker) heldShardOf(template string, id uuid.UUID) *heldShard {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.shards[w.shardOfTeam(template, id)]
}

// scanShards takes this worker's share of each template's shards and
// hands its surplus over (planShards), from the view of the bucket (or
// one read of the shards' keys when the view is not filled yet).
func (w *Worker) scanShards(ctx context.Context, workers []presence, now time.Time) {
	for template := range w.tmpls {
		leases, ok := w.view.shardLeases(template)
		for round := range shardRounds {
			if !ok || round > 0 { // the view not filled yet, or it lags the shards just lost to another worker
				var err error
				if leases, err = readShards(ctx, w.kv, template); err != nil {
					w.logger.Warn("cluster: cannot read the shards' leases", "template", template, "error", err)
					break
				}
			}
			if !w.planTemplate(ctx, template, leases, workers, now) {
				break
			}
		}
	}
}

// settleAfter is how long a worker's presence lasts, without a break, before a
// worker above its share of shards hands it any (presence.Since):
// settleBeats beats, at most maxSettle.
func (w *Worker) settleAfter() time.Duration { return min(settleBeats*w.beat, maxSettle) }

// settledAt is the earliest moment one of the live workers serving one of
// this worker's templates, present for too short a while to be handed
// shards, becomes settled (zero when none): the takeover loop scans then,
// so that a worker that joins gets its share at once.
func (w *Worker) settledAt(workers []presence, now time.Time) time.Time {
	var first time.Time
	for _, p := range workers {
		if p.Owner == w.cfg.Owner || !p.Until.After(now) {
			continue
		}
		at := p.Since.Add(w.settleAfter())
		if !now.Before(at) || !slices.ContainsFunc(p.Templates, func(t string) bool { _, ok := w.tmpls[t]; return ok }) {
			continue
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

// shardRounds bounds the rounds of one scan of a template's shards: a
// round whose takes another worker won (two survivors of a dead worker
// taking its shards at once) is followed by another, on a fresh read, so
// that the shards are all held again in this scan, not the next.
const shardRounds = 3

// planTemplate makes and carries out this worker's plan for a template's
// shards (planShards); it reports whether a take failed (another round is
// due).
func (w *Worker) planTemplate(ctx context.Context, template string, leases map[int]shardLease, workers []presence, now time.Time) (again bool) {
	live := []string{w.cfg.Owner}
	unsettled := map[string]bool{}
	for _, p := range workers {
		if p.Owner != w.cfg.Owner && p.Until.After(now) && slices.Contains(p.Templates, template) {
			live = append(live, p.Owner)
			if now.Before(p.Since.Add(w.settleAfter())) {
				unsettled[p.Owner] = true
			}
		}
	}
	held := map[int]bool{}
	w.mu.Lock()
	for r := range w.shards {
		if r.template == template {
			held[r.n] = true
		}
	}
	w.mu.Unlock()
	p := planShards(w.cfg.Owner, w.nshards, leases, live, unsettled, held, w.cfg.Lease, now, rand.IntN(w.nshards))
	w.handOverAll(ctx, template, p.release)
	for _, x := range p.take {
		x.ref.template = template
		if ctx.Err() != nil {
			return false
		}
		if !w.acquire(ctx, x) {
			again = true
		}
	}
	return again
}

// acquire takes a shard's lease by compare-and-set (created when x.rev is
// 0) and starts consuming its input; false when another worker took it
// first, or it could not be done (tried again at the next scan).
func (w *Worker) acquire(ctx context.Context, x shardLease) bool {
	l := lease{Owner: w.cfg.Owner, Until: time.Now().Add(w.cfg.Lease).UTC(), Instance: w.instance}
	data, err := json.Marshal(l)
	if err != nil {
		return false
	}
	var rev uint64
	if x.rev == 0 {
		rev, err = w.kv.Create(ctx, shardKey(x.ref), data)
	} else {
		rev, err = w.kv.Update(ctx, shardKey(x.ref), data, x.rev)
	}
	if err != nil {
		return false // another worker's now, or JetStream did not answer: the next scan
	}
	hs := &heldShard{w: w, ref: x.ref, rev: rev, until: l.Until,
		inboxes: map[uuid.UUID]*inbox{}, pending: map[uuid.UUID][]jetstream.Msg{}, waking: map[uuid.UUID]bool{}}
	cons, err := w.js.CreateOrUpdateConsumer(ctx, w.cfg.inboxStream(), jetstream.ConsumerConfig{
		Durable:       shardConsumer(x.ref),
		Description:   "input of the teams of shard " + x.ref.String(),
		FilterSubject: w.cfg.shardSubjects(x.ref),
		AckPolicy:     jetstream.AckExplicitPolicy,
		// Two beats: renewed by progress on every beat, and an input
		// delivered to a holder that died after its last renewal is
		// delivered again by the time the shard's lease ends. A delivery
		// again to a live holder whose renewals lag is not run twice
		// (inbox.inflight).
		AckWait:       2 * w.beat,
		MaxAckPending: shardMaxPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err == nil {
		hs.cc, err = cons.Consume(hs.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			w.logger.Debug("cluster: a shard's input consumer", "shard", x.ref, "error", err)
		}),
			// Pull requests that expire within a beat (the client's
			// defaults are 500 messages for 30 s): a paused holder's open
			// requests do not take the inputs meant for the shard's next
			// holder for long, each costing an ack wait.
			jetstream.PullMaxMessages(shardPull), jetstream.PullExpiry(max(w.beat, minPullExpiry)))
	}
	if err != nil {
		if ctx.Err() == nil { // else Close began: nothing to tell
			w.logger.Warn("cluster: a shard's input cannot be consumed; its lease is released", "shard", x.ref, "error", err)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.beat)
		defer cancel()
		w.releaseShardLease(rctx, x.ref, rev)
		return false
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		hs.stopConsume(ctx)
		w.releaseShardLease(ctx, x.ref, rev)
		return false
	}
	w.shards[x.ref] = hs
	close(w.shardsUp)
	w.shardsUp = make(chan struct{})
	// Teams of the shard still running from an earlier hold of it (its
	// lease ended unrenewed, theirs not yet) read no input any more: they
	// stop, and resume from the stream here.
	var stale []uuid.UUID
	for id, o := range w.teams {
		if o.template == x.ref.template && shardOf(id, w.nshards) == x.ref.n && o.inbox != nil && o.inbox.shard != hs {
			stale = append(stale, id)
		}
	}
	w.mu.Unlock()
	for _, id := range stale {
		w.mu.Lock()
		o := w.teams[id]
		w.mu.Unlock()
		if o != nil {
			w.release(ctx, id, o)
			w.lose(id, o, "its shard was held again after its lease ended", errShardNotHeld)
		}
	}
	w.logger.Debug("cluster: shard held", "shard", x.ref)
	return true
}

// releaseShardLease ends a shard's lease now (its end the zero time), so
// that another worker takes it at its next scan.
func (w *Worker) releaseShardLease(ctx context.Context, r shardRef, rev uint64) {
	// putShard: a renewal round under way may have stored it again since.
	if _, err := w.putShard(ctx, r, lease{Owner: w.cfg.Owner, Instance: w.instance}, rev); err != nil {
		w.logger.Warn("cluster: a shard's lease could not be released; it ends by itself", "shard", r, "error", err)
	}
}

// renewShards renews the lease of every shard this worker holds; a shard
// another worker took, or whose lease ended unrenewed by this worker's
// clock, is lost (its teams stopped). It reports whether a renewal
// failed otherwise (JetStream did not answer), to be tried again soon.
func (w *Worker) renewShards(ctx context.Context) (failed bool) {
	w.mu.Lock()
	held := make([]*heldShard, 0, len(w.shards))
	for _, hs := range w.shards {
		held = append(held, hs)
	}
	w.mu.Unlock()
	for _, hs := range held {
		l := lease{Owner: w.cfg.Owner, Until: time.Now().Add(w.cfg.Lease).UTC(), Instance: w.instance}
		w.mu.Lock()
		rev, until, still := hs.rev, hs.until, w.shards[hs.ref] == hs
		w.mu.Unlock()
		if !still {
			continue // handed over meanwhile
		}
		n, err := w.putShard(ctx, hs.ref, l, rev)
		switch {
		case err == nil:
			w.mu.Lock()
			hs.rev, hs.until = n, l.Until
			w.mu.Unlock()
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			w.loseShard(hs, "another worker took its lease", err, true)
		case !time.Now().Before(until):
			// Its teams run on until this worker's hold on them ends
			// (tendTeam stops them): no worker takes them before.
			w.loseShard(hs, "its lease ended unrenewed", err, false)
		default:
			w.logger.Warn("cluster: shard lease renewal failed; retrying until it ends", "shard", hs.ref, "until", until, "error", err)
			failed = true
		}
	}
	return failed
}

// putShard stores a shard's lease at revision rev (compare-and-set); when
// the key moved on but still holds this worker's lease (its own earlier
// write, whose answer was lost), it stores at the key's revision.
func (w *Worker) putShard(ctx context.Context, r shardRef, l lease, rev uint64) (uint64, error) {
	data, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	n, err := w.kv.Update(ctx, shardKey(r), data, rev)
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return n, err
	}
	e, gerr := w.kv.Get(ctx, shardKey(r))
	if gerr != nil {
		return 0, err
	}
	var cur lease
	if json.Unmarshal(e.Value(), &cur) != nil || cur.Instance != w.instance || cur.Until.IsZero() || e.Revision() < rev {
		// another worker's now, or released
		return 0, err
	}
	return w.kv.Update(ctx, shardKey(r), data, e.Revision())
}

// teamsOf takes out of the worker's teams those of shard r.
func (w *Worker) teamsOf(r shardRef) map[uuid.UUID]*owned {
	out := map[uuid.UUID]*owned{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, o := range w.teams {
		if o.template == r.template && shardOf(id, w.nshards) == r.n {
			out[id] = o
			delete(w.teams, id)
		}
	}
	return out
}

// loseShard stops a shard this worker no longer holds: its consumer, and,
// with teams, every team of it at once (another worker holds the shard);
// without, each team is stopped once its own lease ends, unrenewed
// (renewTeam).
func (w *Worker) loseShard(hs *heldShard, why string, err error, teams bool) {
	w.mu.Lock()
	if w.shards[hs.ref] != hs {
		w.mu.Unlock()
		return
	}
	delete(w.shards, hs.ref)
	w.mu.Unlock()
	w.logger.Error("cluster: a shard this worker no longer holds is stopped: "+why, "shard", hs.ref, "error", err)
	ctx, cancel := context.WithTimeout(context.Background(), w.beat)
	defer cancel()
	hs.stopConsume(ctx)
	hs.mu.Lock()
	hs.closed = true
	clear(hs.pending) // delivered again to the shard's next holder
	hs.mu.Unlock()
	if !teams {
		return
	}
	w.mu.Lock()
	var lost []uuid.UUID
	for id, o := range w.teams {
		if o.template == hs.ref.template && shardOf(id, w.nshards) == hs.ref.n {
			lost = append(lost, id)
		}
	}
	w.mu.Unlock()
	for _, id := range lost {
		w.mu.Lock()
		o := w.teams[id]
		w.mu.Unlock()
		if o != nil {
			w.lose(id, o, "its shard was lost", err)
		}
	}
}

// handOver hands a shard over gracefully (a rebalance): its consumer
// stopped, its teams settled as Close settles them (their leases
// released, their cut turns' inputs handed back), the inputs kept for its
// other teams handed back, then its lease released.
func (w *Worker) handOver(ctx context.Context, r shardRef) {
	w.mu.Lock()
	hs := w.shards[r]
	delete(w.shards, r)
	w.mu.Unlock()
	if hs == nil {
		return
	}
	w.logger.Info("cluster: handing a shard over", "shard", r)
	// Whole once begun, even when Close cuts the wait for the turns short.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.FlushTimeout+w.beat)
	defer scancel()
	hs.stopConsume(sctx)
	teams := w.teamsOf(r)
	// The turns under way finish first (within a beat: the leases, renewed
	// a beat ago at most, last two more): a handover cuts no turn that
	// ends by then, and runs none twice.
	qctx, cancel := context.WithTimeout(ctx, w.beat)
	for _, o := range teams {
		if o.inbox != nil {
			o.inbox.shard.detach(o.inbox)
			o.inbox.quiesce(qctx)
		}
	}
	cancel()
	for _, err := range w.settle(sctx, teams) {
		w.logger.Warn("cluster: handing a shard over", "shard", r, "error", err)
	}
	hs.close()
	w.mu.Lock()
	rev := hs.rev
	w.mu.Unlock()
	w.releaseShardLease(sctx, r, rev)
}

// handOverAll hands the shards rs of template over, up to tendParallel
// at a time: each waits up to a beat for its turns under way, so one after
// another the surplus of a worker that held every shard (a fleet's first
// worker, when the others join) took tens of seconds to reach them.
func (w *Worker) handOverAll(ctx context.Context, template string, rs []shardRef) {
	sem := make(chan struct{}, tendParallel)
	fan := newGroup(context.Background())
	defer fan.Stop(nil)
	for _, r := range rs {
		r.template = template
		sem <- struct{}{}
		fan.Go("hand over", func(context.Context) {
			defer func() { <-sem }()
			w.handOver(ctx, r)
		})
	}
	_ = fan.Wait(context.Background())
}

// stopConsume stops the shard's consumer and waits for its end (or ctx).
func (hs *heldShard) stopConsume(ctx context.Context) {
	hs.cc.Stop()
	select {
	case <-hs.cc.Closed():
	case <-ctx.Done():
	}
}

// close ends the dispatch of a shard no longer held: the inputs kept for
// its teams are handed back (delivered to its next holder at once).
func (hs *heldShard) close() {
	hs.mu.Lock()
	hs.closed = true
	var ms []jetstream.Msg
	for _, q := range hs.pending {
		ms = append(ms, q...)
	}
	clear(hs.pending)
	hs.mu.Unlock()
	for _, m := range ms {
		_ = m.Nak() // a failure: delivered again after its ack wait
	}
}

// handle dispatches one delivery of the shard's input (on the consumer's
// goroutine) to its team's inbox, in order; the input of a team that does
// not run here is kept, and the team activated (or left to the takeover
// scan, while another worker's lease of it lasts).
func (hs *heldShard) handle(m jetstream.Msg) {
	id, ok := teamOfSubject(m.Subject())
	if !ok {
		hs.w.logger.Error("cluster: an input's subject names no team; it is dropped", "subject", m.Subject())
		_ = m.Term()
		return
	}
	hs.mu.Lock()
	if ib := hs.inboxes[id]; ib != nil {
		ib.enqueue(m)
		hs.mu.Unlock()
		return
	}
	if hs.closed {
		hs.mu.Unlock()
		return // delivered again to the shard's next holder
	}
	input := m.Headers().Get(jetstream.MsgIDHeader)
	q := hs.pending[id]
	replaced := false
	for i, p := range q {
		if p.Headers().Get(jetstream.MsgIDHeader) == input {
			q[i], replaced = m, true // delivered again: its latest delivery
		}
	}
	if !replaced {
		hs.pending[id] = append(q, m)
	}
	start := !hs.waking[id]
	hs.waking[id] = true
	hs.mu.Unlock()
	if start && !hs.w.work.Go("activate", func(ctx context.Context) { hs.w.activateFor(ctx, hs, id) }) {
		hs.woken(id) // Close began: the input goes to the team's next holder
	}
}

// attach makes ib the inbox of its team: the inputs kept for it (after
// first, those an earlier inbox of the team left) are consumed in order,
// then every new one. An error when the shard is no longer held.
func (hs *heldShard) attach(ib *inbox, first []jetstream.Msg) error {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.closed {
		return fmt.Errorf("cluster: team %s: this worker no longer holds its shard %s", ib.id, hs.ref)
	}
	hs.inboxes[ib.id] = ib
	for _, m := range first {
		ib.enqueue(m)
	}
	for _, m := range hs.pending[ib.id] {
		ib.enqueue(m)
	}
	delete(hs.pending, ib.id)
	return nil
}

// detach ends the dispatch to ib: its team's next inputs are kept.
func (hs *heldShard) detach(ib *inbox) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.inboxes[ib.id] == ib {
		delete(hs.inboxes, ib.id)
	}
}

// woken ends an activation of team id.
func (hs *heldShard) woken(id uuid.UUID) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.waking, id)
}

// hasPending reports whether inputs are kept for team id.
func (hs *heldShard) hasPending(id uuid.UUID) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.pending[id]) > 0
}

// refusePending drops the inputs kept for a team that takes none (stopped,
// or unknown to the cluster): acknowledged (out of the work queue) and
// logged.
func (hs *heldShard) refusePending(id uuid.UUID, why string) {
	hs.mu.Lock()
	ms := hs.pending[id]
	delete(hs.pending, id)
	hs.mu.Unlock()
	for _, m := range ms {
		hs.w.logger.Warn("cluster: input refused: "+why, "team_id", id, "input", m.Headers().Get(jetstream.MsgIDHeader))
		_ = m.Ack()
	}
}

// activateFor runs, on this worker, a team of a shard it holds whose input
// came while it does not run here: a passive team is activated (restored,
// then given its input); a team whose lease ended is taken over (this
// worker holds its shard: the team's last holder no longer does); a team
// whose lease still runs is left to the takeover scan, which takes it at
// its lease's end (its input kept meanwhile, or delivered again). Input
// of a stopped or unknown team is refused.
func (w *Worker) activateFor(ctx context.Context, hs *heldShard, id uuid.UUID) {
	defer hs.woken(id)
	if w.runs(id) {
		return // its inbox attaches soon
	}
	gctx, cancel := context.WithTimeout(ctx, w.beat)
	e, err := w.kv.Get(gctx, id.String())
	cancel()
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		hs.refusePending(id, "the cluster has no such team")
		return
	}
	if err != nil {
		w.logger.Debug("cluster: a team's lease could not be read for its input; tried again when it is delivered again", "team_id", id, "error", err)
		return
	}
	var l lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		w.logger.Warn("cluster: a team's lease does not decode; its input waits", "team_id", id, "error", err)
		return
	}
	now := time.Now()
	switch {
	case l.Stopped:
		hs.refusePending(id, "the team was stopped")
		return
	case l.Template != hs.ref.template:
		hs.refusePending(id, fmt.Sprintf("the team is of template %q, not %q", l.Template, hs.ref.template))
		return
	case l.Passive:
	case l.Until.After(now):
		// Taken a moment ago (by this worker, its registration under way,
		// or by the shard's last holder), or a backoff: the scan takes it
		// at its end.
		return
	}
	w.take(ctx, teamLease{id: id, rev: e.Revision(), lease: l})
}

// waitShard waits until this worker holds a shard of template, or ctx
// ends.
func (w *Worker) waitShard(ctx context.Context, template string) error {
	for {
		w.mu.Lock()
		for r := range w.shards {
			if r.template == template {
				w.mu.Unlock()
				return nil
			}
		}
		up := w.shardsUp
		w.mu.Unlock()
		select {
		case <-up:
		case <-ctx.Done():
			return fmt.Errorf("cluster: this worker holds none of the shards of template %q yet: %w", template, context.Cause(ctx))
		}
	}
}

// newTeamID returns a new team id of template whose shard this worker
// holds, waiting for one while it holds none (a worker just started, its
// share handed over to it within a beat or two).
func (w *Worker) newTeamID(ctx context.Context, template string) (uuid.UUID, error) {
	if err := w.waitShard(ctx, template); err != nil {
		return uuid.Nil, err
	}
	for range 1 << 16 {
		id := uuid.New()
		if w.heldShardOf(template, id) != nil {
			return id, nil
		}
	}
	return uuid.Nil, fmt.Errorf("cluster: no new team id of template %q falls in a shard this worker holds", template)
}
