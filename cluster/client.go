package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/message"
)

var (
	// ErrNoSuchTeam is wrapped by a Client's error for a team the leases
	// bucket does not know, or that was stopped.
	ErrNoSuchTeam = errors.New("cluster: no such team")
	// ErrNoTemplate is wrapped by Create's error when no worker has the
	// template asked for.
	ErrNoTemplate = errors.New("cluster: no worker has the template")
)

// errWasStopped is wrapped with ErrNoSuchTeam for a team stopped.
var errWasStopped = errors.New("the team was stopped")

// stopAttempts bounds Stop's compare-and-set tries against the lease's
// other changes.
const stopAttempts = 5

// Client drives a cluster's teams from any process with a NATS
// connection: it creates teams on the workers (Create), sends them input
// through their durable inbox (Send), follows their records (Watch), lists
// them (Teams) and stops them (Stop). It holds no goroutine of its own.
type Client struct {
	nc     *nats.Conn
	cfg    Config
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	ledger jetstream.Stream
	inbox  jetstream.Stream
	shards int // shards per template (the cluster's layout)
}

// TeamInfo is a team as the leases bucket knows it (Client.Teams).
type TeamInfo struct {
	ID       uuid.UUID
	Template string    // the template it was made from
	Owner    string    // the worker holding (or last holding) its lease (Config.Owner)
	Until    time.Time // its lease's end (while its holder holds its shard, that shard lease's): past and not Stopped, the team waits for a worker to resume it
	Stopped  bool      // stopped on purpose (Client.Stop, or it stopped on its own): resumed nowhere
	// Passive: stopped while idle (Config.IdleAfter), held by no worker;
	// its next input activates it.
	Passive bool
	// Error is why the last worker that took the team over could not
	// resume it (a record it cannot decode, a failed restore); empty once
	// a worker resumed it. Workers try again after a backoff.
	Error string
}

// NewClient returns a client of the cluster whose streams and bucket cfg
// names (the workers' Config: Stream, Prefix, Replicas), making them when
// missing.
func NewClient(ctx context.Context, nc *nats.Conn, cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, errors.New("cluster: NewClient: nil connection")
	}
	if !validBucket.MatchString(cfg.bucketName()) {
		return nil, fmt.Errorf("cluster: NewClient: Config.Stream %q makes no valid bucket name %q", cfg.Stream, cfg.bucketName())
	}
	c := &Client{nc: nc, cfg: cfg}
	if c.js, err = jetstream.New(nc); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.kv, err = leases(ctx, c.js, cfg); err != nil {
		return nil, reach(nc, err)
	}
	if c.ledger, err = ensureStream(ctx, c.js, cfg); err != nil {
		return nil, reach(nc, err)
	}
	if c.inbox, err = ensureInbox(ctx, c.js, cfg); err != nil {
		return nil, reach(nc, err)
	}
	if c.shards, err = readLayout(ctx, c.kv, cfg.Shards); err != nil {
		return nil, reach(nc, err)
	}
	return c, nil
}

// Create asks a worker that has the template to create a team from it,
// with params (encoded as JSON, given to Template.Build), and returns the
// new team's id. It fails with ErrNoTemplate when no worker has the
// template.
//
// Placement: the team goes to the live worker serving the template that
// runs the fewest teams (of any template, not passive), as its presence
// in the leases bucket says (a worker stores its count every beat and on
// every Create; Create reads the presences alone, not the teams' leases);
// a tie is broken at random. The request
// goes to that worker's own subject; when it does not answer (gone since
// its presence was renewed), or the leases cannot be read, the request
// goes to the queue group of every worker serving the template, where
// NATS gives it to one of them at random. The worker gives the team an id
// in one of its shards. A dead worker's teams go to the survivors with its
// shards (Worker).
func (c *Client) Create(ctx context.Context, template string, params any) (uuid.UUID, error) {
	return c.create(ctx, "Create", template, params, nil)
}

