package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// createQueue is the queue group of the workers serving Client.Create:
// NATS gives each request to one of the workers that have the template.
const createQueue = "akgentic-workers"

// createSubject is the subject of Client.Create's requests for a template.
func (c Config) createSubject(template string) string { return c.Prefix + ".create." + template }

// checkTemplateName refuses a name that is not one subject token.
func checkTemplateName(name string) error {
	if name == "" || strings.ContainsAny(name, ". *>\t\r\n") {
		return fmt.Errorf("template name %q: must be one subject token (not empty, no '.', '*', '>' or white space)", name)
	}
	return nil
}

// Create starts a new team on this worker from one of its templates: a
// lease, a ledger, the team, the template's Build with params, then the
// team's inbox. The team is this worker's until it stops, the worker loses
// its lease or the worker is closed. Client.Create does the same from any
// process.
//
// The team's id falls in one of the template's shards this worker holds;
// a worker just started that holds none yet waits for its share (handed
// over within a beat or two), within ctx.
func (w *Worker) Create(ctx context.Context, template string, params json.RawMessage) (*orchestrator.Team, error) {
	if _, ok := w.tmpls[template]; !ok {
		return nil, fmt.Errorf("%w: %q is not among this worker's", ErrNoTemplate, template)
	}
	id, err := w.newTeamID(ctx, template)
	if err != nil {
		return nil, fmt.Errorf("cluster: create a team from %q: %w", template, err)
	}
	return w.create(ctx, id, template, params)
}

// create is Create of a team with id: a lease the bucket holds already
// (a team made for the same CreateOnce key) is an error wrapping
// jetstream.ErrKeyExists, and nothing is made.
func (w *Worker) create(ctx context.Context, id uuid.UUID, template string, params json.RawMessage) (*orchestrator.Team, error) {
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
	if w.heldShardOf(template, id) == nil {
		return nil, fmt.Errorf("cluster: create team %s: %w", id, errNotMyShard)
	}
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
	switch err := w.startInbox(id, tmpl.Person, log); {
	case errors.Is(err, errShardNotHeld), errors.Is(err, errNotRunHere):
		// Its shard was handed over meanwhile (a worker joined): the
		// team, made, runs on the shard's new holder.
		w.logger.Debug("cluster: a team just created went with its shard to its new holder", "team_id", id, "error", err)
	case err != nil:
		errs = append(errs, fmt.Errorf("cluster: create team %s: %w (tried again on the next renewals)", id, err))
	}
	// Its load, for the next Client.Create's placement (else a beat old).
	if err := w.present(ctx); err != nil {
		w.logger.Debug("cluster: the presence's count of teams is stored at the next beat", "error", err)
	}
	return t, errors.Join(errs...)
}

// run claims the team's ledger and starts the team: new when the stream
// has no record of it, else restored. It returns the log it restored.
func (w *Worker) run(ctx context.Context, id uuid.UUID, leased func() (uint64, time.Time, error), template string) (*orchestrator.Team, []message.Message, error) {
	l, log, err := OpenLedger(ctx, w.nc, id, w.cfg)
	if err != nil {
		return nil, nil, err
	}
	opts := []orchestrator.Option{orchestrator.WithSubscribers(l)}
	if endpoint := w.tmpls[template].Endpoint; endpoint != nil { // a restore's (New ignores it), before the worker's options: the template's wins
		opts = append(opts, agent.WithEndpoint(endpoint))
	}
	opts = append(opts, w.opts...)
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
	if !closed {
		select { // the passivations wait for a team when none runs
		case w.added <- struct{}{}:
		default:
		}
	}
	if closed {
		if err := t.Stop(ctx); err != nil {
			w.logger.Error("cluster: a team started while the worker closed did not stop", "team_id", id, "error", err)
		}
		return nil, nil, errors.New("cluster: the worker is closed")
	}
	return t, log, nil
}

