package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// snapshotVersion is the version of the snapshot's layout.
const snapshotVersion = 1

// snapshot is what a team's snapshot message holds: the team's ledger up
// to Index compacted (orchestrator.Compact with agent.Compaction), where
// the records after it are stored, and the messages from a user proxy
// (the inbox's inputs) whose turn the ledger up to Index closed.
type snapshot struct {
	Version int    `json:"v"`
	Index   uint64 `json:"index"` // the ledger index of the last record it covers
	// From is the stream sequence the records after Index are stored from:
	// the snapshot was taken with every record up to Index acknowledged
	// and none after it published, so every later one is stored after.
	From    uint64            `json:"from"`
	Closed  []uuid.UUID       `json:"closed,omitempty"`
	Records []json.RawMessage `json:"records"`
}

// snapshotAttempts bounds the tries of a snapshot's publish that a
// replicated stream refuses as busy (a record's check being applied).
const snapshotAttempts = 5

// errSnapshotFenced is wrapped by the error of a snapshot JetStream
// refused because another owner claimed the team.
var errSnapshotFenced = errors.New("the snapshot was refused: another owner claimed the team")

// keepLocked records msg, just given ledger index l.next-1, in the log
// the next snapshot compacts.
func (l *Ledger) keepLocked(msg message.Message, data []byte) {
	if l.cfg.SnapshotEvery <= 0 {
		return
	}
	l.hist = append(l.hist, msg)
	if l.histData == nil {
		l.histData = map[message.Message][]byte{}
	}
	l.histData[msg] = data // as published: a record is encoded once
	l.since++
	if l.since > snapshotSlack*l.cfg.SnapshotEvery {
		// Never quiet long enough for a snapshot: the log kept for the
		// next one would grow without end.
		l.logger.Warn("cluster: the team's ledger was never quiet for a snapshot; its snapshots are off for this owner, a restore reads from the last one",
			"records_since", l.since)
		l.cfg.SnapshotEvery = 0
		l.hist, l.histData, l.since = nil, nil, 0
	}
}

// snapshotSlack bounds the records a Ledger keeps for its next snapshot,
// in snapshot intervals: a ledger never quiet that long (every record
// acknowledged) takes no more snapshots.
const snapshotSlack = 8

// snapDueLocked reports whether a snapshot should be written now: enough
// records since the last one, every record acknowledged and none in
// flight, the Ledger neither fenced, broken nor stopping.
func (l *Ledger) snapDueLocked() bool {
	return l.cfg.SnapshotEvery > 0 && l.since >= l.cfg.SnapshotEvery && !l.snapping && l.quietLocked() && !l.stopping
}

// quietLocked reports whether the Ledger may take a snapshot: every
// record it published acknowledged (a record queued or to send again is
// unacknowledged; a send still in flight then can only store a record
// again, deduplicated, or below the snapshot's index), neither fenced nor
// broken.
func (l *Ledger) quietLocked() bool {
	return !l.fenced && !l.broken && len(l.unacked) == 0
}