// CreateOnce is Create made idempotent by the caller's key (not empty or
// blank): the team's id is derived from the key, so a create retried
// with the same key (its answer lost, a time-out), or made by two callers
// at once, makes one team, whichever workers answer, and every call
// returns its id. The team's lease is the record of the key: a call that
// finds it returns the id without asking a worker, and of two workers
// creating the team at once the one whose lease is stored makes it, the
// other answers its id (which may come before the team is built). The
// key names one team for good: a team since stopped keeps it (its id is
// returned; Send to it fails with ErrNoSuchTeam), and the key given with
// another template than the team's is an error. A create that failed
// before its team ran (its lease released) may be tried again with the
// key. Unlike SendOnce's, a key is not scoped: it names one team of the
// cluster.
func (c *Client) CreateOnce(ctx context.Context, key, template string, params any) (uuid.UUID, error) {
	if strings.TrimSpace(key) == "" {
		return uuid.Nil, errors.New("cluster: CreateOnce: the key is empty or blank")
	}
	id := onceTeam(key)
	return c.create(ctx, "CreateOnce", template, params, &id)
}

// create asks a worker serving the template to create a team (Create):
// with the id once names (CreateOnce), or a new one when once is nil.
func (c *Client) create(ctx context.Context, call, template string, params any, once *uuid.UUID) (uuid.UUID, error) {
	if err := checkTemplateName(template); err != nil {
		return uuid.Nil, fmt.Errorf("cluster: %s: %w", call, err)
	}
	data, err := json.Marshal(params)
	if err != nil {
		return uuid.Nil, fmt.Errorf("cluster: %s: parameters: %w", call, err)
	}
	req := &nats.Msg{Data: data}
	if once != nil {
		made, err := madeOnce(ctx, c.kv, *once, template)
		if err != nil {
			return uuid.Nil, fmt.Errorf("cluster: %s: %w", call, reach(c.nc, err))
		}
		if made {
			return *once, nil
		}
		req.Header = nats.Header{teamHeader: {once.String()}}
	}
	if once != nil {
		return c.createAt(ctx, call, template, req, *once)
	}
	var rep *nats.Msg
	err = nats.ErrNoResponders // until the placed worker answers
	if to, perr := c.place(ctx, template); perr != nil {
		c.cfg.Logger.Debug("cluster: "+call+": no placement; asking the queue group", "template", template, "error", perr)
	} else if to != "" {
		req.Subject = to
		rep, err = c.nc.RequestMsgWithContext(ctx, req)
	}
	if errors.Is(err, nats.ErrNoResponders) { // no worker placed, or it is gone: any worker with the template
		req.Subject = c.cfg.createSubject(template)
		rep, err = c.nc.RequestMsgWithContext(ctx, req)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return uuid.Nil, fmt.Errorf("%w: %q", ErrNoTemplate, template)
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("cluster: create a team from %q: %w", template, reach(c.nc, err))
	}
	return createAnswer(template, once, rep.Data)
}

// createTries bounds the tries of a CreateOnce whose shard changed holder
// between the read of its lease and the request (a handover).
const createTries = 8

