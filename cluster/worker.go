package cluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// defaultLease is Config.Lease when 0.
const defaultLease = 10 * time.Second

// bucketName is the key-value bucket of the leases of cfg's teams.
func (c Config) bucketName() string { return c.Stream + "_LEASES" }

var validBucket = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// lease is the value of a team's key in the leases bucket.
type lease struct {
	Owner    string    `json:"owner"`
	Until    time.Time `json:"until"`
	Template string    `json:"template,omitempty"` // the template the team was made from
	Stopped  bool      `json:"stopped,omitempty"`  // stopped on purpose: resume it nowhere
	// Instance is the Worker that stored the lease (a random id per
	// Worker: two with the same Owner are told apart).
	Instance string `json:"instance,omitempty"`
	// Error is why the last worker that took the team could not resume it
	// (its lease released); empty once a worker resumed it.
	Error string `json:"error,omitempty"`
}

// presencePrefix begins the key of a worker's presence in the leases
// bucket: a key that is no team's id.
const presencePrefix = "worker."

// presence is the value of a worker's presence key: the worker, the
// templates it serves, the subject it serves them on (Subject + "." +
// template) and its end, renewed with the worker's leases.
type presence struct {
	Owner     string    `json:"owner"`
	Templates []string  `json:"templates"`
	Subject   string    `json:"subject"`
	Until     time.Time `json:"until"`

	key string // its key and revision in the bucket (readBucket)
	rev uint64
}

// ownerToken is a key and subject token naming an owner (Config.Owner
// may hold characters neither allows, such as ':').
func ownerToken(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(h[:16])
}

// presenceKey is the key of an owner's presence in the leases bucket.
func presenceKey(owner string) string { return presencePrefix + ownerToken(owner) }

// workerSubject is the subject on which the worker named owner serves
// Client.Create for itself alone: the template's name follows it.
func (c Config) workerSubject(owner string) string { return c.Prefix + ".worker." + ownerToken(owner) }

// teamLease is a team's entry in the leases bucket.
type teamLease struct {
	id  uuid.UUID
	rev uint64
	lease
}

// readBucket reads every key of the leases bucket once: the teams'
// leases and the workers' presences, by revision. A key of neither kind,
// or whose value does not decode, is skipped.
//
// Keys renewed during the read come again, at their new revision, and a
// key renewed before its old value was delivered comes only then; the
// watcher's end of the initial values (and each entry's Delta) can come
// early under concurrent writes (nats-io/nats-server#4824). So it reads
// up to the bucket's last revision twice: up to the one at the start,
// past every initial value; then up to the one at that point, past every
// key renewed while the initial values were delivered.
func readBucket(ctx context.Context, kv jetstream.KeyValue) ([]teamLease, []presence, error) {
	watch, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = watch.Stop() }()
	teams := map[string]teamLease{}
	workers := map[string]presence{}
	revs := map[string]uint64{}
	var seen uint64 // the highest revision read
	for range 2 {
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, nil, err
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok {
			return nil, nil, fmt.Errorf("leases bucket status %T has no stream", st)
		}
		for last := bs.StreamInfo().State.LastSeq; seen < last; {
			var e jetstream.KeyValueEntry
			select {
			case e = <-watch.Updates():
			case <-ctx.Done():
				return nil, nil, context.Cause(ctx)
			}
			if e == nil {
				continue // the watcher's end of the initial values
			}
			seen = max(seen, e.Revision())
			k := e.Key()
			if e.Revision() < revs[k] {
				continue // delivered again (the watcher's consumer was reset): an older value
			}
			delete(teams, k)
			delete(workers, k)
			revs[k] = e.Revision()
			if e.Operation() != jetstream.KeyValuePut {
				continue // deleted
			}
			if strings.HasPrefix(k, presencePrefix) {
				var p presence
				if json.Unmarshal(e.Value(), &p) == nil {
					p.key, p.rev = k, e.Revision()
					workers[k] = p
				}
				continue
			}
			var l lease
			if id, err := uuid.Parse(k); err == nil && json.Unmarshal(e.Value(), &l) == nil {
				teams[k] = teamLease{id: id, rev: e.Revision(), lease: l}
			}
		}
	}
	byRev := func(a, b string) int { return cmp.Compare(revs[a], revs[b]) }
	ts := make([]teamLease, 0, len(teams))
	for _, k := range slices.SortedFunc(maps.Keys(teams), byRev) {
		ts = append(ts, teams[k])
	}
	ws := make([]presence, 0, len(workers))
	for _, k := range slices.SortedFunc(maps.Keys(workers), byRev) {
		ws = append(ws, workers[k])
	}
	return ts, ws, nil
}

// Template is a kind of team a Worker makes, registered under a name
// (StartWorker) and chosen by Client.Create or Worker.Create.
type Template struct {
	// Build hires the members of a new team, from the parameters given to
	// Create (JSON; null when none). A resumed team is restored from its
	// ledger instead.
	Build func(ctx context.Context, t *orchestrator.Team, params json.RawMessage) error
	// Resume, when not nil, runs on a team of this template once it is
	// restored from its ledger on this worker (a takeover), before its
	// input is consumed: what the ledger does not hold, such as the
	// team's catalog of cards (Team.Register), is set again here. An
	// error is logged and the team runs as restored.
	Resume func(ctx context.Context, t *orchestrator.Team) error
	// Person is the name of the member that speaks for the team's person
	// (an agent.HumanProxy, e.g. "@Human"): input sent to the team
	// (Client.Send) is sent from it with agent.Say, so the team's log
	// records the person as its sender. Empty: the team takes no input
	// (every input is refused, logged and told to the team).
	Person string
}

