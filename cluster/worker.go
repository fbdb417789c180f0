package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Template is a kind of team a Worker makes, registered under a name
// (StartWorker) and chosen by Client.Create or Worker.Create.
type Template struct {
	// Build hires the members of a new team, from the parameters given to
	// Create (JSON; null when none). A resumed team is restored from its
	// ledger instead.
	Build func(ctx context.Context, t *orchestrator.Team, params json.RawMessage) error
	// Resume, when not nil, runs on a team of this template once it is
	// restored from its ledger on this worker (a takeover, an
	// activation), before its input is consumed: what the ledger does not
	// hold is set again here (the catalog of cards is in the ledger:
	// orchestrator.CatalogChanged). An error is logged and the team runs
	// as restored.
	Resume func(ctx context.Context, t *orchestrator.Team) error
	// Endpoint, when not nil, chooses the model server this template's
	// agents call once a team is restored on this worker (a takeover, an
	// activation); a newly created team ignores it. It is passed to the
	// restore as agent.WithEndpoint: each restored agent, and each agent
	// one of them hires, calls Endpoint with its recorded model config and
	// calls the config returned, typically this worker's BaseURL and
	// APIKey. The HTTP client is the agents' Env (agent.WithEnv among
	// StartWorker's options). What Endpoint returns is not written to the
	// log. It is placed before StartWorker's options, so it wins over an
	// agent.WithEndpoint among them (the first endpoint given wins).
	// Nil: a restored agent calls the base URL its log recorded, which may
	// be another worker's, and reads its key from the environment
	// (APIKeyEnv); the log never holds a key.
	Endpoint func(recorded llm.ModelConfig) llm.ModelConfig
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
	// inboxFails counts the renewals' failed tries to open the inbox
	inboxFails int
	rev        uint64    // the lease's revision in the bucket
	until      time.Time // the lease's end, as last stored
	// leasing is held by the team's lease renewal and by its passivation:
	// a renewal never renews, or settles as stopped, a team being
	// passivated (it skips the team while a passivation holds it).
	leasing sync.Mutex
}

