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

// heapLen is how many leases of template and owner can end in ix.
func heapLen(ix *leaseIndex, template, owner string) int {
	if h := ix.ends[template][owner]; h != nil {
		return h.Len()
	}
	return 0
}

// A lease is indexed by what it is: one that can end in its template's
// and owner's heap, a passive one counted, a stopped one in neither; a
// change moves it, a delete takes it out, an older revision is ignored,
// and a key that is no team's canonical id holds nothing.
func TestLeaseIndexEntries(t *testing.T) {
	ix := newLeaseIndex()
	now := time.Now()
	id := uuid.New()
	indexLease(t, ix, id, 5, lease{Owner: "a", Template: "t", Until: now.Add(time.Second)})
	if heapLen(ix, "t", "a") != 1 || ix.passiveBy["t"] != 0 {
		t.Fatalf("added: heap %d, passive %d; want 1, 0", heapLen(ix, "t", "a"), ix.passiveBy["t"])
	}
	indexLease(t, ix, id, 4, lease{Owner: "b", Template: "t", Until: now}) // older: ignored
	if heapLen(ix, "t", "a") != 1 || heapLen(ix, "t", "b") != 0 || ix.teams[id].rev != 5 {
		t.Fatalf("an older revision was applied: heaps a %d, b %d, rev %d", heapLen(ix, "t", "a"), heapLen(ix, "t", "b"), ix.teams[id].rev)
	}
	indexLease(t, ix, id, 6, lease{Owner: "b", Template: "t", Until: now.Add(2 * time.Second)}) // taken over by b
	if heapLen(ix, "t", "a") != 0 || heapLen(ix, "t", "b") != 1 || ix.ends["t"]["a"] != nil {
		t.Fatalf("changed owner: heaps a %d, b %d; want 0, 1 and a's gone", heapLen(ix, "t", "a"), heapLen(ix, "t", "b"))
	}
	indexLease(t, ix, id, 7, lease{Owner: "b", Template: "t", Passive: true})
	if heapLen(ix, "t", "b") != 0 || ix.passiveBy["t"] != 1 || len(ix.ends) != 0 {
		t.Fatalf("passivated: heap %d, passive %d, templates with heaps %d; want 0, 1, 0", heapLen(ix, "t", "b"), ix.passiveBy["t"], len(ix.ends))
	}
	indexLease(t, ix, id, 8, lease{Owner: "b", Template: "t", Passive: true, Stopped: true})
	if ix.passiveBy["t"] != 0 || len(ix.passiveBy) != 0 {
		t.Fatalf("stopped while passive: passive %v; want none", ix.passiveBy)
	}
	indexLease(t, ix, id, 9, lease{Owner: "c", Template: "t", Until: now.Add(time.Second)})
	ix.put(id.String(), 10, false, nil) // deleted
	if s := ix.teams[id]; heapLen(ix, "t", "c") != 0 || s.has || s.rev != 10 {
		t.Fatalf("deleted: heap %d, slot %+v; want 0 and no lease at revision 10", heapLen(ix, "t", "c"), s)
	}
	indexLease(t, ix, id, 9, lease{Owner: "c", Template: "t", Until: now}) // older than the delete
	if ix.teams[id].has {
		t.Fatal("a value older than the key's delete was applied")
	}
	ix.put(id.String(), 11, true, []byte("{not json"))
	if ix.teams[id].has {
		t.Fatal("a value that does not decode holds a lease")
	}
	ix.put("URN:UUID:"+uuid.NewString(), 12, true, []byte(`{"owner":"a","template":"t"}`))
	ix.put("not-a-team", 13, true, []byte(`{"owner":"a","template":"t"}`))
	if len(ix.teams) != 1 || len(ix.ends) != 0 {
		t.Fatalf("keys that are no team's canonical id were indexed: %d teams, heaps %v", len(ix.teams), ix.ends)
	}
	indexPresence(t, ix, 14, presence{Owner: "a", Templates: []string{"t"}, Until: now.Add(time.Second)})
	ix.put(presenceKey("a"), 13, true, []byte(`{"owner":"a","templates":["u"]}`)) // older
	if ws := ix.presences(); len(ws) != 1 || ws[0].Templates[0] != "t" || ws[0].rev != 14 {
		t.Fatalf("presences %+v; want a's of revision 14", ws)
	}
	ix.put(presenceKey("a"), 15, false, nil)
	if len(ix.presences()) != 0 {
		t.Fatal("a deleted presence is listed")
	}
}

