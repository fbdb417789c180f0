package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

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
	servers := threeServers(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{Logger: discard, Window: 8192, Replicas: 3}
	benchLedger(b, connectCluster(b, ctx, servers, cfg), cfg)
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
