package eventlog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRoundTrip(t *testing.T) {
	tm := newTeam()
	before := time.Now()
	w, path := create(t, tm, eventlog.Options{Unchained: true}) // the version 1 format, line by line; the chained one in tamper_test.go
	recs := tm.records()
	for _, r := range recs {
		w.OnMessage(r)
	}
	w.OnStopRequest(tm.id)
	w.OnStop(tm.id)
	if err := w.Err(); err != nil {
		t.Fatalf("Err: %v", err)
	}
	if s := eventlog.StatsOf(w); s.Written != uint64(len(recs)) || s.Lost != 0 || s.Skipped != 0 {
		t.Fatalf("Stats %+v, want %d written and nothing lost or skipped", s, len(recs))
	}

	l := readLog(t, path)
	if l.Format != eventlog.Format || l.Version != eventlog.Version || l.TeamID != tm.id {
		t.Errorf("header: format %q version %d team %v, want format %q version %d team %v",
			l.Format, l.Version, l.TeamID, eventlog.Format, eventlog.Version, tm.id)
	}
	if l.Created.Before(before.Add(-time.Second)) || l.Created.After(time.Now()) || l.Created.Location() != time.UTC {
		t.Errorf("header created %v, want a UTC time just before now", l.Created)
	}
	if l.Truncated != nil {
		t.Errorf("Truncated = %v, want nil", l.Truncated)
	}
	sameRecords(t, l.Messages, recs)

	// Nested values come back as their Go types.
	sent := l.Messages[1].(*message.SentMessage)
	um, ok := sent.Message.(*message.UserMessage)
	if !ok || um.ID != recs[1].(*message.SentMessage).Message.Envelope().ID || um.Content != "Hello, Akgentic!" {
		t.Errorf("SentMessage carries %#v, want the UserMessage", sent.Message)
	}
	if !sent.Recipient.Equal(tm.greeter) {
		t.Errorf("SentMessage recipient %v, want %v", sent.Recipient, tm.greeter)
	}
	em := l.Messages[5].(*message.ErrorMessage)
	if em.Traceback != "goroutine 7 [running]:\n\tgreeter.go:42" || em.CurrentMessage.Envelope().ID != um.ID {
		t.Errorf("ErrorMessage %+v lost its traceback or current message", em)
	}
	if cn, ok := l.Messages[10].(*message.EventMessage).Event.(*message.ClosedNotification); !ok || cn.MessageID != um.ID {
		t.Errorf("event %#v, want the ClosedNotification", l.Messages[10].(*message.EventMessage).Event)
	}
	if _, ok := l.Messages[11].(*message.EventMessage).Event.(*message.TeamStoppingEvent); !ok {
		t.Errorf("event %#v, want a TeamStoppingEvent", l.Messages[11].(*message.EventMessage).Event)
	}

	// The bytes are as the package comment says.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if last := lines[len(lines)-1]; last != "" {
		t.Fatalf("file does not end with a newline: %q", last)
	}
	lines = lines[:len(lines)-1]
	if len(lines) != len(recs)+1 {
		t.Fatalf("%d lines, want header + %d records", len(lines), len(recs))
	}
	wantHead := fmt.Sprintf(`{"format":"akgentic-eventlog","version":1,"team_id":"%s","created":"`, tm.id)
	if !strings.HasPrefix(lines[0], wantHead) {
		t.Errorf("header line %q, want prefix %q", lines[0], wantHead)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &raw); err != nil || len(raw) != 4 {
		t.Errorf("header %q is not a 4-key JSON object (%v)", lines[0], err)
	}
	for i, line := range lines[1:] {
		want, err := message.Marshal(recs[i])
		if err != nil {
			t.Fatal(err)
		}
		if line != string(want)+"\n" {
			t.Errorf("line %d:\n got %s\nwant %s", i+2, line, want)
		}
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if eventlog.PathOf(w) != path || eventlog.TeamIDOf(w) != tm.id {
		t.Errorf("Path, TeamID = %q, %v", eventlog.PathOf(w), eventlog.TeamIDOf(w))
	}
}