// A lease whose end passes is found ended by the scan without any entry
// changing: the heap's top; the next end is the first one after now of
// another owner's heap, and a renewal moves a lease down its heap.
func TestLeaseIndexExpiry(t *testing.T) {
	ix := newLeaseIndex()
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const d = time.Second
	me := taker{owner: "me", lease: d, templates: map[string]bool{"t": true}}
	ids := make([]uuid.UUID, 5)
	for i := range ids {
		ids[i] = uuid.New()
		indexLease(t, ix, ids[i], uint64(i+1), lease{Owner: "dead", Template: "t", Until: at(i + 1)})
	}
	indexPresence(t, ix, 10, presence{Owner: "dead", Templates: []string{"t"}, Until: at(0)})
	var ended []uuid.UUID
	ix.ends["t"]["dead"].ended(at(3), func(s *slot) { ended = append(ended, s.x.id) })
	if want := ids[:3]; !sameIDs(ended, want) {
		t.Fatalf("ended at 3 s: %v, want %v", ended, want)
	}
	if got := ix.nextEnd(me, at(3)); !got.Equal(at(4)) {
		t.Fatalf("next end at 3 s: %v, want 4 s", got.Sub(t0))
	}
	todo, share := ix.fairShare(me, at(3))
	if len(todo["t"]) != 3 || share["t"] != 5 { // a dead owner's: all to this worker, 2 still running
		t.Fatalf("at 3 s: %d to resume, share %d; want 3, 5", len(todo["t"]), share["t"])
	}
	indexLease(t, ix, ids[0], 20, lease{Owner: "dead", Template: "t", Until: at(9)}) // renewed after all
	if got := ix.ends["t"]["dead"].items[0].x.id; got != ids[1] {
		t.Fatalf("the heap's top after a renewal is %v, want %v", got, ids[1])
	}
	if todo, _ := ix.fairShare(me, at(3)); !sameIDs(leaseIDs(todo["t"]), ids[1:3]) {
		t.Fatalf("after the renewal: to resume %v, want %v", leaseIDs(todo["t"]), ids[1:3])
	}
	if got := ix.nextEnd(me, at(9)); !got.IsZero() {
		t.Fatalf("next end at 9 s: %v, want none", got.Sub(t0))
	}
}

// The fair share's counts from the heaps' sizes: the live teams of every
// owner and this worker's own, with none ended, so a scan that finds
// nothing due reads no lease.
func TestLeaseIndexShareCounts(t *testing.T) {
	ix := newLeaseIndex()
	now := time.Now()
	const d = time.Second
	me := taker{owner: "me", lease: d, templates: map[string]bool{"t": true}}
	indexPresence(t, ix, 1, presence{Owner: "me", Templates: []string{"t"}, Until: now.Add(d)})
	indexPresence(t, ix, 2, presence{Owner: "b", Templates: []string{"t"}, Until: now.Add(d)})
	indexPresence(t, ix, 3, presence{Owner: "c", Templates: []string{"t"}, Until: now.Add(d)})
	rev := uint64(10)
	add := func(n int, owner string, l lease) {
		for range n {
			rev++
			l.Owner, l.Template = owner, "t"
			indexLease(t, ix, uuid.New(), rev, l)
		}
	}
	add(7, "me", lease{Until: now.Add(d)})
	add(5, "b", lease{Until: now.Add(d)})
	add(1000, "c", lease{Passive: true})
	add(3, "c", lease{Stopped: true})
	if todo, share := ix.fairShare(me, now); len(todo) != 0 || len(share) != 0 {
		t.Fatalf("nothing ended: to resume %v, shares %v; want none", todo, share)
	}
	add(5, "gone", lease{Until: now.Add(-2 * d)}) // a worker with no presence: to resume
	todo, share := ix.fairShare(me, now)
	// 7 + 5 live, 5 to resume, over three live workers: ceil(17/3) - 7.
	if len(todo["t"]) != 5 || share["t"] != 6-7 {
		t.Fatalf("to resume %d, share %d; want 5, -1", len(todo["t"]), share["t"])
	}
	if !ix.passive(me) || ix.passive(taker{owner: "me", templates: map[string]bool{"u": true}}) {
		t.Fatal("passive teams of t known to a worker of t only")
	}
}