// createAt asks the holder of team id's shard to create it (CreateOnce:
// the id, and so the shard, is the key's); when the shard has no live
// holder, or the worker asked no longer holds it, it asks again, a
// little later each time, up to createTries times.
func (c *Client) createAt(ctx context.Context, call, template string, req *nats.Msg, id uuid.UUID) (uuid.UUID, error) {
	key := shardKey(shardRef{template: template, n: shardOf(id, c.shards)})
	var last error
	for try := range createTries {
		if try > 0 {
			if err := clock.Sleep(ctx, time.Duration(try)*50*time.Millisecond); err != nil {
				return uuid.Nil, fmt.Errorf("cluster: %s from %q: %w (last: %w)", call, template, err, last)
			}
		}
		req.Subject = c.cfg.createSubject(template) // no holder known: any worker with the template
		if to, err := c.holder(ctx, key); err != nil {
			c.cfg.Logger.Debug("cluster: "+call+": the shard's holder is not known; asking the queue group", "template", template, "error", err)
		} else if to != "" {
			req.Subject = to + "." + template
		}
		rep, err := c.nc.RequestMsgWithContext(ctx, req)
		if errors.Is(err, nats.ErrNoResponders) && req.Subject != c.cfg.createSubject(template) {
			last = err
			continue // its holder is gone: the shard is taken over
		}
		if errors.Is(err, nats.ErrNoResponders) {
			return uuid.Nil, fmt.Errorf("%w: %q", ErrNoTemplate, template)
		}
		if err != nil {
			return uuid.Nil, fmt.Errorf("cluster: create a team from %q: %w", template, reach(c.nc, err))
		}
		var r createReply
		if json.Unmarshal(rep.Data, &r) == nil && r.NotMine {
			last = errors.New(r.Error)
			continue // handed over meanwhile: ask its new holder
		}
		return createAnswer(template, &id, rep.Data)
	}
	return uuid.Nil, fmt.Errorf("cluster: %s from %q: the team's shard found no holder in %d tries: %w", call, template, createTries, last)
}

// holder returns the create subject of the live worker holding the shard
// whose lease is key, "" when none does.
func (c *Client) holder(ctx context.Context, key string) (string, error) {
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var l lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return "", err
	}
	if !l.Until.After(time.Now()) {
		return "", nil
	}
	return c.cfg.workerSubject(l.Owner), nil
}

// createAnswer reads a worker's answer (data) to a create request from
// template: the team's id, or the worker's error (its own "cluster: "
// prefix dropped, so the text reads once).
func createAnswer(template string, once *uuid.UUID, data []byte) (uuid.UUID, error) {
	var r createReply
	if err := json.Unmarshal(data, &r); err != nil {
		return uuid.Nil, fmt.Errorf("cluster: create a team from %q: the worker's answer %q: %w", template, data, err)
	}
	why := strings.TrimPrefix(r.Error, "cluster: ")
	id, perr := uuid.Parse(r.Team)
	switch {
	case r.Error != "" && perr == nil:
		return id, fmt.Errorf("cluster: team %s created from %q, with an error: %s", id, template, why)
	case r.Error != "":
		return uuid.Nil, fmt.Errorf("cluster: create a team from %q: %s", template, why)
	case perr != nil:
		return uuid.Nil, fmt.Errorf("cluster: create a team from %q: the worker's answer names no team (%q)", template, r.Team)
	case once != nil && id != *once:
		return id, fmt.Errorf("cluster: CreateOnce from %q: the worker that answered made team %s, not %s: it does not know CreateOnce (an earlier version)", template, id, *once)
	}
	return id, nil
}

// place returns the subject of the worker a new team of the template goes
// to (Create's placement), "" when no live worker serves it.
func (c *Client) place(ctx context.Context, template string) (string, error) {
	workers, err := readPresences(ctx, c.kv)
	if err != nil {
		return "", err
	}
	p, ok, known := lightest(workers, template, time.Now())
	if !known { // a worker of an earlier version: its load from the leases
		var teams []teamLease
		if teams, workers, err = readBucket(ctx, c.kv); err != nil {
			return "", err
		}
		p, ok = fewest(teams, workers, template, time.Now())
	}
	if !ok {
		return "", nil
	}
	return p.Subject + "." + template, nil
}

