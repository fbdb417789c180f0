package cluster

import (
	"container/heap"
	"encoding/json"
	"strings"
	"time"
	"unique"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// leaseIndex is the leases bucket indexed for the takeover scans, kept
// entry by entry as the bucket changes (bucketView's watcher) so that a
// scan costs what is due, not what the bucket holds: the leases of teams
// that run or wait to (neither stopped nor passive) are in a min-heap per
// shard and worker instance, by end, so a scan reads the heaps of the
// shards its worker holds (the leases ended there, and the first end to
// come of another instance's); the passive leases
// are counted per template and found by id (through their pending input),
// and those with a wake time (lease.WakeAt) are in a heap of their own per
// shard, by that time (wakeHeap);
// the workers' presences are few. Not safe for concurrent use (bucketView
// locks it).
type leaseIndex struct {
	teams     map[uuid.UUID]*slot              // every team's key seen (a deleted one keeps its revision)
	workers   map[string]presence              // by key
	revs      map[string]uint64                // the revision of every presence key seen
	ends      map[shardRef]map[string]*endHeap // by shard, then instance: the leases of teams that run or wait to run
	nshards   int                              // shards per template (a team's shard is a hash of its id)
	passiveBy map[string]int                   // by template: the passive leases, not stopped
}

// slot is one team's key in the index: its last revision and, unless the
// key was deleted, its lease and its place in a heap.
type slot struct {
	rev  uint64
	has  bool // the key holds a lease (x)
	x    teamLease
	heap *endHeap // the heap holding it, nil when none (stopped, passive, deleted)
	pos  int      // its place in heap
}

// newLeaseIndex is an empty index of a cluster of nshards shards per
// template.
func newLeaseIndex(nshards int) *leaseIndex {
	return &leaseIndex{teams: map[uuid.UUID]*slot{}, workers: map[string]presence{}, revs: map[string]uint64{},
		ends: map[shardRef]map[string]*endHeap{}, nshards: nshards, passiveBy: map[string]int{}}
}

// indexLeases is the index of the leases and presences of one read of the
// bucket (readBucket), in a cluster of nshards shards per template.
func indexLeases(nshards int, teams []teamLease, workers []presence) *leaseIndex {
	ix := newLeaseIndex(nshards)
	for _, x := range teams {
		ix.setTeam(x)
	}
	for _, p := range workers {
		ix.setWorker(p)
	}
	return ix
}

// apply takes one entry of the bucket (a put, a delete or a purge) unless
// the index holds a later revision of its key. A key that is neither a
// presence nor a team's id (in its canonical form), or whose value does
// not decode, holds nothing.
func (ix *leaseIndex) apply(e jetstream.KeyValueEntry) {
	ix.put(e.Key(), e.Revision(), e.Operation() == jetstream.KeyValuePut, e.Value())
}

// put is apply's body: the value of key at revision rev, or its deletion
// (put false).
func (ix *leaseIndex) put(key string, rev uint64, put bool, value []byte) {
	if strings.HasPrefix(key, presencePrefix) {
		if rev < ix.revs[key] {
			return // delivered again (the watcher's consumer was reset): an older value
		}
		ix.revs[key] = rev
		delete(ix.workers, key)
		var p presence
		if put && json.Unmarshal(value, &p) == nil {
			p.key, p.rev = key, rev
			ix.workers[key] = p
		}
		return
	}
	id, err := uuid.Parse(key)
	if err != nil || id.String() != key {
		return
	}
	if s := ix.teams[id]; s != nil && rev < s.rev {
		return
	}
	var l lease
	if !put || json.Unmarshal(value, &l) != nil {
		ix.delTeam(id, rev)
		return
	}
	ix.setTeam(teamLease{id: id, rev: rev, lease: l})
}

// setWorker stores a worker's presence (at its key, its owner's when
// unset).
func (ix *leaseIndex) setWorker(p presence) {
	if p.key == "" {
		p.key = presenceKey(p.Owner)
	}
	ix.revs[p.key] = max(ix.revs[p.key], p.rev)
	ix.workers[p.key] = p
}

// setTeam stores a team's lease in place of the one its key held.
func (ix *leaseIndex) setTeam(x teamLease) {
	s := ix.teams[x.id]
	if s == nil {
		s = &slot{}
		ix.teams[x.id] = s
	}
	// The same few owners, templates and instances in every lease: held once.
	x.Owner, x.Template, x.Instance = intern(x.Owner), intern(x.Template), intern(x.Instance)
	if s.heap != nil && !x.Stopped && !x.Passive && x.Template == s.x.Template && x.Instance == s.heap.instance {
		s.rev, s.x = x.rev, x // the same heap (its shard's and instance's): its order mended in place
		heap.Fix(s.heap, s.pos)
		return
	}
	ix.unindex(s)
	s.rev, s.has, s.x = x.rev, true, x
	inst := x.Instance
	switch {
	case x.Stopped:
		return
	case x.Passive:
		ix.passiveBy[x.Template]++
		if x.WakeAt.IsZero() {
			return
		}
		inst = wakeHeap
	}
	r := shardRef{template: x.Template, n: shardOf(x.id, max(ix.nshards, 1))}
	byInst := ix.ends[r]
	if byInst == nil {
		byInst = map[string]*endHeap{}
		ix.ends[r] = byInst
	}
	h := byInst[inst]
	if h == nil {
		h = &endHeap{ref: r, instance: inst}
		byInst[inst] = h
	}
	s.heap = h
	heap.Push(h, s)
}

// wakeHeap is the key, among a shard's heaps by worker instance, of the
// heap of its passive leases with a wake time: no worker's instance (a
// uuid has no space), so that its first wake always counts for a scan's
// next.
const wakeHeap = " wake"

// dueAt is when a lease is due in a takeover scan: a passive lease's wake
// time (lease.WakeAt), any other's end.
func (x *lease) dueAt() time.Time {
	if x.Passive {
		return x.WakeAt
	}
	return x.Until
}

// delTeam deletes a team's lease, its key keeping revision rev.
func (ix *leaseIndex) delTeam(id uuid.UUID, rev uint64) {
	s := ix.teams[id]
	if s == nil {
		s = &slot{}
		ix.teams[id] = s
	}
	ix.unindex(s)
	s.rev, s.has, s.x = rev, false, teamLease{}
}

// unindex takes a slot's lease out of the heaps and counts.
func (ix *leaseIndex) unindex(s *slot) {
	if !s.has {
		return
	}
	x := s.x
	if h := s.heap; h != nil {
		heap.Remove(h, s.pos)
		s.heap = nil
		if h.Len() == 0 {
			if byInst := ix.ends[h.ref]; byInst != nil {
				delete(byInst, h.instance)
				if len(byInst) == 0 {
					delete(ix.ends, h.ref)
				}
			}
		}
	}
	if x.Passive && !x.Stopped {
		if ix.passiveBy[x.Template]--; ix.passiveBy[x.Template] <= 0 {
			delete(ix.passiveBy, x.Template)
		}
	}
}

// intern returns s's canonical copy.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// presences lists the workers' presences.
func (ix *leaseIndex) presences() []presence {
	ws := make([]presence, 0, len(ix.workers))
	for _, p := range ix.workers {
		ws = append(ws, p)
	}
	return ws
}

// due returns the teams me is to resume at now and when its next scan is
// due (zero when no lease says), from the heaps of the shards me holds
// (held), not from every lease (see the function toResume, whose rule
// this is): the leases ended of those heaps (and the passive ones whose
// wake time came), and the earliest end after now among the leases
// another instance stored there and the wake times.
func (ix *leaseIndex) due(me taker, held map[shardRef]bool, now time.Time) ([]teamLease, time.Time) {
	var todo []teamLease
	var next time.Time
	for r := range held {
		if !me.templates[r.template] {
			continue
		}
		for inst, h := range ix.ends[r] {
			h.ended(now, func(s *slot) {
				x := s.x
				if !me.waiting[x.id] && !(x.Owner == me.owner && me.runs(x.id)) {
					todo = append(todo, x)
				}
			})
			if inst == me.instance && me.instance != "" {
				continue // its own: a team it runs needs no scan at the lease's end
			}
			if e := h.firstAfter(now); !e.IsZero() && (next.IsZero() || e.Before(next)) {
				next = e
			}
		}
	}
	return todo, next
}

// passive reports whether a passive team of one of me's templates is
// known.
func (ix *leaseIndex) passive(me taker) bool {
	for name := range me.templates {
		if ix.passiveBy[name] > 0 {
			return true
		}
	}
	return false
}

// endHeap is a min-heap of leases by end (lease.dueAt: a passive lease's
// wake time), each slot knowing its place.
type endHeap struct {
	ref      shardRef // the shard whose leases it holds
	instance string   // the worker instance that stored them, or wakeHeap (passive leases to wake)
	items    []*slot
}

func (h *endHeap) Len() int           { return len(h.items) }
func (h *endHeap) Less(i, j int) bool { return h.items[i].x.dueAt().Before(h.items[j].x.dueAt()) }
func (h *endHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].pos, h.items[j].pos = i, j
}

