package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Placement's rules (placement.go), on plain values: no NATS.

// fewest breaks a tie at random among the live workers serving the
// template, counting the teams of every template they hold, ended leases
// included (a renewal that lags); a dead worker, one without the
// template, a stopped lease count for nothing.
func TestFewestRule(t *testing.T) {
	now := time.Now()
	live, ended := now.Add(time.Minute), now.Add(-time.Second)
	ws := []presence{
		{Owner: "a", Templates: []string{"t"}, Until: live},
		{Owner: "b", Templates: []string{"t", "u"}, Until: live},
		{Owner: "c", Templates: []string{"t"}, Until: live},
		{Owner: "dead", Templates: []string{"t"}, Until: ended},
		{Owner: "other", Templates: []string{"u"}, Until: live},
	}
	held := func(owner, tmpl string, until time.Time, stopped bool) teamLease {
		return teamLease{id: uuid.New(), lease: lease{Owner: owner, Template: tmpl, Until: until, Stopped: stopped}}
	}
	teams := []teamLease{
		held("a", "t", live, false), held("a", "u", live, false), // a: 2
		held("b", "u", live, false), held("b", "t", live, true), // b: 1
		held("c", "t", live, false), // c: 1
		held("dead", "t", ended, false),
	}
	picked := map[string]int{}
	for range 200 {
		p, ok := fewest(teams, ws, "t", now)
		if !ok {
			t.Fatal("no worker picked")
		}
		picked[p.Owner]++
	}
	if len(picked) != 2 || picked["b"] == 0 || picked["c"] == 0 {
		t.Fatalf("picked %v; want b and c (one team each), both", picked)
	}
	teams = append(teams, held("c", "t", ended, false)) // c: 2, its renewal lagging
	if p, _ := fewest(teams, ws, "t", now); p.Owner != "b" {
		t.Fatalf("picked %s, want b (c's ended lease counts for c)", p.Owner)
	}
	if _, ok := fewest(teams, ws, "v", now); ok {
		t.Fatal("a worker picked for a template none serves")
	}
	if p, _ := fewest(teams, ws, "u", now); p.Owner != "other" {
		t.Fatalf("picked %s for u, want other (no team)", p.Owner)
	}
}

// The takeover's fair share: the template's teams, live and to
// resume, over its live workers, rounded up, less the live ones this
// worker holds; a live owner's lease that just ended is left to it.
func TestFairShare(t *testing.T) {
	now := time.Now()
	const d = time.Second
	me := taker{owner: "me", lease: d, templates: map[string]bool{"counters": true, "held": true}}
	ws := []presence{
		{Owner: "me", Templates: []string{"counters", "held"}, Until: now.Add(d)},
		{Owner: "b", Templates: []string{"counters"}, Until: now.Add(d)},
		{Owner: "dead", Templates: []string{"counters", "held"}, Until: now.Add(-d)},
	}
	var teams []teamLease
	add := func(n int, owner, tmpl string, until time.Time) {
		for range n {
			teams = append(teams, teamLease{id: uuid.New(), lease: lease{Owner: owner, Template: tmpl, Until: until}})
		}
	}
	add(3, "me", "counters", now.Add(d))
	add(5, "b", "counters", now.Add(d))
	add(1, "b", "counters", now.Add(-d/2))  // b's renewal lags: left to b
	add(1, "b", "counters", now.Add(-2*d))  // b lost it long ago: to resume
	add(1, "me", "counters", now.Add(-d/2)) // mine, not run here: to resume
	add(6, "dead", "counters", now.Add(-d/2))
	add(4, "dead", "held", now.Add(-d/2))
	add(2, "x", "other", now.Add(-d)) // a template this worker lacks
	todo, share := fairShare(me, teams, ws, now)
	// counters: 3+5+1 live, 1+1+6 to resume, over 2 workers: ceil(17/2) - 3.
	if len(todo["counters"]) != 8 || share["counters"] != int(math.Ceil(17.0/2))-3 {
		t.Fatalf("counters: %d to resume, share %d; want 8, 6", len(todo["counters"]), share["counters"])
	}
	// held: served by this worker alone (b lacks it, the other is dead).
	if len(todo["held"]) != 4 || share["held"] != 4 {
		t.Fatalf("held: %d to resume, share %d; want 4, 4", len(todo["held"]), share["held"])
	}
	if len(todo) != 2 {
		t.Fatalf("to resume: %v; want counters and held only", todo)
	}
}

// teamAt is a lease of owner's team of tmpl ending at until.
func teamAt(id uuid.UUID, owner, tmpl string, until time.Time) teamLease {
	return teamLease{id: id, lease: lease{Owner: owner, Template: tmpl, Until: until}}
}

