package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// Shards: each template's teams are spread over a fixed number of shards
// (Config.Shards, fixed when the cluster is first used and stored in the
// leases bucket), a team's shard a hash of its id. A worker holds a lease
// on each shard it serves (key "shard.<template>.<n>"), renewed with its
// presence; the holder of a shard consumes the shard's input with one
// durable consumer (<Prefix>.in.<template>.<n>.*), and only it runs the
// shard's teams: it creates them, takes them over once their lease ended
// and activates a passive one when its input comes. So the server holds
// one consumer per shard, whatever the number of teams, and a team costs
// the server nothing while it is passive but its lease, its records and
// its input. The teams of a shard keep a lease each (its end, its state:
// passive, stopped) and the ledger's claim fences them as before.
//
// Placement of shards: each live worker serving a template holds up to
// its fair share of the template's shards (the shards over the live
// workers serving it, rounded up); a worker holding more than its share
// while another holds fewer hands the surplus over (its teams stopped,
// their turns cut and their inputs handed back, then the shard's lease
// released), so a worker that joins gets a share once its presence has
// lasted settleBeats beats (at most maxSettle).
// A dead worker's shards are taken when their lease ends, then its teams
// when theirs do.

// settleBeats is how many beats a worker's presence lasts, without a
// break, before a worker above its share of shards hands it any
// (presence.Since), and maxSettle bounds that wait: a worker back from a
// pause only to exit does so well within it, and a long lease (a minute's
// beat) does not keep a joiner waiting minutes for its share.
const (
	settleBeats = 2
	maxSettle   = 3 * time.Second
)

// defaultShards is the number of shards per template of a new cluster
// when Config.Shards is 0.
const defaultShards = 64

// maxShards bounds Config.Shards: each shard is a durable consumer on the
// server.
const maxShards = 4096

// layoutKey is the key of the leases bucket that records the cluster's
// layout: its number of shards per template. Its first writer sets it.
const layoutKey = "layout"

// layout is the value of layoutKey.
type layout struct {
	Shards int `json:"shards"`
}

// shardPrefix begins the key of a shard's lease in the leases bucket.
const shardPrefix = "shard."

// shardRef names one shard: a template's n-th.
type shardRef struct {
	template string
	n        int
}

func (r shardRef) String() string { return r.template + "/" + strconv.Itoa(r.n) }

// shardOf is the shard of team id among n.
func shardOf(id uuid.UUID, n int) int {
	h := fnv.New32a()
	_, _ = h.Write(id[:])
	return int(h.Sum32() % uint32(n))
}

// shardKey is the key of a shard's lease.
func shardKey(r shardRef) string { return shardPrefix + r.template + "." + strconv.Itoa(r.n) }

// parseShardKey reads a shard lease's key; false for any other key.
func parseShardKey(key string) (shardRef, bool) {
	rest, ok := strings.CutPrefix(key, shardPrefix)
	if !ok {
		return shardRef{}, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return shardRef{}, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 0 {
		return shardRef{}, false
	}
	return shardRef{template: rest[:i], n: n}, true
}

// inboxSubject is the subject of a team's input: its template and shard,
// then its id.
func (c Config) inboxSubject(template string, shard int, team uuid.UUID) string {
	return c.Prefix + ".in." + template + "." + strconv.Itoa(shard) + "." + team.String()
}

// shardSubjects is the filter of a shard's input.
func (c Config) shardSubjects(r shardRef) string {
	return c.Prefix + ".in." + r.template + "." + strconv.Itoa(r.n) + ".*"
}

// teamOfSubject is the team an input's subject names (its last token).
func teamOfSubject(subject string) (uuid.UUID, bool) {
	i := strings.LastIndexByte(subject, '.')
	id, err := uuid.Parse(subject[i+1:])
	return id, err == nil
}

// shardConsumer is the durable consumer of a shard's input: the template's
// name when it makes a valid consumer name, else a hash of it.
func shardConsumer(r shardRef) string {
	t := r.template
	if !validBucket.MatchString(t) {
		t = ownerToken(t)
	}
	return "in_" + t + "_" + strconv.Itoa(r.n)
}

// readLayout returns the cluster's number of shards per template, stored
// in the bucket by its first user: want (Config.Shards), or defaultShards
// when want is 0. A want other than the stored count is an error: the
// count is fixed at the cluster's first use (a team's shard, and so its
// inbox subject, depends on it).
func readLayout(ctx context.Context, kv jetstream.KeyValue, want int) (int, error) {
	return untilReady(ctx, func(ctx context.Context) (int, error) {
		for {
			e, err := kv.Get(ctx, layoutKey)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				n := cmpOr(want, defaultShards)
				data, _ := json.Marshal(layout{Shards: n})
				if _, err := kv.Create(ctx, layoutKey, data); errors.Is(err, jetstream.ErrKeyExists) {
					continue // another process set it first: read it
				} else if err != nil {
					return 0, fmt.Errorf("cluster: store the cluster's layout: %w", err)
				}
				return n, nil
			}
			if err != nil {
				return 0, fmt.Errorf("cluster: read the cluster's layout: %w", err)
			}
			var l layout
			if err := json.Unmarshal(e.Value(), &l); err != nil || l.Shards <= 0 {
				return 0, fmt.Errorf("cluster: the cluster's layout (key %q of the leases bucket) is %q: not a layout", layoutKey, e.Value())
			}
			if want != 0 && want != l.Shards {
				return 0, fmt.Errorf("cluster: Config.Shards is %d, but the cluster has %d shards per template (fixed at its first use): leave Shards at 0 or set it to %d", want, l.Shards, l.Shards)
			}
			return l.Shards, nil
		}
	})
}

