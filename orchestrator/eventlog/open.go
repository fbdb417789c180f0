package eventlog

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
)

// Create creates a new log at path for the team and writes its header. It
// never overwrites: if path exists, Create fails with an error wrapping
// fs.ErrExist (continue an existing log with Append). The file is created
// with mode 0600, as logs hold the team's conversations. Unless the policy
// is SyncNone the header is fsynced, and so is the directory, so that the
// new file's name is durable too.
func Create(path string, teamID uuid.UUID, opts Options) (*Writer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if teamID == uuid.Nil {
		return nil, errors.New("eventlog: create: nil team id")
	}
	h := header{Format: formatName, Version: chainedVersion, TeamID: teamID, Created: time.Now().UTC(), Chain: chainName}
	if opts.Unchained {
		h.Version, h.Chain = formatVersion, ""
	}
	hdr, err := encodeHeader(h)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("eventlog: create: %w (continue an existing log with Append)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: create: %w", err)
	}
	w := newWriter(path, teamID, f, opts)
	w.end = int64(len(hdr))
	if !opts.Unchained {
		w.chain = newChain(hdr[:len(hdr)-1])
	}
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("eventlog: create: write header: %w", err)
	}
	if opts.Sync != SyncNone {
		if err := w.syncLocked(); err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("eventlog: create: %w", err)
		}
		w.syncDir()
	}
	w.startBatch(opts.BatchInterval)
	return w, nil
}

// Append reopens the log at path to continue it, typically after a restore
// has read it. It checks the header and takes the team id from it. If the
// last line is incomplete (a write cut short by a crash), Append cuts the
// file back to the end of the last complete line, logging a warning that
// names the byte offset, before anything is appended; the records before
// it are not re-read (ReadFile checks them).
func Append(path string, opts Options) (*Writer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("eventlog: append: %w", err)
	}
	w, err := appendTo(f, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.startBatch(opts.BatchInterval)
	return w, nil
}

func appendTo(f *os.File, path string, opts Options) (*Writer, error) {
	lr := &lineReader{br: bufio.NewReaderSize(f, 4<<10)}
	h, hlen, err := lr.header(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("eventlog: append: %w", err)
	}
	size := fi.Size()
	end, err := lastLineEnd(f, hlen, size)
	if err != nil {
		return nil, fmt.Errorf("eventlog: append: find the last complete line of %s: %w", path, err)
	}
	w := newWriter(path, h.TeamID, f, opts)
	w.end = end
	if h.Version == chainedVersion {
		if w.chain, err = lastChain(f, lr.hdr, hlen, end); err != nil {
			return nil, fmt.Errorf("eventlog: append: the chain hash of the last record of %s: %w", path, err)
		}
	}
	if end == size {
		return w, nil
	}
	w.logger.Warn("eventlog: cutting off an incomplete last line before appending",
		"offset", end, "bytes", size-end)
	if err := f.Truncate(end); err != nil {
		return nil, fmt.Errorf("eventlog: append: cut the incomplete last line at byte offset %d: %w", end, err)
	}
	if opts.Sync != SyncNone {
		if err := w.syncLocked(); err != nil {
			return nil, fmt.Errorf("eventlog: append: %w", err)
		}
	}
	return w, nil
}

// lastChain returns the chain of a version 2 log whose header line is hdr
// (hlen bytes, newline included) and whose complete lines end at end: it
// continues from the hash the last record carries, or from the header
// when there is none.
func lastChain(f io.ReaderAt, hdr []byte, hlen, end int64) (*chain, error) {
	c := newChain(hdr)
	if end <= hlen {
		return c, nil
	}
	start, err := lastLineEnd(f, hlen, end-1) // the start of the last line
	if err != nil {
		return nil, err
	}
	var hx [chainHex + 1]byte
	if end-start < int64(len(hx)) {
		return nil, errors.New("the last record has no chain hash")
	}
	if _, err := f.ReadAt(hx[:], start); err != nil {
		return nil, err
	}
	if hx[chainHex] != ' ' {
		return nil, errors.New("the last record has no chain hash")
	}
	if _, err := hex.Decode(c.h[:], hx[:chainHex]); err != nil {
		return nil, fmt.Errorf("the last record's chain hash: %w", err)
	}
	return c, nil
}

// lastLineEnd returns the offset just past the file's last newline, which
// is at least from (the offset just past the header's newline); size when
// the file ends with a newline.
func lastLineEnd(f io.ReaderAt, from, size int64) (int64, error) {
	const chunk = 32 << 10
	buf := make([]byte, chunk)
	for end := size; end > from; {
		start := max(from, end-chunk)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return from, nil
}

func newWriter(path string, teamID uuid.UUID, f file, opts Options) *Writer {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Writer{
		path:   path,
		teamID: teamID,
		policy: opts.Sync,
		logger: logger.With("path", path, "team_id", teamID),
		f:      f,
	}
}