// Push is heap.Interface's (use heap.Push).
func (h *endHeap) Push(v any) {
	s := v.(*slot)
	s.pos = len(h.items)
	h.items = append(h.items, s)
}

// Pop is heap.Interface's (use heap.Pop and heap.Remove).
func (h *endHeap) Pop() any {
	n := len(h.items) - 1
	s := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	return s
}

// ended calls fn for each lease of h ended at now (its end not after
// now): the top of the heap, O(the leases ended).
func (h *endHeap) ended(now time.Time, fn func(*slot)) {
	var walk func(i int)
	walk = func(i int) {
		if i >= len(h.items) || h.items[i].x.dueAt().After(now) {
			return // and every lease below it ends later
		}
		fn(h.items[i])
		walk(2*i + 1)
		walk(2*i + 2)
	}
	walk(0)
}

// firstAfter returns the earliest end after now in h (zero when none),
// going down from the top past the leases ended.
func (h *endHeap) firstAfter(now time.Time) time.Time {
	var walk func(i int) time.Time
	walk = func(i int) time.Time {
		if i >= len(h.items) {
			return time.Time{}
		}
		if u := h.items[i].x.dueAt(); u.After(now) {
			return u // the earliest of its subtree
		}
		a, b := walk(2*i+1), walk(2*i+2)
		if a.IsZero() || !b.IsZero() && b.Before(a) {
			return b
		}
		return a
	}
	return walk(0)
}
