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
	// event log header this package reads (wrong format, no team id, a
	// version other than 1; the LineError's text names the version).
	ErrBadHeader = errors.New("eventlog: bad header")
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
	Kind   error  // ErrBadHeader or ErrBadRecord (Log.Truncated has a kind of its own)
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

// header is the first line of a log; its JSON form fixes the key names and
// their order in the file.
type header struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	TeamID  uuid.UUID `json:"team_id"`
	Created time.Time `json:"created"`
}

// encodeHeader returns the header line, newline included.
func encodeHeader(h header) ([]byte, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("eventlog: encode header: %w", err)
	}
	return append(b, '\n'), nil
}

// parseHeader decodes and checks line 1 (without its newline) of the file
// at path.
func parseHeader(line []byte, path string) (header, error) {
	bad := func(err error) (header, error) {
		return header{}, &LineError{Path: path, Line: 1, Kind: ErrBadHeader, Err: err}
	}
	var j header
	if err := json.Unmarshal(line, &j); err != nil {
		return bad(err)
	}
	if j.Format != formatName {
		return bad(fmt.Errorf("format is %q, want %q (not an event log)", j.Format, formatName))
	}
	if j.Version != formatVersion {
		return bad(fmt.Errorf("unsupported version %d; this package reads version %d", j.Version, formatVersion))
	}
	if j.TeamID == uuid.Nil {
		return bad(errors.New("no team_id"))
	}
	return j, nil
}
