package eventlog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"time"

	"github.com/google/uuid"
)

const (
	// formatName is the value of the header's "format" key.
	formatName = "akgentic-eventlog"
	// formatVersion is the version of a log without a hash chain: what
	// Options.Unchained writes, and every log written before the chain.
	formatVersion = 1
	// chainedVersion is the version of a log whose records carry a hash
	// chain (the default for new logs).
	chainedVersion = 2
	// chainName is the value of a chained header's "chain" key.
	chainName = "sha256-128"
)

// maxRecord bounds a record's line (its chain hash included), enforced
// while reading: a longer line is an error once that many bytes are read,
// never read whole; a Writer does not write a longer record. Records are
// far smaller: an agent's messages and tool results are cut at 256 KiB.
const maxRecord = 16 << 20

// maxHeader bounds the header line, so that opening a large file that is
// not an event log does not read it all looking for a newline.
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
	// ErrTampered: the log was edited: a record's chain hash does not
	// match (the line, or one before it, was changed, removed, added or
	// moved), or a record id is there twice. The LineError names the line.
	ErrTampered = errors.New("eventlog: tampered log")
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
	Kind   error  // ErrBadHeader, ErrBadRecord or ErrTampered (Log.Truncated has a kind of its own)
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
	Chain   string    `json:"chain,omitempty"` // chainName in a chained (version 2) log
}

// chainHex is the length of a record's chain hash: the first 16 bytes of
// a SHA-256, in hex.
const chainHex = 32

// chain is the hash chain of a version 2 log: each record's line starts
// with hex(h) and a space, where h is the first 16 bytes of SHA-256 of
// the previous record's h (the header line's SHA-256 for the first
// record) followed by the record's JSON. An edited, removed, added or
// moved line breaks the chain at it or at the next line. The chain has no
// key: it shows an edit by hand or by a tool that does not recompute it,
// not one by someone who does; and it cannot show lines cut off at the
// end.
type chain struct {
	h   [16]byte
	d   hash.Hash
	sum []byte // the digest, reused (Sum through the interface would allocate)
}

// newChain starts the chain of a log whose header line (no newline) is hdr.
func newChain(hdr []byte) *chain {
	c := &chain{d: sha256.New(), sum: make([]byte, 0, sha256.Size)}
	sum := sha256.Sum256(hdr)
	copy(c.h[:], sum[:])
	return c
}

// next advances the chain over a record's JSON and returns its hash, in hex.
func (c *chain) next(rec []byte) [chainHex]byte {
	c.d.Reset()
	c.d.Write(c.h[:])
	c.d.Write(rec)
	c.sum = c.d.Sum(c.sum[:0])
	copy(c.h[:], c.sum)
	var out [chainHex]byte
	hex.Encode(out[:], c.h[:])
	return out
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
	if j.Version != formatVersion && j.Version != chainedVersion {
		return bad(fmt.Errorf("unsupported version %d; this package reads versions %d and %d", j.Version, formatVersion, chainedVersion))
	}
	if (j.Version == chainedVersion) != (j.Chain == chainName) {
		return bad(fmt.Errorf("version %d with chain %q: a version %d log has chain %q, a version %d log none", j.Version, j.Chain, chainedVersion, chainName, formatVersion))
	}
	if j.TeamID == uuid.Nil {
		return bad(errors.New("no team_id"))
	}
	return j, nil
}