// One rule of the fair share at a time: what is to resume, and how many
// of the template's teams this worker ("me") may take.
func TestFairShareCases(t *testing.T) {
	now := time.Now()
	const d = time.Second
	live, justEnded, endedLongAgo := now.Add(d), now.Add(-d/2), now.Add(-2*d)
	mine, other := uuid.New(), uuid.New()
	stopped := teamAt(uuid.New(), "dead", "t", justEnded)
	stopped.Stopped = true
	alive := func(owner string, templates ...string) presence {
		return presence{Owner: owner, Templates: templates, Until: live}
	}
	dead := presence{Owner: "dead", Templates: []string{"t"}, Until: justEnded}
	n := func(k int, owner string, until time.Time) []teamLease {
		xs := make([]teamLease, k)
		for i := range xs {
			xs[i] = teamAt(uuid.New(), owner, "t", until)
		}
		return xs
	}
	cases := []struct {
		name    string
		workers []presence
		teams   []teamLease
		running []uuid.UUID
		waiting []uuid.UUID
		todo    int // teams of "t" to resume
		share   int // how many of them me may take (when todo > 0)
	}{
		{name: "a dead worker's teams all go to the only survivor",
			workers: []presence{dead}, teams: n(3, "dead", justEnded), todo: 3, share: 3},
		{name: "two survivors share a dead worker's teams, rounded up, less what each holds",
			workers: []presence{alive("b", "t"), dead},
			teams:   append(append(n(1, "me", live), n(1, "b", live)...), n(3, "dead", justEnded)...),
			todo:    3, share: 2}, // ceil((2+3)/2) - 1
		{name: "a share already full is zero or less",
			workers: []presence{alive("b", "t"), dead},
			teams:   append(n(4, "me", live), n(2, "dead", justEnded)...),
			todo:    2, share: -1}, // ceil((4+2)/2) - 4
		{name: "a live owner's lease that just ended is left to it",
			workers: []presence{alive("b", "t")}, teams: n(1, "b", justEnded), todo: 0},
		{name: "a live owner's lease that ended over a lease ago is resumed",
			workers: []presence{alive("b", "t")}, teams: n(1, "b", endedLongAgo), todo: 1, share: 1},
		{name: "this worker's own team not run here is resumed",
			teams: []teamLease{teamAt(mine, "me", "t", justEnded)}, todo: 1, share: 1},
		{name: "this worker's own team run here stays its own, ended or not",
			teams:   []teamLease{teamAt(mine, "me", "t", justEnded)},
			running: []uuid.UUID{mine}, todo: 0},
		{name: "a team this worker backs off from is left alone",
			workers: []presence{dead}, teams: []teamLease{teamAt(other, "dead", "t", justEnded)},
			waiting: []uuid.UUID{other}, todo: 0},
		{name: "stopped teams and other templates' teams are not resumed",
			workers: []presence{dead},
			teams:   []teamLease{stopped, {id: uuid.New(), lease: lease{Owner: "dead", Template: "u", Until: justEnded}}},
			todo:    0},
		{name: "a live worker without the template takes no share of it",
			workers: []presence{alive("b", "u"), dead}, teams: n(2, "dead", justEnded), todo: 2, share: 2},
		{name: "a worker whose presence ended takes no share",
			workers: []presence{{Owner: "b", Templates: []string{"t"}, Until: justEnded}},
			teams:   n(2, "b", endedLongAgo), todo: 2, share: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			running := map[uuid.UUID]bool{}
			me := taker{owner: "me", lease: d, templates: map[string]bool{"t": true},
				running: func(id uuid.UUID) bool { return running[id] }, waiting: map[uuid.UUID]bool{}}
			for _, id := range c.running {
				running[id] = true
			}
			for _, id := range c.waiting {
				me.waiting[id] = true
			}
			todo, share := fairShare(me, c.teams, c.workers, now)
			if len(todo["t"]) != c.todo {
				t.Fatalf("%d teams to resume, want %d: %v", len(todo["t"]), c.todo, todo)
			}
			if len(todo) > 1 || c.todo == 0 && len(todo) != 0 {
				t.Fatalf("to resume: %v; want teams of t only", todo)
			}
			if got, ok := share["t"]; c.todo > 0 && (!ok || got != c.share) || c.todo == 0 && ok {
				t.Fatalf("share %v (set %v), want %d", got, ok, c.share)
			}
		})
	}
}

