package eventlog

import (
	"bufio"
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
// the file and the line: a bad header or a version other than 1
// (ErrBadHeader), or a complete line that does not decode
// (ErrBadRecord, wrapping the decode error, which wraps
// message.ErrUnknownType for an unregistered type tag). On a record error
// ReadFile also returns what it read before the bad line. Lines may be of
// any length.
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
	for {
		if lr.line&255 == 0 && ctx.Err() != nil {
			return log, fmt.Errorf("eventlog: read %s: %w", path, context.Cause(ctx))
		}
		line, complete, err := lr.next(0)
		if err == io.EOF {
			return log, nil
		}
		if err != nil {
			return log, fmt.Errorf("eventlog: read %sline %d: %w", pathPrefix(path), lr.line, err)
		}
		if !complete {
			log.Truncated = &LineError{Path: path, Line: lr.line, Offset: lr.start, Kind: errTruncated,
				Err: fmt.Errorf("%d bytes with no trailing newline", len(line))}
			return log, nil
		}
		m, err := message.UnmarshalMessage(line)
		if err != nil {
			return log, &LineError{Path: path, Line: lr.line, Offset: lr.start, Kind: ErrBadRecord, Err: err}
		}
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
	return h, lr.off, nil
}