// backoff is when a worker tries again a team it failed to resume.
type backoff struct {
	until time.Time
	wait  time.Duration
}

// owned is a team this worker holds the lease of.
type owned struct {
	team     *orchestrator.Team
	ledger   *Ledger
	template string
	inbox    *inbox             // nil until the team's input is consumed
	noInbox  map[uuid.UUID]bool // opening the inbox failed: renewals try again, with these closed messages
	rev      uint64             // the lease's revision in the bucket
	until    time.Time          // the lease's end, as last stored
}

// Worker runs teams for the cluster: it holds a lease on each of its
// teams in a JetStream key-value bucket (the team's owner and the lease's
// end), renews them on a heartbeat (a third of Config.Lease), and takes
// over, with a compare-and-set on the lease's revision, any team whose
// lease expired: it claims the team's ledger (OpenLedger, which fences off
// the old owner) and restores the team from the stream. A team whose lease
// would end before the worker's next try to renew it (NATS unreachable),
// or that another worker took, is stopped at once: a worker never runs a
// team it does not hold a lease for.
//
// A team that stops with Team.Stop is marked stopped (resumed nowhere);
// one that stops otherwise (its actor system shut down before Close, its
// ledger broke) is released, to resume from the stream.
//
// Leases compare wall clocks: the workers' clocks must agree to well
// within Config.Lease. Fencing keeps the ledger safe when they do not.
//
// Presence: a worker keeps an entry of its own in the leases bucket
// (key "worker.<hash of Config.Owner>", no team's id): its owner, its
// templates, its own create subject and an end, renewed with its leases
// and removed by Close. A worker whose presence ended is dead: its
// presence ends no later than its teams' leases.
//
// Takeover: on every beat, and right when the earliest lease of another
// worker's team of its templates ends (so that a dead worker's team is
// resumed when its lease ends, not up to a beat later), a worker reads the
// whole bucket once and, for
// each of its templates, takes over up to its fair share of the teams to
// resume, in a random order: the template's teams, live and to resume,
// over the live workers serving it (by their presence, this one
// included), rounded up, less the template's live teams it holds. So the
// survivors of a dead worker take all its teams in the next scan, about
// evenly, each a few at a time; the lease's compare-and-set decides
// between workers trying the same team (the loser skips it, and takes
// another next beat if its share is not full). A team is to resume when
// its lease ended and its owner is dead, or ended more than a lease ago
// (its live owner lost it), or is this worker's and not run here; a live
// owner's lease that just ended is left to its owner, whose renewals may
// lag under load.
type Worker struct {
	nc     *nats.Conn
	sys    *actor.System
	cfg    Config
	tmpls  map[string]Template
	opts   []orchestrator.Option
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	logger *slog.Logger
	beat   time.Duration
	scans  uint64 // takeover scans so far (the takeover loop's own)
	// instance tells this Worker's leases from those of another Worker
	// with the same Owner (put).
	instance string

	mu      sync.Mutex
	teams   map[uuid.UUID]*owned
	backoff map[uuid.UUID]backoff // teams this worker failed to resume
	closed  bool
	closing bool // Close began: create requests are refused

	quit      chan struct{}
	life      context.Context // cancelled by Close: ends the creates and takeovers under way
	endLife   context.CancelFunc
	wg        sync.WaitGroup // the takeover loop
	beating   sync.WaitGroup // the heartbeat (renewals): a round is bounded by a few beats
	closeOnce sync.Once
	subs      []*nats.Subscription // create requests, one per template
	creating  sync.WaitGroup       // create requests being served
	acks      sync.WaitGroup       // inputs' acknowledgements waiting for JetStream's confirmation (inbox.ack)
}

