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

// inboxMaxPending bounds the inputs of one team delivered to its worker
// and not yet acknowledged (their turns not yet durable).
const inboxMaxPending = 256

// inboxPull is how many inputs of a team one pull request asks for.
const inboxPull = 8

// minPullExpiry is the shortest expiry of a pull request the client takes.
const minPullExpiry = time.Second

// sayTimeout bounds the send of one input to its member.
const sayTimeout = 10 * time.Second

// ackTimeout bounds the wait for JetStream's confirmation of an input's
// acknowledgement.
const ackTimeout = 10 * time.Second

// inboxStream is the name of the stream of the teams' input.
func (c Config) inboxStream() string { return c.Stream + "_INBOX" }

// inboxSubject is the subject of a team's input.
func (c Config) inboxSubject(team uuid.UUID) string { return c.Prefix + ".in." + team.String() }

// inboxConsumer is the durable consumer of a team's input.
func inboxConsumer(team uuid.UUID) string { return "in_" + team.String() }

// ensureInbox creates the inbox stream of cfg when it is missing: a work
// queue (an input acknowledged is removed), file storage, one subject per
// team.
func ensureInbox(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	return untilReady(ctx, func(ctx context.Context) (jetstream.Stream, error) { return ensureInboxOnce(ctx, js, cfg) })
}

// ensureInboxOnce is one try of ensureInbox.
func ensureInboxOnce(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:         cfg.inboxStream(),
		Description:  "akgentic team input (the durable inbox)",
		Subjects:     []string{cfg.Prefix + ".in.*"},
		Retention:    jetstream.WorkQueuePolicy,
		Storage:      jetstream.FileStorage,
		Replicas:     cfg.Replicas,
		MaxConsumers: streamConsumers,
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		if st, err = js.Stream(ctx, cfg.inboxStream()); err == nil {
			st, err = boundConsumers(ctx, js, st, cfg)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: inbox stream %s: %w", cfg.inboxStream(), err)
	}
	return st, nil
}

// streamConsumers is the bound of consumers the cluster's streams set: a
// durable consumer per team on the inbox, and the short-lived ordered ones
// of reads and watches on the records. Without a bound of their own the
// server's default applies (1,000 per stream), and team 1,001 would get no
// inbox.
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

// inbox consumes a team's input on the worker that owns the team: each
// input is sent to its member from the team's person (agent.Say) and
// acknowledged once the record closing it (its ProcessedMessage or
// HandledMessage) is acknowledged by JetStream. An input whose turn was cut
// (a crash, a takeover) is delivered again, to the next owner, and run
// again: at least once.
type inbox struct {
	w      *Worker
	id     uuid.UUID
	team   *orchestrator.Team
	ledger *Ledger
	person string
	cc     jetstream.ConsumeContext

	mu       sync.Mutex
	done     map[uuid.UUID]bool          // messages whose turn is in the ledger (restored, or closed here)
	inflight map[uuid.UUID]jetstream.Msg // input id → its latest delivery, its turn not yet durable
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
// durable consumer created, or resumed after another owner), person the
// template's Person and done the messages whose turn the team's log
// closed (not run again); early, when not nil, is its consumer made while
// the team was restored.
func (w *Worker) openInbox(ctx context.Context, id uuid.UUID, person string, done map[uuid.UUID]bool, early *earlyInbox) error {
	w.mu.Lock()
	o := w.teams[id]
	w.mu.Unlock()
	if o == nil {
		return fmt.Errorf("cluster: team %s is no longer this worker's", id)
	}
	ib := &inbox{w: w, id: id, team: o.team, ledger: o.ledger, person: person,
		done: done, inflight: map[uuid.UUID]jetstream.Msg{}}
	cons, err := early.consumer()
	if err != nil {
		cons, err = w.inboxConsumer(ctx, id)
	}
	if err != nil {
		return err
	}
	ib.cc, err = cons.Consume(ib.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		w.logger.Debug("cluster: inbox consumer", "team_id", id, "error", err)
	}),
		// Small pull requests that expire within a beat (the client's
		// defaults are 500 messages for 30 s): a paused owner's open
		// requests do not take the inputs meant for the team's next owner
		// for long, each costing an ack wait.
		jetstream.PullMaxMessages(inboxPull), jetstream.PullExpiry(max(w.beat, minPullExpiry)))
	if err != nil {
		return fmt.Errorf("cluster: the inbox of team %s: %w", id, err)
	}
	o.ledger.touch()
	w.mu.Lock()
	if o = w.teams[id]; o != nil {
		o.inbox = ib
	}
	w.mu.Unlock()
	if o == nil { // lost meanwhile
		ib.stop(ctx)
	}
	return nil
}

