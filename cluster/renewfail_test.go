package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// electionKV is a leases bucket whose updates (shard lease renewals and
// takes)
// fail as they do while the bucket elects a leader, while failing is set;
// each failed update's time is sent on failed when there is room.
type electionKV struct {
	jetstream.KeyValue
	failing atomic.Bool
	failed  chan time.Time
}

func (k *electionKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if k.failing.Load() {
		select {
		case k.failed <- time.Now():
		default:
		}
		return 0, fmt.Errorf("update %s: %w", key, jetstream.ErrNoStreamResponse)
	}
	return k.KeyValue.Update(ctx, key, value, rev)
}

// electionLease is the lease of the tests of failing renewals: long
// enough that a retry, every quarter of a beat, comes well before the
// lease's end on a loaded machine.
const electionLease = 6 * time.Second

// electionWorker starts a worker whose leases bucket fails on demand, and
// creates a team of "counters" on it.
func electionWorker(t *testing.T, ctx context.Context) (*Worker, *electionKV, uuid.UUID, chan uuid.UUID) {
	t.Helper()
	e := embedded(t)
	kv := &electionKV{failed: make(chan time.Time, 64)}
	resumed := make(chan uuid.UUID, 4)
	cfg := Config{Logger: discard, Lease: electionLease, Owner: "w",
		resumed: func(id uuid.UUID) { resumed <- id },
		wrapLeases: func(real jetstream.KeyValue) jetstream.KeyValue {
			kv.KeyValue = real
			return kv
		}}
	w, err := StartWorker(ctx, connect(t, e).Conn, system(t), cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kv.failing.Store(false)
		if err := w.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	team, err := w.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	return w, kv, team.ID(), resumed
}

// A worker whose shard lease renewals fail (the bucket electing a leader)
// keeps the shard's team while the lease lasts, trying again every
// quarter of a beat, and renews it as soon as the bucket answers: a
// failure past the point where a next try a beat later would come after
// the lease's end stops nothing.
func TestRenewalsFailingWhileTheLeaseLastsKeepTheTeam(t *testing.T) {
	ctx := actortest.Context(t)
	w, kv, id, _ := electionWorker(t, ctx)
	team := w.team(id)
	until, ok := w.shardEnd(id)
	if team == nil || !ok {
		t.Fatal("the created team is not the worker's")
	}
	kv.failing.Store(true)
	beat := electionLease / 3
	for {
		var at time.Time
		select {
		case at = <-kv.failed:
		case <-team.Done():
			t.Fatal("the team stopped while its lease lasted")
		case <-ctx.Done():
			t.Fatal("no renewal was tried")
		}
		if !at.Before(until) {
			t.Skipf("the machine is too slow for this test: a renewal was tried only at the lease's end (%v after it)", at.Sub(until))
		}
		if at.Add(beat).After(until) { // a beat later would be past the lease's end
			break
		}
		if now, _ := w.shardEnd(id); now.After(until) {
			until = now // renewed before the failures began
		}
	}
	kv.failing.Store(false)
	for {
		now, ok := w.shardEnd(id)
		if !ok || w.team(id) == nil {
			t.Fatal("the worker let the shard go, or stopped the team, after failed renewals while its lease lasted")
		}
		if now.After(until) {
			break
		}
		select {
		case <-team.Done():
			t.Fatal("the team stopped while its lease lasted")
		case <-ctx.Done():
			t.Fatal("the lease was not renewed once the bucket answered")
		case <-time.After(10 * time.Millisecond): // polling the worker's lease end
		}
	}
	if w.team(id) != team {
		t.Fatal("the team was replaced")
	}
}

// Shard lease renewals failing until the lease's end stop the shard's
// team then, not before, and the worker takes its team back from the stream once the
// bucket answers again.
func TestRenewalsFailingPastTheLeaseStopTheTeam(t *testing.T) {
	ctx := actortest.Context(t)
	w, kv, id, resumed := electionWorker(t, ctx)
	team := w.team(id)
	if team == nil {
		t.Fatal("the created team is not the worker's")
	}
	kv.failing.Store(true)
	var until time.Time
	for { // the shard's lease the last successful renewal stored
		select {
		case <-kv.failed:
		case <-ctx.Done():
			t.Fatal("no renewal was tried")
		}
		if u, ok := w.shardEnd(id); ok {
			until = u
			break
		}
	}
	select {
	case <-team.Done():
	case <-ctx.Done():
		t.Fatal("the team was not stopped once its lease ended unrenewed")
	}
	if stopped := time.Now(); stopped.Before(until) {
		t.Fatalf("the team was stopped %v before its lease's end", until.Sub(stopped))
	}
	kv.failing.Store(false)
	takenOver(t, ctx, w, resumed, id)
}

// A takeover whose restore failed because JetStream did not answer
// releases the lease without an error and does not back off; any other
// failure backs off and says why in the lease.
func TestResumeFailureOfJetStreamIsNotBackedOff(t *testing.T) {
	ctx := actortest.Context(t)
	w, _, _, _ := electionWorker(t, ctx)
	for _, c := range []struct {
		err     error
		backOff bool
	}{
		{fmt.Errorf("claim: %w", jetstream.ErrNoStreamResponse), false},
		{fmt.Errorf("restore: a record does not decode"), true},
	} {
		id := uuid.New()
		l := w.newLease("elsewhere") // a template no worker serves: no scan takes it
		rev, err := w.kv.Create(ctx, id.String(), mustJSON(t, l))
		if err != nil {
			t.Fatal(err)
		}
		h := w.hold(id, l.Template, rev, l.Until, func(error) {})
		w.failedResume(ctx, teamLease{id: id, rev: rev, lease: l}, h, c.err)
		w.mu.Lock()
		_, backedOff := w.backoff[id]
		w.mu.Unlock()
		if backedOff != c.backOff {
			t.Errorf("%v: backed off %v, want %v", c.err, backedOff, c.backOff)
		}
		got := leaseOf(t, ctx, w.kv, id)
		switch {
		case !got.Until.IsZero():
			t.Errorf("%v: the lease was not released (until %v)", c.err, got.Until)
		case c.backOff && got.Error == "":
			t.Errorf("%v: the released lease does not say why", c.err)
		case !c.backOff && got.Error != "":
			t.Errorf("%v: the released lease blames the team: %q", c.err, got.Error)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// shardEnd is the end of the lease w last stored for the shard of its
// team id of "counters"; false when w does not hold that shard.
func (w *Worker) shardEnd(id uuid.UUID) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	hs := w.shards[w.shardOfTeam("counters", id)]
	if hs == nil {
		return time.Time{}, false
	}
	return hs.until, true
}

// leaseOf reads team id's lease from the bucket.
func leaseOf(t *testing.T, ctx context.Context, kv jetstream.KeyValue, id uuid.UUID) lease {
	t.Helper()
	e, err := kv.Get(ctx, id.String())
	if err != nil {
		t.Fatalf("the lease of team %s: %v", id, err)
	}
	var l lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		t.Fatalf("the lease of team %s: %v", id, err)
	}
	return l
}