// Send puts a person's message for the member named to (a slash command
// such as "/cancel" included) into the team's durable inbox and returns
// the input's id, once JetStream stored it. The team's owner sends it
// from the team's person (Template.Person) and acknowledges it once the
// record closing its turn is durable; while no worker owns the team it
// waits in the stream. Delivery is at least once: a turn cut by a crash is
// run again by the team's next owner. The input's id is the id of the
// message the member gets (on a first delivery).
//
// While JetStream does not answer (the inbox stream or the leases bucket
// electing a leader after a server's loss, a server restarting), Send
// tries again, the input with the same id, each try bounded at 2 s, until
// ctx ends or for a minute: the input is stored once however many tries
// it took. A Send that
// returned an error may still have stored its input; to try again from
// the caller without the risk of a second input, use SendOnce.
func (c *Client) Send(ctx context.Context, team uuid.UUID, to, text string) (uuid.UUID, error) {
	if strings.TrimSpace(to) == "" {
		return uuid.Nil, errors.New("cluster: Send: no member named (to is empty)")
	}
	return c.input(ctx, team, text, toHeader, to, fmt.Sprintf("send to %q", to))
}

// SendOnce is Send made idempotent by the caller's key (not empty): the
// input's id is derived from the team and the key, so a Send retried with
// the same key (its answer lost, a time-out) is stored once within the
// inbox's duplicate window (two minutes by JetStream's default), and run
// once after it: the team's owner does not run again an input whose id its
// ledger closed.
func (c *Client) SendOnce(ctx context.Context, team uuid.UUID, key, to, text string) (uuid.UUID, error) {
	if key == "" {
		return uuid.Nil, errors.New("cluster: SendOnce: the key is empty")
	}
	if strings.TrimSpace(to) == "" {
		return uuid.Nil, errors.New("cluster: SendOnce: no member named (to is empty)")
	}
	return c.inputID(ctx, team, uuid.NewSHA1(team, []byte("send "+key)), text, toHeader, to, fmt.Sprintf("send to %q", to))
}

// Answer puts a person's answer to question (the id of a message a member
// sent to the team's person, as Watch shows it) into the team's durable
// inbox and returns the input's id, once JetStream stored it. The team's
// owner sends it from the team's person to the question's sender, as a
// response parented to the question (agent.Answer, the inbox's
// orchestrator.ProcessHumanInput), with the delivery of Send: at least
// once, waiting in the stream while no worker owns the team. A "/cancel"
// cancels the turn the question's sender is running. An answer to a
// message the team's log does not hold, or one not sent to the person, is
// refused by the owner (logged, and told to the team as a warning record).
func (c *Client) Answer(ctx context.Context, team, question uuid.UUID, text string) (uuid.UUID, error) {
	if question == uuid.Nil {
		return uuid.Nil, errors.New("cluster: Answer: no question (its id is the nil UUID)")
	}
	return c.input(ctx, team, text, answersHeader, question.String(), "answer "+question.String())
}

// Decide puts a person's decision on an approval request (the id of a
// message a member sent the team's person with agent.AgentMessage.Approval
// set, as Watch shows it; agent.PendingApprovals on the team) into the
// team's durable inbox: Answer with agent.Decision's text, delivered the
// same way. Approved, the waiting tool call runs once when the member's
// run goes on; denied, the model gets the refusal with reason.
func (c *Client) Decide(ctx context.Context, team, request uuid.UUID, approve bool, reason string) (uuid.UUID, error) {
	return c.Answer(ctx, team, request, agent.Decision(approve, reason))
}

// input publishes one input for team, its header key set to value.
func (c *Client) input(ctx context.Context, team uuid.UUID, text, key, value, what string) (uuid.UUID, error) {
	return c.inputID(ctx, team, uuid.New(), text, key, value, what)
}

// inputID publishes one input of id for team, its header key set to
// value.
func (c *Client) inputID(ctx context.Context, team, id uuid.UUID, text, key, value, what string) (uuid.UUID, error) {
	if strings.TrimSpace(text) == "" {
		return uuid.Nil, fmt.Errorf("cluster: %s: the text is empty", what)
	}
	e, err := c.live(ctx, team)
	if err != nil {
		return uuid.Nil, err
	}
	var l lease
	_ = json.Unmarshal(e.Value(), &l) // live decoded it
	m := &nats.Msg{Subject: c.cfg.inboxSubject(l.Template, shardOf(team, c.shards), team), Data: []byte(text), Header: nats.Header{
		key:                   {value},
		jetstream.MsgIDHeader: {id.String()},
	}}
	if err := c.publishInput(ctx, m); err != nil {
		return uuid.Nil, fmt.Errorf("cluster: %s of team %s: %w", what, team, reach(c.nc, err))
	}
	return id, nil
}

