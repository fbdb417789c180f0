package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/agent"
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

// sayTimeout bounds the send of one input to its member.
const sayTimeout = 10 * time.Second

// ackTimeout bounds the wait for JetStream's confirmation of an input's
// acknowledgement.
const ackTimeout = 10 * time.Second

// createQueue is the queue group of the workers serving Client.Create:
// NATS gives each request to one of the workers that have the template.
const createQueue = "akgentic-workers"

// inboxStream is the name of the stream of the teams' input.
func (c Config) inboxStream() string { return c.Stream + "_INBOX" }

// inboxSubject is the subject of a team's input.
func (c Config) inboxSubject(team uuid.UUID) string { return c.Prefix + ".in." + team.String() }

// createSubject is the subject of Client.Create's requests for a template.
func (c Config) createSubject(template string) string { return c.Prefix + ".create." + template }

// inboxConsumer is the durable consumer of a team's input.
func inboxConsumer(team uuid.UUID) string { return "in_" + team.String() }

// checkTemplateName refuses a name that is not one subject token.
func checkTemplateName(name string) error {
	if name == "" || strings.ContainsAny(name, ". *>\t\r\n") {
		return fmt.Errorf("template name %q: must be one subject token (not empty, no '.', '*', '>' or white space)", name)
	}
	return nil
}

// ensureInbox creates the inbox stream of cfg when it is missing: a work
// queue (an input acknowledged is removed), file storage, one subject per
// team.
func ensureInbox(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:        cfg.inboxStream(),
		Description: "akgentic team input (the durable inbox)",
		Subjects:    []string{cfg.Prefix + ".in.*"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		st, err = js.Stream(ctx, cfg.inboxStream())
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: inbox stream %s: %w", cfg.inboxStream(), err)
	}
	return st, nil
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
// template's Person and log the ledger the team was restored from (its
// closed messages are not run again).
func (w *Worker) openInbox(ctx context.Context, id uuid.UUID, person string, done map[uuid.UUID]bool) error {
	w.mu.Lock()
	o := w.teams[id]
	w.mu.Unlock()
	if o == nil {
		return fmt.Errorf("cluster: team %s is no longer this worker's", id)
	}
	ib := &inbox{w: w, id: id, team: o.team, ledger: o.ledger, person: person,
		done: done, inflight: map[uuid.UUID]jetstream.Msg{}}
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
		return fmt.Errorf("cluster: the inbox of team %s: %w", id, err)
	}
	ib.cc, err = cons.Consume(ib.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		w.logger.Debug("cluster: inbox consumer", "team_id", id, "error", err)
	}))
	if err != nil {
		return fmt.Errorf("cluster: the inbox of team %s: %w", id, err)
	}
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

// handle takes one delivery of an input (on the consumer's goroutine).
func (ib *inbox) handle(m jetstream.Msg) {
	input, err := uuid.Parse(m.Headers().Get(jetstream.MsgIDHeader))
	if err != nil {
		ib.refuse(m, uuid.Nil, fmt.Errorf("no input id (%s header %q)", jetstream.MsgIDHeader, m.Headers().Get(jetstream.MsgIDHeader)))
		return
	}
	n := uint64(1)
	if meta, err := m.Metadata(); err == nil {
		n = meta.NumDelivered
	}
	ib.mu.Lock()
	if _, running := ib.inflight[input]; running {
		ib.inflight[input] = m // delivered again while its turn runs here: acknowledged when it is durable
		ib.mu.Unlock()
		return
	}
	for k := uint64(1); k < n; k++ {
		if ib.done[attemptID(input, k)] { // an earlier delivery's turn is durable: not run again
			ib.mu.Unlock()
			ib.ack(m, input)
			return
		}
	}
	ib.inflight[input] = m
	ib.mu.Unlock()

	select {
	case <-ib.team.Done():
		ib.forget(input) // delivered again to the team's next owner
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), sayTimeout)
	defer cancel()
	if ib.person == "" {
		ib.refuse(m, input, errors.New("the team's template names no person to send input from"))
		return
	}
	d, err := ib.delivery(ctx, m)
	switch {
	case errors.Is(err, errStopping): // its next owner gets the input
		ib.forget(input)
		ib.w.logger.Warn("cluster: an input is left for the team's next owner", "team_id", ib.id, "input", input, "error", err)
		return
	case err != nil:
		ib.refuse(m, input, err)
		return
	}
	am := &agent.AgentMessage{Type: agent.Request, Content: string(m.Data())}
	if d.question != nil {
		am.Type = agent.Response
	}
	mid := attemptID(input, n)
	am.ID = mid
	ib.ledger.onClosed(mid, func() { ib.closed(input, mid) })
	if d.question != nil {
		err = agent.Answer(ctx, d.from, d.question, am)
	} else {
		err = agent.Say(ctx, d.from, d.to, am)
	}
	if err != nil {
		ib.ledger.drop(mid)
		ib.refuse(m, input, fmt.Errorf("%s: %w", d.what, err))
		return
	}
	if am.Recipient == nil {
		// Not sent as itself: a "/cancel", sent as a CancelMessage that
		// cancels the running turn at once. It is done once sent and
		// every record so far durable; it is not run again.
		ib.ledger.drop(mid)
		ib.ledger.onFlushed(func() { ib.closed(input, mid) })
	}
}

// errStopping is delivery's error when the team is stopping: the input is
// left for the team's next owner.
var errStopping = errors.New("the team is stopping")

