package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// SyncPolicy says when the Writer writes and fsyncs the file. Under
// SyncEvery, SyncBatch and SyncNone every record reaches the operating
// system with one write(2) as soon as it arrives, so a killed process loses
// nothing; under SyncBuffered records are buffered in the process and
// written together (see SyncBuffered). Beyond that, the policy decides what
// survives a power loss or a kernel crash.
type SyncPolicy int

const (
	// SyncEvery fsyncs after every record, on the caller's goroutine: the
	// safest and the slowest (an fsync costs from tens of microseconds to
	// milliseconds, depending on the disk).
	SyncEvery SyncPolicy = iota
	// SyncBatch writes every record at once and fsyncs at most once per
	// Options.BatchInterval, from a background goroutine and only when
	// something was written since the last fsync, and also on
	// OnStopRequest, OnStop and Close. A killed process loses nothing; a
	// power loss, the last BatchInterval at most.
	SyncBatch
	// SyncNone never fsyncs; the operating system writes the file back
	// when it chooses.
	SyncNone
	// SyncBuffered is SyncBatch with the writes batched too: records are
	// buffered in the process and written with one write(2) when the
	// buffer holds 64 KiB, once per Options.BatchInterval, and at
	// SetRestoring, OnStopRequest, OnStop, Close and ReadHistory. The
	// fastest policy (about half the cost per record of SyncBatch), at a
	// price: a process killed with SIGKILL, or one that exits without
	// stopping its team or closing the Writer, loses the records of the
	// last BatchInterval at most (and at most what the buffer held).
	SyncBuffered
)

// defaultBatchInterval is the SyncBatch and SyncBuffered interval when
// Options leaves it 0.
const defaultBatchInterval = 100 * time.Millisecond

// batchBytes is how much SyncBuffered buffers before it writes: one write(2)
// per ~50 typical records took the write's share of a record from ~2.5 us
// to well under 1 us.
const batchBytes = 64 << 10

// Options configure a Writer. The zero value is valid: SyncEvery, logging
// to slog.Default().
type Options struct {
	// Sync is the fsync policy.
	Sync SyncPolicy
	// BatchInterval is the longest time between two fsyncs under
	// SyncBatch and SyncBuffered (and between two writes under
	// SyncBuffered); 0 means 100ms. Ignored by the other policies.
	BatchInterval time.Duration
	// Logger receives write errors and repairs; nil means slog.Default().
	Logger *slog.Logger
	// Unchained makes Create write a version 1 log, whose records carry
	// no hash chain (what readers older than the chain read). By default
	// a new log is version 2: each record carries the hash of the chain
	// up to it, and ReadFile refuses a log edited by hand (ErrTampered).
	// Append continues a log in its own version.
	Unchained bool
}

func (o Options) validate() error {
	if o.Sync < SyncEvery || o.Sync > SyncBuffered {
		return fmt.Errorf("eventlog: Options.Sync: unknown policy %d", int(o.Sync))
	}
	if o.BatchInterval < 0 {
		return fmt.Errorf("eventlog: Options.BatchInterval: negative (%v)", o.BatchInterval)
	}
	return nil
}

// stats counts what a Writer did with the records it was given.
type stats struct {
	Written uint64 // records written to the file
	Lost    uint64 // records not written because of an error: see Err
	Skipped uint64 // records not written because they came during a restore replay
	Syncs   uint64 // fsyncs of the file, including the one after the header
}

// file is what the Writer needs of an *os.File (tests wrap it).
type file interface {
	io.Writer
	Sync() error
	Close() error
}

// error kinds, each logged once.
const (
	kindIO = 1 << iota
	kindEncode
	kindClosed
)