// publishInput publishes m, an input whose Nats-Msg-Id is set, and tries
// again while JetStream does not answer (the inbox electing a leader, a
// server restarting): the inbox stores a message id once within its
// duplicate window, so the input is stored once however many tries it
// takes. Each try is bounded by inputTry (a publish lost in an election
// is never answered); the tries end with ctx, or once inputRetryFor has
// passed since the first, well within the window.
func (c *Client) publishInput(ctx context.Context, m *nats.Msg) error {
	_, err := whileNotReady(ctx, inputTry, inputRetryFor, c.tryingAgain("an input was not stored yet; trying again with the same id", m.Subject),
		func(ctx context.Context) (*jetstream.PubAck, error) { return c.js.PublishMsg(ctx, m) })
	return err
}

// tryingAgain logs, at Debug, a call of the client tried again.
func (c *Client) tryingAgain(msg, subject string) func(error) {
	return func(err error) { c.cfg.Logger.Debug("cluster: "+msg, "subject", subject, "error", err) }
}

const (
	// inputTry bounds one try of an input's publish.
	inputTry = 2 * time.Second
	// inputRetryFor bounds the tries of an input's publish: half of the
	// inbox's duplicate window (JetStream's default, two minutes), within
	// which a try again is stored once.
	inputRetryFor = time.Minute
)

// live returns the lease entry of a team not stopped.
func (c *Client) live(ctx context.Context, team uuid.UUID) (jetstream.KeyValueEntry, error) {
	e, err := whileNotReady(ctx, inputTry, inputRetryFor, c.tryingAgain("a team's lease was not read yet; trying again", team.String()),
		func(ctx context.Context) (jetstream.KeyValueEntry, error) { return c.kv.Get(ctx, team.String()) })
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoSuchTeam, team)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: the lease of team %s: %w", team, reach(c.nc, err))
	}
	var l lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return nil, fmt.Errorf("cluster: the lease of team %s: %w", team, err)
	}
	if l.Stopped {
		return nil, fmt.Errorf("%w: %s: %w", ErrNoSuchTeam, team, errWasStopped)
	}
	return e, nil
}

