package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// toHeader names the member an input is for.
const toHeader = "Akgentic-To"

// answersHeader holds the id of the question an input answers
// (Client.Answer).
const answersHeader = "Akgentic-Answers"

// minPullExpiry is the shortest expiry of a pull request the client takes.
const minPullExpiry = time.Second

// sayTimeout bounds the send of one input to its member.
const sayTimeout = 10 * time.Second

// ackTimeout bounds the wait for JetStream's confirmation of an input's
// acknowledgement.
const ackTimeout = 10 * time.Second

// inboxStream is the name of the stream of the teams' input.
func (c Config) inboxStream() string { return c.Stream + "_INBOX" }

// ensureInbox creates the inbox stream of cfg when it is missing: a work
// queue (an input acknowledged is removed), file storage, a subject per
// team under its template and shard. A stream made by an earlier version
// (a subject per team, a consumer each) is refused (errOldInbox).
func ensureInbox(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	return untilReady(ctx, func(ctx context.Context) (jetstream.Stream, error) { return ensureInboxOnce(ctx, js, cfg) })
}

// ensureInboxOnce is one try of ensureInbox.
func ensureInboxOnce(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:         cfg.inboxStream(),
		Description:  "akgentic team input (the durable inbox)",
		Subjects:     []string{cfg.Prefix + ".in.>"},
		Retention:    jetstream.WorkQueuePolicy,
		Storage:      jetstream.FileStorage,
		Replicas:     cfg.Replicas,
		MaxConsumers: streamConsumers,
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		if st, err = js.Stream(ctx, cfg.inboxStream()); err == nil {
			if subj := st.CachedInfo().Config.Subjects; len(subj) == 1 && subj[0] == cfg.Prefix+".in.*" {
				return nil, oldInbox(cfg)
			}
			st, err = boundConsumers(ctx, js, st, cfg)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: inbox stream %s: %w", cfg.inboxStream(), err)
	}
	return st, nil
}

// oldInbox is the refusal of an inbox stream made by an earlier version
// of this package, which kept one subject and one durable consumer per
// team.
func oldInbox(cfg Config) error {
	return fmt.Errorf("cluster: the inbox stream %s was made by an earlier version of this package, with one consumer per team (subjects %s.in.*); "+
		"this version reads each shard's input with one consumer (subjects %s.in.<template>.<shard>.<team>). "+
		"To move on: stop the earlier version's workers, wait until the stream holds no message (nats stream info %s), "+
		"then delete it (nats stream rm %s); the teams' records and leases are kept, and the next worker or client makes the stream anew",
		cfg.inboxStream(), cfg.Prefix, cfg.Prefix, cfg.inboxStream(), cfg.inboxStream())
}

// streamConsumers is the bound of consumers the cluster's streams set: a
// durable consumer per shard on the inbox, and the short-lived ordered
// ones of reads and watches on the records. Without a bound of their own
// the server's default applies (1,000 per stream).
const streamConsumers = 1 << 20

// boundConsumers raises the bound of consumers of a stream made without
// it (by an earlier version) to streamConsumers.
func boundConsumers(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, cfg Config) (jetstream.Stream, error) {
	sc := st.CachedInfo().Config
	if sc.MaxConsumers > 0 && sc.MaxConsumers >= streamConsumers {
		return st, nil
	}
	sc.MaxConsumers = streamConsumers
	up, err := js.UpdateStream(ctx, sc)
	if err != nil {
		// Read on: the server's bound applies until an operator lifts it.
		cfg.Logger.Warn("cluster: a stream's bound of consumers could not be raised; the server's default applies (1,000 unless configured)",
			"stream", sc.Name, "error", err)
		return st, nil
	}
	return up, nil
}

