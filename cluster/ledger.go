package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// headroom is the room a record's headers may take within the server's
// max_payload (the ledger's, an atomic batch's and the deduplication id).
const headroom = 1024

// Retry pacing: a round of failed publishes is sent again after retryMin,
// doubling up to retryMax while rounds keep failing.
const (
	retryMin = 20 * time.Millisecond
	retryMax = time.Second
)

// Ledger is the team subscriber that keeps a team's ledger in JetStream:
// every record (but an event that is message.Ephemeral) is encoded with
// message.Marshal, the event log's codec, and published asynchronously to
// the team's records subject, its record id as the deduplication id, while
// at most Config.Window records wait for their acknowledgement. Records
// refused or lost are never silent: the first failure is logged and kept
// for Err, and, once the Ledger is attached to its team (Attach), told to
// the team as a WarningMessage.
//
// A Ledger is an orchestrator.Archive: Team.Messages reads the records past
// the team's in-memory window from the stream. It is a lossless
// subscriber: its hooks run on the goroutine the team gives it, and never wait for JetStream, except OnStop,
// which waits for the records still unacknowledged (Config.FlushTimeout at
// most).
//
// It stores the team's snapshots too (Config.SnapshotEvery): the log it
// keeps since the last one, compacted, once enough records came and all
// are acknowledged, and at the team's stop.
//
// Make one with OpenLedger, give it to the team with
// orchestrator.WithSubscribers, then Attach the team.
type Ledger struct {
	cfg      Config
	team     uuid.UUID
	js       jetstream.JetStream // the connection's shared publisher's
	pub      *publisher
	st       jetstream.Stream
	recSubj  string
	ownSubj  string
	claimSeq uint64
	logger   *slog.Logger
	// maxPayload is the server's max_payload (0 when unknown): a record
	// larger than it, less headroom for its headers, is refused alone
	// before it is published (the client would refuse it, forever).
	maxPayload int64

	mu        sync.Mutex
	handle    *orchestrator.Team
	next      uint64               // ledger index of the next record
	unacked   map[uint64]*nats.Msg // published, not yet acknowledged, by ledger index
	queued    []*nats.Msg          // in unacked, waiting for a send slot, in ledger order
	inflight  int                  // sent, neither acknowledged nor failed
	depth     int                  // sends in flight at most: the window, 1 on a replicated stream
	batchMax  int                  // records per atomic batch at most; no batches when < 2 (batch.go)
	batch     []*nats.Msg          // the records of the batch in flight, in ledger order
	batchID   string               // its Nats-Batch-Id
	solo      int                  // records to send one by one before batches resume
	low       uint64               // no record below this index is unacknowledged
	retry     []*nats.Msg          // failed publishes to send again
	restoring bool
	fenced    bool               // JetStream refused a record: another owner claimed the team
	broken    bool               // a record was lost: publish nothing more
	stopping  bool               // OnStop has begun
	cut       bool               // the worker stops the team to hand it over: later records are not published (cut)
	lastRec   time.Time          // when the last record came (idle)
	open      map[uuid.UUID]bool // messages received whose turn has not closed (idle)
	err       error
	lost      uint64 // records not stored: refused, past the window, failed for good
	warn      string // a warning for the team, not yet emitted
	stopTeam  bool   // the team must be stopped (fenced), not yet requested
	failing   bool   // publishes are failing (logged once per outage)
	changed   chan struct{}
	waits     map[uuid.UUID]func() // message id → told once the record closing it is acknowledged
	calls     []durableCall        // published records someone waits on, in ledger order
	// Snapshots (snapshot.go): the log the next one compacts (the last
	// one's records, then every record published since), how many came
	// since, the inputs closed by the records compacted away, the highest
	// stream sequence acknowledged (or read), and a write under way.
	hist     []message.Message
	histData map[message.Message][]byte // the records of hist this Ledger published, as encoded
	since    int
	closed   []uuid.UUID
	ackSeq   uint64
	snapping bool
	snapMu   sync.Mutex // one snapshot written at a time

	pumpOnce  sync.Once
	kick      chan struct{} // wakes the pump
	quit      chan struct{} // ends the pump
	emitCtx   context.Context
	emitStop  context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// OpenLedger claims the team for this process (Config.Owner) and returns
// its Ledger, with the records the stream already holds for the team: none
// for a new team (create it with orchestrator.New and
// orchestrator.WithTeamID), else its log for orchestrator.Restore: the
// records of its latest snapshot (Config.SnapshotEvery) and every record
// after it, or, without one, every record. The claim fences off any
// previous owner: from then on JetStream refuses its records and
// snapshots, and the log returned holds every record it had stored (or
// their compaction).
//
// The stream is created if it is missing (Config). OpenLedger does not
// decide whether this process should own the team: it takes it over.
func OpenLedger(ctx context.Context, nc *nats.Conn, team uuid.UUID, cfg Config) (*Ledger, []message.Message, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case nc == nil:
		return nil, nil, errors.New("cluster: OpenLedger: nil connection")
	case team == uuid.Nil:
		return nil, nil, errors.New("cluster: OpenLedger: nil team id")
	}
	l := &Ledger{
		cfg:     cfg,
		team:    team,
		recSubj: cfg.recordsSubject(team),
		ownSubj: cfg.claimsSubject(team),
		logger:  cfg.Logger.With("team_id", team, "stream", cfg.Stream),
		unacked: make(map[uint64]*nats.Msg),
		changed: make(chan struct{}),
		kick:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
	}
	l.lastRec = time.Now()
	l.emitCtx, l.emitStop = context.WithCancel(context.Background())
	if l.pub, err = publisherFor(nc, cfg.AckTimeout); err != nil {
		l.emitStop()
		return nil, nil, err
	}
	l.js = l.pub.js
	l.maxPayload = nc.MaxPayload()
	if l.st, err = ensureStream(ctx, l.js, cfg); err != nil {
		l.emitStop()
		return nil, nil, err
	}
	if l.claimSeq, err = claimTeam(ctx, l.js, l.st, cfg, team); err != nil {
		l.emitStop()
		return nil, nil, err
	}
	tl, err := readTeamLog(ctx, l.st, cfg, team, l.logger)
	log, last := tl.log, tl.last
	if errors.Is(err, errHole) && !errors.Is(err, ErrBadRecord) {
		// The previous owner stopped with a record unacknowledged and later
		// ones acknowledged: the team resumes from the record before the
		// hole, and writes over what follows it.
		l.logger.Warn("cluster: the team's ledger has a hole; resuming from the record before it", "error", err, "records", len(log))
		err = nil
	}
	if err != nil {
		l.emitStop()
		return nil, log, fmt.Errorf("cluster: open the ledger of team %s: %w", team, err)
	}
	// A previous Ledger of the team in this process (taken over, then
	// resumed here) no longer gets the answers.
	l.pub.add(l)
	l.next, l.low = last+1, last+1
	if cfg.SnapshotEvery > 0 {
		// The records read past a snapshot count toward the next one
		// (a ledger read whole is snapshotted at its first quiet moment).
		l.hist, l.since = log, min(tl.read, cfg.SnapshotEvery)
	}
	l.closed, l.ackSeq = tl.closed, tl.lastSeq
	l.depth = cfg.Window
	if info := l.st.CachedInfo(); info != nil && info.Config.Replicas > 1 {
		l.depth = 1
		if info.Config.AllowAtomicPublish {
			l.batchMax = maxBatch
		} else {
			l.logger.Warn("cluster: the replicated stream does not take atomic batches; the ledger keeps one record in flight (slow)")
		}
	}
	l.logger.Debug("cluster: team claimed", "owner", cfg.Owner, "claim_seq", l.claimSeq, "records", len(log),
		"from_snapshot", tl.snapshot, "read", tl.read)
	return l, log, nil
}