func TestSetRestoringSkipsReplayedRecords(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone})
	var want []message.Message
	for i := range 2 {
		m := tm.user(fmt.Sprint("before ", i))
		want = append(want, m)
		w.OnMessage(m)
	}
	w.SetRestoring(tm.id, true)
	for i := range 3 {
		w.OnMessage(tm.user(fmt.Sprint("replayed ", i)))
	}
	w.SetRestoring(tm.id, false)
	after := tm.user("after")
	want = append(want, after)
	w.OnMessage(after)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if s := eventlog.StatsOf(w); s.Written != 3 || s.Skipped != 3 || s.Lost != 0 {
		t.Errorf("Stats %+v, want 3 written, 3 skipped", s)
	}
	sameRecords(t, readLog(t, path).Messages, want)
}

// The restore of the package example: the replay of a log read back is
// skipped, only the new record is written, and the stop fsyncs once.
func TestRestoreWritesOnlyNewRecords(t *testing.T) {
	tm := newTeam()
	opts := eventlog.Options{Sync: eventlog.SyncBatch, Logger: discard}
	w, path := create(t, tm, opts)
	recs := []message.Message{tm.user("first"), tm.user("second")}
	for _, m := range recs {
		w.OnMessage(m)
	}
	w.OnStopRequest(tm.id)
	w.OnStop(tm.id)

	l := readLog(t, path)
	w, err := eventlog.Append(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.SetRestoring(tm.id, true)
	for _, m := range l.Messages {
		w.OnMessage(m)
	}
	w.SetRestoring(tm.id, false)
	last := tm.user("after restore")
	w.OnMessage(last)
	w.OnStop(tm.id)
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	if s := eventlog.StatsOf(w); s != (eventlog.Stats{Written: 1, Lost: 0, Skipped: 2, Syncs: 1}) {
		t.Errorf("Stats %+v, want {Written:1 Lost:0 Skipped:2 Syncs:1}", s)
	}
	sameRecords(t, readLog(t, path).Messages, append(recs, last))
}

func TestHooksForAnotherTeamAreIgnored(t *testing.T) {
	tm := newTeam()
	var logs logCapture
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone, Logger: logs.logger()})
	other := message.NewID()
	w.SetRestoring(other, true)
	w.OnStopRequest(other)
	w.OnStop(other)
	m := tm.user("still written")
	w.OnMessage(m)
	if s := eventlog.StatsOf(w); s.Written != 1 || s.Skipped != 0 {
		t.Errorf("Stats %+v: a hook for another team changed the writer", s)
	}
	if n := len(logs.lines("another team")); n != 3 {
		t.Errorf("%d warnings about another team, want 3:\n%s", n, logs.buf.String())
	}
	if got := logs.lines("another team"); len(got) > 0 && !strings.Contains(got[0], other.String()) {
		t.Errorf("warning %q does not name the other team", got[0])
	}
	w.OnStop(tm.id)
	sameRecords(t, readLog(t, path).Messages, []message.Message{m})
}

func TestSyncEvery(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncEvery})
	if s := eventlog.StatsOf(w); s.Syncs != 1 {
		t.Fatalf("after Create: %d syncs, want 1 (the header)", s.Syncs)
	}
	faults := eventlog.InjectFaults(w)
	recs := tm.records()
	for _, r := range recs {
		w.OnMessage(r)
	}
	writes, syncs := faults.Calls()
	if writes != len(recs) || syncs != len(recs) {
		t.Errorf("%d records: %d writes and %d fsyncs, want one of each per record", len(recs), writes, syncs)
	}
	w.OnStopRequest(tm.id)
	w.OnStop(tm.id)
	if s := eventlog.StatsOf(w); s.Syncs != uint64(len(recs))+1 || s.Written != uint64(len(recs)) {
		t.Errorf("Stats %+v, want %d written and %d syncs", s, len(recs), len(recs)+1)
	}
	if _, syncs := faults.Calls(); syncs != len(recs) {
		t.Errorf("stop hooks fsynced again (%d fsyncs) with nothing new written", syncs)
	}
	sameRecords(t, readLog(t, path).Messages, recs)
}

