package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// teamShard returns the shard of a team and its input's subject, from its
// lease and the cluster's layout.
func teamShard(ctx context.Context, js jetstream.JetStream, cfg Config, team uuid.UUID) (shardRef, string, error) {
	kv, err := js.KeyValue(ctx, cfg.bucketName())
	if err != nil {
		return shardRef{}, "", err
	}
	n, err := readLayout(ctx, kv, 0)
	if err != nil {
		return shardRef{}, "", err
	}
	e, err := kv.Get(ctx, team.String())
	if err != nil {
		return shardRef{}, "", fmt.Errorf("the lease of team %s: %w", team, err)
	}
	var l lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return shardRef{}, "", err
	}
	r := shardRef{template: l.Template, n: shardOf(team, n)}
	return r, cfg.inboxSubject(r.template, r.n, team), nil
}

// teamInputs counts the inputs the inbox holds for a team: delivered and
// not acknowledged, or not delivered yet (an input acknowledged leaves
// the work queue).
func teamInputs(ctx context.Context, js jetstream.JetStream, cfg Config, team uuid.UUID) (uint64, error) {
	_, subj, err := teamShard(ctx, js, cfg, team)
	if err != nil {
		return 0, err
	}
	st, err := js.Stream(ctx, cfg.inboxStream())
	if err != nil {
		return 0, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		return 0, err
	}
	return info.State.Subjects[subj], nil
}

// planShards: a worker takes up to its share (the shards over the live
// workers serving the template, rounded up) of the free ones (missing,
// released, or ended with a dead holder, or ended a lease ago), never a
// live holder's; it hands its surplus over only while another live worker
// holds fewer than its share.
func TestPlanShardsTakesItsShareAndHandsOverTheSurplus(t *testing.T) {
	now := time.Now()
	lease := 10 * time.Second
	held := func(owner string, until time.Time, ns ...int) map[int]shardLease {
		m := map[int]shardLease{}
		for _, n := range ns {
			m[n] = shardLease{ref: shardRef{n: n}, rev: uint64(n + 1), lease: lease0(owner, until)}
		}
		return m
	}
	set := func(ns ...int) map[int]bool {
		m := map[int]bool{}
		for _, n := range ns {
			m[n] = true
		}
		return m
	}
	// Alone on a new cluster: every shard.
	if p := planShards("a", 8, nil, []string{"a"}, nil, nil, lease, now, 3); len(p.take) != 8 || len(p.release) != 0 {
		t.Fatalf("alone: %+v; want all 8 shards taken", p)
	}
	// Two live workers, b holding every shard: a takes none, b hands 4 over.
	all := held("b", now.Add(lease), 0, 1, 2, 3, 4, 5, 6, 7)
	if p := planShards("a", 8, all, []string{"a", "b"}, nil, nil, lease, now, 0); len(p.take) != 0 {
		t.Fatalf("a beside b's live leases: %+v; want nothing taken", p)
	}
	p := planShards("b", 8, all, []string{"b", "a"}, nil, set(0, 1, 2, 3, 4, 5, 6, 7), lease, now, 0)
	if len(p.release) != 4 || len(p.take) != 0 {
		t.Fatalf("b holding all 8 beside a: %+v; want 4 handed over", p)
	}
	// a present too short a while (unsettled: a worker just started, or
	// back from a pause) is handed nothing yet; its share still counts.
	if p := planShards("b", 8, all, []string{"b", "a"}, map[string]bool{"a": true}, set(0, 1, 2, 3, 4, 5, 6, 7), lease, now, 0); len(p.take)+len(p.release) != 0 {
		t.Fatalf("b holding all 8 beside an unsettled a: %+v; want nothing handed over yet", p)
	}
	// At its share, or above it with no one short: nothing moves.
	if p := planShards("b", 8, held("b", now.Add(lease), 0, 1, 2, 3), []string{"b", "a"}, nil, set(0, 1, 2, 3), lease, now, 0); len(p.take)+len(p.release) != 0 {
		t.Fatalf("b at its share: %+v; want nothing", p)
	}
	three := held("c", now.Add(lease), 0, 1, 2)
	for k, v := range held("a", now.Add(lease), 3, 4, 5) {
		three[k] = v
	}
	for k, v := range held("b", now.Add(lease), 6, 7) {
		three[k] = v
	}
	if p := planShards("c", 8, three, []string{"a", "b", "c"}, nil, set(0, 1, 2), lease, now, 0); len(p.take)+len(p.release) != 0 {
		t.Fatalf("3, 3, 2 over three workers, c at 3: %+v; want nothing (none holds more than its share of 3)", p)
	}
	// A dead holder's ended leases are taken; a live holder's just ended
	// one is left to it for a lease; a released one is free.
	dead := held("d", now.Add(-time.Millisecond), 0, 1)
	lagging := held("b", now.Add(-time.Millisecond), 2)
	released := held("b", time.Time{}, 3)
	ls := map[int]shardLease{0: dead[0], 1: dead[1], 2: lagging[2], 3: released[3]}
	p = planShards("a", 4, ls, []string{"a", "b"}, nil, nil, lease, now, 0)
	var got []int
	for _, x := range p.take {
		got = append(got, x.ref.n)
	}
	if want := []int{0, 1}; !slices.Equal(got, want) {
		t.Fatalf("took %v; want %v (the dead holder's, up to a's share of 2)", got, want)
	}
	p = planShards("a", 4, ls, []string{"a", "b"}, nil, nil, lease, now, 3)
	got = got[:0]
	for _, x := range p.take {
		got = append(got, x.ref.n)
	}
	if want := []int{3, 0}; !slices.Equal(got, want) {
		t.Fatalf("from offset 3 took %v; want %v (the released one, then a dead holder's; never the lagging live one)", got, want)
	}
}

