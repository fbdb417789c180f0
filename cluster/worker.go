package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
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

// owned is a team this worker holds the lease of.
type owned struct {
	team     *orchestrator.Team
	ledger   *Ledger
	template string
	inbox    *inbox    // nil until the team's input is consumed
	rev      uint64    // the lease's revision in the bucket
	until    time.Time // the lease's end, as last stored
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
// Leases compare wall clocks: the workers' clocks must agree to well
// within Config.Lease. Fencing keeps the ledger safe when they do not.
//
// Placement: a worker takes an expired team only when no live worker
// holds fewer teams than it does (counted from the leases), so a dead
// worker's teams spread over the survivors; the lease's compare-and-set
// decides between workers that try at the same time.
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

	mu      sync.Mutex
	teams   map[uuid.UUID]*owned
	closed  bool
	closing bool // Close began: create requests are refused

	quit      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	subs      []*nats.Subscription // create requests, one per template
	creating  sync.WaitGroup       // create requests being served
}

// StartWorker starts a worker on sys: it makes the leases bucket if it is
// missing (Config.Stream + "_LEASES") and the inbox stream (Config.Stream
// + "_INBOX"), starts the heartbeat and serves Client.Create for each of
// its templates, by name. A name is one subject token (no '.', '*', '>'
// or white space). The worker resumes only teams made from one of its
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
		logger: cfg.Logger.With("worker", cfg.Owner),
		beat:   cfg.Lease / 3,
		teams:  map[uuid.UUID]*owned{},
		quit:   make(chan struct{}),
	}
	for name := range templates {
		sub, err := nc.QueueSubscribe(cfg.createSubject(name), createQueue, w.serveCreate(name))
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
	w.wg.Go(func() { w.heartbeat(w.beat, w.renew) })
	w.wg.Go(func() { w.heartbeat(cfg.Lease, w.takeExpired) }) // a restore may take a while
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
	t, log, err := w.run(ctx, id, rev, l)
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
	if err := w.openInbox(ctx, id, tmpl.Person, log); err != nil {
		errs = append(errs, fmt.Errorf("cluster: create team %s: %w", id, err))
	}
	return t, errors.Join(errs...)
}

func (w *Worker) newLease(template string) lease {
	return lease{Owner: w.cfg.Owner, Until: time.Now().Add(w.cfg.Lease).UTC(), Template: template}
}

// run claims the team's ledger and starts the team: new when the stream
// has no record of it, else restored. It returns the log it restored.
func (w *Worker) run(ctx context.Context, id uuid.UUID, rev uint64, ls lease) (*orchestrator.Team, []message.Message, error) {
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
	w.mu.Lock()
	closed := w.closed
	if !closed {
		w.teams[id] = &owned{team: t, ledger: l, template: ls.Template, rev: rev, until: ls.Until}
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
	w.mu.Lock()
	teams := make(map[uuid.UUID]*owned, len(w.teams))
	for id, o := range w.teams {
		teams[id] = o
	}
	w.mu.Unlock()
	for id, o := range teams {
		select {
		case <-o.team.Done():
			w.forget(id)
			if !errors.Is(o.ledger.Err(), ErrFenced) { // stopped on purpose: resume it nowhere
				// Its inbox consumer first: once the lease says stopped, the
				// team holds nothing in the server but its input and records.
				if err := w.js.DeleteConsumer(ctx, w.cfg.inboxStream(), inboxConsumer(id)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
					w.logger.Warn("cluster: a stopped team's inbox consumer could not be deleted", "team_id", id, "error", err)
				}
				if _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template, Stopped: true}, o.rev); err != nil && !errors.Is(err, errStopped) {
					w.logger.Warn("cluster: a stopped team's lease could not be marked stopped; another worker may resume it",
						"team_id", id, "error", err)
				}
			}
			continue
		default:
		}
		if o.inbox != nil {
			o.inbox.progress()
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
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isFence(err):
			w.lose(id, o, "another worker took its lease", err)
		case time.Now().Add(w.beat).After(o.until): // it would end before the next try
			w.lose(id, o, "its lease ends unrenewed", err)
		default:
			w.logger.Warn("cluster: lease renewal failed; retrying before it ends", "team_id", id, "until", o.until, "error", err)
		}
	}
}

