package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// indexLease stores l at key id, revision rev, in ix as the watcher would.
func indexLease(t *testing.T, ix *leaseIndex, id uuid.UUID, rev uint64, l lease) {
	t.Helper()
	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	ix.put(id.String(), rev, true, data)
}

// indexPresence stores p at its owner's key, revision rev, in ix.
func indexPresence(t *testing.T, ix *leaseIndex, rev uint64, p presence) {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	ix.put(presenceKey(p.Owner), rev, true, data)
}

// heapLen is how many leases of the template's shard n hold in ix's heaps.
func heapLen(ix *leaseIndex, template string, n int) int {
	total := 0
	for _, h := range ix.ends[shardRef{template: template, n: n}] {
		total += h.Len()
	}
	return total
}

// A lease is indexed by what it is: one of a team that runs or waits to in
// its shard's heap, a passive one counted, a stopped one in neither; a
// change moves it, a delete takes it out, an older revision is ignored,
// and a key that is no team's canonical id holds nothing.
func TestLeaseIndexEntries(t *testing.T) {
	ix := newLeaseIndex(1)
	now := time.Now()
	id := uuid.New()
	indexLease(t, ix, id, 5, lease{Owner: "a", Template: "t", Until: now.Add(time.Second)})
	if heapLen(ix, "t", 0) != 1 || ix.passiveBy["t"] != 0 {
		t.Fatalf("added: heap %d, passive %d; want 1, 0", heapLen(ix, "t", 0), ix.passiveBy["t"])
	}
	indexLease(t, ix, id, 4, lease{Owner: "b", Template: "t", Until: now}) // older: ignored
	if heapLen(ix, "t", 0) != 1 || ix.teams[id].rev != 5 || ix.teams[id].x.Owner != "a" {
		t.Fatalf("an older revision was applied: heap %d, rev %d, owner %s", heapLen(ix, "t", 0), ix.teams[id].rev, ix.teams[id].x.Owner)
	}
	indexLease(t, ix, id, 6, lease{Owner: "b", Template: "t", Until: now.Add(2 * time.Second)}) // taken over by b
	if heapLen(ix, "t", 0) != 1 || ix.teams[id].x.Owner != "b" {
		t.Fatalf("changed owner: heap %d, owner %s; want 1, b", heapLen(ix, "t", 0), ix.teams[id].x.Owner)
	}
	indexLease(t, ix, id, 7, lease{Owner: "b", Template: "u", Until: now.Add(2 * time.Second)}) // another template: another shard
	if heapLen(ix, "t", 0) != 0 || heapLen(ix, "u", 0) != 1 || len(ix.ends) != 1 {
		t.Fatalf("changed template: heaps t %d, u %d, %d heaps; want 0, 1, 1", heapLen(ix, "t", 0), heapLen(ix, "u", 0), len(ix.ends))
	}
	indexLease(t, ix, id, 8, lease{Owner: "b", Template: "t", Passive: true})
	if heapLen(ix, "u", 0) != 0 || ix.passiveBy["t"] != 1 || len(ix.ends) != 0 {
		t.Fatalf("passivated: heap %d, passive %d, heaps %d; want 0, 1, 0", heapLen(ix, "u", 0), ix.passiveBy["t"], len(ix.ends))
	}
	indexLease(t, ix, id, 9, lease{Owner: "b", Template: "t", Passive: true, Stopped: true})
	if ix.passiveBy["t"] != 0 || len(ix.passiveBy) != 0 {
		t.Fatalf("stopped while passive: passive %v; want none", ix.passiveBy)
	}
	indexLease(t, ix, id, 10, lease{Owner: "c", Template: "t", Until: now.Add(time.Second)})
	ix.put(id.String(), 11, false, nil) // deleted
	if s := ix.teams[id]; heapLen(ix, "t", 0) != 0 || s.has || s.rev != 11 {
		t.Fatalf("deleted: heap %d, slot %+v; want 0 and no lease at revision 11", heapLen(ix, "t", 0), s)
	}
	indexLease(t, ix, id, 10, lease{Owner: "c", Template: "t", Until: now}) // older than the delete
	if ix.teams[id].has {
		t.Fatal("a value older than the key's delete was applied")
	}
	ix.put(id.String(), 12, true, []byte("{not json"))
	if ix.teams[id].has {
		t.Fatal("a value that does not decode holds a lease")
	}
	ix.put("URN:UUID:"+uuid.NewString(), 13, true, []byte(`{"owner":"a","template":"t"}`))
	ix.put("not-a-team", 14, true, []byte(`{"owner":"a","template":"t"}`))
	if len(ix.teams) != 1 || len(ix.ends) != 0 {
		t.Fatalf("keys that are no team's canonical id were indexed: %d teams, heaps %v", len(ix.teams), ix.ends)
	}
	indexPresence(t, ix, 15, presence{Owner: "a", Templates: []string{"t"}, Until: now.Add(time.Second)})
	ix.put(presenceKey("a"), 14, true, []byte(`{"owner":"a","templates":["u"]}`)) // older
	if ws := ix.presences(); len(ws) != 1 || ws[0].Templates[0] != "t" || ws[0].rev != 15 {
		t.Fatalf("presences %+v; want a's of revision 15", ws)
	}
	ix.put(presenceKey("a"), 16, false, nil)
	if len(ix.presences()) != 0 {
		t.Fatal("a deleted presence is listed")
	}
}