// Watch yields the team's records from the one at index from (its place
// in the team's ledger, the Akgentic-Index header: 1 for the first; 0
// also means the first), in the team's own record order (the ledger's,
// as ReadTeam gives it), then each new one as it is stored (catch-up, then
// follow), until ctx ends or the loop stops. It reads with an ordered
// consumer on the team's records subject: when the team's latest snapshot
// ends before from, from where the records after that snapshot are
// stored (so a watch from an index past the latest snapshot reads only
// the records since it: with the workers' Config.SnapshotEvery, usually
// fewer than that many before from); otherwise (no snapshot, or from at
// or before its end) from the subject's start. Records before from are
// read and skipped, not decoded. It decodes with message.UnmarshalMessage. The stream may hold a team's records out
// of their order (a publish retried after a later one was stored): a
// record is held until the ones before it came. A record stored twice (a
// publish retried past the stream's duplicate window) is yielded once;
// records an old owner wrote after a hole, which the next owner wrote
// over (see ReadTeam), are never yielded. A record that does not decode,
// or carries no ledger index, is yielded as it comes (an error for one
// that does not decode), and the watch goes on. When the ordered consumer
// cannot make its JetStream consumer again after a server's loss (it
// tries once, under a name the lost server may still hold), Watch makes a
// new one that reads on after the last record read. The connection
// closed, or consumers failing for a minute with no record read, end the
// watch: the last failure is yielded.
//
// A team the leases bucket does not know is an error wrapping
// ErrNoSuchTeam, yielded at once. A team stopped before the watch began
// is read to its last record, then the watch ends (nothing will follow).
func (c *Client) Watch(ctx context.Context, team uuid.UUID, from uint64) iter.Seq2[message.Message, error] {
	return func(yield func(message.Message, error) bool) {
		_, err := c.live(ctx, team)
		stopped := errors.Is(err, errWasStopped)
		if err != nil && !stopped {
			yield(nil, fmt.Errorf("cluster: watch team %s: %w", team, err))
			return
		}
		o := &watchOrder{team: team, from: from, next: 1, held: map[uint64]jetstream.Msg{}, seen: map[uuid.UUID]bool{}}
		cc := jetstream.OrderedConsumerConfig{
			FilterSubjects:    []string{c.cfg.recordsSubject(team)},
			InactiveThreshold: readIdle,
			MaxResetAttempts:  watchResets,
		}
		if seq, index, epoch, ok := c.snapshotBefore(ctx, team, from); ok {
			cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq
			o.next, o.epoch = index+1, epoch
		}
		var failing time.Time // when the failures in a row began (zero: none)
		for failed := 0; ; {
			w := watchRun{c: c, o: o, stopped: stopped}
			err := w.follow(ctx, cc, yield)
			if err == nil || ctx.Err() != nil {
				return // the loop stopped, ctx ended, or a stopped team's last record
			}
			if w.read || !w.began.IsZero() && time.Since(w.began) >= watchGiveUp {
				failed, failing = 0, time.Time{} // it read, or ran long enough: a new run of failures
			}
			if failed++; failing.IsZero() {
				failing = time.Now()
			}
			if c.nc.IsClosed() || (failed > 1 && time.Since(failing) >= watchGiveUp) {
				yield(nil, fmt.Errorf("cluster: watch team %s: %w", team, reach(c.nc, err)))
				return
			}
			c.cfg.Logger.Debug("cluster: a watch's consumer failed; making a new one", "team_id", team, "error", err)
			if o.seq > 0 { // on after the last record read
				cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.seq+1
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(time.Duration(failed)*watchPause, watchMaxPause)):
			}
		}
	}
}

// watchResets is how many times a watch's ordered consumer tries by
// itself to make its consumer again after a failure (nats.go gives each
// try ten seconds) before Watch makes a new one. Its tries all use one
// name, and a server lost can keep that name's assignment: the tries
// are then never answered, and an ordered consumer left to retry would
// wait forever.
const watchResets = 1

// watchGiveUp is how long a watch's consumers may go on failing, made
// anew each time with no record read, before the watch ends with the
// last failure: about a minute, longer than a cluster's elections.
const watchGiveUp = time.Minute

// watchPause is the pause before a watch's consumer is made anew: this
// times the failures in a row, at most watchMaxPause.
const (
	watchPause    = 200 * time.Millisecond
	watchMaxPause = 2 * time.Second
)

// watchRun is one consumer of a watch.
type watchRun struct {
	c       *Client
	o       *watchOrder
	stopped bool      // the team was stopped before the watch began
	began   time.Time // when the consumer was made
	read    bool      // a record was read
}

