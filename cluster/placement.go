package cluster

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Placement: which worker a new team goes to (fewest) and which teams a
// worker takes over (toResume). Pure functions over what one
// read of the leases bucket gives (readBucket), or the index of it a
// worker keeps (leaseIndex), and the time of the read.

// fewest returns the live worker serving the template with the fewest
// teams, of any template, a tie broken at random; false when no live
// worker serves it. A worker's teams are its leases not stopped, ended
// ones included: a live worker's renewals may lag.
func fewest(teams []teamLease, workers []presence, template string, now time.Time) (presence, bool) {
	load := map[string]int{}
	for _, x := range teams {
		if !x.Stopped && !x.Passive {
			load[x.Owner]++
		}
	}
	var best presence
	least, ties := -1, 0
	for _, p := range workers {
		if !p.Until.After(now) || !slices.Contains(p.Templates, template) {
			continue
		}
		switch n := load[p.Owner]; {
		case least < 0 || n < least:
			best, least, ties = p, n, 1
		case n == least: // each of the tied is kept with the same chance
			if ties++; rand.IntN(ties) == 0 {
				best = p
			}
		}
	}
	return best, least >= 0
}

// lightest returns the live worker serving the template with the fewest
// teams running by its presence (presence.Teams), a tie broken at random;
// false when no live worker serves it, or one of them does not say its
// load (an earlier version: fewest, from the leases, decides then).
func lightest(workers []presence, template string, now time.Time) (p presence, ok, known bool) {
	least, ties := -1, 0
	for _, w := range workers {
		if !w.Until.After(now) || !slices.Contains(w.Templates, template) {
			continue
		}
		if w.Teams == nil {
			return presence{}, false, false
		}
		switch n := *w.Teams; {
		case least < 0 || n < least:
			p, least, ties = w, n, 1
		case n == least:
			if ties++; rand.IntN(ties) == 0 {
				p = w
			}
		}
	}
	return p, least >= 0, true
}

// taker is a worker as its takeover scan sees it.
type taker struct {
	owner     string
	instance  string // its worker's instance (Worker.instance)
	templates map[string]bool
	running   func(uuid.UUID) bool // whether it runs a team (nil: none)
	waiting   map[uuid.UUID]bool   // the teams it failed to resume lately, left to others or for later
}

// runs reports whether me runs team id.
func (me taker) runs(id uuid.UUID) bool { return me.running != nil && me.running(id) }

// toResume returns the teams me is to take over at now, and when its next
// scan is due (zero when no lease says): a team is to resume when it is
// of a shard me holds (held), its lease ended and it is not run by me; a
// stopped team, a passive one (its next input activates it), a team of
// another template or one me is waiting on (waiting) is not, but for a
// passive team whose wake time (lease.WakeAt) came: it is activated then,
// and its wake time counts for the next scan whoever stored it. A team's
// lease ends at the end of the one lease its holder stored when it took
// the team (Create, a takeover, an activation): from then on it is held
// while its holder holds its shard, so the holder renews its shards'
// leases alone, not its teams'. The holder of a team's shard is the only
// worker running it, so it takes over each team of the shard held there
// by another worker (whose shard lease ended, or which handed the shard
// over), and its own teams that it does not run. The next scan is due at
// the earliest end after now of a lease another worker instance stored in
// one of the held shards (the end of one of its own matters only for a
// team it no longer runs, which its next periodic scan takes, within a
// beat).
//
// This is the rule over one read of the bucket; a worker's scans apply
// it to the index its watcher keeps (leaseIndex.due), which reads only
// the heaps of the shards it holds.
func toResume(me taker, held map[shardRef]bool, nshards int, teams []teamLease, workers []presence, now time.Time) ([]teamLease, time.Time) {
	return indexLeases(nshards, teams, workers).due(me, held, now)
}