func lease0(owner string, until time.Time) lease { return lease{Owner: owner, Until: until} }

// The takeover scan wakes when a shard of another worker may be free: at
// its lease's end; for a lease already ended, at the earlier of its
// holder's presence end (a worker killed renews neither, and its presence
// can end after its shards' leases: each Create stores it between beats)
// and a lease after the lease's end (its holder staying present); not at
// all for a shard free now or of a template it does not serve.
func TestScanWakesWhenAShardOfAKilledWorkerIsFree(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const term = 10 * time.Second
	tmpls := map[string]Template{"t": {}}
	view := func(xs ...shardLease) *bucketView {
		v := newBucketView(8)
		for _, x := range xs {
			v.shards[x.ref] = x
		}
		return v
	}
	held := func(n int, owner string, until time.Time) shardLease {
		return shardLease{ref: shardRef{template: "t", n: n}, lease: lease{Owner: owner, Until: until}}
	}
	for _, c := range []struct {
		name    string
		v       *bucketView
		present map[string]time.Time
		want    time.Time
	}{
		{"a running lease: its end", view(held(0, "b", now.Add(3*time.Second))), map[string]time.Time{"b": now.Add(5 * time.Second)}, now.Add(3 * time.Second)},
		{"ended, its holder present a while yet: the presence's end", view(held(0, "b", now.Add(-time.Second))), map[string]time.Time{"b": now.Add(400 * time.Millisecond)}, now.Add(400 * time.Millisecond)},
		{"ended, its holder renewing its presence: a lease after the end", view(held(0, "b", now.Add(-time.Second))), map[string]time.Time{"b": now.Add(term)}, now.Add(term - time.Second)},
		{"ended, its holder gone: free now, no wake", view(held(0, "b", now.Add(-time.Second))), map[string]time.Time{}, time.Time{}},
		{"released (no end): free now, no wake", view(held(0, "b", time.Time{})), map[string]time.Time{"b": now.Add(term)}, time.Time{}},
		{"its own: no wake", view(held(0, "me", now.Add(time.Second))), nil, time.Time{}},
		{"another template's: no wake", view(shardLease{ref: shardRef{template: "u"}, lease: lease{Owner: "b", Until: now.Add(time.Second)}}), nil, time.Time{}},
		{"the earliest of several", view(held(0, "b", now.Add(3*time.Second)), held(1, "c", now.Add(-time.Second))), map[string]time.Time{"b": now.Add(term), "c": now.Add(2 * time.Second)}, now.Add(2 * time.Second)},
	} {
		if got := c.v.nextShardEnd("me", tmpls, c.present, term, now); !got.Equal(c.want) {
			t.Errorf("%s: wakes at %v, want %v", c.name, got, c.want)
		}
	}
}

// A team's shard is a hash of its id, spread about evenly; a shard's key
// reads back; an input's subject names its team.
func TestShardOfSpreadsTeamsAndKeysReadBack(t *testing.T) {
	const n, teams = 16, 16000
	count := make([]int, n)
	for range teams {
		count[shardOf(uuid.New(), n)]++
	}
	for s, c := range count {
		if c < teams/n/2 || c > teams/n*2 {
			t.Fatalf("shard %d holds %d of %d teams; want about %d", s, c, teams, teams/n)
		}
	}
	r := shardRef{template: "a-b_c", n: 12}
	if got, ok := parseShardKey(shardKey(r)); !ok || got != r {
		t.Fatalf("parseShardKey(%q) = %v, %v; want %v", shardKey(r), got, ok, r)
	}
	for _, k := range []string{"shard.", "shard.x", "shard.x.-1", "shard.x.y", "worker.x", layoutKey} {
		if _, ok := parseShardKey(k); ok {
			t.Fatalf("parseShardKey(%q) read a shard", k)
		}
	}
	id := uuid.New()
	if got, ok := teamOfSubject(Config{Prefix: "p"}.inboxSubject("t", 3, id)); !ok || got != id {
		t.Fatalf("teamOfSubject: %v, %v; want %v", got, ok, id)
	}
}

