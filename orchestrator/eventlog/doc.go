// Package eventlog is the durable event log of a team: an append-only file
// of JSON lines that the team's orchestrator feeds, as a subscriber, with
// every telemetry record in ledger order, and that a restore reads back.
//
// # Format, versions 1 and 2
//
// The file is UTF-8 text made of lines, each terminated by a single "\n"
// (0x0A). Line 1 is the header, a JSON object with these keys, in this
// order:
//
//   - "format": always the string "akgentic-eventlog";
//   - "version": the integer 2 for a log whose records carry a hash chain
//     (what Create writes by default), 1 for one without (what
//     Options.Unchained writes, and every log written before the chain);
//     a reader refuses any other version with ErrBadHeader;
//   - "team_id": the team's id, a lower-case hyphenated UUID, never the
//     nil UUID;
//   - "created": when the file was created, RFC 3339 with nanoseconds, UTC;
//   - "chain": in version 2 only, the string "sha256-128".
//
// For example:
//
//	{"format":"akgentic-eventlog","version":2,"team_id":"7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d","created":"2025-03-14T15:09:26.535123456Z","chain":"sha256-128"}
//
// Readers ignore header keys they do not know; a change that a reader
// could not safely ignore gets a new version number.
//
// Every further line is one telemetry record (a message.Message) encoded by
// message.Marshal: a compact JSON object whose first key, "__model__", names
// the record's registered type (e.g. "SentMessage"); nested messages and
// payloads carry their own tags. JSON escapes newlines inside strings, so a
// record never contains a raw "\n". Records appear in the order the
// orchestrator saw them (ledger order). There are no blank lines, no
// comments and no footer. In version 2 each record's JSON follows 32 hex
// digits and a space: the first 16 bytes of SHA-256 of the previous
// record's 16 bytes (for the first record, of the whole SHA-256 of the
// header line, without its newline) followed by the record's JSON.
//
// # Tampering
//
// ReadFile refuses, with ErrTampered naming the line, a version 2 log in
// which a record was changed, removed, added or moved (its chain hash, or
// the next one, does not match), and in any version a record id that was
// seen before (a duplicated start record would otherwise replace the
// first). Records moved in a version 1 log are not detected: neither
// their ids nor their timestamps are in ledger order (a member stamps a
// record before the ledger may make it wait). A record line is at most 16 MiB: a longer one is refused once
// that much is read, and a Writer does not write one. The chain has no
// key: it shows edits made without recomputing it, not a forger who
// recomputes it, and it cannot show records cut off at the end.
//
// # Durability
//
// Under SyncEvery, SyncBatch and SyncNone the Writer writes each record,
// newline included, with a single write(2) on a file opened with O_APPEND;
// nothing is buffered in the process, so a process killed with SIGKILL
// loses nothing the Writer was given. Under SyncBuffered the Writer buffers
// records in the process and writes them in batches: when 64 KiB are
// buffered, every Options.BatchInterval (100ms by default), and at
// SetRestoring, OnStopRequest, OnStop, Close and ReadHistory; a process
// killed with SIGKILL loses what was buffered, the records of the last
// BatchInterval at most. What reaches the disk across a power loss depends
// on the SyncPolicy: SyncEvery fsyncs after every record, SyncBatch and
// SyncBuffered at most once per BatchInterval (and when the team stops),
// SyncNone never. A failed
// write or fsync is never silent: the records it loses are counted, the
// first failure is logged and Err reports it.
//
// A crash in the middle of a write can leave the last line incomplete
// (no trailing "\n"). ReadFile reports such a line in Log.Truncated and skips
// it; it is never fatal. Append cuts it off before it continues the log.
// Any other line that does not decode, including a complete last line, is
// an error naming its line number and byte offset (LineError).
//
// # Use
//
// A team creates its log once with Create and hands the Writer to its
// orchestrator as an event subscriber: the Writer's OnMessage,
// SetRestoring, OnStopRequest and OnStop methods are the hooks. A restore
// reads the log with ReadFile, replays Log.Messages, and continues the same
// file with Append; the orchestrator brackets the replay with
// SetRestoring(team, true) and SetRestoring(team, false), so the replayed
// records, already in the file, are not written twice. Writer.ReadHistory
// reads back everything the Writer has written so far (its buffer flushed
// first), for history the orchestrator no longer keeps in memory.
package eventlog