// writeSnapshot writes a snapshot of the team when one is due (force: at
// the team's stop, when a record came since the last one), on the pump's
// goroutine or in OnStop. It reports whether it stored one: false and no
// error when none was due.
func (l *Ledger) writeSnapshot(ctx context.Context, force bool) (bool, error) {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	l.mu.Lock()
	due := l.snapDueLocked() || (force && l.cfg.SnapshotEvery > 0 && l.since > 0 && l.quietLocked())
	if !due {
		l.mu.Unlock()
		return false, nil
	}
	l.snapping = true
	hist := l.hist[:len(l.hist):len(l.hist)]
	encoded := make(map[message.Message][]byte, len(hist))
	for _, m := range hist {
		if b, ok := l.histData[m]; ok {
			encoded[m] = b
		}
	}
	s := snapshot{Version: snapshotVersion, Index: l.next - 1, From: l.ackSeq + 1}
	closed := l.closed
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.snapping = false
		l.mu.Unlock()
	}()
	compacted := orchestrator.Compact(hist, agent.Compaction)
	closed = closedInputs(hist, closed)
	s.Closed = closed
	s.Records = make([]json.RawMessage, 0, len(compacted))
	for _, m := range compacted {
		b, ok := encoded[m]
		var err error
		if !ok { // read from the stream, or replaced by the compaction
			b, err = encode(m)
		}
		if err != nil {
			return false, l.noSnapshot(fmt.Errorf("cluster: snapshot of team %s: %w", l.team, err))
		}
		s.Records = append(s.Records, b)
	}
	data, err := json.Marshal(s)
	if err != nil {
		return false, l.noSnapshot(fmt.Errorf("cluster: snapshot of team %s: %w", l.team, err))
	}
	if l.maxPayload > 0 && int64(len(data))+headroom > l.maxPayload {
		return false, l.noSnapshot(fmt.Errorf("cluster: the snapshot of team %s (%d records compacted to %d, %d bytes) is larger than the server's max_payload (%d bytes, less %d for headers)",
			l.team, len(hist), len(compacted), len(data), l.maxPayload, headroom))
	}
	subj := l.cfg.snapshotSubject(l.team)
	msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{
		jetstream.ExpectedLastSubjSeqHeader:     {strconv.FormatUint(l.claimSeq, 10)},
		jetstream.ExpectedLastSubjSeqSubjHeader: {l.ownSubj},
	}}
	wait := retryMin
	for try := 1; ; try++ {
		ack, err := l.js.PublishMsg(ctx, msg)
		if err == nil {
			l.mu.Lock()
			if l.cfg.SnapshotEvery <= 0 || len(l.hist) < len(hist) { // turned off meanwhile
				l.mu.Unlock()
				return true, nil
			}
			l.hist = append(compacted, l.hist[len(hist):]...)
			l.since = len(l.hist) - len(compacted)
			kept := make(map[message.Message]bool, len(compacted))
			for _, m := range compacted {
				kept[m] = true
			}
			for _, m := range hist {
				if !kept[m] {
					delete(l.histData, m)
				}
			}
			l.closed = closed
			l.mu.Unlock()
			l.logger.Debug("cluster: snapshot stored", "index", s.Index, "records", len(hist), "kept", len(compacted), "bytes", len(data), "seq", ack.Sequence)
			// Only the latest is read: the older ones go.
			if err := l.st.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeSequence(ack.Sequence)); err != nil {
				l.logger.Debug("cluster: older snapshots not purged", "error", err)
			}
			return true, nil
		}
		if isFence(err) {
			return false, fmt.Errorf("cluster: snapshot of team %s: %w (%v)", l.team, errSnapshotFenced, err)
		}
		if !isBusy(err) || try == snapshotAttempts {
			return false, fmt.Errorf("cluster: snapshot of team %s: %w", l.team, err)
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return false, fmt.Errorf("cluster: snapshot of team %s: %w", l.team, err)
		}
		wait = min(2*wait, retryMax)
	}
}

// noSnapshot turns the Ledger's snapshots off after one that cannot be
// stored (the restore reads from the last one stored, or the whole
// ledger), logged once.
func (l *Ledger) noSnapshot(err error) error {
	l.mu.Lock()
	l.cfg.SnapshotEvery = 0
	l.hist, l.histData, l.since = nil, nil, 0
	l.mu.Unlock()
	l.logger.Warn("cluster: the team's snapshots are off for this owner: a restore reads from the last one stored, or the whole ledger", "error", err)
	return err
}

