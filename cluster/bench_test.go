package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/message"
)

// BenchmarkLedgerPublish measures Ledger.OnMessage into an embedded server
// (file storage, R1), acknowledgements included: a SentMessage record with
// a small user payload and a fresh id each time, published asynchronously
// while at most half the window waits for its acknowledgement (the
// benchmark waits beyond that, as a team would not). The target:
// >= 50,000 records/s for one team; compare eventlog's WriteRecord.
func BenchmarkLedgerPublish(b *testing.B) {
	e, err := RunEmbedded(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	nc := connectB(b, e)
	defer nc.Close()
	benchLedger(b, nc, Config{Logger: discard, Window: 8192})
}

// BenchmarkLedgerPublishR3 is BenchmarkLedgerPublish on a three-server
// cluster in process, the stream replicated three times: one atomic batch
// in flight at a time (a replicated stream refuses overlapping checks),
// holding the records queued while the previous one was in flight.
func BenchmarkLedgerPublishR3(b *testing.B) {
	nc, cfg := r3Cluster(b)
	benchLedger(b, nc, cfg)
}

// r3Cluster starts three servers in the process and connects to them, for
// the R3 benchmarks: the connection and the Ledgers' config (R3, a window
// of 8192).
func r3Cluster(b *testing.B) (*nats.Conn, Config) {
	b.Helper()
	servers := threeServers(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{Logger: discard, Window: 8192, Replicas: 3}
	return connectCluster(b, ctx, servers, cfg), cfg
}

// BenchmarkLedgerPublishR3Teams is BenchmarkLedgerPublishR3 with the
// records spread over many teams at once, as across a fleet: each team's
// Ledger keeps its one atomic batch in flight, so the teams' batches
// overlap (the server bounds them at 50 per stream by default; a refused
// batch is sent again after a pause). teams=1 is the one-team baseline.
func BenchmarkLedgerPublishR3Teams(b *testing.B) {
	nc, cfg := r3Cluster(b)
	for _, teams := range []int{1, 8, 32, 128} {
		b.Run(fmt.Sprintf("teams=%d", teams), func(b *testing.B) { benchLedgers(b, nc, cfg, teams) })
	}
}

// benchLedgers publishes b.N records round-robin over the Ledgers of n
// teams, each flushed to half its window whenever half a window of its
// own is queued, and all flushed at the end, timed.
func benchLedgers(b *testing.B, nc *nats.Conn, cfg Config, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ls := make([]*Ledger, n)
	recs := make([]*message.SentMessage, n)
	for i := range ls {
		team := uuid.New()
		l, _, err := OpenLedger(ctx, nc, team, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer l.OnStop(team)
		ls[i] = l
		recs[i] = &message.SentMessage{Message: message.NewUserMessage("What is the capital of France?")}
		recs[i].TeamID = uuid.NullUUID{UUID: team, Valid: true}
		recs[i].Timestamp = time.Now()
	}
	half := uint64(cfg.Window / 2)
	b.ReportAllocs()
	b.ResetTimer()
	for k := range b.N { // a b.N loop: the last flush is timed (see benchLedger)
		i := k % n
		l, rec := ls[i], recs[i]
		rec.ID = uuid.New()
		l.OnMessage(rec)
		if sent := uint64(k/n + 1); sent%half == 0 {
			l.mu.Lock()
			upTo := l.next - half
			l.mu.Unlock()
			if err := l.flush(ctx, upTo); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, l := range ls {
		if err := l.flush(ctx, ^uint64(0)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, l := range ls {
		if err := l.Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func benchLedger(b *testing.B, nc *nats.Conn, cfg Config) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	team := uuid.New()
	l, _, err := OpenLedger(ctx, nc, team, cfg)
	if err != nil {
		b.Fatal(err)
	}
	half := uint64(cfg.Window / 2)
	rec := &message.SentMessage{Message: message.NewUserMessage("What is the capital of France?")}
	rec.TeamID = uuid.NullUUID{UUID: team, Valid: true}
	rec.Timestamp = time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	// A b.N loop, not b.Loop: the last acknowledgements (the flush after
	// the loop) must be timed too, and b.Loop stops the timer when it ends.
	for n := uint64(1); n <= uint64(b.N); n++ {
		rec.ID = uuid.New()
		l.OnMessage(rec)
		if n%half == 0 {
			l.mu.Lock()
			upTo := l.next - half
			l.mu.Unlock()
			if err := l.flush(ctx, upTo); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := l.flush(ctx, ^uint64(0)); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := l.Err(); err != nil {
		b.Fatal(err)
	}
	last, err := l.st.GetLastMsgForSubject(ctx, l.recSubj)
	if err != nil || indexOf(&nats.Msg{Header: last.Header}) != l.next-1 {
		b.Fatalf("the stream's last record: %v, %v; want index %d", last, err, l.next-1)
	}
	l.OnStop(team)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkRawPublishR3Teams is the raw baseline of
// BenchmarkLedgerPublishR3Teams: the same records (the Ledger's encoding
// and headers, on the same three servers and stream, claimed by a Ledger
// first) published by the JetStream client alone, without the Ledger's
// bookkeeping. mode=batch sends them as the Ledger does on a replicated
// stream (each team one atomic batch in flight at a time, up to maxBatch
// records, the commit acknowledged); mode=async publishes them record by
// record, the client's default window in flight, without the claims
// check (which a replicated stream refuses to overlap): the ceiling of
// the client and the servers on this machine.
func BenchmarkRawPublishR3Teams(b *testing.B) {
	nc, cfg := r3Cluster(b)
	for _, mode := range []string{"batch", "async"} {
		for _, teams := range []int{1, 8, 32, 128} {
			b.Run(fmt.Sprintf("mode=%s/teams=%d", mode, teams), func(b *testing.B) { benchRaw(b, nc, cfg, teams, mode == "batch") })
		}
	}
}

// benchRaw publishes b.N records spread over n teams' subjects with the
// JetStream client alone (see BenchmarkRawPublishR3Teams), timed to the
// last acknowledgement.
func benchRaw(b *testing.B, nc *nats.Conn, cfg Config, n int, batch bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	type team struct {
		subj, own, claim string
		data             []byte
	}
	teams := make([]team, n)
	for i := range teams {
		id := uuid.New()
		l, _, err := OpenLedger(ctx, nc, id, cfg) // the team's claim, as a Ledger makes it
		if err != nil {
			b.Fatal(err)
		}
		rec := &message.SentMessage{Message: message.NewUserMessage("What is the capital of France?")}
		rec.ID, rec.TeamID, rec.Timestamp = uuid.New(), uuid.NullUUID{UUID: id, Valid: true}, time.Now()
		data, err := encode(rec)
		if err != nil {
			b.Fatal(err)
		}
		teams[i] = team{subj: l.recSubj, own: l.ownSubj, claim: strconv.FormatUint(l.claimSeq, 10), data: data}
		l.OnStop(id)
	}
	msg := func(t team, index int) *nats.Msg {
		h := nats.Header{
			indexHeader:           {strconv.Itoa(index)},
			jetstream.MsgIDHeader: {uuid.NewString()},
		}
		if batch {
			h[jetstream.ExpectedLastSubjSeqHeader] = []string{t.claim}
			h[jetstream.ExpectedLastSubjSeqSubjHeader] = []string{t.own}
		}
		return &nats.Msg{Subject: t.subj, Data: t.data, Header: h}
	}
	b.ReportAllocs()
	b.ResetTimer()
	if !batch {
		for k := range b.N {
			if _, err := js.PublishMsgAsync(msg(teams[k%n], k/n+1)); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			b.Fatal("the acknowledgements did not all come")
		}
	} else {
		errs := make(chan error, n)
		for i, t := range teams {
			count := b.N / n
			if i < b.N%n {
				count++
			}
			go func() { errs <- rawBatches(ctx, js, count, maxBatch, func(k int) *nats.Msg { return msg(t, k+1) }) }()
		}
		for range n {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// rawBatches sends count records made by rec as atomic batches of at most
// size, one in flight: every record but the last published plainly, the
// last committing the batch and waited for. A batch the server refuses
// for a reason the Ledger sends it again for is sent again.
func rawBatches(ctx context.Context, js jetstream.JetStream, count, size int, rec func(k int) *nats.Msg) error {
	nc := js.Conn()
	for k := 0; k < count; {
		n := min(size, count-k)
		last := rec(k + n - 1)
		if n > 1 {
			id := uuid.NewString()
			for i := range n - 1 {
				m := rec(k + i)
				m.Header.Set(batchIDHeader, id)
				m.Header.Set(batchSeqHeader, strconv.Itoa(i+1))
				if err := nc.PublishMsg(m); err != nil {
					return err
				}
			}
			last.Header.Set(batchIDHeader, id)
			last.Header.Set(batchSeqHeader, strconv.Itoa(n))
			last.Header.Set(batchCommitHeader, "1")
		}
		_, err := js.PublishMsg(ctx, last)
		var ae *jetstream.APIError
		switch {
		case errors.As(err, &ae) && (ae.ErrorCode == errBatchInflight || ae.ErrorCode == errBatchIncomplt || ae.ErrorCode == errDupInProcess):
			continue // the same records again, as a new batch (as the Ledger does)
		case err != nil:
			return err
		}
		k += n
	}
	return nil
}