// follow reads the records with one ordered consumer made from cc and
// yields them in order: nil when the watch is over (the loop stopped,
// ctx ended, a stopped team's last record read), else the consumer's
// failure (the connection closed included).
func (w *watchRun) follow(ctx context.Context, cc jetstream.OrderedConsumerConfig, yield func(message.Message, error) bool) error {
	cctx, cancel := context.WithTimeout(ctx, readCreateTimeout)
	cons, err := w.c.ledger.OrderedConsumer(cctx, cc)
	cancel()
	if err != nil {
		return err
	}
	w.began = time.Now()
	failed := false
	defer func() {
		// A failed consumer is not deleted here: nats.go's own reset
		// deleted it, and one a lost server held ends after readIdle.
		if !failed {
			dropConsumer(w.c.ledger, cons)
		}
	}()
	if info := cons.CachedInfo(); w.stopped && info != nil && info.NumPending == 0 {
		return nil // a stopped team with no record after the last one read
	}
	it, err := cons.Messages()
	if err != nil {
		failed = true
		return err
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		m, err := it.Next()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) && !w.c.nc.IsClosed() {
			return nil
		}
		if err != nil { // the connection closed, or the ordered consumer could not recover
			failed = true
			return err
		}
		w.read = true
		md, err := m.Metadata()
		if err == nil {
			w.o.seq = md.Sequence.Stream
		}
		if !w.o.add(m, yield) {
			return nil
		}
		if w.stopped && err == nil && md.NumPending == 0 {
			return nil // a stopped team's last record
		}
	}
}

// snapshotBefore reads the team's latest snapshot (the whole message,
// decoding only its index and where the records after it are): ok when
// it covers the ledger up to an index before from, with the stream
// sequence the records after it are stored from, that index, and the
// claim it was written under. No snapshot, one at or after from, or one
// that cannot be read: ok false (the watch reads from the start).
func (c *Client) snapshotBefore(ctx context.Context, team uuid.UUID, from uint64) (seq, index, epoch uint64, ok bool) {
	if from <= 1 {
		return 0, 0, 0, false
	}
	m, err := c.ledger.GetLastMsgForSubject(ctx, c.cfg.snapshotSubject(team))
	if err != nil {
		return 0, 0, 0, false
	}
	var head struct {
		Version int    `json:"v"`
		Index   uint64 `json:"index"`
		From    uint64 `json:"from"`
	}
	epoch, err = strconv.ParseUint(m.Header.Get(jetstream.ExpectedLastSubjSeqHeader), 10, 64)
	if err != nil || json.Unmarshal(m.Data, &head) != nil || head.Version != snapshotVersion || head.Index == 0 || head.From == 0 || head.Index >= from {
		return 0, 0, 0, false
	}
	return head.From, head.Index, epoch, true
}

// watchOrder puts the records Watch reads in the team's record order: by
// owner (the claim each record was published under, in the order of the
// claims), each owner's by index, each index once.
type watchOrder struct {
	team  uuid.UUID
	from  uint64
	next  uint64                   // the index to yield next
	epoch uint64                   // the claim of the owner whose records are read now
	held  map[uint64]jetstream.Msg // records that came before the ones before them, by index
	seen  map[uuid.UUID]bool       // record ids yielded
	seq   uint64                   // the stream sequence of the last record read (0: none)
}

// add takes one record read and yields it with every held record that
// now follows in order; false when the loop stopped.
func (o *watchOrder) add(m jetstream.Msg, yield func(message.Message, error) bool) bool {
	i, err := strconv.ParseUint(m.Headers().Get(indexHeader), 10, 64)
	if err != nil || i == 0 {
		return o.yield(m, yield) // no ledger index: as it comes
	}
	epoch, _ := strconv.ParseUint(m.Headers().Get(jetstream.ExpectedLastSubjSeqHeader), 10, 64)
	switch {
	case epoch < o.epoch:
		return true // an old owner's, after the next owner's claim (fenced: not stored but in a race)
	case epoch > o.epoch:
		// A new owner: it resumed from the records it read, so the old
		// owner's held ones from its first index on are orphans it writes
		// over.
		o.epoch = epoch
		for k := range o.held {
			if k >= i {
				delete(o.held, k)
			}
		}
		o.next = min(o.next, i)
	}
	switch {
	case i < o.next:
		return true // that index again (a publish retried past the duplicate window)
	case i > o.next:
		o.held[i] = m
		return true
	}
	for {
		o.next++
		if !o.yield(m, yield) {
			return false
		}
		var ok bool
		if m, ok = o.held[o.next]; !ok {
			return true
		}
		delete(o.held, o.next)
	}
}

