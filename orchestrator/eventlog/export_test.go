package eventlog

import (
	"context"
	"io"
	"sync"

	"github.com/google/uuid"
)

// Read reads a log from r, as ReadFile does from a file.
func Read(r io.Reader) (*Log, error) { return read(context.Background(), r, "") }

// Names the tests use that the package does not export.
const (
	Format               = formatName
	Version              = formatVersion
	ChainedVersion       = chainedVersion
	DefaultBatchInterval = defaultBatchInterval
)

var (
	ErrTruncated = errTruncated
	ErrClosed    = errClosed
)

// Faults sits between a Writer and its file so that tests can count the
// write(2) and fsync calls and make them fail.
type Faults struct {
	f file

	mu       sync.Mutex
	writeErr error
	partial  bool // a failing write first writes half its bytes
	syncErr  error
	writes   int
	syncs    int
}

func (x *Faults) Write(p []byte) (int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.writes++
	if x.writeErr == nil {
		return x.f.Write(p)
	}
	if x.partial {
		n, _ := x.f.Write(p[:len(p)/2])
		return n, x.writeErr
	}
	return 0, x.writeErr
}

func (x *Faults) Sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.syncs++
	if x.syncErr != nil {
		return x.syncErr
	}
	return x.f.Sync()
}

func (x *Faults) Close() error { return x.f.Close() }

// FailWrites makes every later write fail with err; with partial, each
// failing write first writes half of its bytes (a torn record).
func (x *Faults) FailWrites(err error, partial bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.writeErr, x.partial = err, partial
}

// FailSyncs makes every later fsync fail with err.
func (x *Faults) FailSyncs(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.syncErr = err
}

// Calls returns how many writes and fsyncs reached the file.
func (x *Faults) Calls() (writes, syncs int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.writes, x.syncs
}

// InjectFaults puts a Faults between w and its file.
func InjectFaults(w *Writer) *Faults {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := &Faults{f: w.f}
	w.f = x
	return x
}

// Stats is what a Writer counts.
type Stats = stats

// StatsOf returns w's counters.
func StatsOf(w *Writer) Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts
}

// PathOf returns the path of w's file.
func PathOf(w *Writer) string { return w.path }

// TeamIDOf returns the team w's log belongs to.
func TeamIDOf(w *Writer) uuid.UUID { return w.teamID }

// CloseFile closes w's file behind its back, so that later writes fail.
func CloseFile(w *Writer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}
