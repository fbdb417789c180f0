package cluster

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Placement: which worker a new team goes to (fewest) and which teams a
// worker takes over (fairShare, nextEnd). Pure functions over what one
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
	templates map[string]bool
	lease     time.Duration
	running   func(uuid.UUID) bool // whether it runs a team (nil: none)
	waiting   map[uuid.UUID]bool   // the teams it failed to resume lately, left to others or for later
}

// runs reports whether me runs team id.
func (me taker) runs(id uuid.UUID) bool { return me.running != nil && me.running(id) }

// fairShare returns, by template of me's, the teams to take over and how
// many of them me may take: the template's teams, live and to resume, over
// the live workers serving it (me included), rounded up, less the
// template's live teams me holds (see Worker).
//
// A team is to resume when its lease ended and its owner is dead, or ended
// more than a lease ago (its live owner lost it), or is me's and not run
// by me; a live owner's lease that just ended is left to its owner, whose
// renewals may lag. Stopped teams, passive ones, teams of other templates
// and teams me is waiting on (waiting) are neither.
//
// This is the rule over one read of the bucket; a worker's scans apply
// it to the index its watcher keeps (leaseIndex.fairShare), which reads
// only the leases ended.
func fairShare(me taker, teams []teamLease, workers []presence, now time.Time) (map[string][]teamLease, map[string]int) {
	return indexLeases(teams, workers).fairShare(me, now)
}

// nextEnd returns when me's next takeover scan is due (zero when no
// lease says): the earliest end, after now, of the lease of another
// worker's team of me's templates, not stopped; and, for such a team whose
// lease ended while its owner's presence still runs (fairShare leaves it to
// that owner), the end of that presence, or a lease after the team's
// lease ended, whichever comes first. A worker's presence is stored after
// its leases (on a create, say), so it may outlive them by a moment: the
// dead worker's teams are then taken when the presence ends, not a beat
// later. Over one read of the bucket, as fairShare.
func nextEnd(me taker, teams []teamLease, workers []presence, now time.Time) time.Time {
	return indexLeases(teams, workers).nextEnd(me, now)
}