func TestSyncNone(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone})
	faults := eventlog.InjectFaults(w)
	recs := tm.records()
	for _, r := range recs {
		w.OnMessage(r)
	}
	w.OnStopRequest(tm.id)
	w.OnStop(tm.id)
	writes, syncs := faults.Calls()
	if writes != len(recs) || syncs != 0 {
		t.Errorf("%d records: %d writes and %d fsyncs, want %d writes and no fsync", len(recs), writes, syncs, len(recs))
	}
	if s := eventlog.StatsOf(w); s.Syncs != 0 || s.Written != uint64(len(recs)) {
		t.Errorf("Stats %+v, want %d written and 0 syncs", s, len(recs))
	}
	sameRecords(t, readLog(t, path).Messages, recs)
}

func TestSyncBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTeam()
		const interval = 100 * time.Millisecond
		path := filepath.Join(t.TempDir(), "team.log")
		w, err := eventlog.Create(path, tm.id, eventlog.Options{Sync: eventlog.SyncBatch, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		syncs := func() uint64 { synctest.Wait(); return eventlog.StatsOf(w).Syncs }
		if n := syncs(); n != 1 {
			t.Fatalf("after Create: %d syncs, want 1 (the header)", n)
		}
		// A burst is fsynced once, at the next tick, not per record.
		for i := range 10 {
			w.OnMessage(tm.user(fmt.Sprint(i)))
		}
		if n := syncs(); n != 1 {
			t.Errorf("burst: %d syncs before the tick, want 1", n)
		}
		time.Sleep(interval)
		if n := syncs(); n != 2 {
			t.Errorf("after a tick: %d syncs, want 2", n)
		}
		// Nothing written, nothing fsynced.
		time.Sleep(5 * interval)
		if n := syncs(); n != 2 {
			t.Errorf("idle: %d syncs, want 2", n)
		}
		// The stop request fsyncs at once.
		w.OnMessage(tm.user("last"))
		w.OnStopRequest(tm.id)
		if n := syncs(); n != 3 {
			t.Errorf("after OnStopRequest: %d syncs, want 3", n)
		}
		// Close fsyncs what is left, and joins the goroutine.
		w.OnMessage(tm.user("very last"))
		w.OnStop(tm.id)
		if n := syncs(); n != 4 {
			t.Errorf("after OnStop: %d syncs, want 4", n)
		}
		if s := eventlog.StatsOf(w); s.Written != 12 || w.Err() != nil {
			t.Errorf("Stats %+v, Err %v", s, w.Err())
		}
	})
}

// SyncBuffered writes a batch with one write(2): at the tick, when the
// buffer fills, and at SetRestoring; a killed process would lose only that.
func TestSyncBufferedBuffersWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTeam()
		path := filepath.Join(t.TempDir(), "team.log")
		w, err := eventlog.Create(path, tm.id, eventlog.Options{Sync: eventlog.SyncBuffered, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		faults := eventlog.InjectFaults(w)
		writes := func() int { synctest.Wait(); n, _ := faults.Calls(); return n }
		for i := range 10 {
			w.OnMessage(tm.user(fmt.Sprint(i)))
		}
		if n := writes(); n != 0 {
			t.Errorf("burst: %d writes before the tick, want 0", n)
		}
		time.Sleep(eventlog.DefaultBatchInterval)
		if n := writes(); n != 1 {
			t.Errorf("after the tick: %d writes, want 1", n)
		}
		if got := len(readLog(t, path).Messages); got != 10 {
			t.Errorf("after the tick: %d records in the file, want 10", got)
		}
		big := strings.Repeat("x", 40<<10)
		w.OnMessage(tm.user(big))
		w.OnMessage(tm.user(big)) // past the buffer's size: written at once
		if n := writes(); n != 2 {
			t.Errorf("full buffer: %d writes, want 2", n)
		}
		w.OnMessage(tm.user("before the replay"))
		w.SetRestoring(tm.id, true)
		if n := writes(); n != 3 {
			t.Errorf("SetRestoring: %d writes, want 3", n)
		}
		w.SetRestoring(tm.id, false)
		w.OnStop(tm.id)
		if s := eventlog.StatsOf(w); s.Written != 13 || s.Lost != 0 || w.Err() != nil {
			t.Errorf("Stats %+v, Err %v", s, w.Err())
		}
	})
}

