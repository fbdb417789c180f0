package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// putLease stores a team's lease in the client's bucket as a worker would.
func putLease(t *testing.T, ctx context.Context, c *Client, id uuid.UUID, l lease) {
	t.Helper()
	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.kv.Put(ctx, id.String(), data); err != nil {
		t.Fatal(err)
	}
}

// listAll pages through TeamsPage with f to the end, limit teams a page,
// and returns each team's last state seen and the number of pages.
func listAll(t *testing.T, ctx context.Context, c *Client, f TeamFilter, limit int) (map[uuid.UUID]TeamInfo, int) {
	t.Helper()
	got := map[uuid.UUID]TeamInfo{}
	pages := 0
	for after := uint64(0); ; {
		p, err := c.TeamsPage(ctx, f, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Teams) > limit {
			t.Fatalf("a page of %d teams; the limit is %d", len(p.Teams), limit)
		}
		for _, x := range p.Teams {
			got[x.ID] = x
		}
		if p.Next == 0 {
			return got, pages
		}
		if p.Next <= after {
			t.Fatalf("the cursor went from %d to %d", after, p.Next)
		}
		after = p.Next
	}
}

// sortedIDs are the keys of teams, sorted.
func sortedIDs(teams map[uuid.UUID]TeamInfo) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(teams))
	for id := range teams {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// TeamsPage lists every team by pages of the limit asked, skipping the
// workers' presences and the shards' leases kept in the same bucket, and
// selects by template, owner and state.
func TestTeamsPageListsByPageWithFilters(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	if _, err := c.kv.Put(ctx, presenceKey("w1"), []byte(`{"owner":"w1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.kv.Put(ctx, "shard.counters.3", []byte(`{"owner":"w1"}`)); err != nil {
		t.Fatal(err)
	}
	live := time.Now().Add(time.Hour).UTC()
	want := map[TeamState][]uuid.UUID{}
	all := map[uuid.UUID]TeamInfo{}
	for i := range 23 {
		id := uuid.New()
		l := lease{Owner: []string{"w1", "w2"}[i%2], Template: []string{"counters", "held"}[i%3/2], Until: live}
		switch i % 4 {
		case 1:
			l.Passive, l.Until = true, time.Time{}
		case 2:
			l.Stopped = true
		case 3:
			l.Until, l.Error = time.Now().Add(-time.Second).UTC(), "its restore failed"
		}
		putLease(t, ctx, c, id, l)
		x := teamInfo(id, l, nil, 0)
		all[id] = x
		want[x.stateAt(time.Now())] = append(want[x.stateAt(time.Now())], id)
	}
	gone := uuid.New() // a team whose key was deleted: not listed
	putLease(t, ctx, c, gone, lease{Owner: "w1", Template: "counters", Until: live})
	if err := c.kv.Delete(ctx, gone.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.kv.Put(ctx, "not-a-team", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// Stored last, keys the pages do not read (a shard's lease renewed):
	// a listing still ends at the last team's lease.
	if _, err := c.kv.Put(ctx, "shard.counters.3", []byte(`{"owner":"w1"}`)); err != nil {
		t.Fatal(err)
	}

	got, pages := listAll(t, ctx, c, TeamFilter{}, 5)
	if !slices.Equal(sortedIDs(got), sortedIDs(all)) {
		t.Fatalf("listed %d teams %v; want the %d stored", len(got), sortedIDs(got), len(all))
	}
	for id, x := range got {
		if x != all[id] {
			t.Fatalf("team %s listed as %+v; stored %+v", id, x, all[id])
		}
	}
	if pages != 5 {
		t.Fatalf("23 teams in %d pages of 5; want 5", pages)
	}
	listed, err := c.Teams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(all) {
		t.Fatalf("Teams lists %d teams; TeamsPage %d", len(listed), len(got))
	}

	for _, f := range []TeamFilter{
		{Template: "held"}, {Owner: "w2"}, {State: TeamHeld}, {State: TeamPassive}, {State: TeamStopped}, {State: TeamWaiting},
		{Template: "counters", Owner: "w1", State: TeamHeld}, {Template: "none"},
	} {
		var match []uuid.UUID
		for id, x := range all {
			if f.match(x, time.Now()) {
				match = append(match, id)
			}
		}
		slices.SortFunc(match, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
		got, _ := listAll(t, ctx, c, f, 2)
		if !slices.Equal(sortedIDs(got), match) {
			t.Fatalf("filter %+v listed %v; want %v", f, sortedIDs(got), match)
		}
		for _, x := range got {
			if f.State != AnyTeam && x.stateAt(time.Now()) != f.State {
				t.Fatalf("filter %+v listed team %+v in state %v", f, x, x.stateAt(time.Now()))
			}
		}
	}
	for s := TeamHeld; s <= TeamWaiting; s++ {
		if len(want[s]) == 0 {
			t.Fatalf("no team in state %v: the filter cases above miss it", s)
		}
	}
}

// A team whose lease is stored again while a listing pages on (renewed,
// stopped) moves past the cursor: it comes again, in its new state, in a
// later page, and no team is missed.
func TestTeamsPageAStoredAgainTeamComesAgain(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	live := time.Now().Add(time.Hour).UTC()
	var stored []uuid.UUID
	for range 6 {
		id := uuid.New()
		putLease(t, ctx, c, id, lease{Owner: "w1", Template: "counters", Until: live})
		stored = append(stored, id)
	}
	first, err := c.TeamsPage(ctx, TeamFilter{}, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Teams) != 3 || first.Next == 0 {
		t.Fatalf("the first page: %d teams, next %d; want 3 and more to come", len(first.Teams), first.Next)
	}
	moved := first.Teams[0].ID
	putLease(t, ctx, c, moved, lease{Owner: "w1", Template: "counters", Stopped: true})

	seen := map[uuid.UUID]int{}
	for _, x := range first.Teams {
		seen[x.ID]++
	}
	var again TeamInfo
	for after := first.Next; after != 0; {
		p, err := c.TeamsPage(ctx, TeamFilter{}, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range p.Teams {
			seen[x.ID]++
			if x.ID == moved {
				again = x
			}
		}
		after = p.Next
	}
	for _, id := range stored {
		if seen[id] == 0 {
			t.Fatalf("team %s missed by the listing", id)
		}
	}
	if seen[moved] != 2 || !again.Stopped {
		t.Fatalf("the team stopped while listing: seen %d times, last as %+v; want twice, stopped the second", seen[moved], again)
	}
}

// TeamsPage refuses a page over its bound and a state it does not know,
// and an empty bucket (or a cursor past its end) is one empty last page.
func TestTeamsPageBoundsAndEnd(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	if _, err := c.TeamsPage(ctx, TeamFilter{}, 0, maxTeamsPage+1); err == nil || !strings.Contains(err.Error(), "at most 10000") {
		t.Fatalf("a page over the bound: %v; want it refused, naming the bound", err)
	}
	if _, err := c.TeamsPage(ctx, TeamFilter{State: TeamWaiting + 1}, 0, 10); err == nil || !strings.Contains(err.Error(), "TeamState(5)") {
		t.Fatalf("an unknown state: %v; want it refused, naming it", err)
	}
	p, err := c.TeamsPage(ctx, TeamFilter{}, 0, 0)
	if err != nil || len(p.Teams) != 0 || p.Next != 0 {
		t.Fatalf("an empty bucket: %+v, %v; want one empty last page", p, err)
	}
	putLease(t, ctx, c, uuid.New(), lease{Owner: "w1", Template: "counters"})
	p, err = c.TeamsPage(ctx, TeamFilter{}, 1<<40, 10)
	if err != nil || len(p.Teams) != 0 || p.Next != 0 {
		t.Fatalf("a cursor past the end: %+v, %v; want one empty last page", p, err)
	}
}

// A team's lease ends at the end of the one lease stored when its holder
// took it; from then on the team is held while the same worker holds its
// shard: TeamInfo.Until is the shard lease's end then, and only then.
func TestTeamInfoHeldWhileItsShardIs(t *testing.T) {
	now := time.Now()
	id := uuid.New()
	const nshards = 8
	ref := shardRef{template: "t", n: shardOf(id, nshards)}
	ended, shardEnd := now.Add(-time.Minute), now.Add(10*time.Second)
	l := lease{Owner: "w1", Instance: "i1", Template: "t", Until: ended}
	cases := []struct {
		name  string
		l     lease
		shard lease
		want  TeamState
	}{
		{"its holder holds its shard", l, lease{Owner: "w1", Instance: "i1", Until: shardEnd}, TeamHeld},
		{"another worker holds its shard", l, lease{Owner: "w2", Instance: "i2", Until: shardEnd}, TeamWaiting},
		{"a later run of its holder's Owner holds its shard", l, lease{Owner: "w1", Instance: "i9", Until: shardEnd}, TeamWaiting},
		{"its holder's shard lease ended", l, lease{Owner: "w1", Instance: "i1", Until: ended}, TeamWaiting},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shards := map[shardRef]shardLease{ref: {ref: ref, lease: c.shard}}
			got := teamInfo(id, c.l, shards, nshards)
			if s := got.stateAt(now); s != c.want {
				t.Fatalf("state %v (until %v), want %v", s, got.Until.Sub(now), c.want)
			}
		})
	}
	passive := l
	passive.Passive = true
	shards := map[shardRef]shardLease{ref: {ref: ref, lease: lease{Owner: "w1", Instance: "i1", Until: shardEnd}}}
	if got := teamInfo(id, passive, shards, nshards); got.stateAt(now) != TeamPassive || !got.Until.Equal(ended) {
		t.Fatalf("a passive team: %v until %v, want passive, its own lease's end", got.stateAt(now), got.Until)
	}
}
