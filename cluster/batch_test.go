package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
)

// On a three-server cluster, R3, a Ledger sends the records queued while a
// send is in flight as one atomic batch. One cluster for the three cases.
func TestR3AtomicBatches(t *testing.T) {
	servers := threeServers(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	// Snapshots off: these cases read back the raw records stored.
	cfg := Config{Logger: discard, Replicas: 3, Window: 8192, SnapshotEvery: -1}
	nc := connectCluster(t, ctx, servers, cfg)

	// Records queued behind a send in flight go out as batches of up to
	// maxBatch; the stream holds each once, in ledger order, and a new
	// owner restores exactly what was published.
	t.Run("order", func(t *testing.T) {
		team := uuid.New()
		l := openR3(t, ctx, nc, team, cfg, "first")
		var published []uuid.UUID
		held(l, func() { published = publish(l, team, 2*maxBatch+500) }) // three batches: 1000, 1000, 500
		published = append(published, publish(l, team, 300)...)
		flushed(t, ctx, l)
		last, err := l.st.GetLastMsgForSubject(ctx, l.recSubj)
		if err != nil {
			t.Fatal(err)
		}
		if last.Header.Get(batchIDHeader) == "" {
			t.Fatalf("the last record was not stored by an atomic batch: headers %v", last.Header)
		}
		l.OnStop(team)
		_, log, err := OpenLedger(ctx, nc, team, Config{Logger: discard, Replicas: 3, Owner: "second", SnapshotEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(log); !slices.Equal(got, published) {
			t.Fatalf("restored %d records, want the %d published in order", len(got), len(published))
		}
		assertSubjectCount(t, ctx, l, len(published))
	})

	// Once another owner claimed the team, the old owner's batch is refused
	// whole: none of its records is stored, its Err wraps ErrFenced and its
	// log says why. The new owner's batches are stored after what it
	// restored.
	t.Run("fenced", func(t *testing.T) {
		team := uuid.New()
		var logs logCapture
		old := Config{Logger: logs.logger(), Replicas: 3, Owner: "first", SnapshotEvery: -1}
		l1, _, err := OpenLedger(ctx, nc, team, old)
		if err != nil {
			t.Fatal(err)
		}
		before := publish(l1, team, 10)
		flushed(t, ctx, l1)
		l2 := openR3(t, ctx, nc, team, cfg, "second")
		held(l1, func() { publish(l1, team, 50) })
		if err := l1.flush(ctx, ^uint64(0)); err != nil { // returns once fenced
			t.Fatal(err)
		}
		if err := l1.Err(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "records 11 to 60") {
			t.Fatalf("old owner's Err = %v, want ErrFenced naming records 11 to 60", err)
		}
		l1.mu.Lock()
		lost := l1.lost
		l1.mu.Unlock()
		if lost != 50 {
			t.Fatalf("old owner lost %d records, want the batch's 50", lost)
		}
		if !strings.Contains(logs.String(), "taken over by another owner") {
			t.Fatalf("the old owner's log does not say it was taken over:\n%s", logs.String())
		}
		assertSubjectCount(t, ctx, l1, len(before))
		l1.OnStop(team)

		var after []uuid.UUID
		held(l2, func() { after = publish(l2, team, 20) })
		flushed(t, ctx, l2)
		stored, err := ReadTeam(ctx, nc, team, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if want := append(before, after...); !slices.Equal(ids(stored), want) {
			t.Fatalf("stream: %d records, want the old owner's 10 then the new owner's 20", len(stored))
		}
		l2.OnStop(team)
	})

	// A takeover while the old owner's batch of maxBatch records is in
	// flight: the claim waits for the batch (JetStream refuses it as busy
	// meanwhile) and then wins; the batch is in the stream whole or not
	// at all, the new owner restores exactly what is stored, and the old
	// owner's next batch is fenced.
	t.Run("takeover mid-batch", func(t *testing.T) {
		team := uuid.New()
		l1 := openR3(t, ctx, nc, team, cfg, "first")
		var batch []uuid.UUID
		held(l1, func() { batch = publish(l1, team, maxBatch) })
		nc2 := connectCluster(t, ctx, servers, cfg)
		_, log, err := OpenLedger(ctx, nc2, team, Config{Logger: discard, Replicas: 3, Owner: "second", SnapshotEvery: -1})
		if err != nil {
			t.Fatalf("the claim during the old owner's batch: %v", err)
		}
		if got := ids(log); len(got) != 0 && !slices.Equal(got, batch) {
			t.Fatalf("restored %d records: not the old owner's batch whole (%d) nor nothing", len(got), len(batch))
		}
		held(l1, func() { publish(l1, team, 10) })
		if err := l1.flush(ctx, ^uint64(0)); err != nil {
			t.Fatal(err)
		}
		if err := l1.Err(); !errors.Is(err, ErrFenced) {
			t.Fatalf("old owner's Err = %v, want ErrFenced", err)
		}
		assertSubjectCount(t, ctx, l1, len(log))
		l1.OnStop(team)
	})

	// A batch sent again after its acknowledgement was lost is refused
	// as a duplicate (10201): its records then go one by one, each
	// acknowledged as a duplicate or stored, and batches resume; nothing
	// is stored twice.
	t.Run("resent", func(t *testing.T) {
		team := uuid.New()
		var logs logCapture
		quiet := cfg
		quiet.Logger = logs.logger()
		l := openR3(t, ctx, nc, team, quiet, "first")
		var first []*nats.Msg
		var all []uuid.UUID
		held(l, func() {
			all = publish(l, team, 5)
			first = slices.Clone(l.queued)
		})
		flushed(t, ctx, l)
		// The batch's acknowledgement "lost": its records sent again with
		// the next ones, as resend would.
		held(l, func() {
			all = append(all, publish(l, team, 5)...)
			for _, m := range first {
				l.unacked[indexOf(m)] = m
			}
			l.queued = append(first, l.queued...)
		})
		flushed(t, ctx, l)
		held(l, func() { all = append(all, publish(l, team, 5)...) }) // batches again
		flushed(t, ctx, l)
		l.mu.Lock()
		solo, batchMax := l.solo, l.batchMax
		l.mu.Unlock()
		if !strings.Contains(logs.String(), "batch contains duplicate message id") {
			t.Fatalf("the batch sent again was not refused as a duplicate:\n%s", logs.String())
		}
		if solo != 0 || batchMax != maxBatch {
			t.Fatalf("after the duplicate: solo %d, batchMax %d; want 0 and %d", solo, batchMax, maxBatch)
		}
		stored, err := ReadTeam(ctx, nc, team, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(stored), all) {
			t.Fatalf("stream: %d records, want the 15 published in order", len(stored))
		}
		assertSubjectCount(t, ctx, l, 15)
		l.OnStop(team)
	})

	// The stream's atomic batches turned off under a running Ledger (by
	// hand): its batch is refused (10174), sent again record by record,
	// and stored; the Ledger logs that it keeps one record in flight from
	// then on. Last: it changes the stream the cases above share.
	t.Run("disabled", func(t *testing.T) {
		team := uuid.New()
		var logs logCapture
		quiet := cfg
		quiet.Logger = logs.logger()
		l := openR3(t, ctx, nc, team, quiet, "first")
		sc := l.st.CachedInfo().Config
		sc.AllowAtomicPublish = false
		if _, err := l.js.UpdateStream(ctx, sc); err != nil {
			t.Fatal(err)
		}
		var want []uuid.UUID
		held(l, func() { want = publish(l, team, 20) })
		flushed(t, ctx, l)
		if !strings.Contains(logs.String(), "no longer takes atomic batches") {
			t.Fatalf("the fallback is not logged:\n%s", logs.String())
		}
		stored, err := ReadTeam(ctx, nc, team, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(stored), want) {
			t.Fatalf("stream: %d records, want the 20 published in order", len(stored))
		}
		l.OnStop(team)
	})
}

// A stream made without atomic batches (an older akgentic, or by hand) is
// updated to take them when a Ledger opens it.
func TestStreamWithoutAtomicBatchesIsUpdated(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: defaultStream,
		Subjects: []string{defaultPrefix + ".rec.*", defaultPrefix + ".own.*"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	var logs logCapture
	team := uuid.New()
	l, _, err := OpenLedger(ctx, nc.Conn, team, Config{Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.OnStop(team)
	st, err := js.Stream(ctx, defaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if !st.CachedInfo().Config.AllowAtomicPublish {
		t.Fatal("the stream still does not take atomic batches")
	}
	if !strings.Contains(logs.String(), "now takes atomic batches") {
		t.Fatalf("the update is not logged:\n%s", logs.String())
	}
}

// openR3 opens the Ledger of team for owner on the replicated stream,
// checking that it sends atomic batches.
func openR3(t *testing.T, ctx context.Context, nc *nats.Conn, team uuid.UUID, cfg Config, owner string) *Ledger {
	t.Helper()
	cfg.Owner = owner
	l, _, err := OpenLedger(ctx, nc, team, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.batchMax != maxBatch {
		t.Fatalf("a Ledger on an R3 stream taking atomic batches has batchMax %d, want %d", l.batchMax, maxBatch)
	}
	return l
}

// held runs f with the Ledger's sends held, as if one were in flight,
// then lets them go: what f queued leaves as atomic batches.
func held(l *Ledger, f func()) {
	l.mu.Lock()
	l.inflight++
	l.mu.Unlock()
	f()
	l.mu.Lock()
	l.inflight--
	l.sendLocked()
	l.mu.Unlock()
}

// publish gives the Ledger n new records and returns their ids.
func publish(l *Ledger, team uuid.UUID, n int) []uuid.UUID {
	out := make([]uuid.UUID, n)
	for i := range out {
		rec := &message.SentMessage{Message: message.NewUserMessage("batch me")}
		rec.ID, rec.Timestamp = uuid.New(), time.Now()
		rec.TeamID = uuid.NullUUID{UUID: team, Valid: true}
		l.OnMessage(rec)
		out[i] = rec.ID
	}
	return out
}

// flushed waits until every record of l is acknowledged, with no failure.
func flushed(t *testing.T, ctx context.Context, l *Ledger) {
	t.Helper()
	if err := l.flush(ctx, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
}

// assertSubjectCount checks how many messages the team's records subject
// holds: duplicates and orphans included.
func assertSubjectCount(t *testing.T, ctx context.Context, l *Ledger, want int) {
	t.Helper()
	info, err := l.st.Info(ctx, jetstream.WithSubjectFilter(l.recSubj))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Subjects[l.recSubj]; got != uint64(want) {
		t.Fatalf("the records subject holds %d messages, want %d", got, want)
	}
}