// StartWorker starts a worker on sys: it makes the leases bucket if it is
// missing (Config.Stream + "_LEASES") and the inbox stream (Config.Stream
// + "_INBOX"), starts the heartbeat and serves Client.Create for each of
// its templates, by name (in the queue group of the workers serving the
// template, and on its own subject, named in its presence). A name is one
// subject token (no '.', '*', '>' or white space). The worker resumes only teams made from one of its
// templates. opts are given to orchestrator.New and orchestrator.Restore
// (e.g. orchestrator.WithPrepare for agents' environments). Close stops
// it.
func StartWorker(ctx context.Context, nc *nats.Conn, sys *actor.System, cfg Config,
	templates map[string]Template, opts ...orchestrator.Option) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	switch {
	case nc == nil:
		return nil, errors.New("cluster: StartWorker: nil connection")
	case sys == nil:
		return nil, errors.New("cluster: StartWorker: nil actor system")
	case !validBucket.MatchString(cfg.bucketName()):
		return nil, fmt.Errorf("cluster: StartWorker: Config.Stream %q makes no valid bucket name %q", cfg.Stream, cfg.bucketName())
	}
	for name, t := range templates {
		if err := checkTemplateName(name); err != nil {
			return nil, fmt.Errorf("cluster: StartWorker: %w", err)
		}
		if t.Build == nil {
			return nil, fmt.Errorf("cluster: StartWorker: template %q has no Build function", name)
		}
	}
	if cfg.Lease == 0 {
		cfg.Lease = defaultLease
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	kv, err := leases(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := ensureInbox(ctx, js, cfg); err != nil {
		return nil, err
	}
	w := &Worker{
		nc: nc, sys: sys, cfg: cfg, tmpls: templates, opts: opts, kv: kv, js: js,
		logger:   cfg.Logger.With("worker", cfg.Owner),
		beat:     cfg.Lease / 3,
		instance: uuid.NewString(),
		teams:    map[uuid.UUID]*owned{},
		backoff:  map[uuid.UUID]backoff{},
		quit:     make(chan struct{}),
	}
	w.life, w.endLife = context.WithCancel(context.Background())
	for name := range templates {
		sub, err := nc.QueueSubscribe(cfg.createSubject(name), createQueue, w.serveCreate(name))
		if err != nil {
			w.unsubscribe()
			return nil, fmt.Errorf("cluster: StartWorker: serve template %q: %w", name, err)
		}
		w.subs = append(w.subs, sub)
		// Its own subject, where Client.Create sends a new team placed on it.
		sub, err = nc.Subscribe(cfg.workerSubject(cfg.Owner)+"."+name, w.serveCreate(name))
		if err != nil {
			w.unsubscribe()
			return nil, fmt.Errorf("cluster: StartWorker: serve template %q: %w", name, err)
		}
		w.subs = append(w.subs, sub)
	}
	fctx, cancel := context.WithTimeout(ctx, readyTimeout) // FlushWithContext needs a deadline
	err = nc.FlushWithContext(fctx)
	cancel()
	if err != nil { // the server has the subscriptions once flushed: Create finds the worker
		w.unsubscribe()
		return nil, fmt.Errorf("cluster: StartWorker: %w", err)
	}
	if err := w.unique(ctx); err != nil { // its presence, once its subjects are served
		w.unsubscribe()
		return nil, fmt.Errorf("cluster: StartWorker: %w", err)
	}
	w.beating.Go(func() { w.heartbeat(w.beat, w.renew) })
	w.wg.Go(w.takeovers)
	return w, nil
}

// leases returns the leases bucket of cfg, made when missing.
func leases(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: cfg.bucketName(), Description: "akgentic team leases",
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas, History: 1,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, cfg.bucketName())
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: leases bucket %s: %w", cfg.bucketName(), err)
	}
	return kv, nil
}

// unique stores this worker's presence for the first time, and fails when
// a live worker (its presence not ended) has this worker's Owner: two would
// take each other's teams for their own. The store is a compare-and-set,
// so of two workers starting with one Owner at once, one fails.
func (w *Worker) unique(ctx context.Context) error {
	data, err := w.presence()
	if err != nil {
		return err
	}
	key := presenceKey(w.cfg.Owner)
	e, err := w.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		_, err = w.kv.Create(ctx, key, data)
	case err != nil:
		return fmt.Errorf("read the presence of Owner %q: %w", w.cfg.Owner, err)
	default:
		var p presence
		if json.Unmarshal(e.Value(), &p) == nil && p.Until.After(time.Now()) {
			return fmt.Errorf("a live worker has Owner %q (its presence ends at %s): Config.Owner must be unique to each Worker",
				w.cfg.Owner, p.Until.Format(time.RFC3339Nano))
		}
		_, err = w.kv.Update(ctx, key, data, e.Revision())
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("another worker with Owner %q started at the same time: Config.Owner must be unique to each Worker", w.cfg.Owner)
	}
	if err != nil {
		return fmt.Errorf("store this worker's presence: %w", err)
	}
	return nil
}

// present stores (or renews) this worker's presence in the leases bucket,
// ending a lease from now.
func (w *Worker) present(ctx context.Context) error {
	data, err := w.presence()
	if err != nil {
		return err
	}
	if _, err := w.kv.Put(ctx, presenceKey(w.cfg.Owner), data); err != nil {
		return fmt.Errorf("store this worker's presence: %w", err)
	}
	return nil
}

// presence is this worker's presence entry, ending a lease from now.
func (w *Worker) presence() ([]byte, error) {
	names := make([]string, 0, len(w.tmpls))
	for name := range w.tmpls {
		names = append(names, name)
	}
	slices.Sort(names)
	return json.Marshal(presence{Owner: w.cfg.Owner, Templates: names,
		Subject: w.cfg.workerSubject(w.cfg.Owner), Until: time.Now().Add(w.cfg.Lease).UTC()})
}

// Create starts a new team on this worker from one of its templates: a
// lease, a ledger, the team, the template's Build with params, then the
// team's inbox. The team is this worker's until it stops, the worker loses
// its lease or the worker is closed. Client.Create does the same from any
// process.
func (w *Worker) Create(ctx context.Context, template string, params json.RawMessage) (*orchestrator.Team, error) {
	tmpl, ok := w.tmpls[template]
	if !ok {
		return nil, fmt.Errorf("%w: %q is not among this worker's", ErrNoTemplate, template)
	}
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	if !json.Valid(params) {
		return nil, fmt.Errorf("cluster: create a team from %q: the parameters are not JSON", template)
	}
	id := uuid.New()
	l := w.newLease(template)
	data, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	rev, err := w.kv.Create(ctx, id.String(), data)
	if err != nil {
		return nil, fmt.Errorf("cluster: create team %s: lease: %w", id, err)
	}
	t, log, err := w.run(ctx, id, func() (uint64, time.Time, error) { return rev, l.Until, nil }, template)
	if err != nil {
		if derr := w.kv.Delete(ctx, id.String()); derr != nil {
			err = errors.Join(err, fmt.Errorf("release the lease: %w", derr))
		}
		return nil, fmt.Errorf("cluster: create team %s: %w", id, err)
	}
	var errs []error
	if err := tmpl.Build(ctx, t, params); err != nil { // the team runs as built so far
		errs = append(errs, fmt.Errorf("cluster: create team %s: template %q: %w", id, template, err))
	}
	if err := w.startInbox(id, tmpl.Person, log); err != nil {
		errs = append(errs, fmt.Errorf("cluster: create team %s: %w (tried again on the next renewals)", id, err))
	}
	return t, errors.Join(errs...)
}