// inbox consumes a team's input on the worker that runs the team, as its
// shard's consumer dispatches it (heldShard.handle), one input after the
// other: each input is sent to its member from the team's person
// (agent.Say) and acknowledged once the record closing it (its
// ProcessedMessage or HandledMessage) is acknowledged by JetStream. An
// input whose turn was cut (a crash, a takeover) is delivered again, to
// the next holder, and run again: at least once.
type inbox struct {
	w      *Worker
	id     uuid.UUID
	team   *orchestrator.Team
	ledger *Ledger
	person string
	shard  *heldShard

	mu       sync.Mutex
	done     map[uuid.UUID]bool          // messages whose turn is in the ledger (restored, or closed here)
	inflight map[uuid.UUID]jetstream.Msg // input id → its latest delivery, its turn not yet durable
	queue    []jetstream.Msg             // dispatched, not yet taken (in order)
	draining chan struct{}               // closed when the goroutine taking the queue ends; nil when none runs
	quiet    chan struct{}               // closed once no turn runs (quiesce); nil when none waits
	room     chan struct{}               // told (without waiting) when a turn closes or the inbox stops: drain waits on it with openTurns open
	stopped  bool
}

// turnRecords is the records a turn is allowed for in a team's ledger
// window when its inbox bounds the inputs given to the team whose turns
// have not closed (openTurns): the inputs after wait in the inbox's
// queue. Given every input at once, a team flooded with them (16 senders
// to one team, 4,096 inputs delivered) made records faster than JetStream
// acknowledged them, its ledger's window (Config.Window, 1,024 records)
// filled, and the ledger stopped the team: it resumed, and the inputs ran
// again, at about 100 turns a second (2 of 5 runs of BenchmarkFleetTurns
// at one team). A counter's turn makes about 5 records, an agent's a few
// more per model call.
const turnRecords = 32

// openTurns is how many of a team's inputs its inbox gives it whose turns
// have not closed: Config.Window over turnRecords, at least one.
func (ib *inbox) openTurns() int { return max(1, ib.w.cfg.Window/turnRecords) }

// enqueue adds a delivery to the inbox's queue (the shard's lock held,
// so inputs are queued in the order they came) and starts the goroutine
// taking them when none runs.
func (ib *inbox) enqueue(m jetstream.Msg) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.stopped {
		return // delivered again to the team's next inbox
	}
	ib.queue = append(ib.queue, m)
	if ib.draining == nil {
		done := make(chan struct{})
		ib.draining = done
		go ib.drain(done) // ended by stop (waited for) or an empty queue
	}
}

// drain takes the queue's inputs one after the other until it is empty or
// the inbox stops, waiting while openTurns of them are given to the team
// and not closed.
func (ib *inbox) drain(done chan struct{}) {
	defer close(done)
	for {
		ib.mu.Lock()
		if ib.stopped || len(ib.queue) == 0 {
			ib.draining = nil
			ib.quietLocked()
			ib.mu.Unlock()
			return
		}
		if len(ib.inflight) >= ib.openTurns() {
			ib.mu.Unlock()
			select { // a turn closes, the inbox stops, or the team stops (its turns never close)
			case <-ib.room:
			case <-ib.team.Done():
				ib.mu.Lock()
				ib.draining = nil
				ib.quietLocked()
				ib.mu.Unlock()
				return // its inputs are delivered again to its next owner
			}
			continue
		}
		m := ib.queue[0]
		ib.queue = ib.queue[1:]
		ib.mu.Unlock()
		ib.handle(m)
	}
}

// closedIn returns the messages whose turn log holds closed: inputs
// delivered again for them are not run again.
func closedIn(log []message.Message) map[uuid.UUID]bool {
	done := map[uuid.UUID]bool{}
	for _, m := range log {
		if mid, ok := closes(m); ok {
			done[mid] = true
		}
	}
	return done
}

// attemptID is the id of the message sent for the n-th delivery of an
// input: the input's id the first time, a name-based id derived from it
// after (a turn run again after a crash gets a message of its own).
func attemptID(input uuid.UUID, n uint64) uuid.UUID {
	if n <= 1 {
		return input
	}
	return uuid.NewSHA1(input, fmt.Appendf(nil, "attempt %d", n))
}