// serveCreate answers Client.Create's requests for a template, each on a
// goroutine of the work group (cancelled by Close); once Close began, a
// request is refused.
func (w *Worker) serveCreate(template string) nats.MsgHandler {
	return func(req *nats.Msg) {
		if !w.work.Go("create", func(ctx context.Context) { w.answerCreate(ctx, template, req) }) {
			data, _ := json.Marshal(createReply{Error: "cluster: the worker is closing"})
			_ = req.Respond(data)
		}
	}
}

// answerCreate creates a team for a request of Client.Create, within a
// lease, and answers it. A request of CreateOnce names the team's id
// (teamHeader): when the bucket has a lease of it already, the team was
// made (by another worker, or for a try whose answer was lost), and the
// answer is its id.
func (w *Worker) answerCreate(ctx context.Context, template string, req *nats.Msg) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Lease)
	defer cancel()
	var rep createReply
	id, once, err := requestedTeam(req)
	if err == nil && !once {
		id, err = w.newTeamID(ctx, template)
	}
	var t *orchestrator.Team
	if err == nil {
		t, err = w.create(ctx, id, template, req.Data)
	}
	rep.NotMine = errors.Is(err, errNotMyShard)
	if once && errors.Is(err, jetstream.ErrKeyExists) {
		var made bool
		made, err = madeOnce(ctx, w.kv, id, template)
		switch {
		case err != nil: // names the team already
			err = fmt.Errorf("cluster: %w", err)
		case !made:
			err = fmt.Errorf("cluster: create team %s: a create that failed released its lease meanwhile; try again", id)
		}
	}
	switch {
	case t != nil:
		rep.Team = t.ID().String()
	case once && err == nil:
		rep.Team = id.String()
	}
	if err != nil {
		rep.Error = err.Error()
	}
	data, _ := json.Marshal(rep)
	if err := req.Respond(data); err != nil {
		w.logger.Warn("cluster: a create request could not be answered", "template", template, "error", err)
	}
}

// teamHeader, on a create request of Client.CreateOnce, holds the id the
// new team gets.
const teamHeader = "Akgentic-Team"

// requestedTeam returns the id a create request names (teamHeader) and
// true, or the nil id and false when it names none (the worker picks one
// in a shard it holds).
func requestedTeam(req *nats.Msg) (uuid.UUID, bool, error) {
	h := req.Header.Get(teamHeader)
	if h == "" {
		return uuid.Nil, false, nil
	}
	id, err := uuid.Parse(h)
	if err != nil {
		return uuid.Nil, true, fmt.Errorf("cluster: create: the request's %s header %q is not a team id", teamHeader, h)
	}
	return id, true, nil
}

// onceTeam is the id of the team CreateOnce makes for key.
func onceTeam(key string) uuid.UUID { return uuid.NewSHA1(uuid.Nil, []byte("create "+key)) }

// madeOnce reports whether the leases bucket holds team id, made for a
// CreateOnce key: an error when it was made from another template than
// template (the key names one team), or when the bucket cannot be read.
func madeOnce(ctx context.Context, kv jetstream.KeyValue, id uuid.UUID, template string) (bool, error) {
	e, err := kv.Get(ctx, id.String())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("the lease of team %s: %w", id, err)
	}
	var l lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return true, fmt.Errorf("the lease of team %s: %w", id, err)
	}
	if l.Template != template {
		return true, fmt.Errorf("the key names team %s, made from template %q, not %q (a key names one team)", id, l.Template, template)
	}
	return true, nil
}

// errNotMyShard is a worker's answer to a create of a team whose shard it
// does not hold (CreateOnce, whose id, and so its shard, is the key's):
// the client asks the shard's holder.
var errNotMyShard = errors.New("this worker does not hold the team's shard")

// createReply is a worker's answer to Client.Create.
type createReply struct {
	Team  string `json:"team,omitempty"`
	Error string `json:"error,omitempty"`
	// NotMine: the worker does not hold the team's shard (errNotMyShard).
	NotMine bool `json:"not_mine,omitempty"`
}

// unsubscribe stops serving create requests.
func (w *Worker) unsubscribe() {
	for _, s := range slices.Clone(w.subs) {
		_ = s.Unsubscribe()
	}
}