// A lease whose end passes is found ended by the scan without any entry
// changing: the heap's top; the next end is the first one after now, and a
// lease stored again moves down its heap.
func TestLeaseIndexExpiry(t *testing.T) {
	ix := newLeaseIndex(1)
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	me := taker{owner: "me", templates: map[string]bool{"t": true}}
	held := map[shardRef]bool{{template: "t"}: true}
	ids := make([]uuid.UUID, 5)
	for i := range ids {
		ids[i] = uuid.New()
		indexLease(t, ix, ids[i], uint64(i+1), lease{Owner: "dead", Template: "t", Until: at(i + 1)})
	}
	var ended []uuid.UUID
	ix.ends[shardRef{template: "t"}][""].ended(at(3), func(s *slot) { ended = append(ended, s.x.id) })
	if want := ids[:3]; !sameIDs(ended, want) {
		t.Fatalf("ended at 3 s: %v, want %v", ended, want)
	}
	todo, next := ix.due(me, held, at(3))
	if !sameIDs(leaseIDs(todo), ids[:3]) || !next.Equal(at(4)) {
		t.Fatalf("at 3 s: to resume %v, next %v; want %v, 4 s", leaseIDs(todo), next.Sub(t0), ids[:3])
	}
	indexLease(t, ix, ids[0], 20, lease{Owner: "dead", Template: "t", Until: at(9)}) // stored again
	if got := ix.ends[shardRef{template: "t"}][""].items[0].x.id; got != ids[1] {
		t.Fatalf("the heap's top after the store is %v, want %v", got, ids[1])
	}
	if todo, _ := ix.due(me, held, at(3)); !sameIDs(leaseIDs(todo), ids[1:3]) {
		t.Fatalf("after the store: to resume %v, want %v", leaseIDs(todo), ids[1:3])
	}
	if _, next := ix.due(me, held, at(9)); !next.IsZero() {
		t.Fatalf("next end at 9 s: %v, want none", next.Sub(t0))
	}
	if todo, next := ix.due(me, map[shardRef]bool{}, at(3)); len(todo) != 0 || !next.IsZero() {
		t.Fatalf("holding no shard: to resume %v, next %v; want none", leaseIDs(todo), next)
	}
}

