package cluster

import (
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

// teamAt is a lease of owner's team of tmpl ending at until.
func teamAt(id uuid.UUID, owner, tmpl string, until time.Time) teamLease {
	return teamLease{id: id, lease: lease{Owner: owner, Template: tmpl, Until: until}}
}

// One rule of the takeover at a time: what a worker ("me") holding the
// one shard of template t is to resume, and when its next scan is due.
func TestToResumeCases(t *testing.T) {
	now := time.Now()
	const d = time.Second
	live, ended := now.Add(d), now.Add(-d/2)
	mine, other := uuid.New(), uuid.New()
	stopped := teamAt(uuid.New(), "dead", "t", ended)
	stopped.Stopped = true
	passive := teamAt(uuid.New(), "b", "t", time.Time{})
	passive.Passive = true
	n := func(k int, owner string, until time.Time) []teamLease {
		xs := make([]teamLease, k)
		for i := range xs {
			xs[i] = teamAt(uuid.New(), owner, "t", until)
		}
		return xs
	}
	held := map[shardRef]bool{{template: "t"}: true}
	cases := []struct {
		name    string
		held    map[shardRef]bool
		teams   []teamLease
		running []uuid.UUID
		waiting []uuid.UUID
		todo    int       // teams to resume
		next    time.Time // the next scan
	}{
		{name: "the teams of a held shard whose leases ended are resumed, whoever held them",
			teams: append(n(3, "dead", ended), n(2, "b", ended)...), todo: 5},
		{name: "a team taken a moment ago waits for its lease's end, the next scan then",
			teams: append(n(1, "b", live), n(1, "dead", ended)...), todo: 1, next: live},
		{name: "no team of a shard not held is resumed",
			held: map[shardRef]bool{}, teams: n(3, "dead", ended), todo: 0},
		{name: "this worker's own team not run here is resumed",
			teams: []teamLease{teamAt(mine, "me", "t", ended)}, todo: 1},
		{name: "this worker's own team run here stays its own",
			teams: []teamLease{teamAt(mine, "me", "t", ended)}, running: []uuid.UUID{mine}, todo: 0},
		{name: "a team this worker backs off from is left alone",
			teams: []teamLease{teamAt(other, "dead", "t", ended)}, waiting: []uuid.UUID{other}, todo: 0},
		{name: "stopped teams, passive ones and other templates' teams are not resumed",
			teams: []teamLease{stopped, passive, teamAt(uuid.New(), "dead", "u", ended)}, todo: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			running := map[uuid.UUID]bool{}
			me := taker{owner: "me", templates: map[string]bool{"t": true},
				running: func(id uuid.UUID) bool { return running[id] }, waiting: map[uuid.UUID]bool{}}
			for _, id := range c.running {
				running[id] = true
			}
			for _, id := range c.waiting {
				me.waiting[id] = true
			}
			h := held
			if c.held != nil {
				h = c.held
			}
			todo, next := toResume(me, h, 1, c.teams, nil, now)
			if len(todo) != c.todo {
				t.Fatalf("%d teams to resume, want %d: %v", len(todo), c.todo, leaseIDs(todo))
			}
			if !next.Equal(c.next) {
				t.Fatalf("next scan %v, want %v", next, c.next)
			}
		})
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
