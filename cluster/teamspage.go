package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TeamState is the state of a team's lease, as TeamInfo tells it.
type TeamState int

// The states of a team's lease. AnyTeam selects them all.
const (
	AnyTeam TeamState = iota
	// TeamHeld: a worker holds the team's lease (not ended) and runs it.
	TeamHeld
	// TeamPassive: stopped while idle (Config.IdleAfter); its next input
	// activates it.
	TeamPassive
	// TeamStopped: stopped on purpose (Client.Stop, or it stopped on its own);
	// resumed nowhere.
	TeamStopped
	// TeamWaiting: its lease ended unrenewed (its worker gone, or its restore
	// failed: TeamInfo.Error): it waits for a worker to resume it.
	TeamWaiting
)

// String names the state.
func (s TeamState) String() string {
	switch s {
	case AnyTeam:
		return "any"
	case TeamHeld:
		return "held"
	case TeamPassive:
		return "passive"
	case TeamStopped:
		return "stopped"
	case TeamWaiting:
		return "waiting"
	}
	return fmt.Sprintf("TeamState(%d)", int(s))
}

// stateAt is the team's state at now.
func (t TeamInfo) stateAt(now time.Time) TeamState {
	switch {
	case t.Stopped:
		return TeamStopped
	case t.Passive:
		return TeamPassive
	case t.Until.After(now):
		return TeamHeld
	}
	return TeamWaiting
}

// TeamFilter selects the teams TeamsPage lists. Its zero value selects
// every team; each field set narrows it.
type TeamFilter struct {
	Template string    // made from this template
	Owner    string    // its lease names this worker (Config.Owner)
	State    TeamState // in this state (AnyTeam: any)
}

func (f TeamFilter) match(t TeamInfo, now time.Time) bool {
	return (f.Template == "" || t.Template == f.Template) &&
		(f.Owner == "" || t.Owner == f.Owner) &&
		(f.State == AnyTeam || t.stateAt(now) == f.State)
}

// TeamPage is a page of teams TeamsPage lists.
type TeamPage struct {
	Teams []TeamInfo
	// Next is the cursor to pass for the next page; 0 when this page read
	// up to the last lease stored when it began.
	Next uint64
}

// maxTeamsPage bounds a page's limit.
const maxTeamsPage = 10_000

// pageBatch bounds the leases one pull of a page asks for.
const pageBatch = 1000

// pageAttempts bounds the reads of a page that missed a delivery.
const pageAttempts = 3

// TeamsPage lists up to limit teams matching f, reading the leases
// bucket from the cursor after (0: from the start, else a page's Next)
// in the order the leases were last stored. A page reads the teams'
// leases after its cursor until it holds limit teams or has read the last
// one stored: with no filter it reads about limit leases (a team stored
// twice during the read counts twice), whatever the number of teams; a
// filter that selects few teams reads more to fill its page. limit is at
// most 10,000; 0 or less is 100.
//
// A lease is stored again on every change (the team taken over,
// passivated, activated, stopped), not while the team runs: a team whose
// lease is stored again while a listing pages on moves past the cursor
// and comes again in a later page, as it is then. A listing to the end
// (Next 0) holds every team stored before it began, at least once;
// callers that need each once keep them by ID, the later copy being the
// newer. With a filter, a team whose newer lease no longer matches is not
// listed again: an earlier page's copy of it is then out of date. Within
// one page a team comes once, as last read, and not at all when its last
// lease read does not match. A listing pages on as long as leases are
// stored faster than it reads them: read thousands a second, it outruns
// the changes of a fleet's teams.
func (c *Client) TeamsPage(ctx context.Context, f TeamFilter, after uint64, limit int) (TeamPage, error) {
	if limit <= 0 {
		limit = 100
	}
	if limit > maxTeamsPage {
		return TeamPage{}, fmt.Errorf("cluster: list teams: a page of %d teams: at most %d", limit, maxTeamsPage)
	}
	if f.State < AnyTeam || f.State > TeamWaiting {
		return TeamPage{}, fmt.Errorf("cluster: list teams: unknown %v", f.State)
	}
	st, err := c.js.Stream(ctx, "KV_"+c.cfg.bucketName())
	if err != nil {
		return TeamPage{}, fmt.Errorf("cluster: list teams: %w", reach(c.nc, err))
	}
	shards, err := readAllShards(ctx, c.kv)
	if err != nil {
		return TeamPage{}, fmt.Errorf("cluster: list teams: the shards' leases: %w", reach(c.nc, err))
	}
	for try := 1; ; try++ {
		page, err := readTeamsPage(ctx, st, c.cfg.bucketName(), f, after, limit, shards, c.shards)
		if errors.Is(err, errMissed) && try < pageAttempts {
			continue // read again, from a consumer made anew
		}
		if err != nil {
			return TeamPage{}, fmt.Errorf("cluster: list teams: %w", reach(c.nc, err))
		}
		return page, nil
	}
}

