package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// history calls ReadHistory, failing the test on an error.
func history(tb testing.TB, w *eventlog.Writer) []message.Message {
	tb.Helper()
	h, err := w.ReadHistory(tb.Context())
	if err != nil {
		tb.Fatalf("ReadHistory: %v", err)
	}
	return h
}

// ReadHistory sees what is still buffered, from the goroutine that calls
// the hooks, and records written after a read show up in the next one.
func TestReadHistorySeesBufferedRecords(t *testing.T) {
	for name, policy := range map[string]eventlog.SyncPolicy{"batch": eventlog.SyncBatch, "buffered": eventlog.SyncBuffered, "every": eventlog.SyncEvery, "none": eventlog.SyncNone} {
		t.Run(name, func(t *testing.T) {
			tm := newTeam()
			w, _ := create(t, tm, eventlog.Options{Sync: policy})
			if h := history(t, w); len(h) != 0 {
				t.Fatalf("fresh log: %d records", len(h))
			}
			recs := tm.records()
			for _, r := range recs[:4] {
				w.OnMessage(r)
			}
			sameRecords(t, history(t, w), recs[:4])
			for _, r := range recs[4:] {
				w.OnMessage(r)
			}
			sameRecords(t, history(t, w), recs)
			w.OnStop(tm.id)
			sameRecords(t, history(t, w), recs) // after Close too
			if s := eventlog.StatsOf(w); s.Written != uint64(len(recs)) || s.Lost != 0 {
				t.Errorf("Stats %+v", s)
			}
		})
	}
}

// A log continued with Append: the history starts with what the file held.
func TestReadHistoryAfterAppend(t *testing.T) {
	tm := newTeam()
	opts := eventlog.Options{Sync: eventlog.SyncBatch, Logger: discard}
	w, path := create(t, tm, opts)
	recs := tm.records()
	for _, r := range recs[:5] {
		w.OnMessage(r)
	}
	w.OnStop(tm.id)
	appendBytes(t, path, `{"__model__":"UserMes`) // a torn tail, cut off by Append

	w, err := eventlog.Append(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sameRecords(t, history(t, w), recs[:5])
	for _, r := range recs[5:] {
		w.OnMessage(r)
	}
	sameRecords(t, history(t, w), recs)
}

// ReadHistory from another goroutine while records keep coming: each read
// is a prefix of what was written, in order, and never a torn line.
func TestReadHistoryConcurrentWithWrites(t *testing.T) {
	tm := newTeam()
	w, _ := create(t, tm, eventlog.Options{Sync: eventlog.SyncBatch})
	const n = 300
	recs := make([]message.Message, n)
	for i := range recs {
		recs[i] = tm.user(fmt.Sprint(i))
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for _, r := range recs {
			w.OnMessage(r)
		}
	})
	wg.Go(func() {
		for {
			h, err := w.ReadHistory(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			sameRecords(t, h, recs[:len(h)])
			select {
			case <-done:
				return
			default:
			}
		}
	})
	wg.Wait()
	sameRecords(t, history(t, w), recs)
}

func TestReadHistoryFailures(t *testing.T) {
	tm := newTeam()
	w, _ := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone})
	kept := tm.user("kept")
	w.OnMessage(kept)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.ReadHistory(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadHistory with a cancelled context: %v", err)
	}
	if err := eventlog.CloseFile(w); err != nil {
		t.Fatal(err)
	}
	w.OnMessage(tm.user("lost"))
	h, err := w.ReadHistory(t.Context())
	if !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadHistory after a lost record: %v, want the write error", err)
	}
	sameRecords(t, h, []message.Message{kept})
}