// Writer appends telemetry records to a log file. It is a team
// orchestrator's event subscriber: OnMessage, SetRestoring, OnStopRequest
// and OnStop are its hooks. The hooks never panic and never return an
// error: the first failure is logged and kept for Err (a nil Err means
// every record was written). After a failed write or fsync nothing more is
// written (the file's tail is in doubt); a record that fails to encode is
// lost alone.
//
// A Writer is a lossless subscriber: its hooks run on the goroutine the
// team gives it, and the team's members wait when it falls 4,096 records
// behind. OnMessage costs one encode
// and one write(2), plus an fsync under SyncEvery; under SyncBuffered it
// costs one encode into the buffer, the write(2) is shared by a batch, and
// the fsync runs on the Writer's own goroutine, without holding the lock
// that OnMessage takes.
//
// A Writer is safe for concurrent use.
type Writer struct {
	path   string
	teamID uuid.UUID
	policy SyncPolicy
	logger *slog.Logger

	mu        sync.Mutex
	f         file
	buf       []byte // encoded records not yet written (one line but under SyncBuffered), reused
	pending   uint64 // records in buf
	firstType string // the type of the first record in buf, for errors
	end       int64  // the file's size: the header and every record written
	chain     *chain // the hash chain of a version 2 log, nil in version 1
	restoring bool   // a restore replay is running: records are already in the file
	dirty     bool   // written since the last fsync
	broken    bool   // a write or an fsync failed: write no more
	closed    bool
	err       error // the first failure
	logged    int   // kinds of failure already logged
	counts    stats

	stop      chan struct{} // closed by Close to end the SyncBatch goroutine
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// OnMessage appends msg to the log: one line, one write(2), then an fsync
// under SyncEvery; under SyncBuffered the line joins the buffer. During a
// restore replay (SetRestoring) it writes nothing. An EventMessage whose
// event is message.Ephemeral (a streamed answer's text deltas) is never
// written.
func (w *Writer) OnMessage(msg message.Message) {
	if ev, ok := msg.(*message.EventMessage); ok {
		if _, live := ev.Event.(message.Ephemeral); live {
			return // live only, never logged (a streamed answer's pieces)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.restoring:
		w.counts.Skipped++
		return
	case w.closed:
		w.counts.Lost++
		w.fail(kindClosed, fmt.Errorf("%w: %s record lost", errClosed, message.TypeName(msg)))
		return
	case w.broken:
		w.counts.Lost++
		return
	}
	if err := w.encode(msg); err != nil {
		w.counts.Lost++
		w.fail(kindEncode, err)
		return
	}
	if w.policy == SyncBuffered && len(w.buf) < batchBytes {
		return
	}
	if w.flushLocked() == nil && w.policy == SyncEvery {
		_ = w.syncLocked() // a failure is kept by fail
	}
}

// encode appends msg's line, newline included, to w.buf. A panic in a
// payload's MarshalJSON is an error.
func (w *Writer) encode(msg message.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("eventlog: encode %s: panic: %v", message.TypeName(msg), r)
		}
	}()
	b, err := message.Marshal(msg)
	if err != nil {
		return err
	}
	if bytes.IndexByte(b, '\n') >= 0 {
		return fmt.Errorf("eventlog: encode %s: the encoding holds a raw newline", message.TypeName(msg))
	}
	if len(b) > maxRecord-chainHex-1 {
		return fmt.Errorf("eventlog: encode %s: %d bytes, more than a record may have (%d)", message.TypeName(msg), len(b), maxRecord-chainHex-1)
	}
	if w.pending == 0 {
		w.firstType = message.TypeName(msg)
	}
	if w.chain != nil {
		h := w.chain.next(b)
		w.buf = append(append(w.buf, h[:]...), ' ')
	}
	w.buf = append(append(w.buf, b...), '\n')
	w.pending++
	return nil
}

// fail keeps the first error, logs the first of each kind, and after an
// I/O error stops all writing.
func (w *Writer) fail(kind int, err error) {
	if w.err == nil {
		w.err = err
	}
	if kind == kindIO {
		w.broken = true
	}
	if w.logged&kind != 0 {
		return
	}
	w.logged |= kind
	switch kind {
	case kindIO:
		w.logger.Error("eventlog: the log is broken; later records will be lost", "error", err)
	case kindEncode:
		w.logger.Error("eventlog: a record could not be encoded and is lost (later such records are only counted)", "error", err)
	default:
		w.logger.Error("eventlog: a record arrived after the log was closed and is lost (later ones are only counted)", "error", err)
	}
}