// cmpOr is v, or def when v is 0.
func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// shardLease is a shard's lease as the leases bucket holds it.
type shardLease struct {
	ref shardRef
	rev uint64
	lease
}

// readShards reads the leases of a template's shards (a watch of their
// keys alone: O(shards)).
func readShards(ctx context.Context, kv jetstream.KeyValue, template string) (map[int]shardLease, error) {
	all, err := watchShards(ctx, kv, shardPrefix+template+".*")
	if err != nil {
		return nil, err
	}
	out := make(map[int]shardLease, len(all))
	for r, x := range all {
		out[r.n] = x
	}
	return out, nil
}

// readAllShards reads the leases of every template's shards (a watch of
// their keys alone: O(templates x shards), whatever the number of teams).
func readAllShards(ctx context.Context, kv jetstream.KeyValue) (map[shardRef]shardLease, error) {
	return watchShards(ctx, kv, shardPrefix+">")
}

// watchShards reads the shard leases whose keys match pattern, each key's
// last value.
func watchShards(ctx context.Context, kv jetstream.KeyValue, pattern string) (map[shardRef]shardLease, error) {
	watch, err := kv.Watch(ctx, pattern)
	if err != nil {
		return nil, err
	}
	defer func() { _ = watch.Stop() }()
	out := map[shardRef]shardLease{}
	for {
		select {
		case e := <-watch.Updates():
			if e == nil {
				return out, nil
			}
			if x, ok := decodeShard(e); ok {
				out[x.ref] = x
			} else if r, ok := parseShardKey(e.Key()); ok {
				delete(out, r)
			}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// decodeShard reads a shard lease from a bucket entry; false for another
// key, a deletion or a value that does not decode.
func decodeShard(e jetstream.KeyValueEntry) (shardLease, bool) {
	r, ok := parseShardKey(e.Key())
	if !ok || e.Operation() != jetstream.KeyValuePut {
		return shardLease{}, false
	}
	var l lease
	if json.Unmarshal(e.Value(), &l) != nil {
		return shardLease{}, false
	}
	return shardLease{ref: r, rev: e.Revision(), lease: l}, true
}

// shardPlan is what a worker does with a template's shards at one scan:
// the shards to take (free, or whose holder is dead) and the ones of its
// own to hand over (its surplus, while another live worker serving the
// template holds fewer than its share).
type shardPlan struct {
	take    []shardLease // rev 0: the key is missing (created)
	release []shardRef
}

// planShards is the plan of me (owner) for a template of n shards at now,
// given the shards' leases, the live workers serving the template (owners,
// me included), those of them present for too short a while to be handed
// shards (unsettled: see presence.Since) and the shards me holds. Me hands
// its surplus over only while a settled worker holds fewer than its
// share; an unsettled one counts in the share, and takes free shards at
// once. A shard is free when its key is
// missing, or its lease ended and its holder is dead (not among live) or
// it ended more than a lease ago (its live holder lost it), or it was
// released (its end the zero time). The free shards are looked at from
// offset on (a random one, so that workers starting together try
// different shards first).
func planShards(me string, n int, leases map[int]shardLease, live []string, unsettled map[string]bool, held map[int]bool, lease time.Duration, now time.Time, offset int) shardPlan {
	share := (n + len(live) - 1) / len(live)
	count := map[string]int{}
	for _, x := range leases {
		if x.Until.After(now) {
			count[x.Owner]++
		}
	}
	count[me] = len(held)
	var p shardPlan
	if len(held) > share {
		short := false
		for _, o := range live {
			if o != me && count[o] < share && !unsettled[o] {
				short = true
			}
		}
		if short {
			mine := make([]int, 0, len(held))
			for s := range held {
				mine = append(mine, s)
			}
			slices.Sort(mine)
			for _, s := range mine[share:] {
				p.release = append(p.release, shardRef{n: s})
			}
		}
		return p
	}
	for i := range n {
		s := (i + offset) % n
		if len(held)+len(p.take) >= share {
			break
		}
		if held[s] {
			continue
		}
		x, ok := leases[s]
		switch {
		case !ok:
			p.take = append(p.take, shardLease{ref: shardRef{n: s}})
		case x.Until.IsZero(),
			!x.Until.After(now) && (!slices.Contains(live, x.Owner) || !now.Before(x.Until.Add(lease))),
			!x.Until.After(now) && x.Owner == me: // me's own, from an earlier run with this Owner
			p.take = append(p.take, x)
		}
	}
	return p
}