// inboxTimeout bounds the opening of a team's inbox (its durable consumer).
const inboxTimeout = 30 * time.Second

// startInbox opens the inbox of a team this worker just started, with a
// context of its own (a slow Build may have used up the create's); when
// it fails, the renewals try again.
func (w *Worker) startInbox(id uuid.UUID, person string, log []message.Message) error {
	ctx, cancel := context.WithTimeout(w.life, inboxTimeout)
	defer cancel()
	done := closedIn(log)
	err := w.openInbox(ctx, id, person, done)
	if err != nil {
		w.mu.Lock()
		if o := w.teams[id]; o != nil {
			o.noInbox = done // no input is consumed meanwhile: it stays whole
		}
		w.mu.Unlock()
	}
	return err
}

// retryInbox opens again the inbox of a team whose opening failed, done
// the closed messages of the team's log when it first failed.
func (w *Worker) retryInbox(ctx context.Context, id uuid.UUID, o *owned, done map[uuid.UUID]bool) {
	if err := w.openInbox(ctx, id, w.tmpls[o.template].Person, done); err != nil {
		w.logger.Warn("cluster: a team's input is not consumed yet; trying again on the next renewal", "team_id", id, "error", err)
		return
	}
	w.mu.Lock()
	o.noInbox = nil
	w.mu.Unlock()
	w.logger.Info("cluster: a team's input is consumed again", "team_id", id)
}

func (w *Worker) newLease(template string) lease {
	return lease{Owner: w.cfg.Owner, Until: time.Now().Add(w.cfg.Lease).UTC(), Template: template}
}

// run claims the team's ledger and starts the team: new when the stream
// has no record of it, else restored. It returns the log it restored.
func (w *Worker) run(ctx context.Context, id uuid.UUID, leased func() (uint64, time.Time, error), template string) (*orchestrator.Team, []message.Message, error) {
	l, log, err := OpenLedger(ctx, w.nc, id, w.cfg)
	if err != nil {
		return nil, nil, err
	}
	opts := append([]orchestrator.Option{orchestrator.WithSubscribers(l)}, w.opts...)
	var t *orchestrator.Team
	if len(log) == 0 {
		t, err = orchestrator.New(w.sys, append(opts, orchestrator.WithTeamID(id))...)
	} else {
		t, err = orchestrator.Restore(ctx, w.sys, log, opts...)
	}
	if t == nil {
		l.OnStop(id) // never given to a team: release it
		return nil, nil, err
	}
	if err != nil {
		w.logger.Warn("cluster: team restored with errors", "team_id", id, "error", err)
	}
	l.Attach(t)
	rev, until, err := leased()
	if err != nil { // lost while restoring: a client stopped it, or another worker took it
		if serr := t.Stop(ctx); serr != nil {
			w.logger.Error("cluster: a team restored after its lease was lost did not stop", "team_id", id, "error", serr)
		}
		return nil, nil, err
	}
	w.mu.Lock()
	closed := w.closed
	if !closed {
		w.teams[id] = &owned{team: t, ledger: l, template: template, rev: rev, until: until}
	}
	w.mu.Unlock()
	if closed {
		if err := t.Stop(ctx); err != nil {
			w.logger.Error("cluster: a team started while the worker closed did not stop", "team_id", id, "error", err)
		}
		return nil, nil, errors.New("cluster: the worker is closed")
	}
	return t, log, nil
}

// heartbeat runs f every third of the lease until Close, with a context
// bounded by bound. Renewals and takeovers run on heartbeats of
// their own, so that a slow restore never delays a renewal.
func (w *Worker) heartbeat(bound time.Duration, f func(ctx context.Context)) {
	tick := time.NewTicker(w.beat)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		f(ctx)
		cancel()
		select {
		case <-w.quit:
			return
		case <-tick.C:
		}
	}
}

// renew renews the lease of every team this worker runs; a team that
// stopped on its own is marked stopped; a team whose lease another worker
// took, or whose lease would end unrenewed before the next try, is
// stopped now.
func (w *Worker) renew(ctx context.Context) {
	// The presence first: it ends no later than the leases renewed after
	// it, so a dead worker is no longer counted live once its teams'
	// leases have ended (takeExpired's fair share).
	if err := w.present(ctx); err != nil {
		w.logger.Warn("cluster: presence renewal failed", "error", err)
	}
	w.mu.Lock()
	teams := make(map[uuid.UUID]*owned, len(w.teams))
	for id, o := range w.teams {
		teams[id] = o
	}
	w.mu.Unlock()
	// Several renewals at a time, each with its own deadline: one round
	// trip after another, hundreds of teams would take longer than a beat.
	sem := make(chan struct{}, renewParallel)
	var wg sync.WaitGroup
	for id, o := range teams {
		select {
		case <-w.quit: // Close began: it settles the teams; the renewals under way end
			wg.Wait()
			return
		case sem <- struct{}{}:
		}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), w.beat)
			defer cancel()
			w.renewTeam(ctx, id, o)
		})
	}
	wg.Wait()
}