// A scan reads the shards the worker holds alone: the teams of other
// shards, the teams it runs, passive and stopped ones, and the ones it
// waits on are not to resume, whoever their owner; a team of a held shard
// whose lease ended is, whatever its owner (its shard is this worker's:
// its owner no longer holds it).
func TestLeaseIndexDueInHeldShards(t *testing.T) {
	const n = 8
	ix := newLeaseIndex(n)
	now := time.Now()
	ended := now.Add(-time.Second)
	running, waiting := map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
	me := taker{owner: "me", templates: map[string]bool{"t": true},
		running: func(id uuid.UUID) bool { return running[id] }, waiting: waiting}
	held := map[shardRef]bool{{template: "t", n: 0}: true, {template: "t", n: 1}: true, {template: "u", n: 0}: true}
	rev := uint64(0)
	var want []uuid.UUID
	for i := range 400 {
		id := uuid.New()
		rev++
		l := lease{Owner: []string{"me", "b", "gone"}[i%3], Template: "t", Until: ended}
		switch i % 7 {
		case 0:
			l.Passive, l.Until = true, time.Time{}
		case 1:
			l.Stopped = true
		case 2:
			l.Template = "u" // a template this worker does not serve
		case 3:
			if l.Owner == "me" {
				running[id] = true
			} else {
				waiting[id] = true
			}
		case 4:
			l.Until = now.Add(time.Second) // taken a moment ago
		}
		indexLease(t, ix, id, rev, l)
		if s := shardOf(id, n); l.Template == "t" && s < 2 && !l.Passive && !l.Stopped && !running[id] && !waiting[id] && !l.Until.After(now) {
			want = append(want, id)
		}
	}
	todo, next := ix.due(me, held, now)
	if !sameIDs(leaseIDs(todo), want) {
		t.Fatalf("to resume %d teams, want %d", len(todo), len(want))
	}
	if len(want) == 0 || next.IsZero() || !next.After(now) {
		t.Fatalf("want some to resume (%d) and a next end (%v)", len(want), next)
	}
	if !ix.passive(me) || ix.passive(taker{owner: "me", templates: map[string]bool{"v": true}}) {
		t.Fatal("passive teams of t known to a worker of t only")
	}
}

// The end of a lease the worker itself stored does not make its next
// scan: it runs that team, held by the shard. The end of one another
// instance stored in a shard it holds (a team of the shard's previous
// holder, taken a moment before that one died) does.
func TestLeaseIndexNextSkipsItsOwnLeases(t *testing.T) {
	ix := newLeaseIndex(1)
	now := time.Now()
	held := map[shardRef]bool{{template: "t", n: 0}: true}
	mine, theirs := uuid.New(), uuid.New()
	me := taker{owner: "me", instance: "me-1", templates: map[string]bool{"t": true},
		running: func(id uuid.UUID) bool { return id == mine }}
	indexLease(t, ix, mine, 1, lease{Owner: "me", Instance: "me-1", Template: "t", Until: now.Add(time.Second)})
	if todo, next := ix.due(me, held, now); len(todo) != 0 || !next.IsZero() {
		t.Fatalf("its own running team: to resume %v, next %v; want none, no next", leaseIDs(todo), next)
	}
	indexLease(t, ix, theirs, 2, lease{Owner: "gone", Instance: "gone-1", Template: "t", Until: now.Add(2 * time.Second)})
	if _, next := ix.due(me, held, now); !next.Equal(now.Add(2 * time.Second)) {
		t.Fatalf("next %v; want the other instance's lease end, %v", next, now.Add(2*time.Second))
	}
	if todo, _ := ix.due(me, held, now.Add(3*time.Second)); !sameIDs(leaseIDs(todo), []uuid.UUID{theirs}) {
		t.Fatalf("after both ends: to resume %v; want the other instance's team alone", leaseIDs(todo))
	}
}