// The next scan is due at the earliest lease still running of another
// worker's team of this worker's templates, not stopped.
func TestNextEnd(t *testing.T) {
	now := time.Now()
	me := taker{owner: "me", templates: map[string]bool{"t": true}}
	at := func(s int) time.Time { return now.Add(time.Duration(s) * time.Second) }
	stopped := teamAt(uuid.New(), "b", "t", at(1))
	stopped.Stopped = true
	if got := nextEnd(me, nil, nil, now); !got.IsZero() {
		t.Fatalf("no team: %v, want zero", got)
	}
	teams := []teamLease{
		stopped,
		teamAt(uuid.New(), "me", "t", at(2)), // this worker's own
		teamAt(uuid.New(), "b", "u", at(3)),  // another template
		teamAt(uuid.New(), "b", "t", at(-1)), // ended: due now, not later
		teamAt(uuid.New(), "c", "t", at(5)),
		teamAt(uuid.New(), "b", "t", at(4)),
	}
	if got := nextEnd(me, teams, nil, now); !got.Equal(at(4)) {
		t.Fatalf("next end %v, want %v (b's, in 4s)", got.Sub(now), at(4).Sub(now))
	}
	if got := nextEnd(me, teams[:4], nil, now); !got.IsZero() {
		t.Fatalf("next end %v, want zero (no other worker's running lease of t)", got.Sub(now))
	}

	// An ended lease whose owner's presence still runs (stored after the
	// lease, on a create) is left to that owner until the presence ends:
	// the scan is due then, not at the next beat.
	me.lease = 10 * time.Second
	ended := teamAt(uuid.New(), "b", "t", at(-1))
	b := presence{Owner: "b", Templates: []string{"t"}, Until: at(3)}
	if got := nextEnd(me, []teamLease{ended, teamAt(uuid.New(), "c", "t", at(5))}, []presence{b}, now); !got.Equal(at(3)) {
		t.Fatalf("next end %v, want %v (b's presence, b's lease ended)", got.Sub(now), at(3).Sub(now))
	}
	b.Until = at(20) // a presence past a lease after the lease's end: due then (fairShare takes it)
	if got := nextEnd(me, []teamLease{ended}, []presence{b}, now); !got.Equal(at(9)) {
		t.Fatalf("next end %v, want %v (a lease after b's lease ended)", got.Sub(now), at(9).Sub(now))
	}
	b.Until = at(-2) // dead: its team is taken by this scan
	if got := nextEnd(me, []teamLease{ended}, []presence{b}, now); !got.IsZero() {
		t.Fatalf("next end %v, want zero (b dead)", got.Sub(now))
	}
	passive := ended
	passive.Passive = true
	b.Until = at(3)
	if got := nextEnd(me, []teamLease{passive}, []presence{b}, now); !got.IsZero() {
		t.Fatalf("next end %v, want zero (a passive team waits for input)", got.Sub(now))
	}
}

// Create's choice when it is not a tie: the live worker serving the
// template with the fewest teams.
func TestFewestCases(t *testing.T) {
	now := time.Now()
	live, ended := now.Add(time.Minute), now.Add(-time.Second)
	team := func(owner string, stopped bool) teamLease {
		return teamLease{id: uuid.New(), lease: lease{Owner: owner, Template: "t", Until: live, Stopped: stopped}}
	}
	a := presence{Owner: "a", Templates: []string{"t"}, Until: live}
	b := presence{Owner: "b", Templates: []string{"t"}, Until: live}
	cases := []struct {
		name    string
		workers []presence
		teams   []teamLease
		want    string // "" when none is picked
	}{
		{"the one with fewer teams", []presence{a, b}, []teamLease{team("a", false)}, "b"},
		{"stopped teams count for nothing", []presence{a, b},
			[]teamLease{team("a", true), team("a", true), team("b", false)}, "a"},
		{"a dead worker is never picked, even with no team",
			[]presence{{Owner: "dead", Templates: []string{"t"}, Until: ended}, a}, []teamLease{team("a", false)}, "a"},
		{"a worker without the template is never picked",
			[]presence{{Owner: "u", Templates: []string{"u"}, Until: live}, a}, []teamLease{team("a", false)}, "a"},
		{"no live worker serves the template", []presence{{Owner: "u", Templates: []string{"u"}, Until: live}}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ok := fewest(c.teams, c.workers, "t", now)
			if ok != (c.want != "") || p.Owner != c.want {
				t.Fatalf("picked %q (%v), want %q", p.Owner, ok, c.want)
			}
		})
	}
}

// lightest places by the load each live worker's presence states: the
// fewest running teams, dead workers and those without the template left
// out; a presence without a count (an earlier version) hands the choice to
// fewest.
func TestLightestRule(t *testing.T) {
	now := time.Now()
	n := func(k int) *int { return &k }
	live, dead := now.Add(time.Minute), now.Add(-time.Minute)
	ws := []presence{
		{Owner: "busy", Templates: []string{"a"}, Until: live, Teams: n(9)},
		{Owner: "dead", Templates: []string{"a"}, Until: dead, Teams: n(0)},
		{Owner: "other", Templates: []string{"b"}, Until: live, Teams: n(0)},
		{Owner: "light", Templates: []string{"a"}, Until: live, Teams: n(2)},
	}
	if p, ok, known := lightest(ws, "a", now); !ok || !known || p.Owner != "light" {
		t.Fatalf("lightest = %q, %v, %v; want light", p.Owner, ok, known)
	}
	if _, ok, known := lightest(ws, "c", now); ok || !known {
		t.Fatalf("no worker serves c: ok %v, known %v; want false, true", ok, known)
	}
	old := append(ws, presence{Owner: "old", Templates: []string{"a"}, Until: live})
	if _, _, known := lightest(old, "a", now); known {
		t.Fatal("a presence without its count: known; want the leases to decide")
	}
}