// renewParallel bounds the lease renewals of one worker in flight.
const renewParallel = 16

// renewTeam renews the lease of one team this worker runs (see renew).
func (w *Worker) renewTeam(ctx context.Context, id uuid.UUID, o *owned) {
	select {
	case <-o.team.Done():
		w.mu.Lock()
		closing := w.closing
		w.mu.Unlock()
		if closing {
			return // Close settles the teams it stops
		}
		w.forget(id)
		w.ended(ctx, id, o)
		return
	default:
	}
	if _, broken := o.ledger.state(); broken != nil {
		// Its records go nowhere: the team is stopped and its lease left
		// to end (its copy has stopped by then), so that it resumes, here
		// or elsewhere, from what the stream holds; the inputs of the
		// turns lost run again.
		w.lose(id, o, "its ledger stopped storing records; it resumes from the stream once its lease ends", broken)
		return
	}
	w.mu.Lock()
	ib, retry := o.inbox, o.noInbox // set once the team's input is consumed
	w.mu.Unlock()
	if ib != nil {
		ib.progress()
	}
	if retry != nil { // after this renewal, with a beat of its own
		defer func() {
			w.mu.Lock()
			_, still := w.teams[id]
			w.mu.Unlock()
			if still {
				rctx, cancel := context.WithTimeout(w.life, w.beat)
				defer cancel()
				w.retryInbox(rctx, id, o, retry)
			}
		}()
	}
	l := w.newLease(o.template)
	rev, err := w.put(ctx, id, l, o.rev)
	switch {
	case err == nil:
		w.mu.Lock()
		o.rev, o.until = rev, l.Until
		w.mu.Unlock()
	case errors.Is(err, errStopped):
		w.lose(id, o, "a client stopped it", nil)
		w.dropInbox(ctx, id) // Client.Stop deleted it; an inbox opened since may have made it again
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isFence(err):
		w.lose(id, o, "another worker took its lease", err)
	case time.Now().Add(w.beat).After(o.until): // it would end before the next try
		w.lose(id, o, "its lease ends unrenewed", err)
	default:
		w.logger.Warn("cluster: lease renewal failed; retrying before it ends", "team_id", id, "until", o.until, "error", err)
	}
}

// ended settles the lease of a team of this worker's that stopped: one
// taken over (fenced) is the new owner's; one whose ledger broke, or that
// stopped without Team.Stop (its actor system shut down before the
// worker's Close, say), is released, to resume from the stream; one
// stopped with Team.Stop is marked stopped (resumed nowhere) and its inbox
// consumer deleted.
func (w *Worker) ended(ctx context.Context, id uuid.UUID, o *owned) {
	switch fenced, broken := o.ledger.state(); {
	case fenced:
	case broken != nil:
		w.logger.Error("cluster: a team stopped with its ledger broken; it resumes from the stream", "team_id", id, "error", broken)
		w.release(ctx, id, o)
	case errors.Is(o.team.StopCause(), actor.ErrShutdown):
		// Its actor system shut down before the worker's Close: it
		// resumes at once, here or elsewhere.
		w.logger.Warn("cluster: a team stopped with its actor system; it resumes from the stream", "team_id", id)
		w.release(ctx, id, o)
	case !errors.Is(o.team.StopCause(), orchestrator.ErrStopRequested):
		// It died (a raw stop, its orchestrator failed): it resumes after a
		// backoff that doubles while it keeps dying, the cause in its
		// lease (TeamInfo.Error), so a team that dies on every restore is
		// not restored in a loop.
		wait := w.backOff(id)
		cause := fmt.Sprintf("it stopped on %s without being asked to (%v); resumed after %v", w.cfg.Owner, o.team.StopCause(), wait)
		w.logger.Warn("cluster: a team stopped without being asked to; it resumes from the stream after a backoff", "team_id", id, "cause", o.team.StopCause(), "retry_in", wait)
		l := lease{Owner: w.cfg.Owner, Template: o.template, Until: time.Now().Add(wait).UTC(), Error: cause}
		if _, err := w.put(ctx, id, l, o.rev); err != nil && !errors.Is(err, errStopped) {
			w.logger.Warn("cluster: a team's lease could not be released; it is resumed once it ends", "team_id", id, "error", err)
		}
	default:
		// Its inbox consumer first: once the lease says stopped, the team
		// holds nothing in the server but its input and records.
		w.dropInbox(ctx, id)
		if _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template, Stopped: true}, o.rev); err != nil && !errors.Is(err, errStopped) {
			w.logger.Warn("cluster: a stopped team's lease could not be marked stopped; another worker may resume it",
				"team_id", id, "error", err)
		}
	}
}

// release ends the lease of a team this worker no longer runs now, so
// that a worker resumes it at its next scan.
func (w *Worker) release(ctx context.Context, id uuid.UUID, o *owned) {
	if _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template}, o.rev); err != nil && !errors.Is(err, errStopped) {
		w.logger.Warn("cluster: a team's lease could not be released; it is resumed once it ends", "team_id", id, "error", err)
	}
}