// openInbox starts consuming the input of a team the worker runs (its
// shard's inputs for it dispatched to it), person the template's Person
// and done the messages whose turn the team's log closed (not run again);
// first are inputs an earlier inbox of the team left, taken first.
func (w *Worker) openInbox(ctx context.Context, id uuid.UUID, person string, done map[uuid.UUID]bool, first []jetstream.Msg) error {
	w.mu.Lock()
	o := w.teams[id]
	var hs *heldShard
	if o != nil {
		hs = w.shards[w.shardOfTeam(o.template, id)]
	}
	w.mu.Unlock()
	switch {
	case o == nil:
		return fmt.Errorf("%w: team %s", errNotRunHere, id)
	case hs == nil:
		return fmt.Errorf("%w: team %s", errShardNotHeld, id)
	}
	ib := &inbox{w: w, id: id, team: o.team, ledger: o.ledger, person: person, shard: hs,
		done: done, inflight: map[uuid.UUID]jetstream.Msg{}, room: make(chan struct{}, 1)}
	o.ledger.touch()
	w.mu.Lock()
	if w.teams[id] != o {
		w.mu.Unlock()
		return fmt.Errorf("%w: team %s", errNotRunHere, id)
	}
	o.inbox = ib
	w.mu.Unlock()
	if err := hs.attach(ib, first); err != nil {
		w.mu.Lock()
		if o.inbox == ib {
			o.inbox = nil
		}
		w.mu.Unlock()
		return fmt.Errorf("%w: %w", errShardNotHeld, err)
	}
	return nil
}

// errNotRunHere is openInbox's error for a team no longer registered on
// this worker (lost, stopped, or handed over with its shard).
var errNotRunHere = errors.New("cluster: the team is no longer this worker's")

// errShardNotHeld is openInbox's error for a team whose shard this worker
// does not hold (any more): the team is handed back (startInbox).
var errShardNotHeld = errors.New("cluster: this worker does not hold the team's shard")

// startInbox opens the inbox of a team this worker just started; when it
// fails, the renewals try again. A team whose shard this worker lost
// meanwhile is stopped and its lease released: the shard's holder runs
// it.
func (w *Worker) startInbox(id uuid.UUID, person string, log []message.Message) error {
	ctx, cancel := context.WithTimeout(w.work.ctx, inboxTimeout) // cancelled by Close
	defer cancel()
	done := closedIn(log)
	w.mu.Lock()
	if o := w.teams[id]; o != nil && o.ledger != nil {
		for _, m := range o.ledger.snapshotClosed() { // closed in the records its snapshot compacted away
			done[m] = true
		}
	}
	w.mu.Unlock()
	err := w.openInbox(ctx, id, person, done, nil)
	if errors.Is(err, errShardNotHeld) {
		w.mu.Lock()
		o := w.teams[id]
		delete(w.teams, id)
		w.mu.Unlock()
		if o != nil {
			sctx, scancel := context.WithTimeout(context.Background(), w.cfg.FlushTimeout+w.beat)
			defer scancel()
			_ = w.settle(sctx, map[uuid.UUID]*owned{id: o})
		}
		return err
	}
	if err != nil {
		w.mu.Lock()
		if o := w.teams[id]; o != nil {
			o.noInbox = done // no input is consumed meanwhile: it stays whole
		}
		w.mu.Unlock()
	}
	return err
}

// inboxTimeout bounds the opening of a team's inbox.
const inboxTimeout = 30 * time.Second

// retryInbox opens again, within a beat, the inbox of a team whose
// opening failed, done the closed messages of the team's log when it first
// failed.
func (w *Worker) retryInbox(id uuid.UUID, o *owned, done map[uuid.UUID]bool) {
	ctx, cancel := context.WithTimeout(w.work.ctx, w.beat) // cancelled by Close
	defer cancel()
	if err := w.openInbox(ctx, id, w.tmpls[o.template].Person, done, nil); err != nil {
		w.mu.Lock()
		o.inboxFails++
		n := o.inboxFails
		w.mu.Unlock()
		// Once at Warn (its first failure was logged where it opened),
		// then quiet: a failure that lasts is told once, not every beat.
		level := slog.LevelDebug
		if n == 1 {
			level = slog.LevelWarn
		}
		w.logger.Log(ctx, level, "cluster: a team's input is not consumed yet; trying again on every renewal", "team_id", id, "tries", n, "error", err)
		return
	}
	w.mu.Lock()
	o.noInbox, o.inboxFails = nil, 0
	w.mu.Unlock()
	w.logger.Info("cluster: a team's input is consumed again", "team_id", id)
}

