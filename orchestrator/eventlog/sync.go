package eventlog

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// startBatch starts the SyncBatch goroutine; Close ends and joins it.
func (w *Writer) startBatch(interval time.Duration) {
	if w.policy != SyncBatch && w.policy != SyncBuffered {
		return
	}
	if interval == 0 {
		interval = defaultBatchInterval
	}
	w.stop = make(chan struct{})
	w.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.batchSync()
			}
		}
	})
}

// batchSync fsyncs if anything was written since the last fsync. The fsync
// runs outside the lock, so records keep being written meanwhile.
func (w *Writer) batchSync() {
	w.mu.Lock()
	_ = w.flushLocked() // a failure is kept by fail
	if !w.dirty || w.broken {
		w.mu.Unlock()
		return
	}
	w.dirty = false
	f := w.f
	w.mu.Unlock()

	err := f.Sync()

	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.fail(kindIO, fmt.Errorf("eventlog: fsync: %w", err))
		return
	}
	w.counts.Syncs++
}

// syncDir fsyncs the directory holding the new file, so that its name
// survives a crash. Not every file system supports it; a failure is only
// logged.
func (w *Writer) syncDir() {
	d, err := os.Open(filepath.Dir(w.path))
	if err == nil {
		err = d.Sync()
		d.Close()
	}
	if err != nil {
		w.logger.Warn("eventlog: fsync of the directory failed; the new file's name may not survive a crash", "error", err)
	}
}

// flushLocked writes what w.buf holds with one write(2); w.mu is held. A
// failure loses every record in the buffer: they are counted as lost, and
// the Writer writes nothing more. It returns that failure.
func (w *Writer) flushLocked() error {
	if w.pending == 0 {
		return nil
	}
	n, first := w.pending, w.firstType
	_, err := w.f.Write(w.buf)
	if err == nil {
		w.end += int64(len(w.buf))
	}
	w.buf, w.pending = w.buf[:0], 0
	if cap(w.buf) > 1<<20 {
		w.buf = nil // do not keep one huge record's buffer
	}
	if err != nil {
		w.counts.Lost += n
		what := first + " record"
		if n > 1 {
			what = fmt.Sprintf("%d records (the first a %s)", n, first)
		}
		err = fmt.Errorf("eventlog: write %s: %w", what, err)
		w.fail(kindIO, err)
		return err
	}
	w.counts.Written += n
	w.dirty = true
	return nil
}

// syncLocked fsyncs the file; w.mu is held (or w is not shared yet).
func (w *Writer) syncLocked() error {
	if w.broken {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		err = fmt.Errorf("eventlog: fsync: %w", err)
		w.fail(kindIO, err)
		return err
	}
	w.counts.Syncs++
	w.dirty = false
	return nil
}