// closedInputs returns closed and the messages sent by a user proxy (the
// inbox's inputs) whose turn log closes, and those closed whose sender
// log does not say (their SentMessage compacted away): what the inbox
// needs to know not to run an input again, once the closes are
// compacted away.
func closedInputs(log []message.Message, closed []uuid.UUID) []uuid.UUID {
	fromPerson := map[uuid.UUID]bool{}
	for _, m := range log {
		if s, ok := m.(*message.SentMessage); ok && s.Message != nil {
			fromPerson[s.Message.Envelope().ID] = s.Sender != nil && s.Sender.IsUserProxy()
		}
	}
	have := make(map[uuid.UUID]bool, len(closed))
	for _, id := range closed {
		have[id] = true
	}
	out := closed[:len(closed):len(closed)]
	for _, m := range log {
		if id, ok := closes(m); ok && !have[id] {
			if person, known := fromPerson[id]; person || !known {
				have[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// snapshotClosed returns the inputs the snapshot the Ledger was opened
// from says closed (none without one).
func (l *Ledger) snapshotClosed() []uuid.UUID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// readTeamLog is the read behind OpenLedger: the team's latest snapshot
// and the records after it, or, with no snapshot (or one that cannot be
// read or decoded, or whose later records cannot be read), every record,
// each fallback logged at Warn.
func readTeamLog(ctx context.Context, st jetstream.Stream, cfg Config, team uuid.UUID, logger *slog.Logger) (teamLog, error) {
	subj := cfg.recordsSubject(team)
	var s *snapshot
	var err error
	if cfg.SnapshotEvery > 0 { // negative: snapshots neither written nor read
		s, err = readSnapshot(ctx, st, cfg.snapshotSubject(team))
	}
	switch {
	case err != nil:
		logger.Warn("cluster: the team's snapshot cannot be read; reading the whole ledger", "error", err)
	case s != nil:
		recs, r, err := readRecordsAfter(ctx, st, subj, after{from: s.From, base: s.Index})
		if err == nil || errors.Is(err, errHole) && !errors.Is(err, ErrBadRecord) {
			log, derr := s.decode()
			if derr == nil {
				out := teamLog{log: append(log, recs...), last: r.last, lastSeq: r.lastSeq, closed: s.Closed, read: len(recs), snapshot: true}
				if cfg.readTeam != nil {
					cfg.readTeam(team, true, len(recs))
				}
				return out, err
			}
			logger.Warn("cluster: the team's snapshot does not decode; reading the whole ledger", "error", derr)
		} else {
			logger.Warn("cluster: the records after the team's snapshot cannot be read; reading the whole ledger", "error", err, "snapshot_index", s.Index)
		}
	}
	log, r, err := readRecordsAfter(ctx, st, subj, after{})
	if cfg.readTeam != nil {
		cfg.readTeam(team, false, len(log))
	}
	return teamLog{log: log, last: r.last, lastSeq: r.lastSeq, read: len(log)}, err
}

// teamLog is what readTeamLog read.
type teamLog struct {
	log      []message.Message
	last     uint64 // the last record's ledger index
	lastSeq  uint64 // the stream sequence of the subject's last message when the read began
	closed   []uuid.UUID
	read     int  // records read from the records subject
	snapshot bool // from a snapshot
}

// readSnapshot returns the team's latest snapshot, nil when there is
// none, an error when it cannot be read or decoded.
func readSnapshot(ctx context.Context, st jetstream.Stream, subj string) (*snapshot, error) {
	m, err := st.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", subj, err)
	}
	var s snapshot
	if err := json.Unmarshal(m.Data, &s); err != nil {
		return nil, fmt.Errorf("cluster: snapshot %s (stream sequence %d): %w", subj, m.Sequence, err)
	}
	if s.Version != snapshotVersion || s.Index == 0 || s.From == 0 || len(s.Records) == 0 {
		return nil, fmt.Errorf("cluster: snapshot %s (stream sequence %d): version %d, index %d, from %d, %d records: not a snapshot this version reads",
			subj, m.Sequence, s.Version, s.Index, s.From, len(s.Records))
	}
	return &s, nil
}

// decode decodes the snapshot's records.
func (s *snapshot) decode() ([]message.Message, error) {
	out := make([]message.Message, 0, len(s.Records)+readSlack)
	for i, raw := range s.Records {
		m, err := message.UnmarshalMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("snapshot record %d of %d: %w", i+1, len(s.Records), err)
		}
		out = append(out, m)
	}
	return out, nil
}
