package cluster

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Placement: which worker a new team goes to (fewest) and which teams a
// worker takes over (fairShare, nextEnd). Pure functions over what one
// read of the leases bucket gives (readBucket) and the time of the read.

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
	running   map[uuid.UUID]bool // the teams it runs
	waiting   map[uuid.UUID]bool // the teams it failed to resume lately, left to others or for later
}

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
func fairShare(me taker, teams []teamLease, workers []presence, now time.Time) (map[string][]teamLease, map[string]int) {
	serving := map[string]map[string]bool{} // template: the live workers serving it
	for name := range me.templates {
		serving[name] = map[string]bool{me.owner: true}
	}
	alive := map[string]bool{me.owner: true}
	for _, p := range workers {
		if !p.Until.After(now) {
			continue // dead, or closed without removing its presence
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
		case x.Stopped || x.Passive || serving[x.Template] == nil: // a team of another template is left to a worker that has it; a passive one waits for input (takeExpired)
		case ended && me.waiting[x.id]:
		case x.Owner == me.owner && ended && !me.running[x.id]: // me's, not run by me
			todo[x.Template] = append(todo[x.Template], x)
		case !ended || x.Owner == me.owner || alive[x.Owner] && now.Before(x.Until.Add(me.lease)):
			live[x.Template]++ // renewed, or its live owner's renewal lags
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

// nextEnd returns when me's next takeover scan is due (zero when no
// lease says): the earliest end, after now, of the lease of another
// worker's team of me's templates, not stopped; and, for such a team whose
// lease ended while its owner's presence still runs (fairShare leaves it to
// that owner), the end of that presence, or a lease after the team's
// lease ended, whichever comes first. A worker's presence is stored after
// its leases (on a create, say), so it may outlive them by a moment: the
// dead worker's teams are then taken when the presence ends, not a beat
// later.
func nextEnd(me taker, teams []teamLease, workers []presence, now time.Time) time.Time {
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