// Attach gives the Ledger its team, once orchestrator.New or
// orchestrator.Restore returned it: warnings are then emitted through the
// team (Team.Emit) and, when the team is taken over by another owner, the
// team is stopped. A failure that came before Attach is told then.
func (l *Ledger) Attach(t *orchestrator.Team) {
	l.mu.Lock()
	l.handle = t
	pending := l.warn != "" || l.stopTeam
	l.mu.Unlock()
	if pending {
		l.wake()
	}
}

// OnMessage publishes the record (the orchestrator's hook). It never waits
// for JetStream: when Config.Window records are already unacknowledged the
// record is not published, and neither is any later one (ErrWindowFull).
func (l *Ledger) OnMessage(msg message.Message) {
	if ev, ok := msg.(*message.EventMessage); ok {
		if _, live := ev.Event.(message.Ephemeral); live {
			return // live only, never logged (as the event log)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.restoring {
		return // already in the stream
	}
	l.lastRec = time.Now()
	switch m := msg.(type) {
	case *message.ReceivedMessage:
		if l.open == nil {
			l.open = map[uuid.UUID]bool{}
		}
		l.open[m.MessageID] = true
	case *message.ProcessedMessage:
		delete(l.open, m.MessageID)
	case *message.HandledMessage:
		delete(l.open, m.MessageID)
	}
	if _, closing := closes(msg); closing && l.cut {
		return // a turn that ends after the cut: not closed in the ledger, run again by the next holder (cutAt)
	}
	switch {
	case l.fenced || l.broken:
		l.lost++
		return
	case l.stopping:
		l.lost++
		l.failLocked(fmt.Errorf("cluster: a %s record came after the team's stop and is lost", message.TypeName(msg)), "")
		return
	case len(l.unacked) >= l.cfg.Window:
		l.lost++
		l.broken = true
		l.failLocked(fmt.Errorf("%w: %d records wait for JetStream's acknowledgement; this %s record and every later one are not published",
			ErrWindowFull, len(l.unacked), message.TypeName(msg)),
			fmt.Sprintf("the team's ledger stopped at record %d: JetStream did not acknowledge %d records (window full); later records are not stored", l.next-1, len(l.unacked)))
		return
	}
	data, err := encode(msg)
	if err == nil && l.maxPayload > 0 && int64(len(data))+headroom > l.maxPayload {
		err = fmt.Errorf("cluster: a %s record of %d bytes is larger than the server's max_payload (%d bytes, less %d for headers)",
			message.TypeName(msg), len(data), l.maxPayload, headroom)
	}
	if err != nil {
		// That record alone: its index is not used, so the ledger has no
		// hole; the team is told (a record that cannot be stored is data
		// lost, never silently).
		l.lost++
		l.failLocked(err, fmt.Sprintf("a %s record (id %s) is not stored in the team's ledger: %v", message.TypeName(msg), msg.Envelope().ID, err))
		return
	}
	// The headers jetstream.WithMsgID and WithExpectLastSequenceForSubject
	// set, set once here, so that a record sent again carries them.
	m := &nats.Msg{Subject: l.recSubj, Data: data, Header: nats.Header{
		indexHeader:                             {strconv.FormatUint(l.next, 10)},
		jetstream.MsgIDHeader:                   {msg.Envelope().ID.String()},
		jetstream.ExpectedLastSubjSeqHeader:     {strconv.FormatUint(l.claimSeq, 10)},
		jetstream.ExpectedLastSubjSeqSubjHeader: {l.ownSubj},
	}}
	l.unacked[l.next] = m
	if id, ok := closes(msg); ok {
		if f := l.waits[id]; f != nil {
			delete(l.waits, id)
			l.calls = append(l.calls, durableCall{index: l.next, f: f})
		}
	}
	l.next++
	l.keepLocked(msg, data)
	l.queued = append(l.queued, m)
	l.sendLocked()
}

// sendLocked sends queued records while fewer than depth are in flight.
// A replicated stream refuses a record whose claims-subject check overlaps
// one still in flight (JetStream's 10164), so there one send at a time is
// in flight, an atomic batch of the records queued (sendBatchLocked); on
// one server, the whole window, record by record.
func (l *Ledger) sendLocked() {
	if l.batchMax > 1 {
		l.sendBatchLocked()
		return
	}
	for l.inflight < l.depth && len(l.queued) > 0 && !l.fenced {
		m := l.queued[0]
		l.queued[0] = nil
		l.queued = l.queued[1:]
		if _, ok := l.unacked[indexOf(m)]; !ok {
			continue // acknowledged meanwhile (a late ack), or given up
		}
		if _, err := l.js.PublishMsgAsync(m); err != nil {
			l.notSentLocked(err, m)
			return
		}
		l.inflight++
	}
}

// notSentLocked handles a publish the client did not take: sent again
// later, unless the connection is closed for good, which loses every
// record not yet acknowledged.
func (l *Ledger) notSentLocked(err error, m ...*nats.Msg) {
	if errors.Is(err, nats.ErrMaxPayload) {
		// Refused by the client for good (OnMessage checks the size; a
		// server whose limit shrank since): sent again it would be refused
		// again, and the ledger would have a hole.
		l.dropLocked(m)
		l.broken = true
		l.failLocked(fmt.Errorf("cluster: %s of team %s: %w; later records are not published", span(m), l.team, err),
			fmt.Sprintf("the team's ledger stopped at %s: too large for the server (%v)", span(m), err))
		l.signalLocked()
		return
	}
	if !errors.Is(err, nats.ErrConnectionClosed) {
		l.failingLocked(err)
		l.retry = append(l.retry, m...)
		l.wakeLocked()
		return
	}
	n := len(l.unacked)
	l.lost += uint64(n)
	clear(l.unacked)
	l.retry, l.queued, l.inflight = nil, nil, 0
	l.broken = true
	l.failLocked(fmt.Errorf("cluster: the NATS connection is closed: %d records of team %s not acknowledged are lost, later ones not published: %w", n, l.team, err),
		fmt.Sprintf("the team's ledger stopped: the NATS connection is closed (%d records not stored)", n))
	l.signalLocked()
}

// encode is message.Marshal with a payload's panic turned into an error.
func encode(msg message.Message) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: encode %s: panic: %v", message.TypeName(msg), r)
		}
	}()
	b, err = message.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode %s: %w", message.TypeName(msg), err)
	}
	return b, nil
}