// inboxConsumer creates, or finds and updates, the durable consumer of
// team id's input.
func (w *Worker) inboxConsumer(ctx context.Context, id uuid.UUID) (jetstream.Consumer, error) {
	cons, err := w.js.CreateOrUpdateConsumer(ctx, w.cfg.inboxStream(), jetstream.ConsumerConfig{
		Durable:       inboxConsumer(id),
		Description:   "input of team " + id.String(),
		FilterSubject: w.cfg.inboxSubject(id),
		AckPolicy:     jetstream.AckExplicitPolicy,
		// Two beats: renewed by progress on every beat, and an input
		// delivered to an owner that died after its last renewal is
		// delivered again by the time its lease ends (a lease would add up
		// to a beat to the failover). A delivery again to a live owner
		// whose renewals lag is not run twice (inflight).
		AckWait:       2 * w.beat,
		MaxAckPending: inboxMaxPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: the inbox of team %s: %w", id, err)
	}
	return cons, nil
}

// earlyInbox is the inbox consumer of a team being taken over or
// activated, made while its ledger is read and the team restored: its
// creation (a file written on the server, about a millisecond of an
// activation) is then off the activation's path. It delivers nothing
// until the team's inbox consumes from it (openInbox).
type earlyInbox struct {
	done   chan struct{}
	cancel context.CancelFunc
	cons   jetstream.Consumer
	err    error
}

// inboxEarly begins making the inbox consumer of team id, within ctx;
// the caller waits for its end (stop).
func (w *Worker) inboxEarly(ctx context.Context, id uuid.UUID) *earlyInbox {
	ctx, cancel := context.WithCancel(ctx)
	e := &earlyInbox{done: make(chan struct{}), cancel: cancel}
	go func() { // joined by stop
		defer close(e.done)
		e.cons, e.err = w.inboxConsumer(ctx, id)
	}()
	return e
}

// consumer waits for the consumer made early; an error when it could not
// be made (or e is nil).
func (e *earlyInbox) consumer() (jetstream.Consumer, error) {
	if e == nil {
		return nil, errors.New("cluster: no inbox consumer made early")
	}
	<-e.done
	return e.cons, e.err
}

// stop ends the early making of a consumer (cancelled when not done) and
// waits for it.
func (e *earlyInbox) stop() {
	e.cancel()
	<-e.done
}

// inboxTimeout bounds the opening of a team's inbox (its durable consumer).
const inboxTimeout = 30 * time.Second

// startInbox opens the inbox of a team this worker just started, with a
// context of its own (a slow Build may have used up the create's); when
// it fails, the renewals try again.
func (w *Worker) startInbox(id uuid.UUID, person string, log []message.Message, early *earlyInbox) error {
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
	err := w.openInbox(ctx, id, person, done, early)
	if err != nil {
		w.mu.Lock()
		if o := w.teams[id]; o != nil {
			o.noInbox = done // no input is consumed meanwhile: it stays whole
		}
		w.mu.Unlock()
	}
	return err
}

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
	ib.mu.Unlock()
	if m != nil {
		ib.ack(m, input)
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

// progress tells JetStream that the inputs whose turns run here are still
// being worked on (their ack wait starts again): called on every
// heartbeat, so an input is delivered to another worker only about a lease
// after its owner stopped renewing.
func (ib *inbox) progress() {
	ib.mu.Lock()
	ms := make([]jetstream.Msg, 0, len(ib.inflight))
	for _, m := range ib.inflight {
		ms = append(ms, m)
	}
	ib.mu.Unlock()
	for _, m := range ms {
		_ = m.InProgress() // a failure: JetStream delivers it again, and it is skipped or run again
	}
}

// handBack tells JetStream that the inputs delivered here whose turns did
// not close (cut by the team's stop) are not being worked on any more, so
// that they are delivered to the team's next holder at once rather than
// after their ack wait (two beats). Called by Close once the team has
// stopped: no turn of it closes after that.
func (ib *inbox) handBack() {
	ib.mu.Lock()
	ms := make([]jetstream.Msg, 0, len(ib.inflight))
	for _, m := range ib.inflight {
		ms = append(ms, m)
	}
	clear(ib.inflight)
	ib.mu.Unlock()
	for _, m := range ms {
		_ = m.Nak() // a failure: delivered again after its ack wait
	}
}

// stop stops consuming; the inputs not acknowledged are delivered to the
// team's next owner.
func (ib *inbox) stop(ctx context.Context) {
	ib.cc.Stop()
	select {
	case <-ib.cc.Closed():
	case <-ctx.Done(): // a delivery being sent (up to sayTimeout) ends by itself
	}
}