// The number of shards is fixed at the cluster's first use: a client or
// worker asking another count is refused with the count to use; a cluster
// whose inbox an earlier version made (one subject, and one consumer, per
// team) is refused with what to do.
func TestTheLayoutIsFixedAndAnOldInboxRefused(t *testing.T) {
	ctx := actortest.Context(t)
	e := embedded(t)
	nc := connect(t, e)
	if _, err := NewClient(ctx, nc.Conn, Config{Shards: 8}); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(ctx, nc.Conn, Config{})
	if err != nil || c.shards != 8 {
		t.Fatalf("a client with Shards 0: %d shards, %v; want the cluster's 8", c.shardsOr0(), err)
	}
	if _, err := NewClient(ctx, nc.Conn, Config{Shards: 16}); err == nil || !strings.Contains(err.Error(), "has 8 shards per template") {
		t.Fatalf("Shards 16 on a cluster of 8: %v; want the count named", err)
	}
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	old := Config{Stream: "OLD", Prefix: "old"}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: old.inboxStream(), Subjects: []string{"old.in.*"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	_, err = NewClient(ctx, nc.Conn, old)
	if err == nil || !strings.Contains(err.Error(), "earlier version") || !strings.Contains(err.Error(), "nats stream rm OLD_INBOX") {
		t.Fatalf("a cluster with an earlier version's inbox: %v; want it refused, naming the command", err)
	}
}

// shardsOr0 is c's count of shards, 0 for a nil client.
func (c *Client) shardsOr0() int {
	if c == nil {
		return 0
	}
	return c.shards
}

// waitShares waits until the workers hold every shard of the template,
// none more than its share (a joiner's share handed over to it).
func waitShares(t *testing.T, ctx context.Context, template string, ws ...*Worker) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond) // polled: the handovers are the workers' own
	defer tick.Stop()
	for {
		sum, ok := 0, true
		var got []int
		for _, w := range ws {
			w.mu.Lock()
			n := 0
			for r := range w.shards {
				if r.template == template {
					n++
				}
			}
			share := (w.nshards + len(ws) - 1) / len(ws)
			w.mu.Unlock()
			sum += n
			got = append(got, n)
			if n > share {
				ok = false
			}
		}
		if ok && len(ws) > 0 && sum == ws[0].nshards {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the workers hold %v shards of %q; want every shard, each its share", got, template)
		case <-tick.C:
		}
	}
}

// A worker that joins gets its share of the shards by handover: the first
// worker hands its surplus over with those shards' teams, and the joiner
// runs them; each team answers every input once, wherever it runs, its
// state carried over. Neither creating a team nor moving it makes a
// consumer: the server holds one per shard.
func TestJoiningWorkerGetsItsShareByHandover(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	sys1, sys2 := system(t), system(t)
	w1 := startNamed(t, ctx, nc, sys1, "w1")
	const n = 32
	ids := make([]uuid.UUID, n)
	var before []uuid.UUID
	for i := range ids {
		id, err := c.Create(ctx, "counters", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
		before = append(before, send(t, ctx, c, id, "a", "before")...)
	}
	waitInputs(t, ctx, w1.inputs, before...)
	w2 := startNamed(t, ctx, connect(t, e), sys2, "w2")
	waitShares(t, ctx, "counters", w1.Worker, w2.Worker)
	var after []uuid.UUID
	for _, id := range ids {
		after = append(after, send(t, ctx, c, id, "a", "after")...)
	}
	got := map[uuid.UUID]int{}
	for len(got) < len(after) {
		select {
		case id := <-w1.inputs:
			got[id]++
		case id := <-w2.inputs:
			got[id]++
		case <-ctx.Done():
			t.Fatalf("%d of %d inputs acknowledged", len(got), len(after))
		}
	}
	moved := 0
	for _, id := range ids {
		team, sys, on := w1.team(id), sys1, w1.Worker
		if team == nil {
			team, sys, on = w2.team(id), sys2, w2.Worker
			moved++
		}
		if team == nil || (w1.team(id) != nil && w2.team(id) != nil) {
			t.Fatalf("team %s runs on w1 %v, w2 %v; want exactly one", id, w1.team(id) != nil, w2.team(id) != nil)
		}
		if on.heldShardOf("counters", id) == nil {
			t.Fatalf("team %s runs on %s, which does not hold its shard", id, on.cfg.Owner)
		}
		if _, calls := total(t, ctx, sys, team, "a"); calls != 3 {
			t.Fatalf("team %s: %d calls of a; want 3 (before, after, this one): each input once, the state carried over", id, calls)
		}
	}
	if moved == 0 {
		t.Fatalf("no team of %d moved to w2, which holds %d shards", n, heldCount(w2.Worker))
	}
	for id, k := range got {
		if k != 1 {
			t.Fatalf("input %s acknowledged %d times", id, k)
		}
	}
	info, err := c.inbox.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := w1.nshards * len(counters); info.State.Consumers != want {
		t.Fatalf("the inbox has %d consumers for %d teams; want one per shard of each template (%d)", info.State.Consumers, n, want)
	}
	t.Logf("%d of %d teams handed over to w2 with its %d shards", moved, n, heldCount(w2.Worker))
}

// heldCount is how many shards w holds.
func heldCount(w *Worker) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.shards)
}
