package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// counts is how many teams each worker runs.
func counts(ws ...*testWorker) []int {
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = w.count()
	}
	return out
}

// createN creates n teams from "counters" through the client.
func createN(t *testing.T, ctx context.Context, c *Client, n int) {
	t.Helper()
	for range n {
		if _, err := c.Create(ctx, "counters", nil); err != nil {
			t.Fatal(err)
		}
	}
}

// Client.Create places a new team on the live worker with the fewest teams, a
// tie broken at random. One worker already holds four teams: the next four go
// to the two others, two each; the next seven even the three out at five
// each.
func TestCreatePlacesOnFewest(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	ws := []*testWorker{
		startNamed(t, ctx, nc, system(t), "w0"),
		startNamed(t, ctx, connect(t, e), system(t), "w1"),
		startNamed(t, ctx, connect(t, e), system(t), "w2"),
	}
	waitShares(t, ctx, "counters", ws[0].Worker, ws[1].Worker, ws[2].Worker) // their teams stay where they are made
	for range 4 {
		if _, err := ws[0].Create(ctx, "counters", nil); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t, ctx, nc)
	createN(t, ctx, c, 4)
	if got := counts(ws...); fmt.Sprint(got) != "[4 2 2]" {
		t.Fatalf("after four creates the workers run %v teams, want [4 2 2]", got)
	}
	createN(t, ctx, c, 7)
	if got := counts(ws...); fmt.Sprint(got) != "[5 5 5]" {
		t.Fatalf("after eleven creates the workers run %v teams, want [5 5 5]", got)
	}
	teams, err := c.Teams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]int{}
	for _, ti := range teams {
		owners[ti.Owner]++
	}
	if len(teams) != 15 || owners["w0"] != 5 || owners["w1"] != 5 || owners["w2"] != 5 {
		t.Fatalf("Teams lists %d teams by owner %v, want 15, five each (no presence among them)", len(teams), owners)
	}
}

// putPresence stores a presence entry as a worker would.
func putPresence(t *testing.T, ctx context.Context, kv jetstream.KeyValue, p presence) {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, presenceKey(p.Owner), data); err != nil {
		t.Fatal(err)
	}
}