// delivery is where an input goes: from the team's person to a member
// (Client.Send), or to the sender of the question it answers
// (Client.Answer).
type delivery struct {
	from, to *message.Address
	question message.Message // the message answered; nil for Send
	what     string          // for errors: "send to "x"", "answer <id>"
}

// delivery resolves an input's sender and recipient. An error other than
// errStopping is the input's fault: it is refused.
func (ib *inbox) delivery(ctx context.Context, m jetstream.Msg) (delivery, error) {
	var d delivery
	from, err := ib.team.Member(ctx, ib.person)
	switch {
	case err != nil:
		return d, fmt.Errorf("%w: %w", errStopping, err)
	case from == nil:
		return d, fmt.Errorf("the team has no member %q to speak for its person", ib.person)
	}
	d.from = from
	if q := m.Headers().Get(answersHeader); q != "" {
		d.what = "answer " + q
		qid, err := uuid.Parse(q)
		if err != nil {
			return d, fmt.Errorf("%s: not a message id: %w", d.what, err)
		}
		d.question, err = ib.question(ctx, qid)
		return d, err
	}
	to := m.Headers().Get(toHeader)
	d.what = fmt.Sprintf("send to %q", to)
	d.to, err = ib.team.Member(ctx, to)
	switch {
	case err != nil:
		return d, fmt.Errorf("%w: %w", errStopping, err)
	case d.to == nil:
		return d, fmt.Errorf("the team has no member named %q", to)
	}
	return d, nil
}

// question finds, in the team's log, the message id that a member sent to
// the team's person.
func (ib *inbox) question(ctx context.Context, id uuid.UUID) (message.Message, error) {
	sent, err := ib.team.Messages(ctx, orchestrator.Filter{Type: "SentMessage"})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errStopping, err)
	}
	for _, r := range slices.Backward(sent) {
		s, ok := r.(*message.SentMessage)
		if !ok || s.Message == nil || s.Message.Envelope().ID != id {
			continue
		}
		if s.Recipient == nil || s.Recipient.Name() != ib.person {
			return nil, fmt.Errorf("answer %s: the message was sent to %s, not to the team's person %q", id, nameOf(s.Recipient), ib.person)
		}
		return s.Message, nil
	}
	return nil, fmt.Errorf("answer %s: the team's log holds no such message", id)
}

// nameOf is a's name, "nobody" when nil.
func nameOf(a *message.Address) string {
	if a == nil {
		return "nobody"
	}
	return a.Name()
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
// Worker's Close waits for; once the worker closed, it waits here.
func (ib *inbox) ack(m jetstream.Msg, input uuid.UUID) {
	w := ib.w
	confirm := func() {
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
	w.mu.Lock()
	closed := w.closed // Close waits for w.acks from then on: no Add after
	if !closed {
		w.acks.Add(1)
	}
	w.mu.Unlock()
	if closed {
		confirm()
		return
	}
	go func() {
		defer w.acks.Done()
		confirm()
	}()
}

func (ib *inbox) forget(input uuid.UUID) {
	ib.mu.Lock()
	delete(ib.inflight, input)
	ib.mu.Unlock()
}

// refuse drops an input that cannot be delivered (no such member, no
// person): terminated, logged, and told to the team as a warning record.
func (ib *inbox) refuse(m jetstream.Msg, input uuid.UUID, why error) {
	ib.forget(input)
	ib.w.logger.Error("cluster: input refused", "team_id", ib.id, "input", input, "error", why)
	w := &message.WarningMessage{}
	w.ContentType, w.Content = "text/plain", fmt.Sprintf("cluster: input %s refused: %v", input, why)
	ctx, cancel := context.WithTimeout(context.Background(), sayTimeout)
	defer cancel()
	if err := ib.team.Emit(ctx, w); err != nil {
		ib.w.logger.Debug("cluster: the refusal could not be told to the team", "error", err)
	}
	ib.ack(m, input) // done with: out of the work queue, not delivered again
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

// stop stops consuming; the inputs not acknowledged are delivered to the
// team's next owner.
func (ib *inbox) stop(ctx context.Context) {
	ib.cc.Stop()
	select {
	case <-ib.cc.Closed():
	case <-ctx.Done(): // a delivery being sent (up to sayTimeout) ends by itself
	}
}

// serveCreate answers Client.Create's requests for a template.
func (w *Worker) serveCreate(template string) nats.MsgHandler {
	return func(req *nats.Msg) {
		w.mu.Lock()
		closing := w.closing
		if !closing {
			w.creating.Add(1)
		}
		w.mu.Unlock()
		if closing {
			data, _ := json.Marshal(createReply{Error: "cluster: the worker is closing"})
			_ = req.Respond(data)
			return
		}
		go func() {
			defer w.creating.Done()
			ctx, cancel := context.WithTimeout(w.life, w.cfg.Lease)
			defer cancel()
			var rep createReply
			t, err := w.Create(ctx, template, req.Data)
			if t != nil {
				rep.Team = t.ID().String()
			}
			if err != nil {
				rep.Error = err.Error()
			}
			data, _ := json.Marshal(rep)
			if err := req.Respond(data); err != nil {
				w.logger.Warn("cluster: a create request could not be answered", "template", template, "error", err)
			}
		}()
	}
}

// createReply is a worker's answer to Client.Create.
type createReply struct {
	Team  string `json:"team,omitempty"`
	Error string `json:"error,omitempty"`
}

// unsubscribe stops serving create requests.
func (w *Worker) unsubscribe() {
	for _, s := range slices.Clone(w.subs) {
		_ = s.Unsubscribe()
	}
}