// readTeamsPage reads a page of the teams' leases of the bucket's stream
// st after stream sequence after.
func readTeamsPage(ctx context.Context, st jetstream.Stream, bucket string, f TeamFilter, after uint64, limit int, shards map[shardRef]shardLease, nshards int) (TeamPage, error) {
	cctx, cancel := context.WithTimeout(ctx, readCreateTimeout)
	defer cancel()
	prefix := "$KV." + bucket + "."
	cons, err := st.CreateConsumer(cctx, jetstream.ConsumerConfig{
		Description:       "a page of the teams",
		FilterSubject:     prefix + "*", // a team's key is one token (its id); the workers' and shards' have more
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       after + 1,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: readIdle,
		MemoryStorage:     true,
		Replicas:          1,
	})
	if err != nil {
		return TeamPage{}, err
	}
	defer dropConsumer(st, cons)
	if info := cons.CachedInfo(); info != nil && info.NumPending == 0 {
		return TeamPage{}, nil // nothing stored after the cursor
	}

	var teams []*TeamInfo     // nil: a team read again that no longer matches
	at := map[uuid.UUID]int{} // a team's place in teams
	matched := 0              // the teams not nil
	now := time.Now()
	next := uint64(1) // the consumer sequence of the next delivery
	finish := func(cursor uint64) TeamPage {
		p := TeamPage{Next: cursor, Teams: make([]TeamInfo, 0, matched)}
		for _, t := range teams {
			if t != nil {
				p.Teams = append(p.Teams, *t)
			}
		}
		return p
	}
	for empty := 0; ; {
		if err := ctx.Err(); err != nil {
			return TeamPage{}, context.Cause(ctx)
		}
		var batch jetstream.MessageBatch
		if empty == 0 {
			batch, err = cons.FetchNoWait(min(limit, pageBatch))
		} else {
			batch, err = cons.Fetch(min(limit, pageBatch), jetstream.FetchMaxWait(time.Second))
		}
		if err != nil {
			return TeamPage{}, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return TeamPage{}, err
			}
			if meta.Sequence.Consumer != next {
				return TeamPage{}, fmt.Errorf("%w: delivery %d came after %d", errMissed, meta.Sequence.Consumer, next-1)
			}
			next++
			if id, t, ok := teamOfEntry(m, prefix, shards, nshards); ok {
				keep := t != nil && f.match(*t, now)
				i, seen := at[id]
				switch {
				case seen && keep:
					if teams[i] == nil {
						matched++
					}
					teams[i] = t
				case seen:
					if teams[i] != nil {
						matched--
					}
					teams[i] = nil
				case keep:
					at[id] = len(teams)
					teams = append(teams, t)
					matched++
				}
			}
			switch {
			case meta.NumPending == 0:
				return finish(0), nil // read up to the last team's lease stored
			case matched == limit:
				return finish(meta.Sequence.Stream), nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return TeamPage{}, err
		}
		switch {
		case got > 0:
			empty = 0
		case empty > 0:
			// Nothing delivered after a wait, though the consumer had
			// leases pending: they were removed meanwhile (a purge).
			return finish(0), nil
		default:
			empty++
		}
	}
}

// teamOfEntry decodes a message of the leases bucket's stream: ok for a
// team's key, with its lease (nil for a deletion, or a value that does
// not decode).
func teamOfEntry(m jetstream.Msg, prefix string, shards map[shardRef]shardLease, nshards int) (uuid.UUID, *TeamInfo, bool) {
	id, err := uuid.Parse(strings.TrimPrefix(m.Subject(), prefix))
	if err != nil {
		return uuid.UUID{}, nil, false
	}
	if op := m.Headers().Get("KV-Operation"); op != "" {
		return id, nil, true // DEL or PURGE
	}
	var l lease
	if json.Unmarshal(m.Data(), &l) != nil {
		return id, nil, true
	}
	t := teamInfo(id, l, shards, nshards)
	return id, &t, true
}

// teamInfo is a team's lease as TeamInfo tells it, given the leases of the
// cluster's shards (nshards a template): a team's lease ends at the end
// of the one lease stored when its holder took it, and from then on it is
// held while its holder (the same Worker: Instance) holds the team's
// shard, so Until is the later of the two ends.
func teamInfo(id uuid.UUID, l lease, shards map[shardRef]shardLease, nshards int) TeamInfo {
	until := l.Until
	if !l.Stopped && !l.Passive && !l.Until.IsZero() && nshards > 0 { // zero: released
		x, ok := shards[shardRef{template: l.Template, n: shardOf(id, nshards)}]
		if ok && x.Instance != "" && x.Instance == l.Instance && x.Owner == l.Owner && x.Until.After(until) {
			until = x.Until
		}
	}
	return TeamInfo{ID: id, Template: l.Template, Owner: l.Owner, Until: until, Stopped: l.Stopped, Passive: l.Passive, Error: l.Error}
}