// put stores a lease at the revision rev (compare-and-set). When the
// revision is not the key's but the key's lease is still this worker's
// (its own earlier write, whose answer was lost in a reconnection), it
// stores at the key's revision instead.
func (w *Worker) put(ctx context.Context, id uuid.UUID, l lease, rev uint64) (uint64, error) {
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
	if cur.Owner != w.cfg.Owner || cur.Stopped || e.Revision() < rev {
		return 0, err // another worker's
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
	o := w.teams[id]
	delete(w.teams, id)
	w.mu.Unlock()
	if o != nil && o.inbox != nil {
		o.inbox.stop()
	}
}

// takeExpired reads every lease and takes over the teams whose lease
// ended, while no live worker holds fewer teams than this one.
func (w *Worker) takeExpired(ctx context.Context) {
	watch, err := w.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		w.logger.Warn("cluster: cannot read the leases", "error", err)
		return
	}
	type expired struct {
		id       uuid.UUID
		rev      uint64
		template string
	}
	var todo []expired
	load := map[string]int{w.cfg.Owner: 0}
	now := time.Now()
	for done := false; !done; {
		select {
		case e := <-watch.Updates():
			if e == nil {
				done = true
				break
			}
			var l lease
			id, err := uuid.Parse(e.Key())
			if err != nil || json.Unmarshal(e.Value(), &l) != nil || l.Stopped {
				continue
			}
			switch _, ours := w.tmpls[l.Template]; {
			case l.Until.After(now):
				load[l.Owner]++
			case ours: // a team of another template is left to a worker that has it
				todo = append(todo, expired{id, e.Revision(), l.Template})
			}
		case <-ctx.Done():
			done = true
		}
	}
	_ = watch.Stop()
	if w.cfg.scanned != nil {
		defer w.cfg.scanned()
	}
	for _, x := range todo {
		mine := load[w.cfg.Owner]
		fewest := mine
		for _, n := range load {
			fewest = min(fewest, n)
		}
		if mine > fewest {
			return // a worker with fewer teams takes it
		}
		l := w.newLease(x.template)
		rev, err := w.put(ctx, x.id, l, x.rev)
		if err != nil {
			continue // taken by another worker, or NATS unreachable: next beat
		}
		t, log, err := w.run(ctx, x.id, rev, l)
		if err != nil {
			w.logger.Error("cluster: cannot resume a team whose lease this worker took", "team_id", x.id, "error", err)
			continue
		}
		if resume := w.tmpls[x.template].Resume; resume != nil {
			if err := resume(ctx, t); err != nil {
				w.logger.Error("cluster: the template's Resume failed; the team runs as restored", "team_id", x.id, "error", err)
			}
		}
		if err := w.openInbox(ctx, x.id, w.tmpls[x.template].Person, log); err != nil {
			w.logger.Error("cluster: the resumed team's input is not consumed", "team_id", x.id, "error", err)
		}
		load[w.cfg.Owner]++
		w.logger.Info("cluster: team resumed on this worker", "team_id", x.id)
		if w.cfg.resumed != nil {
			w.cfg.resumed(x.id)
		}
	}
}

// Close stops the heartbeat and this worker's teams, and releases their
// leases (ended now), so that other workers resume them at once. It
// returns when the teams have stopped, or with ctx's error.
func (w *Worker) Close(ctx context.Context) error {
	var errs []error
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closing = true // no create request served from now on
		w.mu.Unlock()
		w.unsubscribe()
		close(w.quit)
		w.creating.Wait()
		w.wg.Wait()
		w.mu.Lock()
		w.closed = true
		teams := w.teams
		w.teams = nil
		w.mu.Unlock()
		for _, o := range teams {
			if o.inbox != nil {
				o.inbox.stop()
			}
		}
		for id, o := range teams {
			if err := o.team.Stop(ctx); err != nil {
				errs = append(errs, err)
				continue
			}
			if _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template}, o.rev); err != nil && !errors.Is(err, errStopped) {
				errs = append(errs, fmt.Errorf("cluster: release the lease of team %s: %w", id, err))
			}
		}
	})
	return errors.Join(errs...)
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