// The worker Create picks does not answer (its presence is live, its
// subscription gone): the request goes to the queue group and the team is
// made all the same. A worker whose presence ended is never picked, even with
// no team.
func TestCreateFallsBackToQueueGroup(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	// One shard: the live presence of a worker that never answers (below)
	// would otherwise draw a handover of half the real worker's shards,
	// and with them perhaps the team it creates.
	w := startNamedWith(t, ctx, nc, system(t), "busy", func(c *Config) { c.Shards = 1 })
	if _, err := w.Create(ctx, "counters", nil); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(ctx, nc.Conn, Config{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}

	// A dead worker with no team, listening (a request to it would be seen).
	dead := presence{Owner: "dead", Templates: []string{"counters"}, Subject: cfg.workerSubject("dead"),
		Until: time.Now().Add(-time.Second)}
	putPresence(t, ctx, c.kv, dead)
	asked := make(chan struct{}, 1)
	sub, err := nc.Subscribe(dead.Subject+".counters", func(m *nats.Msg) { asked <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	to, err := c.place(ctx, "counters")
	if err != nil || to != w.cfg.workerSubject("busy")+".counters" {
		t.Fatalf("place = %q, %v; want the live worker's subject, not the dead one's", to, err)
	}

	// A live worker with no team that does not answer.
	gone := presence{Owner: "gone", Templates: []string{"counters", "other"}, Subject: cfg.workerSubject("gone"),
		Until: time.Now().Add(time.Minute)}
	putPresence(t, ctx, c.kv, gone)
	if to, err := c.place(ctx, "counters"); err != nil || to != gone.Subject+".counters" {
		t.Fatalf("place = %q, %v; want the worker with no team, %q", to, err, gone.Subject+".counters")
	}
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatalf("Create with the placed worker gone: %v", err)
	}
	if w.team(id) == nil {
		t.Fatalf("team %s is not on the only worker", id)
	}
	select {
	case <-asked:
		t.Fatal("Create asked the dead worker")
	default:
	}
	if _, err := c.Create(ctx, "other", nil); !errors.Is(err, ErrNoTemplate) {
		t.Fatalf("Create from a template only a gone worker has: %v, want ErrNoTemplate", err)
	}
}

// A worker's presence is in the leases bucket while it runs (its owner,
// templates and subject; an owner name with ':' makes a valid key), is
// ignored by Teams and by the takeover scan (it is no team), and is removed
// by Close.
func TestWorkerPresence(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	scans := make(chan struct{}, 16)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "host:42", scanned: func() {
		select {
		case scans <- struct{}{}:
		default:
		}
	}}
	w, err := StartWorker(ctx, nc.Conn, system(t), cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = w.Close(context.Background())
		}
	})
	c := client(t, ctx, nc)
	en, err := c.kv.Get(ctx, presenceKey("host:42"))
	if err != nil {
		t.Fatal(err)
	}
	var p presence
	if err := json.Unmarshal(en.Value(), &p); err != nil {
		t.Fatal(err)
	}
	if p.Owner != "host:42" || fmt.Sprint(p.Templates) != "[counters held]" || p.Subject != w.cfg.workerSubject("host:42") || !p.Until.After(time.Now()) {
		t.Fatalf("presence %+v", p)
	}
	if p.Since.IsZero() || p.Since.After(time.Now()) {
		t.Fatalf("presence since %v; want the worker's start", p.Since)
	}
	for range 2 { // a scan over the presence takes nothing and fails nothing
		select {
		case <-scans:
		case <-ctx.Done():
			t.Fatal("the worker does not scan the leases")
		}
	}
	if teams, err := c.Teams(ctx); err != nil || len(teams) != 0 {
		t.Fatalf("Teams = %v, %v; want none (the presence is no team)", teams, err)
	}
	if w.count() != 0 {
		t.Fatalf("the worker runs %d teams, want none", w.count())
	}
	closed = true
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.kv.Get(ctx, presenceKey("host:42")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the presence after Close: %v, want ErrKeyNotFound", err)
	}
}

// A worker's presence says since when it has lasted without a break: the
// same across its renewals, and begun again by a renewal after its last
// stored presence ended (the worker was paused, or cut off, for longer
// than its lease), so that a worker back from a pause is not handed
// shards at once.
func TestPresenceSinceBeginsAgainAfterALapse(t *testing.T) {
	w := &Worker{}
	t0 := time.Now()
	if got := w.presentSince(t0); !got.Equal(t0) {
		t.Fatalf("first presence since %v; want %v", got, t0)
	}
	w.presentTill(t0.Add(testLease))
	if got := w.presentSince(t0.Add(testLease / 3)); !got.Equal(t0) {
		t.Fatalf("renewed within its lease: since %v; want %v", got, t0)
	}
	w.presentTill(t0.Add(testLease / 3).Add(testLease))
	back := t0.Add(5 * testLease) // paused past the presence's end
	if got := w.presentSince(back); !got.Equal(back) {
		t.Fatalf("renewed after its presence ended: since %v; want %v", got, back)
	}
}

// readBucket reads every key once while others are renewed by many
// writers at a time (the watcher's own end of the initial values comes
// early then: nats-io/nats-server#4824).
func TestReadBucketUnderRenewals(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	kv := client(t, ctx, connect(t, e)).kv
	const n, writers = 300, 16
	data, err := json.Marshal(lease{Owner: "o", Until: time.Now().Add(time.Hour), Template: "t"})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = uuid.NewString()
		if _, err := kv.Put(ctx, keys[i], data); err != nil {
			t.Fatal(err)
		}
	}
	putPresence(t, ctx, kv, presence{Owner: "o"})
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := g; wctx.Err() == nil; i += writers {
				_, _ = kv.Put(wctx, keys[i%n], data)
			}
		})
	}
	defer wg.Wait()
	defer stop()
	for i := range 10 {
		teams, workers, err := readBucket(ctx, kv)
		if err != nil {
			t.Fatal(err)
		}
		if len(teams) != n || len(workers) != 1 {
			t.Fatalf("read #%d: %d leases and %d presences, want %d and 1", i, len(teams), len(workers), n)
		}
	}
}