// The index's scan equals the rules over every lease (the scan as it
// was: fairShareAll, nextEndAll) after any sequence of puts, changes and
// deletes, at any time.
func TestLeaseIndexMatchesFullScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Now()
	const d = time.Second
	owners := []string{"me", "b", "c", "dead"}
	templates := []string{"t", "u", "v"}
	for round := range 200 {
		ix := newLeaseIndex()
		leases := map[uuid.UUID]teamLease{}
		presences := map[string]presence{}
		ids := make([]uuid.UUID, 1+r.IntN(40))
		for i := range ids {
			ids[i] = uuid.New()
		}
		running, waiting := map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
		rev := uint64(0)
		for range 1 + r.IntN(200) {
			rev++
			switch k := r.IntN(10); {
			case k == 0: // a presence
				o := owners[r.IntN(len(owners))]
				p := presence{Owner: o, Templates: []string{templates[r.IntN(2)], templates[1+r.IntN(2)]},
					Until: t0.Add(time.Duration(r.IntN(4000)-2000) * time.Millisecond)}
				if o == "dead" {
					p.Until = t0.Add(-time.Hour)
				}
				indexPresence(t, ix, rev, p)
				p.key, p.rev = presenceKey(o), rev
				presences[o] = p
			case k == 1: // a delete
				id := ids[r.IntN(len(ids))]
				ix.put(id.String(), rev, false, nil)
				delete(leases, id)
			default:
				id := ids[r.IntN(len(ids))]
				l := lease{Owner: owners[r.IntN(len(owners))], Template: templates[r.IntN(len(templates))],
					Until: t0.Add(time.Duration(r.IntN(6000)-3000) * time.Millisecond)}
				switch r.IntN(8) {
				case 0:
					l.Passive, l.Until = true, time.Time{}
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
		me := taker{owner: "me", lease: d, templates: map[string]bool{"t": true, "u": true},
			running: func(id uuid.UUID) bool { return running[id] }, waiting: waiting}
		teams := slices.Collect(maps.Values(leases))
		workers := slices.Collect(maps.Values(presences))
		for _, now := range []time.Time{t0.Add(-4 * time.Second), t0, t0.Add(time.Duration(r.IntN(4000)) * time.Millisecond), t0.Add(time.Hour)} {
			todo, share := ix.fairShare(me, now)
			wantTodo, wantShare := fairShareAll(me, teams, workers, now)
			if !sameTodo(todo, wantTodo) || !maps.Equal(share, wantShare) {
				t.Fatalf("round %d at %v: to resume %v share %v; the full scan: %v, %v",
					round, now.Sub(t0), todoIDs(todo), share, todoIDs(wantTodo), wantShare)
			}
			if got, want := ix.nextEnd(me, now), nextEndAll(me, teams, workers, now); !got.Equal(want) {
				t.Fatalf("round %d at %v: next end %v, the full scan's %v", round, now.Sub(t0), got, want)
			}
			wantPassive := slices.ContainsFunc(teams, func(x teamLease) bool { return x.Passive && !x.Stopped && me.templates[x.Template] })
			if ix.passive(me) != wantPassive {
				t.Fatalf("round %d: passive %v, want %v", round, ix.passive(me), wantPassive)
			}
		}
	}
}

// fairShareAll is the fair share as the scan computed it before the index,
// over every lease: the reference TestLeaseIndexMatchesFullScan checks the
// index against.
func fairShareAll(me taker, teams []teamLease, workers []presence, now time.Time) (map[string][]teamLease, map[string]int) {
	serving := map[string]map[string]bool{}
	for name := range me.templates {
		serving[name] = map[string]bool{me.owner: true}
	}
	alive := map[string]bool{me.owner: true}
	for _, p := range workers {
		if !p.Until.After(now) {
			continue
		}
		alive[p.Owner] = true
		for _, name := range p.Templates {
			if serving[name] != nil {
				serving[name][p.Owner] = true
			}
		}
	}
	live, mine := map[string]int{}, map[string]int{}
	todo := map[string][]teamLease{}
	for _, x := range teams {
		ended := !x.Until.After(now)
		switch {
		case x.Stopped || x.Passive || serving[x.Template] == nil:
		case ended && me.waiting[x.id]:
		case x.Owner == me.owner && ended && !me.runs(x.id):
			todo[x.Template] = append(todo[x.Template], x)
		case !ended || x.Owner == me.owner || alive[x.Owner] && now.Before(x.Until.Add(me.lease)):
			live[x.Template]++
			if x.Owner == me.owner {
				mine[x.Template]++
			}
		default:
			todo[x.Template] = append(todo[x.Template], x)
		}
	}
	share := map[string]int{}
	for name, xs := range todo {
		n := len(serving[name])
		share[name] = (live[name]+len(xs)+n-1)/n - mine[name]
	}
	return todo, share
}

// nextEndAll is nextEnd over every lease, as before the index.
func nextEndAll(me taker, teams []teamLease, workers []presence, now time.Time) time.Time {
	alive := map[string]time.Time{} // a live worker's presence end
	for _, p := range workers {
		if p.Until.After(now) && p.Until.After(alive[p.Owner]) {
			alive[p.Owner] = p.Until
		}
	}
	var next time.Time
	for _, x := range teams {
		if !me.templates[x.Template] || x.Stopped || x.Owner == me.owner {
			continue
		}
		end := x.Until
		if !end.After(now) {
			p, ok := alive[x.Owner]
			if !ok || x.Passive {
				continue // to take now (this scan), or not to take
			}
			end = p
			if limit := x.Until.Add(me.lease); limit.Before(end) {
				end = limit
			}
			if !end.After(now) {
				continue
			}
		}
		if next.IsZero() || end.Before(next) {
			next = end
		}
	}
	return next
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

func sameTodo(a, b map[string][]teamLease) bool {
	if len(a) != len(b) {
		return false
	}
	for name, xs := range a {
		if !sameIDs(leaseIDs(xs), leaseIDs(b[name])) {
			return false
		}
	}
	return true
}

func todoIDs(todo map[string][]teamLease) map[string]string {
	out := map[string]string{}
	for name, xs := range todo {
		out[name] = fmt.Sprint(len(xs), leaseIDs(xs))
	}
	return out
}

// BenchmarkTakeoverScan is one takeover scan with nothing due (every
// team passive or its lease running), by the index and, as a baseline, by
// the scan over every lease it replaced (the view listed by revision,
// then the fair share and next end over the list).
func BenchmarkTakeoverScan(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		now := time.Now()
		ix := newLeaseIndex()
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
		me := taker{owner: "me", lease: time.Second, templates: map[string]bool{"t": true}}
		b.Run(fmt.Sprint("index/teams=", n), func(b *testing.B) {
			for b.Loop() {
				if s := ix.scan(me, now); len(s.todo) != 0 || !ix.passive(me) {
					b.Fatalf("scan %+v: want nothing due, passive teams known", s.todo)
				}
			}
		})
		b.Run(fmt.Sprint("every-lease/teams=", n), func(b *testing.B) {
			for b.Loop() {
				ts, ws := byRevision(teams, workers, revs)
				if todo, _ := fairShareAll(me, ts, ws, now); len(todo) != 0 || nextEndAll(me, ts, ws, now).IsZero() {
					b.Fatalf("scan %v: want nothing due", todo)
				}
			}
		})
	}
}