// idleFor reports whether the team has no turn running (every message
// received closed) and has written no record for d, every record
// acknowledged.
func (l *Ledger) idleFor(d time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open) == 0 && time.Since(l.lastRec) >= d && !l.pendingLocked(l.next-1) && !l.fenced && !l.broken
}

// touch counts the team active now (its inbox just opened: a team
// restored has the whole of IdleAfter before it passivates).
func (l *Ledger) touch() {
	l.mu.Lock()
	l.lastRec = time.Now()
	l.mu.Unlock()
}

// cutAt marks the team handed over, before the worker stops it (Close, a
// lease it could not renew, a passivation): from now on a record closing
// a message (ProcessedMessage, HandledMessage) is not published, and every
// other record is, the team's stop flushing them. A turn the stop cuts
// (or that ends during it) is thus not closed in the ledger: its input is
// not acknowledged, and the team's next holder runs it again (at least
// once). Without the cut, the cut turn's ProcessedMessage would close the
// input, and it would never run. The records after a closing one (the
// turn's state checkpoint follows its ProcessedMessage) are kept, so a
// turn that ended before the cut loses nothing.
func (l *Ledger) cutAt() {
	l.mu.Lock()
	l.cut = true
	l.mu.Unlock()
}

// SetRestoring is the orchestrator's hook around a restore replay: the
// replayed records came from the stream and are not published again.
func (l *Ledger) SetRestoring(teamID uuid.UUID, restoring bool) {
	if !l.ours(teamID, "SetRestoring") {
		return
	}
	l.mu.Lock()
	l.restoring = restoring
	l.mu.Unlock()
}