// A failed batch write loses the whole batch, counted and reported.
func TestSyncBufferedWriteFailure(t *testing.T) {
	tm := newTeam()
	w, _ := create(t, tm, eventlog.Options{Sync: eventlog.SyncBuffered, BatchInterval: time.Hour})
	faults := eventlog.InjectFaults(w)
	boom := errors.New("EIO")
	faults.FailWrites(boom, true)
	for i := range 5 {
		w.OnMessage(tm.user(fmt.Sprint(i)))
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Errorf("Close = %v, want the write error", err)
	}
	if err := w.Err(); !errors.Is(err, boom) || !strings.Contains(err.Error(), "5 records") {
		t.Errorf("Err = %v, want the write error naming the 5 records", err)
	}
	if s := eventlog.StatsOf(w); s.Written != 0 || s.Lost != 5 {
		t.Errorf("Stats %+v, want 5 lost", s)
	}
}

func TestSyncBatchDefaultIntervalAndFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTeam()
		var logs logCapture
		path := filepath.Join(t.TempDir(), "team.log")
		w, err := eventlog.Create(path, tm.id, eventlog.Options{Sync: eventlog.SyncBatch, Logger: logs.logger()})
		if err != nil {
			t.Fatal(err)
		}
		faults := eventlog.InjectFaults(w)
		w.OnMessage(tm.user("one"))
		time.Sleep(eventlog.DefaultBatchInterval - time.Millisecond)
		synctest.Wait()
		if _, syncs := faults.Calls(); syncs != 0 {
			t.Errorf("fsynced before the default interval")
		}
		boom := errors.New("disk on fire")
		faults.FailSyncs(boom)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !errors.Is(w.Err(), boom) {
			t.Errorf("Err = %v, want the fsync error", w.Err())
		}
		w.OnMessage(tm.user("two"))
		if s := eventlog.StatsOf(w); s.Written != 1 || s.Lost != 1 || s.Syncs != 1 {
			t.Errorf("Stats %+v, want 1 written, 1 lost, 1 sync (the header)", s)
		}
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v (the fsync failure is Err's, not Close's)", err)
		}
		if n := len(logs.lines("level=ERROR")); n != 1 {
			t.Errorf("%d errors logged, want 1:\n%s", n, logs.buf.String())
		}
	})
}

func TestCreateFailures(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{})
	w.OnMessage(tm.user("keep me"))
	before := fileSize(t, path)

	_, err := eventlog.Create(path, tm.id, eventlog.Options{})
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "Append") {
		t.Errorf("Create on an existing log: %v, want fs.ErrExist and a hint to use Append", err)
	}
	if after := fileSize(t, path); after != before {
		t.Errorf("failed Create changed the file: %d -> %d bytes", before, after)
	}
	if _, err := eventlog.Create(filepath.Join(t.TempDir(), "x.log"), uuid.Nil, eventlog.Options{}); err == nil {
		t.Error("Create with a nil team id: no error")
	}
	if _, err := eventlog.Create(filepath.Join(t.TempDir(), "no", "such", "dir.log"), tm.id, eventlog.Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create in a missing directory: %v, want fs.ErrNotExist", err)
	}
	for _, o := range []eventlog.Options{{Sync: eventlog.SyncPolicy(7)}, {Sync: -1}, {BatchInterval: -time.Second}} {
		p := filepath.Join(t.TempDir(), "x.log")
		if _, err := eventlog.Create(p, tm.id, o); err == nil || !strings.Contains(err.Error(), "Options.") {
			t.Errorf("Create with %+v: %v, want an error naming the option", o, err)
		}
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Create with bad options left a file behind")
		}
		if _, err := eventlog.Append(path, o); err == nil {
			t.Errorf("Append with %+v: no error", o)
		}
	}
}

func TestWriteErrorOnClosedFile(t *testing.T) {
	tm := newTeam()
	var logs logCapture
	w, path := create(t, tm, eventlog.Options{Logger: logs.logger()})
	kept := tm.user("written")
	w.OnMessage(kept)
	if err := eventlog.CloseFile(w); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w.OnMessage(tm.user(fmt.Sprint("lost ", i)))
	}
	if err := w.Err(); !errors.Is(err, os.ErrClosed) || !strings.Contains(err.Error(), "UserMessage") {
		t.Errorf("Err = %v, want the write error naming the record type", err)
	}
	if s := eventlog.StatsOf(w); s.Written != 1 || s.Lost != 3 {
		t.Errorf("Stats %+v, want 1 written, 3 lost", s)
	}
	if n := len(logs.lines("level=ERROR")); n != 1 {
		t.Errorf("%d errors logged, want exactly 1:\n%s", n, logs.buf.String())
	}
	w.OnStopRequest(tm.id)
	w.OnStop(tm.id)
	err := w.Close()
	if !errors.Is(err, os.ErrClosed) {
		t.Errorf("Close = %v, want the close error", err)
	}
	if again := w.Close(); again != err {
		t.Errorf("second Close = %v, want the same %v", again, err)
	}
	if n := len(logs.lines("level=ERROR")); n != 1 {
		t.Errorf("%d errors logged after close, want still 1", n)
	}
	sameRecords(t, readLog(t, path).Messages, []message.Message{kept})
}