// The index's scan equals the rule over every lease (dueAll) after any
// sequence of puts, changes and deletes, at any time.
func TestLeaseIndexMatchesFullScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Now()
	owners := []string{"me", "b", "c", "dead"}
	templates := []string{"t", "u", "v"}
	const nshards = 4
	for round := range 200 {
		ix := newLeaseIndex(nshards)
		leases := map[uuid.UUID]teamLease{}
		ids := make([]uuid.UUID, 1+r.IntN(40))
		for i := range ids {
			ids[i] = uuid.New()
		}
		held := map[shardRef]bool{}
		for range r.IntN(2 * nshards) {
			held[shardRef{template: templates[r.IntN(len(templates))], n: r.IntN(nshards)}] = true
		}
		running, waiting := map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
		rev := uint64(0)
		for range 1 + r.IntN(200) {
			rev++
			switch k := r.IntN(10); {
			case k == 0: // a presence: no part in the rule
				indexPresence(t, ix, rev, presence{Owner: owners[r.IntN(len(owners))], Templates: []string{"t"}, Until: t0})
			case k == 1: // a delete
				id := ids[r.IntN(len(ids))]
				ix.put(id.String(), rev, false, nil)
				delete(leases, id)
			default:
				id := ids[r.IntN(len(ids))]
				l := lease{Owner: owners[r.IntN(len(owners))], Template: templates[r.IntN(len(templates))],
					Until: t0.Add(time.Duration(r.IntN(6000)-3000) * time.Millisecond)}
				l.Instance = l.Owner + "-1"
				if r.IntN(4) == 0 {
					l.Instance = l.Owner + "-0" // an earlier run of the same owner
				}
				switch r.IntN(8) {
				case 0:
					l.Passive, l.Until = true, time.Time{}
					if r.IntN(2) == 0 { // waiting for an approval's deadline
						l.WakeAt = t0.Add(time.Duration(r.IntN(6000)-3000) * time.Millisecond)
					}
				case 1:
					l.Stopped = true
				case 2:
					l.Until, l.Error = time.Time{}, "could not resume"
				}
				indexLease(t, ix, id, rev, l)
				leases[id] = teamLease{id: id, rev: rev, lease: l}
				running[id] = l.Owner == "me" && r.IntN(2) == 0
				waiting[id] = r.IntN(6) == 0
			}
		}
		me := taker{owner: "me", instance: "me-1", templates: map[string]bool{"t": true, "u": true},
			running: func(id uuid.UUID) bool { return running[id] }, waiting: waiting}
		teams := slices.Collect(maps.Values(leases))
		for _, now := range []time.Time{t0.Add(-4 * time.Second), t0, t0.Add(time.Duration(r.IntN(4000)) * time.Millisecond), t0.Add(time.Hour)} {
			todo, next := ix.due(me, held, now)
			wantTodo, wantNext := dueAll(me, held, nshards, teams, now)
			if !sameIDs(leaseIDs(todo), leaseIDs(wantTodo)) || !next.Equal(wantNext) {
				t.Fatalf("round %d at %v: to resume %v next %v; the full scan: %v, %v",
					round, now.Sub(t0), leaseIDs(todo), next, leaseIDs(wantTodo), wantNext)
			}
			wantPassive := slices.ContainsFunc(teams, func(x teamLease) bool { return x.Passive && !x.Stopped && me.templates[x.Template] })
			if ix.passive(me) != wantPassive {
				t.Fatalf("round %d: passive %v, want %v", round, ix.passive(me), wantPassive)
			}
		}
	}
}

// dueAll is toResume's rule over every lease: the reference
// TestLeaseIndexMatchesFullScan checks the index against.
func dueAll(me taker, held map[shardRef]bool, nshards int, teams []teamLease, now time.Time) ([]teamLease, time.Time) {
	var todo []teamLease
	var next time.Time
	for _, x := range teams {
		if x.Stopped || (x.Passive && x.WakeAt.IsZero()) || !me.templates[x.Template] || !held[shardRef{template: x.Template, n: shardOf(x.id, nshards)}] {
			continue
		}
		end, theirs := x.Until, x.Instance != me.instance || me.instance == ""
		if x.Passive {
			end, theirs = x.WakeAt, true // a wake counts whoever stored it
		}
		if end.After(now) {
			if theirs && (next.IsZero() || end.Before(next)) {
				next = end
			}
			continue
		}
		if !me.waiting[x.id] && !(x.Owner == me.owner && me.runs(x.id)) {
			todo = append(todo, x)
		}
	}
	return todo, next
}

func leaseIDs(xs []teamLease) []uuid.UUID {
	ids := make([]uuid.UUID, len(xs))
	for i, x := range xs {
		ids[i] = x.id
	}
	return ids
}

func sameIDs(a, b []uuid.UUID) bool {
	cmp := func(x, y uuid.UUID) int { return slices.Compare(x[:], y[:]) }
	a, b = slices.SortedFunc(slices.Values(a), cmp), slices.SortedFunc(slices.Values(b), cmp)
	return slices.Equal(a, b)
}

