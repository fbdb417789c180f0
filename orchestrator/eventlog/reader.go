package eventlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// Log is what ReadFile returns: the header's fields, then the records in
// file order.
type Log struct {
	Format   string    // always "akgentic-eventlog"
	Version  int       // always 1
	TeamID   uuid.UUID // the team the log belongs to, never uuid.Nil
	Created  time.Time // when the file was created
	Messages []message.Message
	// Truncated is non-nil when the last line had no trailing newline (a
	// write cut short by a crash): a *LineError naming the line and its byte
	// offset. That line is not in Messages.
	Truncated error
}

// ReadFile reads the log stored at path: the header, then one message per
// line until the end of the file. A last line with no trailing newline is
// skipped and reported in Log.Truncated. Errors are *LineError values naming
// the file and the line: a bad header or a version other than 1 or 2
// (ErrBadHeader); a complete line that does not decode, or is longer than
// 16 MiB (ErrBadRecord, wrapping the decode error, which wraps
// message.ErrUnknownType for an unregistered type tag; a long line is
// refused once 16 MiB of it are read); or a log that was edited
// (ErrTampered): in a version 2 log a chain hash that does not match
// (a record changed, removed, added or moved), in any log a record id
// seen before. On a record error ReadFile also returns what it read
// before the bad line.
func ReadFile(path string) (*Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	defer f.Close()
	return read(context.Background(), f, path)
}

// read reads a log from r; path names it in errors ("" for none). It
// gives up with ctx's error when ctx ends.
func read(ctx context.Context, r io.Reader, path string) (*Log, error) {
	lr := &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
	h, _, err := lr.header(path)
	if err != nil {
		return nil, err
	}
	log := &Log{Format: h.Format, Version: h.Version, TeamID: h.TeamID, Created: h.Created}
	var ch *chain
	if h.Version == chainedVersion {
		ch = newChain(lr.hdr)
	}
	seen := map[uuid.UUID]int{} // record id -> its line
	for {
		if lr.line&255 == 0 && ctx.Err() != nil {
			return log, fmt.Errorf("eventlog: read %s: %w", path, context.Cause(ctx))
		}
		line, complete, err := lr.next(maxRecord)
		if err == io.EOF {
			return log, nil
		}
		if errors.Is(err, errTooLong) {
			return log, &LineError{Path: path, Line: lr.line, Offset: lr.start, Kind: ErrBadRecord,
				Err: fmt.Errorf("longer than %d bytes (the longest record line read)", maxRecord)}
		}
		if err != nil {
			return log, fmt.Errorf("eventlog: read %sline %d: %w", pathPrefix(path), lr.line, err)
		}
		if !complete {
			log.Truncated = &LineError{Path: path, Line: lr.line, Offset: lr.start, Kind: errTruncated,
				Err: fmt.Errorf("%d bytes with no trailing newline", len(line))}
			return log, nil
		}
		tampered := func(format string, args ...any) (*Log, error) {
			return log, &LineError{Path: path, Line: lr.line, Offset: lr.start, Kind: ErrTampered, Err: fmt.Errorf(format, args...)}
		}
		if ch != nil {
			if len(line) < chainHex+1 || line[chainHex] != ' ' {
				return tampered("no chain hash (a version %d log's records start with one)", chainedVersion)
			}
			if want := ch.next(line[chainHex+1:]); string(want[:]) != string(line[:chainHex]) {
				return tampered("its chain hash does not match: this line or one before it was changed, removed, added or moved")
			}
			line = line[chainHex+1:]
		}
		m, err := message.UnmarshalMessage(line)
		if err != nil {
			return log, &LineError{Path: path, Line: lr.line, Offset: lr.start, Kind: ErrBadRecord, Err: err}
		}
		env := m.Envelope()
		if first, dup := seen[env.ID]; dup && env.ID != uuid.Nil { // a nil id is no id (a record made by hand)
			return tampered("record id %s is also the id of line %d", env.ID, first)
		}
		seen[env.ID] = lr.line
		log.Messages = append(log.Messages, m)
	}
}

func pathPrefix(path string) string {
	if path == "" {
		return ""
	}
	return path + " "
}

// lineReader splits its input into lines and counts them.
type lineReader struct {
	br    *bufio.Reader
	hdr   []byte // the header line, without its newline (a chain starts from it)
	buf   []byte // reused for lines longer than br's buffer
	line  int    // number of the line last returned, 1-based
	start int64  // byte offset of the line last returned
	off   int64  // byte offset of the next line
}

var errTooLong = errors.New("line too long")

// next returns the next line without its newline, and whether it had one.
// At the end of the input it returns io.EOF. The line is valid until the
// next call. limit > 0 bounds the line's length (errTooLong).
func (lr *lineReader) next(limit int) (line []byte, complete bool, err error) {
	lr.line++
	lr.start = lr.off
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.off += int64(len(chunk))
		if err == nil && len(lr.buf) == 0 {
			line = chunk // the common case: no copy
		} else {
			lr.buf = append(lr.buf, chunk...)
			line = lr.buf
		}
		if limit > 0 && len(line) > limit+1 {
			return nil, false, errTooLong
		}
		switch {
		case err == nil:
			return line[:len(line)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) == 0:
			return nil, false, io.EOF
		case err == io.EOF:
			return line, false, nil
		default:
			return nil, false, err
		}
	}
}

// header reads and checks line 1 and returns the header and the length of
// its line, newline included.
func (lr *lineReader) header(path string) (header, int64, error) {
	bad := func(err error) (header, int64, error) {
		return header{}, 0, &LineError{Path: path, Line: 1, Kind: ErrBadHeader, Err: err}
	}
	line, complete, err := lr.next(maxHeader)
	switch {
	case err == io.EOF:
		return bad(errors.New("empty file"))
	case errors.Is(err, errTooLong):
		return bad(fmt.Errorf("no newline in the first %d bytes", maxHeader))
	case err != nil:
		return header{}, 0, fmt.Errorf("eventlog: read %sline 1: %w", pathPrefix(path), err)
	case !complete:
		return bad(fmt.Errorf("incomplete: %d bytes with no trailing newline", len(line)))
	}
	h, err := parseHeader(line, path)
	if err != nil {
		return header{}, 0, err
	}
	lr.hdr = bytes.Clone(line)
	return h, lr.off, nil
}