// closed is the Ledger's word that the turn of message mid, sent for
// input, is durable.
func (ib *inbox) closed(input, mid uuid.UUID) {
	ib.mu.Lock()
	ib.done[mid] = true
	m := ib.inflight[input]
	delete(ib.inflight, input)
	ib.freedLocked()
	ib.mu.Unlock()
	if m != nil {
		ib.ack(m, input)
	}
}

// freedLocked tells drain that a turn is no longer open, and quiesce
// that none runs any more, once none does (ib.mu held).
func (ib *inbox) freedLocked() {
	select {
	case ib.room <- struct{}{}:
	default:
	}
	ib.quietLocked()
}

// quietLocked tells quiesce that no turn runs any more, once none does
// (ib.mu held).
func (ib *inbox) quietLocked() {
	if ib.quiet != nil && len(ib.inflight) == 0 && ib.draining == nil {
		close(ib.quiet)
		ib.quiet = nil
	}
}

// quiesce waits, once the inbox stopped, until no turn of an input
// delivered here runs (each closed, or given up), or ctx ends: a handover
// lets the turns under way finish rather than cut them.
func (ib *inbox) quiesce(ctx context.Context) {
	ib.mu.Lock()
	if len(ib.inflight) == 0 && ib.draining == nil {
		ib.mu.Unlock()
		return
	}
	if ib.quiet == nil {
		ib.quiet = make(chan struct{})
	}
	q := ib.quiet
	ib.mu.Unlock()
	select {
	case <-q:
	case <-ctx.Done():
	}
}

// ack acknowledges an input and waits for JetStream to confirm it: once
// confirmed, the input is out of the work queue. ack is called on the NATS
// client's goroutine, so it waits on a goroutine of its own, which the
// Worker's Close waits for (its acks group); once the worker closed, it
// waits here.
func (ib *inbox) ack(m jetstream.Msg, input uuid.UUID) {
	w := ib.w
	confirm := func(context.Context) { // not cancelled by Close: it waits for the confirmation
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		defer cancel()
		if err := m.DoubleAck(ctx); err != nil {
			w.logger.Warn("cluster: an input's acknowledgement failed; it will be delivered again and skipped", "team_id", ib.id, "input", input, "error", err)
			return
		}
		if w.cfg.inputDone != nil {
			w.cfg.inputDone(input)
		}
	}
	if !w.acks.Go("ack", confirm) {
		confirm(context.Background())
	}
}

// progress tells JetStream that the inputs delivered to this inbox are
// still being worked on (their ack wait starts again): called on every
// heartbeat, so an input is delivered to another worker only about two
// beats after its holder stopped.
func (ib *inbox) progress() {
	ib.mu.Lock()
	ms := make([]jetstream.Msg, 0, len(ib.inflight)+len(ib.queue))
	for _, m := range ib.inflight {
		ms = append(ms, m)
	}
	ms = append(ms, ib.queue...)
	ib.mu.Unlock()
	for _, m := range ms {
		_ = m.InProgress() // a failure: JetStream delivers it again, and it is skipped or run again
	}
}

// handBack tells JetStream that the inputs delivered here whose turns did
// not close (cut by the team's stop), and left, those never taken, are not
// being worked on any more, so that they are delivered to the team's next
// holder at once rather than after their ack wait (two beats). Called
// once the team has stopped: no turn of it closes after that.
func (ib *inbox) handBack(left []jetstream.Msg) {
	ib.mu.Lock()
	ms := make([]jetstream.Msg, 0, len(ib.inflight)+len(left))
	for _, m := range ib.inflight {
		ms = append(ms, m)
	}
	clear(ib.inflight)
	ib.mu.Unlock()
	for _, m := range append(ms, left...) {
		_ = m.Nak() // a failure: delivered again after its ack wait
	}
}

// stop ends the dispatch to the inbox and waits for the input being taken
// (or ctx); it returns the inputs dispatched and never taken, in order
// (delivered again to the team's next inbox unless given to it).
func (ib *inbox) stop(ctx context.Context) []jetstream.Msg {
	ib.shard.detach(ib)
	ib.mu.Lock()
	ib.stopped = true
	left := ib.queue
	ib.queue = nil
	wait := ib.draining
	ib.freedLocked() // a drain waiting for room ends
	ib.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done(): // a delivery being sent (up to sayTimeout) ends by itself
		}
	}
	return left
}