// OnStop is the orchestrator's last call: it waits until every record is
// acknowledged (Config.FlushTimeout at most; not at all when the team was
// taken over), then releases the Ledger's goroutine and subscription.
// Records still unacknowledged then are counted lost and reported by Err.
func (l *Ledger) OnStop(teamID uuid.UUID) {
	if !l.ours(teamID, "OnStop") {
		return
	}
	l.emitStop() // a warning on its way to the team would wait for this hook
	l.mu.Lock()
	l.stopping = true
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.FlushTimeout)
	err := l.flush(ctx, ^uint64(0))
	cancel()
	if err != nil {
		l.mu.Lock()
		n := len(l.unacked)
		l.lost += uint64(n)
		clear(l.unacked) // counted here, not again when the publisher closes
		l.queued, l.retry = nil, nil
		l.failLocked(fmt.Errorf("cluster: the team's stop: %d records not acknowledged within %v: %w", n, l.cfg.FlushTimeout, err), "")
		l.mu.Unlock()
	} else {
		// The team stops (a passivation, a handover): its next restore
		// reads this snapshot and nothing after it.
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.FlushTimeout)
		if _, err := l.writeSnapshot(ctx, true); err != nil {
			l.logger.Warn("cluster: no snapshot of the team at its stop; its next restore reads from the last one", "error", err)
		}
		cancel()
	}
	l.close()
}

