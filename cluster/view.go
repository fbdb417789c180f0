package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/internal/clock"
)

// bucketView is a worker's copy of the leases bucket, kept up to date by
// one watcher (watchBucket) and indexed as it changes (leaseIndex): the
// takeover scans read it instead of the whole bucket every beat, so an
// idle worker costs what the bucket's changes cost (the renewals of the
// workers' presences and shards), not what it holds (a team's lease
// changes only when it is taken, passivated, activated or stopped), and a
// scan reads what is due, not every lease.
type bucketView struct {
	mu     sync.Mutex
	index  *leaseIndex
	shards map[shardRef]shardLease // the shards' leases
	ready  bool                    // the watcher delivered the bucket's values once
}

// newBucketView is an empty view of a cluster of nshards shards per
// template.
func newBucketView(nshards int) *bucketView {
	return &bucketView{index: newLeaseIndex(nshards), shards: map[shardRef]shardLease{}}
}

// apply takes one entry of the bucket (a put, a delete or a purge).
func (v *bucketView) apply(e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if r, ok := parseShardKey(e.Key()); ok {
		if cur, ok := v.shards[r]; ok && e.Revision() < cur.rev {
			return // delivered again: an older value
		}
		if x, ok := decodeShard(e); ok {
			v.shards[r] = x
		} else {
			delete(v.shards, r)
		}
		return
	}
	v.index.apply(e)
}

// shardLeases returns the leases of a template's shards, by number; false
// until the watcher delivered the bucket's values once.
func (v *bucketView) shardLeases(template string) (map[int]shardLease, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ready {
		return nil, false
	}
	out := map[int]shardLease{}
	for r, x := range v.shards {
		if r.template == template {
			out[r.n] = x
		}
	}
	return out, true
}