// dropInbox deletes a team's durable inbox consumer.
func (w *Worker) dropInbox(ctx context.Context, id uuid.UUID) {
	if err := w.js.DeleteConsumer(ctx, w.cfg.inboxStream(), inboxConsumer(id)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		w.logger.Warn("cluster: a stopped team's inbox consumer could not be deleted", "team_id", id, "error", err)
	}
}

// put stores a lease at the revision rev (compare-and-set). When the
// revision is not the key's but the key's lease is still this worker's
// (its own earlier write, whose answer was lost in a reconnection), it
// stores at the key's revision instead.
func (w *Worker) put(ctx context.Context, id uuid.UUID, l lease, rev uint64) (uint64, error) {
	l.Instance = w.instance
	data, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	n, err := w.kv.Update(ctx, id.String(), data, rev)
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return n, err
	}
	e, gerr := w.kv.Get(ctx, id.String())
	if gerr != nil {
		return 0, err
	}
	var cur lease
	if json.Unmarshal(e.Value(), &cur) != nil {
		return 0, err
	}
	if cur.Stopped {
		return 0, fmt.Errorf("%w: %w", errStopped, err)
	}
	if cur.Instance != w.instance || cur.Stopped || e.Revision() < rev {
		return 0, err // another worker's (one with the same Owner included)
	}
	return w.kv.Update(ctx, id.String(), data, e.Revision())
}

// errStopped is put's error when a client stopped the team (Client.Stop).
var errStopped = errors.New("cluster: the team was stopped by a client")

// lose stops a team this worker no longer holds the lease of (err nil: a
// client stopped it).
func (w *Worker) lose(id uuid.UUID, o *owned, why string, err error) {
	w.forget(id)
	if err == nil {
		w.logger.Info("cluster: stopping a team: "+why, "team_id", id)
	} else {
		w.logger.Error("cluster: stopping a team this worker no longer holds: "+why, "team_id", id, "error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // ask for the stop; do not wait for it
	_ = o.team.Stop(ctx)
}

// forget drops a team from the worker's and stops consuming its input.
func (w *Worker) forget(id uuid.UUID) {
	w.mu.Lock()
	var ib *inbox
	if o := w.teams[id]; o != nil {
		ib = o.inbox
	}
	delete(w.teams, id)
	w.mu.Unlock()
	if ib != nil {
		ctx, cancel := context.WithTimeout(context.Background(), w.beat) // the renewals wait no longer
		defer cancel()
		ib.stop(ctx)
	}
}

// wakeSlack is how long after the end of a lease the takeover scan that
// awaits it runs (the clocks of two workers may differ a little; a scan
// that comes too early waits for the next).
const wakeSlack = 10 * time.Millisecond

// takeovers runs the takeover scans until Close: every third of a lease,
// and at the end of the next lease of another worker's team this worker
// could take (so that a dead worker's team is resumed right when its
// lease ends, not up to a third of a lease later).
func (w *Worker) takeovers() {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Lease)
		next := w.takeExpired(ctx)
		cancel()
		wait := w.beat
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next)+wakeSlack, wakeSlack))
		}
		timer.Reset(wait)
	}
}

// takeExpired reads every lease and takes over, for each of this
// worker's templates, up to its fair share of the teams whose lease ended
// (see Worker), in a random order. It returns when the earliest lease
// still running of another worker's team of these templates ends (zero
// when none).
func (w *Worker) takeExpired(ctx context.Context) time.Time {
	teams, workers, err := readBucket(ctx, w.kv)
	if w.cfg.scanned != nil {
		defer w.cfg.scanned()
	}
	if err != nil {
		w.logger.Warn("cluster: cannot read the leases", "error", err)
		return time.Time{}
	}
	now := time.Now()
	w.purgeDead(ctx, workers, now)
	todo, share := w.fairShare(teams, workers, now)
	for template, xs := range todo {
		rand.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
		w.takeSome(xs, share[template])
	}
	var next time.Time
	for _, x := range teams {
		if _, ours := w.tmpls[x.Template]; ours && !x.Stopped && x.Owner != w.cfg.Owner && x.Until.After(now) &&
			(next.IsZero() || x.Until.Before(next)) {
			next = x.Until
		}
	}
	return next
}

// Dead workers' presences are purged from the leases bucket a few leases
// after they ended (every scan reads the bucket: workers started with the
// default Owner, a new name each time, would pile up), and the bucket's
// delete markers older than 30 minutes every purgeEvery scans.
const (
	deadPresence = 3 // leases
	purgeEvery   = 64
)

// purgeDead purges the presences of workers dead for a while (compare
// and set on their revision: a worker that came back is kept).
func (w *Worker) purgeDead(ctx context.Context, workers []presence, now time.Time) {
	for _, p := range workers {
		if p.Owner != w.cfg.Owner && p.Until.Add(deadPresence*w.cfg.Lease).Before(now) {
			if err := w.kv.Purge(ctx, p.key, jetstream.LastRevision(p.rev)); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				w.logger.Debug("cluster: a dead worker's presence could not be purged", "owner", p.Owner, "error", err)
			}
		}
	}
	w.scans++
	if w.scans%purgeEvery == 0 {
		if err := w.kv.PurgeDeletes(ctx); err != nil {
			w.logger.Debug("cluster: the leases bucket's delete markers could not be purged", "error", err)
		}
	}
}

// takeParallel bounds the takeovers of one worker in flight: a restore
// waits on JetStream much of its time.
const takeParallel = 4