// Worker runs teams for the cluster. It holds leases in a JetStream
// key-value bucket: one on each shard it serves (Config.Shards per
// template, a team's shard a hash of its id), renewed every beat (a third
// of Config.Lease) with its presence, and one on each team it runs (its
// owner, its state), stored when it takes the team (Create, a takeover,
// an activation) and when the team changes (passivated, stopped,
// released), never renewed: a team is held while its worker holds the
// team's shard, so the heartbeat costs O(shards held), not O(teams). Only
// a shard's holder runs the shard's teams: it takes over, with a
// compare-and-set on the lease's revision, any team of its shards whose
// lease ended and that it does not run (a dead worker's, once that
// worker's shard lease ended and this one took the shard): it claims the
// team's ledger (OpenLedger, which fences off the old owner) and restores
// the team from the stream. A shard renewal that fails (NATS unreachable)
// is tried again every quarter of a beat; the teams of a shard whose lease
// ended unrenewed by the worker's clock, or that another worker took, are
// stopped at once, as is a team whose lease the worker's watcher of the
// bucket sees a client stop or another worker take: a worker never runs a
// team whose shard it does not hold.
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
// presence ends no later than its shards' leases.
//
// Shards: each template's teams are spread over Config.Shards shards (a
// hash of the team's id); a worker holds a lease on its fair share of each
// of its templates' shards, renewed with its presence, consumes their input
// with one durable consumer per shard, and is the only one to create, take
// over or activate their teams. A worker holding more than its share while
// another holds fewer (one that joined, present for two beats, or 3 s,
// without a break: presence.Since) hands the surplus over: the
// shard's turns under way finish (within a beat), its teams stop as Close
// stops them, and the shard's lease is released.
//
// Takeover: on every beat, right when the earliest lease of another
// worker's team or shard of its templates ends, when a lease is released
// and when a worker joins, a worker reads its view of the bucket (one
// watcher keeps it, indexed by lease end, so the scan reads the leases
// ended, not every lease): it takes its share of the shards that are free
// (their holder dead, or released), then every team of its shards to
// resume. A team is to resume when its lease ended and its owner is dead,
// or ended more than a lease ago (its live owner lost it), or is this
// worker's and not run here; a live owner's lease that just ended is left
// to its owner, whose renewals may lag under load.
type Worker struct {
	nc     *nats.Conn
	sys    *actor.System
	cfg    Config
	tmpls  map[string]Template
	opts   []orchestrator.Option
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	inbox  jetstream.Stream // the teams' input
	view   *bucketView      // the leases bucket, as its watcher keeps it (view.go)
	logger *slog.Logger
	beat   time.Duration
	scans  uint64 // takeover scans so far (the takeover loop's own)
	// freed wakes the takeover loop: the bucket's watcher saw another
	// worker release a team's lease (its Close, say), which a scan takes
	// now rather than at the next beat.
	freed chan struct{}
	// instance tells this Worker's leases from those of another Worker
	// with the same Owner (put).
	instance string

	nshards int // shards per template (the cluster's layout)

	mu     sync.Mutex
	shards map[shardRef]*heldShard // the shards this worker holds (shardrun.go)
	// shardsUp is closed, and made anew, when the worker takes a shard:
	// a Create waiting for one waits on it.
	shardsUp chan struct{}
	teams    map[uuid.UUID]*owned
	backoff  map[uuid.UUID]backoff // teams this worker failed to resume
	taking   map[uuid.UUID]bool    // teams this worker is taking (take), or passivating: one take of a team at a time, none while its copy stops
	added    chan struct{}         // told (without waiting) when a team is registered: the passivations wait on it while none runs
	closed   bool                  // Close settles the teams: none is registered from now on
	// since and presentUntil are presence.Since, and the end of the
	// presence last stored.
	since, presentUntil time.Time

	// Every goroutine the worker starts, in three groups because Close
	// ends them in three stages (one group could not tell them apart):
	// first the heartbeat, waited for whole (a round of the teams, bounded
	// by a few beats, ends before Close settles the teams); then the creates
	// and takeovers, cancelled and waited for within Close's context;
	// last, once the teams are stopped, the acknowledgements of their last
	// inputs (bounded by ackTimeout).
	beats *group // the heartbeat (its teams tended) and the presence loop; its context ends when Close begins
	work  *group // the takeover loop and the create requests served; its context ends the creates and takeovers under way
	acks  *group // inputs' acknowledgements waiting for JetStream's confirmation (inbox.ack)

	closeOnce sync.Once
	subs      []*nats.Subscription // create requests, one per template
}