func TestSyncErrorStopsWriting(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncEvery})
	faults := eventlog.InjectFaults(w)
	boom := errors.New("EIO")
	faults.FailSyncs(boom)
	first := tm.user("written, not synced")
	w.OnMessage(first)
	w.OnMessage(tm.user("lost"))
	if !errors.Is(w.Err(), boom) {
		t.Errorf("Err = %v, want the fsync error", w.Err())
	}
	if s := eventlog.StatsOf(w); s.Written != 1 || s.Lost != 1 || s.Syncs != 1 {
		t.Errorf("Stats %+v, want 1 written, 1 lost, 1 sync (the header)", s)
	}
	if writes, _ := faults.Calls(); writes != 1 {
		t.Errorf("%d writes after a failed fsync, want none after it", writes-1)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	sameRecords(t, readLog(t, path).Messages, []message.Message{first})
}

// panicky is a state whose JSON encoding panics.
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("no JSON for you") }

// unregistered is a message type the codec does not know.
type unregistered struct {
	message.Base
}

func TestEncodeErrorsLoseOnlyTheRecord(t *testing.T) {
	tm := newTeam()
	var logs logCapture
	w, path := create(t, tm, eventlog.Options{Logger: logs.logger()})
	w.OnMessage(nil)
	w.OnMessage(&unregistered{Base: tm.base(tm.human, nil)})
	w.OnMessage((*message.UserMessage)(nil))
	w.OnMessage(&message.StateChangedMessage{Base: tm.base(tm.greeter, nil), State: panicky{}})
	good := tm.user("fine")
	w.OnMessage(good)
	if s := eventlog.StatsOf(w); s.Written != 1 || s.Lost != 4 {
		t.Errorf("Stats %+v, want 1 written, 4 lost", s)
	}
	if err := w.Err(); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("Err = %v, want the first (nil message) error", err)
	}
	if n := len(logs.lines("level=ERROR")); n != 1 {
		t.Errorf("%d errors logged, want 1:\n%s", n, logs.buf.String())
	}
	w.OnStop(tm.id)
	sameRecords(t, readLog(t, path).Messages, []message.Message{good})
}

func TestEncodePanicIsAnError(t *testing.T) {
	tm := newTeam()
	w, _ := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone})
	w.OnMessage(&message.StateChangedMessage{Base: tm.base(tm.greeter, nil), State: panicky{}})
	if err := w.Err(); err == nil || !strings.Contains(err.Error(), "panic: no JSON for you") || !strings.Contains(err.Error(), "StateChangedMessage") {
		t.Errorf("Err = %v, want the recovered panic naming the record type", err)
	}
}

func TestRecordsAfterCloseAreLost(t *testing.T) {
	tm := newTeam()
	var logs logCapture
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncBatch, Logger: logs.logger()})
	w.OnStop(tm.id)
	if err := w.Close(); err != nil {
		t.Errorf("Close after OnStop: %v", err)
	}
	w.OnMessage(tm.user("late"))
	w.OnMessage(tm.user("later"))
	w.OnStopRequest(tm.id) // harmless after close
	if !errors.Is(w.Err(), eventlog.ErrClosed) {
		t.Errorf("Err = %v, want ErrClosed", w.Err())
	}
	if s := eventlog.StatsOf(w); s.Lost != 2 || s.Written != 0 {
		t.Errorf("Stats %+v, want 2 lost", s)
	}
	if n := len(logs.lines("closed")); n != 1 {
		t.Errorf("%d logs about records after close, want 1", n)
	}
	if l := readLog(t, path); len(l.Messages) != 0 {
		t.Errorf("%d records in the file, want none", len(l.Messages))
	}
}