// takeSome takes over teams of xs, in order, until it took n of them (a
// team another worker took first is skipped) or the worker closes.
func (w *Worker) takeSome(xs []teamLease, n int) {
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range min(takeParallel, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				select {
				case <-w.quit:
					n = 0
				default:
				}
				if n <= 0 || next == len(xs) {
					mu.Unlock()
					return
				}
				x := xs[next]
				next++
				n-- // one more try in flight
				mu.Unlock()
				if !w.take(x) {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
}

// fairShare returns, by template of this worker's, the teams to take
// over and how many of them this worker may take (see Worker).
func (w *Worker) fairShare(teams []teamLease, workers []presence, now time.Time) (map[string][]teamLease, map[string]int) {
	serving := map[string]map[string]bool{} // template: the live workers serving it
	for name := range w.tmpls {
		serving[name] = map[string]bool{w.cfg.Owner: true}
	}
	alive := map[string]bool{w.cfg.Owner: true}
	for _, p := range workers {
		if !p.Until.After(now) {
			continue // dead, or closed without removing its presence
		}
		alive[p.Owner] = true
		for _, name := range p.Templates {
			if serving[name] != nil {
				serving[name][p.Owner] = true
			}
		}
	}
	live, mine := map[string]int{}, map[string]int{}
	todo := map[string][]teamLease{}
	w.mu.Lock()
	waiting := map[uuid.UUID]bool{} // failed here lately (take): left to others, or for later
	for id, b := range w.backoff {
		waiting[id] = now.Before(b.until)
		if now.After(b.until.Add(maxBackoff)) { // resumed elsewhere long ago, or stopped
			delete(w.backoff, id)
		}
	}
	w.mu.Unlock()
	for _, x := range teams {
		ended := !x.Until.After(now)
		switch {
		case x.Stopped || serving[x.Template] == nil: // a team of another template is left to a worker that has it
		case ended && waiting[x.id]:
		case x.Owner == w.cfg.Owner && ended && w.team(x.id) == nil: // this worker's, not run here
			todo[x.Template] = append(todo[x.Template], x)
		case !ended || x.Owner == w.cfg.Owner || alive[x.Owner] && now.Before(x.Until.Add(w.cfg.Lease)):
			live[x.Template]++ // renewed, or its live owner's renewal lags
			if x.Owner == w.cfg.Owner {
				mine[x.Template]++
			}
		default:
			todo[x.Template] = append(todo[x.Template], x)
		}
	}
	share := map[string]int{}
	for name, xs := range todo {
		n := len(serving[name])
		share[name] = (live[name]+len(xs)+n-1)/n - mine[name]
	}
	return todo, share
}

// restoreTimeout bounds a takeover's claim, restore and inbox: a long
// ledger takes a while to read (some 20,000 records a second), longer
// than a lease, which the worker renews meanwhile (hold).
const restoreTimeout = 5 * time.Minute

// take takes over a team whose lease ended: the lease by compare-and-set
// on its revision (false when another worker took it first, or NATS is
// unreachable), then the team, restored from its ledger, the lease renewed
// meanwhile. A team that cannot be restored (a record this worker cannot
// decode, a Build error...) has its lease released with the failure
// (TeamInfo.Error) and is tried again by this worker after a backoff.
func (w *Worker) take(x teamLease) bool {
	ctx, cancel := context.WithTimeout(w.life, max(restoreTimeout, w.cfg.Lease))
	defer cancel()
	l := w.newLease(x.Template)
	rev, err := w.put(ctx, x.id, l, x.rev)
	if err != nil {
		return false // taken by another worker, or NATS unreachable: next beat
	}
	ctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	h := w.hold(x.id, x.Template, rev, l.Until, lost)
	defer h.release()
	t, log, err := w.run(ctx, x.id, h.release, x.Template)
	if _, _, lostErr := h.release(); lostErr != nil {
		// A client stopped it, or another worker took it: not ours.
		w.logger.Info("cluster: a team's lease was lost while this worker restored it", "team_id", x.id, "error", lostErr)
		return false
	}
	if err != nil {
		w.failedResume(ctx, x, h, err)
		return false
	}
	if resume := w.tmpls[x.Template].Resume; resume != nil {
		if err := resume(ctx, t); err != nil {
			w.logger.Error("cluster: the template's Resume failed; the team runs as restored", "team_id", x.id, "error", err)
		}
	}
	if err := w.startInbox(x.id, w.tmpls[x.Template].Person, log); err != nil {
		w.logger.Error("cluster: the resumed team's input is not consumed yet; tried again on the next renewals", "team_id", x.id, "error", err)
	}
	w.logger.Info("cluster: team resumed on this worker", "team_id", x.id)
	if w.cfg.resumed != nil {
		w.cfg.resumed(x.id)
	}
	return true
}

// Backoff of a team this worker failed to resume: a lease, doubling up to
// maxBackoff.
const maxBackoff = 5 * time.Minute

// failedResume releases the lease of a team this worker took but could
// not resume, with the failure in it, and waits a while before trying it
// again (another worker may succeed meanwhile: a newer version that
// decodes what this one does not).
func (w *Worker) failedResume(ctx context.Context, x teamLease, h *heldLease, err error) {
	wait := w.backOff(x.id)
	w.logger.Error("cluster: cannot resume a team whose lease this worker took; its lease is released, tried again later",
		"team_id", x.id, "error", err, "retry_in", wait)
	rev, _, _ := h.release()
	why := fmt.Sprintf("%s could not resume it: %v", w.cfg.Owner, err)
	if _, perr := w.put(ctx, x.id, lease{Owner: w.cfg.Owner, Template: x.Template, Error: why}, rev); perr != nil {
		w.logger.Warn("cluster: the lease of a team not resumed could not be released; it ends by itself", "team_id", x.id, "error", perr)
	}
}

// backOff records one more failure of team id on this worker and returns
// how long it waits before it takes the team again: a lease, doubling up
// to maxBackoff while failures follow each other (an entry is forgotten
// maxBackoff after its wait ended).
func (w *Worker) backOff(id uuid.UUID) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.backoff[id]
	b.wait = min(max(2*b.wait, w.cfg.Lease), maxBackoff)
	b.until = time.Now().Add(b.wait)
	w.backoff[id] = b
	return b.wait
}

// heldLease is a team's lease a worker renews while it starts the team (a
// restore may outlast the lease), until the team is registered (release).
type heldLease struct {
	stop, done chan struct{}
	once       sync.Once
	mu         sync.Mutex
	rev        uint64
	until      time.Time
	lost       error // a client stopped the team, or another worker took its lease
}

// hold renews the lease of team id, stored at rev and ending at until,
// every beat until release.
func (w *Worker) hold(id uuid.UUID, template string, rev uint64, until time.Time, lost context.CancelCauseFunc) *heldLease {
	h := &heldLease{stop: make(chan struct{}), done: make(chan struct{}), rev: rev, until: until}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(w.beat)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
			l := w.newLease(template)
			ctx, cancel := context.WithTimeout(context.Background(), w.beat)
			h.mu.Lock()
			rev := h.rev
			h.mu.Unlock()
			n, err := w.put(ctx, id, l, rev)
			cancel()
			if errors.Is(err, errStopped) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				err = fmt.Errorf("cluster: the lease of team %s was lost while it was restored: %w", id, err)
				h.mu.Lock()
				h.lost = err
				h.mu.Unlock()
				w.logger.Info("cluster: the lease of a team being restored was lost; the restore ends", "team_id", id, "error", err)
				lost(err) // the restore ends
				return
			}
			if err != nil {
				w.logger.Warn("cluster: a lease could not be renewed while its team is restored", "team_id", id, "error", err)
				continue
			}
			h.mu.Lock()
			h.rev, h.until = n, l.Until
			h.mu.Unlock()
		}
	}()
	return h
}