// errClosing is the cause of the contexts Close cancels (it wraps
// context.Canceled).
var errClosing = fmt.Errorf("cluster: the worker is closing: %w", context.Canceled)

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
	cfg, err := workerConfig(nc, sys, cfg, templates)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	kv, err := leases(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.wrapLeases != nil {
		kv = cfg.wrapLeases(kv)
	}
	inboxSt, err := ensureInbox(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	nshards, err := readLayout(ctx, kv, cfg.Shards)
	if err != nil {
		return nil, err
	}
	w := &Worker{
		nc: nc, sys: sys, cfg: cfg, tmpls: templates, opts: opts, kv: kv, js: js, inbox: inboxSt,
		logger:   cfg.Logger.With("worker", cfg.Owner),
		beat:     cfg.Lease / 3,
		instance: uuid.NewString(),
		nshards:  nshards,
		shards:   map[shardRef]*heldShard{},
		shardsUp: make(chan struct{}),
		teams:    map[uuid.UUID]*owned{},
		backoff:  map[uuid.UUID]backoff{},
		taking:   map[uuid.UUID]bool{},
		added:    make(chan struct{}, 1),
		view:     newBucketView(nshards),
		freed:    make(chan struct{}, 1),
		beats:    newGroup(context.Background()),
		work:     newGroup(context.Background()),
		acks:     newGroup(context.Background()),
	}
	if err := w.serve(ctx); err != nil {
		w.unsubscribe()
		return nil, fmt.Errorf("cluster: StartWorker: %w", err)
	}
	if err := w.unique(ctx); err != nil { // its presence, once its subjects are served
		w.unsubscribe()
		return nil, fmt.Errorf("cluster: StartWorker: %w", err)
	}
	// Its share of the free shards before it returns, so that a Create
	// right after finds one (a share another worker holds is handed over
	// within a beat or two).
	if workers, err := readPresences(ctx, w.kv); err == nil {
		w.scanShards(ctx, workers, time.Now())
	}
	w.beats.Go("heartbeat", w.heartbeat)
	w.beats.Go("presence", w.presenceBeat)
	w.work.Go("leases", w.watchBucket)
	w.work.Go("takeovers", w.takeovers)
	if cfg.IdleAfter > 0 {
		w.work.Go("passivations", w.passivations)
	}
	return w, nil
}

// workerConfig checks StartWorker's arguments and returns cfg with its
// defaults.
func workerConfig(nc *nats.Conn, sys *actor.System, cfg Config, templates map[string]Template) (Config, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return cfg, err
	}
	switch {
	case nc == nil:
		return cfg, errors.New("cluster: StartWorker: nil connection")
	case sys == nil:
		return cfg, errors.New("cluster: StartWorker: nil actor system")
	case !validBucket.MatchString(cfg.bucketName()):
		return cfg, fmt.Errorf("cluster: StartWorker: Config.Stream %q makes no valid bucket name %q", cfg.Stream, cfg.bucketName())
	}
	for name, t := range templates {
		if err := checkTemplateName(name); err != nil {
			return cfg, fmt.Errorf("cluster: StartWorker: %w", err)
		}
		if t.Build == nil {
			return cfg, fmt.Errorf("cluster: StartWorker: template %q has no Build function", name)
		}
	}
	if cfg.Lease == 0 {
		cfg.Lease = defaultLease
	}
	return cfg, nil
}

// serve subscribes to the create requests of each template: in the queue
// group of the workers serving it, and on this worker's own subject, where
// Client.Create sends a new team placed on it. It returns once the server
// has the subscriptions (flushed), so that Create finds the worker.
func (w *Worker) serve(ctx context.Context) error {
	for name := range w.tmpls {
		sub, err := w.nc.QueueSubscribe(w.cfg.createSubject(name), createQueue, w.serveCreate(name))
		if err != nil {
			return fmt.Errorf("serve template %q: %w", name, err)
		}
		w.subs = append(w.subs, sub)
		sub, err = w.nc.Subscribe(w.cfg.workerSubject(w.cfg.Owner)+"."+name, w.serveCreate(name))
		if err != nil {
			return fmt.Errorf("serve template %q: %w", name, err)
		}
		w.subs = append(w.subs, sub)
	}
	fctx, cancel := context.WithTimeout(ctx, readyTimeout) // FlushWithContext needs a deadline
	defer cancel()
	return w.nc.FlushWithContext(fctx)
}