// SetRestoring is the orchestrator's hook around a restore replay: while
// restoring is true, records are counted as skipped and not written,
// because they are already in the file. Calls for another team are ignored
// with a warning.
func (w *Writer) SetRestoring(teamID uuid.UUID, restoring bool) {
	if !w.ours(teamID, "SetRestoring") {
		return
	}
	w.mu.Lock()
	if !w.closed && !w.broken {
		_ = w.flushLocked() // a failure is kept by fail
	}
	w.restoring = restoring
	w.mu.Unlock()
}

// OnStopRequest is the orchestrator's hook when the team starts to stop:
// under SyncBuffered, what is buffered is written and what is not yet fsynced
// is fsynced now.
func (w *Writer) OnStopRequest(teamID uuid.UUID) {
	if !w.ours(teamID, "OnStopRequest") {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.broken {
		return
	}
	if w.flushLocked() == nil && w.dirty && w.policy != SyncNone {
		_ = w.syncLocked() // a failure is kept by fail
	}
}

// OnStop is the orchestrator's last call: Close. A failure is logged and
// kept for Err.
func (w *Writer) OnStop(teamID uuid.UUID) {
	if !w.ours(teamID, "OnStop") {
		return
	}
	_ = w.Close() // a failure is kept by fail
}

func (w *Writer) ours(teamID uuid.UUID, hook string) bool {
	if teamID == w.teamID {
		return true
	}
	w.logger.Warn("eventlog: hook called for another team; ignored", "hook", hook, "other_team_id", teamID)
	return false
}

// Close ends the SyncBatch goroutine, writes what is buffered, fsyncs what
// is not yet fsynced (unless the policy is SyncNone) and closes the file. It returns the
// error of that fsync or close; earlier failures are reported by Err.
// Calling it again returns the same result. Records given to the Writer
// after Close are lost, and Err reports it.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		if w.stop != nil {
			close(w.stop)
			w.wg.Wait()
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		var errs []error
		if !w.broken {
			if err := w.flushLocked(); err != nil {
				errs = append(errs, err)
			}
		}
		if w.dirty && w.policy != SyncNone {
			errs = append(errs, w.syncLocked())
		}
		if err := w.f.Close(); err != nil {
			err = fmt.Errorf("eventlog: close: %w", err)
			w.fail(kindIO, err)
			errs = append(errs, err)
		}
		w.closed = true
		w.closeErr = errors.Join(errs...)
	})
	return w.closeErr
}

// ReadHistory returns every message the writer has written to its file so
// far, in order, after flushing what it buffers: the records of the file
// from the header on, those a log continued with Append found in it
// included. It reads the file through a handle of its own, up to the end
// of the last record written when it was called, without holding the lock
// OnMessage takes, so it may be called from any goroutine, the one that
// calls the hooks included. When the Writer lost records (see Err), it
// returns what the file holds together with an error wrapping that
// failure. It gives up when ctx ends.
func (w *Writer) ReadHistory(ctx context.Context) ([]message.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("eventlog: read history: %w", context.Cause(ctx))
	}
	w.mu.Lock()
	if !w.closed && !w.broken {
		_ = w.flushLocked() // a failure is kept by fail, and reported below
	}
	end, lost := w.end, w.err
	w.mu.Unlock()

	f, err := os.Open(w.path)
	if err != nil {
		return nil, fmt.Errorf("eventlog: read history: %w", err)
	}
	defer f.Close()
	log, err := read(ctx, io.NewSectionReader(f, 0, end), w.path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("eventlog: read history: %w", err)
	case log.TeamID != w.teamID:
		return nil, fmt.Errorf("eventlog: read history: %s now belongs to team %s, not %s", w.path, log.TeamID, w.teamID)
	case log.Truncated != nil:
		return log.Messages, fmt.Errorf("eventlog: read history: %w", log.Truncated)
	case lost != nil:
		return log.Messages, fmt.Errorf("eventlog: read history: the log lacks records: %w", lost)
	}
	return log.Messages, nil
}

// Err returns the first failure: a write, fsync or close error, a record
// that could not be encoded, or a record given after Close. Nil when every
// record was written.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