// release stops the renewals (once) and returns the lease's revision and
// end, or why it was lost.
func (h *heldLease) release() (uint64, time.Time, error) {
	h.once.Do(func() { close(h.stop) })
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev, h.until, h.lost
}

// Close stops the heartbeat, removes this worker's presence, stops its
// teams and releases their leases (ended now), so that the other workers
// resume them at once. It returns when the teams have stopped, or with
// ctx's error: the creates and takeovers under way are cancelled, and a
// team one of them starts after Close is stopped at once.
func (w *Worker) Close(ctx context.Context) error {
	var errs []error
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closing = true // no create request served from now on
		w.mu.Unlock()
		w.unsubscribe()
		close(w.quit)
		w.endLife()      // creates and takeovers under way end now
		w.beating.Wait() // a renewal round under way ends before the teams are settled here
		if err := wait(ctx, &w.creating, &w.wg); err != nil {
			// They end soon (cancelled); a team one of them registers
			// after this is stopped by it (closed).
			errs = append(errs, fmt.Errorf("cluster: close: waiting for the creates and takeovers under way: %w", err))
		}
		// No longer counted live: the others take all of its teams at once.
		switch err := w.kv.Delete(ctx, presenceKey(w.cfg.Owner)); {
		case errors.Is(err, nats.ErrConnectionClosed): // cut off: it ends by itself, as a dead worker's
			w.logger.Warn("cluster: this worker's presence is left to end by itself", "error", err)
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster: remove this worker's presence: %w", err))
		}
		w.mu.Lock()
		w.closed = true
		teams := w.teams
		w.teams = nil
		w.mu.Unlock()
		for _, o := range teams {
			if o.inbox != nil {
				o.inbox.stop(ctx)
			}
		}
		for id, o := range teams {
			// A team asked to stop (Team.Stop) before the close, its stop
			// done or under way, is settled as a renewal would (stopped
			// for good); Close's own stop below has the same cause.
			asked := errors.Is(o.team.StopCause(), orchestrator.ErrStopRequested)
			if asked || isClosed(o.team.Done()) {
				if err := o.team.Stop(ctx); err != nil {
					errs = append(errs, err)
					continue
				}
				w.ended(ctx, id, o)
				continue
			}
			if err := o.team.Stop(ctx); err != nil {
				errs = append(errs, err)
				continue
			}
			if _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template}, o.rev); err != nil && !errors.Is(err, errStopped) {
				errs = append(errs, fmt.Errorf("cluster: release the lease of team %s: %w", id, err))
			}
		}
		w.acks.Wait() // the last inputs' acknowledgements (bounded by ackTimeout)
	})
	return errors.Join(errs...)
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// wait waits for the groups, or for ctx's end.
func wait(ctx context.Context, groups ...*sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		for _, g := range groups {
			g.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// team returns a team this worker runs (tests).
func (w *Worker) team(id uuid.UUID) *orchestrator.Team {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o, ok := w.teams[id]; ok {
		return o.team
	}
	return nil
}
