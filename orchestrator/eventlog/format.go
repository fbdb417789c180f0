package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

const (
	// formatName is the value of the header's "format" key.
	formatName = "akgentic-eventlog"
	// formatVersion is the format version this package writes and reads.
	formatVersion = 1
)

// maxHeader bounds the header line, so that opening a large file that is
// not an event log does not read it all looking for a newline. Records
// have no such bound.
const maxHeader = 64 << 10

var (
	// ErrBadHeader: line 1 is missing, incomplete, not JSON, or not an
	// event log header (wrong format, no team id).
	ErrBadHeader = errors.New("eventlog: bad header")
	// ErrUnsupportedVersion: the header names a version this package does
	// not read.
	ErrUnsupportedVersion = errors.New("eventlog: unsupported version")
	// ErrBadRecord: a complete record line does not decode to a message.
	// The LineError also wraps the decode error, so
	// errors.Is(err, message.ErrUnknownType) tells an unregistered type
	// apart from damage.
	ErrBadRecord = errors.New("eventlog: bad record")
	// errTruncated: the last line has no trailing newline (a write cut
	// short by a crash). ReadFile reports it in Log.Truncated, never as an
	// error.
	errTruncated = errors.New("eventlog: truncated record")
	// errClosed: a record arrived after the Writer was closed.
	errClosed = errors.New("eventlog: writer closed")
)

// LineError says what is wrong with one line of a log and where it is.
// errors.Is matches both Kind and Err.
type LineError struct {
	Path   string // the file
	Line   int    // 1-based line number; the header is line 1
	Offset int64  // byte offset of the line's first byte
	Kind   error  // ErrBadHeader, ErrUnsupportedVersion or ErrBadRecord (Log.Truncated has a kind of its own)
	Err    error  // the cause; nil when Kind says it all
}

// Error reads e.g. "eventlog: bad record at team.log line 7 (byte offset
// 1234): message: decode: ...".
func (e *LineError) Error() string {
	where := ""
	if e.Path != "" {
		where = e.Path + " "
	}
	s := fmt.Sprintf("%v at %sline %d (byte offset %d)", e.Kind, where, e.Line, e.Offset)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Kind and Err.
func (e *LineError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Header is the first line of a log.
type Header struct {
	Format  string    // always "akgentic-eventlog"
	Version int       // always 1 once read
	TeamID  uuid.UUID // the team the log belongs to, never uuid.Nil
	Created time.Time // when the file was created
}

// headerJSON fixes the key names and their order in the file.
type headerJSON struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	TeamID  uuid.UUID `json:"team_id"`
	Created time.Time `json:"created"`
}

// encodeHeader returns the header line, newline included.
func encodeHeader(h Header) ([]byte, error) {
	b, err := json.Marshal(headerJSON(h))
	if err != nil {
		return nil, fmt.Errorf("eventlog: encode header: %w", err)
	}
	return append(b, '\n'), nil
}

// parseHeader decodes and checks line 1 (without its newline) of the file
// at path.
func parseHeader(line []byte, path string) (Header, error) {
	bad := func(err error) (Header, error) {
		return Header{}, &LineError{Path: path, Line: 1, Kind: ErrBadHeader, Err: err}
	}
	var j headerJSON
	if err := json.Unmarshal(line, &j); err != nil {
		return bad(err)
	}
	if j.Format != formatName {
		return bad(fmt.Errorf("format is %q, want %q (not an event log)", j.Format, formatName))
	}
	if j.Version != formatVersion {
		return Header{}, &LineError{Path: path, Line: 1, Kind: ErrUnsupportedVersion,
			Err: fmt.Errorf("version %d; this package reads version %d", j.Version, formatVersion)}
	}
	if j.TeamID == uuid.Nil {
		return bad(errors.New("no team_id"))
	}
	return Header(j), nil
}
