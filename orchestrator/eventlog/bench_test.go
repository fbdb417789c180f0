package eventlog_test

import (
	"github.com/google/uuid"

	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// benchRecord is a typical record: a SentMessage carrying a UserMessage,
// with addresses (about 900 bytes of JSON).
func benchRecord(tm *team) message.Message {
	return tm.records()[1]
}

// Targets (2-core machine, medians of >= 5 runs):
//   - MarshalRecord (a SentMessage record with a small user payload):
//     <= 3 us, <= 8 allocs (was 15.7-22 us, 35 allocs);
//   - WriteRecordBatch (SyncBatch, fsync batched): <= 5 us per record,
//     >= 200,000 records/s (WriteRecord, SyncNone, was 20.5 us);
//     WriteRecordBuffered (writes batched too) is the faster policy;
//   - Read: <= 5 us per record (was 39-58 us).
// WriteRaw is the floor: the write(2) alone.

// BenchmarkWriteRecord measures OnMessage under SyncNone: encode, one
// write(2), bookkeeping. The record is built before the timer starts.
func BenchmarkWriteRecord(b *testing.B) { benchWrite(b, eventlog.SyncNone) }

// BenchmarkWriteRecordBatch measures OnMessage under SyncBatch (the
// policy the demo uses): encode, one write(2) per record, an fsync per
// interval on the Writer's goroutine; Close is timed, so the last fsync
// counts too.
func BenchmarkWriteRecordBatch(b *testing.B) { benchWrite(b, eventlog.SyncBatch) }

// BenchmarkWriteRecordBuffered measures OnMessage under SyncBuffered:
// encode into the buffer, one write(2) per 64 KiB batch, an fsync per
// interval; Close is timed.
func BenchmarkWriteRecordBuffered(b *testing.B) { benchWrite(b, eventlog.SyncBuffered) }

// BenchmarkWriteRecordBufferedUnchained is WriteRecordBuffered for a
// version 1 log, without the hash chain: the ratio is the chain's cost.
func BenchmarkWriteRecordBufferedUnchained(b *testing.B) {
	benchWriteWith(b, eventlog.Options{Sync: eventlog.SyncBuffered, Unchained: true})
}

func benchWrite(b *testing.B, policy eventlog.SyncPolicy) {
	benchWriteWith(b, eventlog.Options{Sync: policy})
}

func benchWriteWith(b *testing.B, opts eventlog.Options) {
	tm := newTeam()
	w, _ := create(b, tm, opts)
	rec := benchRecord(tm)
	line, _ := message.Marshal(rec)
	b.SetBytes(int64(len(line) + 1))
	b.ReportAllocs()
	for b.Loop() {
		w.OnMessage(rec)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if s := eventlog.StatsOf(w); s.Lost != 0 || s.Written == 0 {
		b.Fatalf("Stats %+v", s)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkWriteRaw is the floor: the same pre-encoded line written to a
// file with one write(2), nothing else.
func BenchmarkWriteRaw(b *testing.B) {
	tm := newTeam()
	line, _ := message.Marshal(benchRecord(tm))
	line = append(line, '\n')
	f, err := os.Create(filepath.Join(b.TempDir(), "raw.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalRecord is the codec's share: message.Marshal alone.
func BenchmarkMarshalRecord(b *testing.B) {
	rec := benchRecord(newTeam())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := message.Marshal(rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalRecord is the decoder's share of Read:
// message.Unmarshal alone, of the record MarshalRecord encodes (the pair
// compares the decoder with the encoder).
func BenchmarkUnmarshalRecord(b *testing.B) {
	data, err := message.Marshal(benchRecord(newTeam()))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := message.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead reads a log of 1000 typical records; ns/record is the
// figure to read.
func BenchmarkRead(b *testing.B) { benchRead(b, eventlog.Options{Sync: eventlog.SyncNone}) }

// BenchmarkReadUnchained is Read for a version 1 log, without the hash
// chain: the ratio is the chain's cost.
func BenchmarkReadUnchained(b *testing.B) {
	benchRead(b, eventlog.Options{Sync: eventlog.SyncNone, Unchained: true})
}

func benchRead(b *testing.B, opts eventlog.Options) {
	tm := newTeam()
	w, path := create(b, tm, opts)
	rec := benchRecord(tm)
	const n = 1000
	for range n {
		rec.Envelope().ID = uuid.New() // a record id twice is a tampered log
		w.OnMessage(rec)
	}
	w.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		l, err := eventlog.Read(bytes.NewReader(data))
		if err != nil || len(l.Messages) != n {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}