func TestConcurrentWriters(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncBatch, BatchInterval: time.Millisecond})
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				mu.Lock()
				m := tm.user(fmt.Sprint(g, "/", i))
				mu.Unlock()
				m.Envelope().ID = uuid.New() // written in no order: ids of no process's order
				w.OnMessage(m)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l := readLog(t, path)
	if len(l.Messages) != goroutines*each || l.Truncated != nil {
		t.Fatalf("read %d records (truncated %v), want %d", len(l.Messages), l.Truncated, goroutines*each)
	}
	seen := map[uuid.UUID]bool{}
	for _, m := range l.Messages {
		seen[m.Envelope().ID] = true
	}
	if len(seen) != goroutines*each {
		t.Errorf("%d distinct records, want %d", len(seen), goroutines*each)
	}
	if s := eventlog.StatsOf(w); s.Syncs < 2 {
		t.Errorf("Stats %+v: the batch goroutine never fsynced", s)
	}
}

func TestLargeRecord(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone})
	big := tm.user(strings.Repeat("long line \" \n ", 300_000)) // ~4 MB encoded, with escapes
	small := tm.user("after")
	w.OnMessage(big)
	w.OnMessage(small)
	w.OnStop(tm.id)
	l := readLog(t, path)
	sameRecords(t, l.Messages, []message.Message{big, small})
	if got := l.Messages[0].(*message.UserMessage).Content; got != big.(*message.UserMessage).Content {
		t.Errorf("large content changed: %d bytes, want %d", len(got), len(big.(*message.UserMessage).Content))
	}
	data, _ := os.ReadFile(path)
	if n := bytes.Count(data, []byte("\n")); n != 3 {
		t.Errorf("%d newlines in the file, want 3 (a raw newline leaked into a record?)", n)
	}
}

// pretty is a state whose JSON encoding is indented over several lines.
type pretty struct{}

func (pretty) MarshalJSON() ([]byte, error) { return []byte("{\n  \"a\": 1,\n  \"b\": \"x\"\n}"), nil }

func TestRecordsAreOneLineEach(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone})
	recs := []message.Message{
		&message.StateChangedMessage{Base: tm.base(tm.greeter, nil), State: pretty{}},
		&message.StateChangedMessage{Base: tm.base(tm.greeter, nil), State: json.RawMessage("{\n\"raw\":\n[1,\n2]}")},
		tm.user("line one\nline two\r\n\u2028"),
	}
	for _, r := range recs {
		w.OnMessage(r)
	}
	w.OnStop(tm.id)
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != len(recs)+1 {
		t.Fatalf("%d newlines for %d records:\n%s", n, len(recs), data)
	}
	l := readLog(t, path)
	sameRecords(t, l.Messages, recs)
	if got := string(l.Messages[0].(*message.StateChangedMessage).State.(json.RawMessage)); got != `{"a":1,"b":"x"}` {
		t.Errorf("state %s, want it compacted", got)
	}
}

func TestDefaultLogger(t *testing.T) {
	tm := newTeam()
	path := filepath.Join(t.TempDir(), "team.log")
	w, err := eventlog.Create(path, tm.id, eventlog.Options{Sync: eventlog.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	w.OnMessage(tm.user("hi"))
	if err := w.Close(); err != nil || eventlog.StatsOf(w).Written != 1 {
		t.Fatalf("Close = %v, Stats %+v", err, eventlog.StatsOf(w))
	}
}

func TestLineErrorUnwrap(t *testing.T) {
	bare := &eventlog.LineError{Line: 3, Offset: 10, Kind: eventlog.ErrBadRecord}
	if !errors.Is(bare, eventlog.ErrBadRecord) || bare.Error() != "eventlog: bad record at line 3 (byte offset 10)" {
		t.Errorf("bare LineError: %q", bare)
	}
	cause := errors.New("cause")
	full := &eventlog.LineError{Path: "a.log", Line: 3, Offset: 10, Kind: eventlog.ErrBadRecord, Err: cause}
	if !errors.Is(full, cause) || full.Error() != "eventlog: bad record at a.log line 3 (byte offset 10): cause" {
		t.Errorf("LineError: %q", full)
	}
}