// close ends the pump and stops the Ledger's answers from the connection's
// shared publisher.
func (l *Ledger) close() {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.pumpOnce.Do(func() {}) // no pump from now on
		l.mu.Unlock()
		close(l.quit)
		l.wg.Wait()
		l.pub.remove(l) // answers still on their way are dropped
		l.mu.Lock()
		l.lost += uint64(len(l.unacked)) // none but after a takeover (no flush then)
		clear(l.unacked)
		l.queued, l.retry = nil, nil
		l.mu.Unlock()
		l.emitStop()
	})
}

// flush waits until no record of index <= upTo is unacknowledged, the
// Ledger is fenced, or ctx ends.
func (l *Ledger) flush(ctx context.Context, upTo uint64) error {
	for {
		l.mu.Lock()
		done := l.fenced || !l.pendingLocked(upTo)
		ch := l.changed
		l.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// pendingLocked reports whether a record of index <= upTo is
// unacknowledged. Amortized O(1): the lowest unacknowledged index only
// goes up.
func (l *Ledger) pendingLocked(upTo uint64) bool {
	for l.low < l.next && l.unacked[l.low] == nil {
		l.low++
	}
	return l.low < l.next && l.low <= upTo
}

// indexOf returns the ledger index a record's message carries.
func indexOf(m *nats.Msg) uint64 {
	i, _ := strconv.ParseUint(m.Header.Get(indexHeader), 10, 64)
	return i
}

// ReadHistory returns the team's records from the stream, in ledger
// order, once every record published before the call is acknowledged (or
// ctx ends): the orchestrator's Archive hook, called on the goroutine of a
// Team.Messages call. It may be called after the team stopped. When the
// Ledger lost records (Err), it returns what the stream holds with an
// error wrapping that failure.
func (l *Ledger) ReadHistory(ctx context.Context) ([]message.Message, error) {
	l.mu.Lock()
	upTo := l.next - 1
	l.mu.Unlock()
	if err := l.flush(ctx, upTo); err != nil {
		return nil, fmt.Errorf("cluster: read history of team %s: waiting for acknowledgements: %w", l.team, err)
	}
	log, _, err := readRecords(ctx, l.st, l.recSubj)
	if err != nil {
		return log, err
	}
	if lost := l.Err(); lost != nil {
		return log, fmt.Errorf("cluster: read history of team %s: the ledger lacks records: %w", l.team, lost)
	}
	return log, nil
}

// Err returns the first failure: records refused because another owner
// took the team (ErrFenced), a full window (ErrWindowFull), a record that
// could not be encoded or was refused by JetStream, records not
// acknowledged by the end of the team's stop. Nil while every record was
// stored or is on its way.
func (l *Ledger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// state says whether the Ledger was fenced (another owner claimed the
// team) or broke (a record was lost, so nothing more is published), with
// the failure that broke it.
func (l *Ledger) state() (fenced bool, broken error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken && !l.fenced {
		broken = l.err
	}
	return l.fenced, broken
}

func (l *Ledger) ours(teamID uuid.UUID, hook string) bool {
	if teamID == l.team {
		return true
	}
	l.logger.Warn("cluster: hook called for another team; ignored", "hook", hook, "other_team_id", teamID)
	return false
}

var (
	_ orchestrator.Archive             = (*Ledger)(nil)
	_ orchestrator.RestoringSubscriber = (*Ledger)(nil)
	_ orchestrator.StopSubscriber      = (*Ledger)(nil)
)