// Close stops the heartbeat, removes this worker's presence, stops its
// teams and releases their leases (ended now), so that the other workers
// resume them at once. It returns when the teams have stopped, or with
// ctx's error: the creates and takeovers under way are cancelled, and a
// team one of them starts after Close is stopped at once. On a
// connection already closed, the presence and leases it cannot release are
// logged and left to end by themselves, as a dead worker's: not an error.
func (w *Worker) Close(ctx context.Context) error {
	var errs []error
	w.closeOnce.Do(func() {
		if err := w.stopWork(ctx); err != nil {
			errs = append(errs, err)
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
		shards := w.shards
		w.shards = map[shardRef]*heldShard{}
		w.mu.Unlock()
		for _, hs := range shards { // no input dispatched from now on
			hs.stopConsume(ctx)
		}
		w.acks.Stop(errClosing) // from now on an input is acknowledged where it closes (inbox.ack)
		errs = append(errs, w.settle(ctx, teams)...)
		for _, hs := range shards { // handed over: the others take them at once
			hs.close()
			w.releaseShardLease(ctx, hs.ref, hs.rev)
		}
		_ = w.acks.Wait(context.Background()) // the last inputs' acknowledgements (bounded by ackTimeout)
	})
	return errors.Join(errs...)
}

// stopWork ends the worker's goroutines but the acknowledgements: no
// create request served, no renewal round or takeover scan begun from now
// on, the creates and takeovers under way cancelled. It waits for a
// renewal round under way to end, then for the creates and takeovers
// within ctx.
func (w *Worker) stopWork(ctx context.Context) error {
	w.work.Stop(errClosing)
	w.beats.Stop(errClosing)
	w.unsubscribe()
	_ = w.beats.Wait(context.Background()) // a renewal round under way ends before the teams are settled
	if err := w.work.Wait(ctx); err != nil {
		// They end soon (cancelled); a team one of them registers after
		// this is stopped by it (closed).
		return fmt.Errorf("cluster: close: waiting for the creates and takeovers under way: %w", err)
	}
	return nil
}

// settle stops the teams Close took from the worker: their inboxes first,
// then each team, its lease released (or, for a team asked to stop,
// marked stopped).
func (w *Worker) settle(ctx context.Context, teams map[uuid.UUID]*owned) []error {
	var errs []error
	left := map[uuid.UUID][]jetstream.Msg{}
	for id, o := range teams {
		if o.inbox != nil {
			left[id] = o.inbox.stop(ctx)
		}
	}
	for id, o := range teams {
		// A team asked to stop (Team.Stop) before the close, its stop
		// done or under way, or one that stopped on its own, is settled as
		// a renewal would (ended). Told apart before Close's own stop,
		// which has the same cause.
		stopped := errors.Is(o.team.StopCause(), orchestrator.ErrStopRequested) || isClosed(o.team.Done())
		if !stopped {
			o.ledger.cutAt() // handed over: a turn the stop cuts runs again on the next holder
		}
		if err := o.team.Stop(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		if stopped {
			w.ended(ctx, id, o)
			continue
		}
		if o.inbox != nil {
			o.inbox.handBack(left[id]) // the cut turns' inputs go to the next holder now, not after their ack wait
		}
		switch _, err := w.put(ctx, id, lease{Owner: w.cfg.Owner, Template: o.template}, o.rev); {
		case err == nil, errors.Is(err, errStopped):
		case errors.Is(err, nats.ErrConnectionClosed): // cut off: it ends by itself, as a dead worker's
			w.logger.Warn("cluster: a team's lease is left to end by itself", "team_id", id, "error", err)
		default:
			errs = append(errs, fmt.Errorf("cluster: release the lease of team %s: %w", id, err))
		}
	}
	return errs
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

// leaseEnd is when this worker's hold on team id ends, as far as it
// knows: the later of the end of the team's lease it stored when it took
// the team and the end of the lease it last stored for the team's shard
// while it holds the shard; false when it runs no such team.
func (w *Worker) leaseEnd(id uuid.UUID) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.teams[id]
	if !ok {
		return time.Time{}, false
	}
	until := o.until
	if hs := w.shards[w.shardOfTeam(o.template, id)]; hs != nil && hs.until.After(until) {
		until = hs.until
	}
	return until, true
}

// team returns a team this worker runs, nil when it runs none with that id.
func (w *Worker) team(id uuid.UUID) *orchestrator.Team {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o, ok := w.teams[id]; ok {
		return o.team
	}
	return nil
}