// nextShardEnd is the first moment after now a shard of templates held
// by another worker may be free for a scan to take: the end of its lease,
// or, for a lease already ended whose holder is still present (planShards
// takes it only once its holder is gone, or a lease after its end), the
// earlier of its holder's presence end (in present, by owner) and that
// lease later. A worker killed renews neither its shards nor its
// presence, and its presence can end after its shards' leases (each
// Create stores the presence between beats): without the second kind the
// scan at the leases' end found the holder still present, and the next
// came a beat later.
func (v *bucketView) nextShardEnd(owner string, templates map[string]Template, present map[string]time.Time, lease time.Duration, now time.Time) time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	var next time.Time
	for r, x := range v.shards {
		if _, ok := templates[r.template]; !ok || x.Owner == owner || x.Until.IsZero() {
			continue
		}
		at := x.Until
		if !at.After(now) {
			at = x.Until.Add(lease)
			if p := present[x.Owner]; p.Before(at) {
				at = p // zero (its holder gone): free now
			}
			if !at.After(now) {
				continue // free now: this scan saw it so
			}
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// joins reports whether e stores the presence of a worker other than
// owner that the view does not know yet (a worker joined: a scan hands
// its share of shards over now).
func (v *bucketView) joins(e jetstream.KeyValueEntry, owner string) bool {
	if e.Operation() != jetstream.KeyValuePut || !strings.HasPrefix(e.Key(), presencePrefix) || e.Key() == presenceKey(owner) {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	_, known := v.index.workers[e.Key()]
	return v.ready && !known
}

// applyEntry puts one entry of the bucket into teams or workers (by key),
// unless an entry of a later revision of its key is there; a key of
// neither kind, or whose value does not decode, is dropped.
func applyEntry(e jetstream.KeyValueEntry, teams map[string]teamLease, workers map[string]presence, revs map[string]uint64) {
	k := e.Key()
	if e.Revision() < revs[k] {
		return // delivered again (the watcher's consumer was reset): an older value
	}
	delete(teams, k)
	delete(workers, k)
	revs[k] = e.Revision()
	if e.Operation() != jetstream.KeyValuePut {
		return // deleted
	}
	if strings.HasPrefix(k, presencePrefix) {
		var p presence
		if json.Unmarshal(e.Value(), &p) == nil {
			p.key, p.rev = k, e.Revision()
			workers[k] = p
		}
		return
	}
	var l lease
	if id, err := uuid.Parse(k); err == nil && json.Unmarshal(e.Value(), &l) == nil {
		teams[k] = teamLease{id: id, rev: e.Revision(), lease: l}
	}
}

// byRevision lists teams and workers in the order of their revisions.
func byRevision(teams map[string]teamLease, workers map[string]presence, revs map[string]uint64) ([]teamLease, []presence) {
	byRev := func(a, b string) int { return cmp.Compare(revs[a], revs[b]) }
	ts := make([]teamLease, 0, len(teams))
	for _, k := range slices.SortedFunc(maps.Keys(teams), byRev) {
		ts = append(ts, teams[k])
	}
	ws := make([]presence, 0, len(workers))
	for _, k := range slices.SortedFunc(maps.Keys(workers), byRev) {
		ws = append(ws, workers[k])
	}
	return ts, ws
}

// presences lists the workers' presences; false until the watcher
// delivered the bucket's values once.
func (v *bucketView) presences() ([]presence, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ready {
		return nil, false
	}
	return v.index.presences(), true
}

// due is what is due for me at now in the view (leaseIndex.due), the
// shards me holds being held.
func (v *bucketView) due(me taker, held map[shardRef]bool, now time.Time) ([]teamLease, time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.index.due(me, held, now)
}

// watchBucket keeps w.view until ctx ends (Close): one watcher of the
// whole bucket, made again (after a pause) when it fails. A view that lags
// is safe: a takeover stores the lease by compare-and-set on the revision
// the view holds, which fails on a newer one.
func (w *Worker) watchBucket(ctx context.Context) {
	wait := retryMin
	for ctx.Err() == nil {
		watch, err := w.kv.WatchAll(ctx)
		if err != nil {
			w.logger.Debug("cluster: the leases bucket cannot be watched; the scans read it meanwhile", "error", err)
			if clock.Sleep(ctx, wait) != nil {
				return
			}
			wait = min(2*wait, retryMax)
			continue
		}
		wait = retryMin
		w.follow(ctx, watch, lastRevision(ctx, w.kv))
		stopWatch(watch)
	}
}

// follow applies a watcher's entries to the view until ctx ends or the
// watcher's channel closes. The view is ready once it holds the bucket up
// to last, its last revision when the watch began, or at the watcher's end
// of the initial values (which can come early under concurrent writes:
// see readBucket).
func (w *Worker) follow(ctx context.Context, watch jetstream.KeyWatcher, last uint64) {
	var seen uint64
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-watch.Updates():
			if !ok {
				return
			}
			if e != nil {
				seen = max(seen, e.Revision())
				joined := w.view.joins(e, w.cfg.Owner)
				w.view.apply(e)
				w.noticed(e)
				if joined || released(e, w.cfg.Owner, time.Now()) {
					select { // a scan takes it now
					case w.freed <- struct{}{}:
					default:
					}
				}
			}
			if e == nil || seen >= last { // the marker may come early: a view that lags is safe (watchBucket)
				w.view.mu.Lock()
				w.view.ready = true
				w.view.mu.Unlock()
			}
		}
	}
}

// lastRevision is the bucket's last revision (0 when it cannot be read:
// the view is then ready at the watcher's end of the initial values).
func lastRevision(ctx context.Context, kv jetstream.KeyValue) uint64 {
	st, err := kv.Status(ctx)
	if err != nil {
		return 0
	}
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		return bs.StreamInfo().State.LastSeq
	}
	return 0
}

// released reports whether e stores the lease of a team or a shard that
// another worker than owner released (ended by now, neither stopped nor
// passive): a worker's Close, or its handover of a shard, releases leases
// so that the others take them at once.
func released(e jetstream.KeyValueEntry, owner string, now time.Time) bool {
	if e.Operation() != jetstream.KeyValuePut || strings.HasPrefix(e.Key(), presencePrefix) || e.Key() == layoutKey {
		return false
	}
	var l lease
	if json.Unmarshal(e.Value(), &l) != nil {
		return false
	}
	return l.Owner != owner && !l.Until.After(now) && !l.Stopped && !l.Passive
}
