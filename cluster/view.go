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
// idle worker costs what the bucket's changes cost (the renewals of active
// teams), not what it holds (a passive team's lease changes only when it
// is activated), and a scan reads what is due, not every lease.
type bucketView struct {
	mu    sync.Mutex
	index *leaseIndex
	ready bool // the watcher delivered the bucket's values once
}

func newBucketView() *bucketView {
	return &bucketView{index: newLeaseIndex()}
}

// apply takes one entry of the bucket (a put, a delete or a purge).
func (v *bucketView) apply(e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.index.apply(e)
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

// due is what a takeover scan of me at now finds in an index: the
// workers' presences, the teams to take over and me's shares (fairShare),
// the next end of another worker's lease (nextEnd) and whether passive
// teams of me's templates are known.
type due struct {
	workers []presence
	todo    map[string][]teamLease
	share   map[string]int
	next    time.Time
	passive bool
}

// scan is what is due for me at now in ix (see due).
func (ix *leaseIndex) scan(me taker, now time.Time) due {
	todo, share := ix.fairShare(me, now)
	return due{workers: ix.presences(), todo: todo, share: share, next: ix.nextEnd(me, now), passive: ix.passive(me)}
}

// scan is what is due for me at now in the view; false until the watcher
// delivered the bucket's values once.
func (v *bucketView) scan(me taker, now time.Time) (due, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ready {
		return due{}, false
	}
	return v.index.scan(me, now), true
}

// passiveOf is the index's passiveOf, under the view's lock.
func (v *bucketView) passiveOf(me taker, ids map[uuid.UUID]bool) []teamLease {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.index.passiveOf(me, ids)
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
		_ = watch.Stop()
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
				w.view.apply(e)
				if released(e, w.cfg.Owner, time.Now()) {
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

// released reports whether e stores the lease of a team that another
// worker than owner released (ended by now, neither stopped nor passive):
// a worker's Close releases its teams' leases so that the others take
// them at once.
func released(e jetstream.KeyValueEntry, owner string, now time.Time) bool {
	if e.Operation() != jetstream.KeyValuePut || strings.HasPrefix(e.Key(), presencePrefix) {
		return false
	}
	var l lease
	if json.Unmarshal(e.Value(), &l) != nil {
		return false
	}
	return l.Owner != owner && !l.Until.After(now) && !l.Stopped && !l.Passive
}