// BenchmarkTakeoverScan is one takeover scan with nothing due (every
// team passive or its lease running), by the index and, as a baseline, by
// the rule over every lease (the view listed by revision, then dueAll).
func BenchmarkTakeoverScan(b *testing.B) {
	const nshards = 64
	held := map[shardRef]bool{}
	for n := range nshards / 2 {
		held[shardRef{template: "t", n: n}] = true
	}
	for _, n := range []int{1000, 100_000} {
		now := time.Now()
		ix := newLeaseIndex(nshards)
		teams, workers, revs := map[string]teamLease{}, map[string]presence{}, map[string]uint64{}
		for i := range n {
			l := lease{Owner: "gone", Template: "t", Passive: true}
			if i%10 == 0 { // a tenth running on b
				l = lease{Owner: "b", Template: "t", Until: now.Add(time.Minute)}
			}
			x := teamLease{id: uuid.New(), rev: uint64(i + 1), lease: l}
			ix.setTeam(x)
			teams[x.id.String()], revs[x.id.String()] = x, x.rev
		}
		for i, o := range []string{"me", "b"} {
			p := presence{Owner: o, Templates: []string{"t"}, Until: now.Add(time.Minute), key: presenceKey(o), rev: uint64(n + i + 1)}
			ix.setWorker(p)
			workers[p.key], revs[p.key] = p, p.rev
		}
		me := taker{owner: "me", templates: map[string]bool{"t": true}}
		b.Run(fmt.Sprint("index/teams=", n), func(b *testing.B) {
			for b.Loop() {
				if todo, _ := ix.due(me, held, now); len(todo) != 0 || !ix.passive(me) {
					b.Fatalf("scan %v: want nothing due, passive teams known", leaseIDs(todo))
				}
			}
		})
		b.Run(fmt.Sprint("every-lease/teams=", n), func(b *testing.B) {
			for b.Loop() {
				ts, _ := byRevision(teams, workers, revs)
				if todo, next := dueAll(me, held, nshards, ts, now); len(todo) != 0 || next.IsZero() {
					b.Fatalf("scan %v: want nothing due", leaseIDs(todo))
				}
			}
		})
	}
}

// A passive team with a wake time (the deadline of an approval it waits
// for) is due at that time in a shard the worker holds, even one the
// worker itself passivated, and its wake time makes the next scan; a
// passive team without one is never due.
func TestLeaseIndexWakesAPassiveTeamAtItsTime(t *testing.T) {
	ix := newLeaseIndex(1)
	now := time.Now()
	held := map[shardRef]bool{{template: "t", n: 0}: true}
	me := taker{owner: "me", instance: "me-1", templates: map[string]bool{"t": true}}
	waking, sleeping := uuid.New(), uuid.New()
	indexLease(t, ix, waking, 1, lease{Owner: "me", Instance: "me-1", Template: "t", Passive: true, WakeAt: now.Add(time.Second)})
	indexLease(t, ix, sleeping, 2, lease{Owner: "me", Instance: "me-1", Template: "t", Passive: true})
	if todo, next := ix.due(me, held, now); len(todo) != 0 || !next.Equal(now.Add(time.Second)) {
		t.Fatalf("before the wake time: to resume %v, next %v; want none, the wake time", leaseIDs(todo), next)
	}
	if todo, _ := ix.due(me, held, now.Add(2*time.Second)); !sameIDs(leaseIDs(todo), []uuid.UUID{waking}) {
		t.Fatalf("after the wake time: to resume %v; want the waking team alone", leaseIDs(todo))
	}
	// Activated: its lease is an active one of me's, off the wake heap.
	indexLease(t, ix, waking, 3, lease{Owner: "me", Instance: "me-1", Template: "t", Until: now.Add(time.Minute)})
	if todo, next := ix.due(me, held, now.Add(2*time.Second)); len(todo) != 0 || !next.IsZero() {
		t.Fatalf("once activated: to resume %v, next %v; want none, no next", leaseIDs(todo), next)
	}
	if !ix.passive(me) {
		t.Fatal("the sleeping team is not counted passive")
	}
}