// yield yields one record in order, unless it is before from or yielded
// already; false when the loop stopped.
func (o *watchOrder) yield(m jetstream.Msg, yield func(message.Message, error) bool) bool {
	if o.from > 1 {
		if i, err := strconv.ParseUint(m.Headers().Get(indexHeader), 10, 64); err == nil && i < o.from {
			return true // before from: a record without a valid index is yielded (or reported) below
		}
	}
	rec, err := message.UnmarshalMessage(m.Data())
	if err != nil {
		return yield(nil, fmt.Errorf("cluster: watch team %s: %w: %w", o.team, ErrBadRecord, err))
	}
	if id := rec.Envelope().ID; !o.seen[id] {
		o.seen[id] = true
		return yield(rec, nil)
	}
	return true
}

// LastRecord returns the ledger index (as Watch's from counts) and the
// time stored of the team's last record stored, read from the stream
// without a consumer. Records a Watch from the start yields number about
// index (a record without an index, or a hole an owner's successor wrote
// over, make them differ).
//
// Its zero cases: a team with no record stored, and an id that names no
// team at all (LastRecord does not read the leases), both return 0, the
// zero time and a nil error; tell them apart with Teams. A last record
// stored without an index returns 0 with the time it was stored. An error
// is returned only when the stream cannot be read.
func (c *Client) LastRecord(ctx context.Context, team uuid.UUID) (index uint64, at time.Time, err error) {
	m, err := c.ledger.GetLastMsgForSubject(ctx, c.cfg.recordsSubject(team))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("cluster: the last record of team %s: %w", team, reach(c.nc, err))
	}
	index, _ = strconv.ParseUint(m.Header.Get(indexHeader), 10, 64)
	return index, m.Time, nil
}

// Teams lists the teams of the leases bucket, stopped ones included. It
// reads every key of the bucket: a cluster of many teams lists them by
// page (TeamsPage).
func (c *Client) Teams(ctx context.Context) ([]TeamInfo, error) {
	shards, err := readAllShards(ctx, c.kv)
	if err != nil {
		return nil, fmt.Errorf("cluster: list teams: the shards' leases: %w", reach(c.nc, err))
	}
	teams, _, err := readBucket(ctx, c.kv)
	if err != nil {
		return nil, fmt.Errorf("cluster: list teams: %w", reach(c.nc, err))
	}
	out := make([]TeamInfo, 0, len(teams))
	for _, x := range teams {
		out = append(out, teamInfo(x.id, x.lease, shards, c.shards))
	}
	return out, nil
}

// Stop stops a team for good: its lease is marked stopped (no worker
// resumes it), its input not yet delivered is dropped, and its owner, if
// alive, stops its copy as soon as its watcher of the leases bucket sees
// the change. Its records stay in the stream. Stopping a stopped team
// does nothing; an unknown one is ErrNoSuchTeam.
func (c *Client) Stop(ctx context.Context, team uuid.UUID) error {
	for range stopAttempts {
		e, err := c.live(ctx, team)
		if errors.Is(err, errWasStopped) {
			return nil
		}
		if err != nil {
			return err
		}
		var l lease
		_ = json.Unmarshal(e.Value(), &l) // live decoded it
		l.Stopped = true
		data, err := json.Marshal(l)
		if err != nil {
			return err
		}
		_, err = c.kv.Update(ctx, team.String(), data, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // stored meanwhile (the team taken, passivated or activated)
		}
		if err != nil {
			return fmt.Errorf("cluster: stop team %s: %w", team, reach(c.nc, err))
		}
		if err := c.inbox.Purge(ctx, jetstream.WithPurgeSubject(c.cfg.inboxSubject(l.Template, shardOf(team, c.shards), team))); err != nil {
			return fmt.Errorf("cluster: stop team %s: its pending input: %w", team, reach(c.nc, err))
		}
		return nil
	}
	return fmt.Errorf("cluster: stop team %s: %d attempts lost to its lease's other changes", team, stopAttempts)
}
