package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// Team is a handle on a running team's orchestrator. Its methods may be
// called from any goroutine except the orchestrator's own (a subscriber
// hook must not call them); each runs on the orchestrator's goroutine and
// returns copies, never live internals. Every query first takes
// in all the telemetry emitted so far, so what a member emitted before
// answering an ask is visible to a query made after the answer.
//
// Once the team has stopped, queries answer from its final state: an
// immutable view the orchestrator leaves behind, read on the caller's
// goroutine.
type Team struct {
	addr *message.Address
	o    *orchestrator // nil for a handle made by Of
}

var rt = link.Runtime[*actor.Context, actor.Actor, *message.Address, message.Message, actor.SpawnOption, telemetry.Sink]()

// ErrNoTeam is matched (errors.Is) by the error of a query on a handle with
// no orchestrator (Of(nil)), and of an agent started outside a team.
var ErrNoTeam = errors.New("orchestrator: no team")

// New creates a team: its orchestrator is a root actor of sys.
func New(sys *actor.System, opts ...Option) (*Team, error) {
	var op options
	for _, f := range opts {
		f(&op)
	}
	if op.retained && op.retention <= 0 {
		return nil, fmt.Errorf("orchestrator: WithRetention(%d): must be positive", op.retention)
	}
	if op.grace < 0 {
		return nil, fmt.Errorf("orchestrator: WithStopGrace(%s): must be positive", op.grace)
	}
	if op.grace == 0 {
		op.grace = defaultStopGrace
	}
	o := newOrchestrator(&op)
	name := "orchestrator"
	// The version is registered under the orchestrator's id before it can
	// run (OnStop deletes it), so no stop can come first and leave it.
	id := op.agentID
	if id == uuid.Nil {
		id = message.NewID()
	}
	versions.Store(id, &o.led.version)
	so := append([]actor.SpawnOption{rt.WithSink(o, op.grace), actor.WithAgentID(id)}, op.spawn...)
	if op.teamID != uuid.Nil {
		so = append(so, actor.WithTeamID(op.teamID))
	}
	addr, err := sys.Spawn(o, &actor.Config{Name: name, Role: "Orchestrator"}, so...)
	if err != nil {
		versions.Delete(id)
		return nil, fmt.Errorf("orchestrator: create team: %w", err)
	}
	return &Team{addr: addr, o: o}, nil
}

// Of returns a handle on the orchestrator at addr, such as an agent's
// Context.Orchestrator(). With a nil address the team queries fail with a
// warning wrapping ErrNoTeam, and the catalog queries return
// nothing.
func Of(addr *message.Address) *Team { return &Team{addr: addr} }

// Address returns the orchestrator's address (nil for no team).
func (t *Team) Address() *message.Address {
	if t == nil {
		return nil
	}
	return t.addr
}

// ID returns the team id (the orchestrator's team id), uuid.Nil for no
// team.
func (t *Team) ID() uuid.UUID {
	if t == nil || t.addr == nil {
		return uuid.Nil
	}
	return t.addr.TeamID()
}

// Done returns a channel closed when the orchestrator has stopped (closed
// at once for no team).
func (t *Team) Done() <-chan struct{} { return actor.Done(t.Address()) }

// StopCause says why the team stops, once its stop began: an error
// matching ErrStopRequested after Team.Stop, actor.ErrShutdown after its
// system's shutdown, the cause given to a raw stop (System.Stop) otherwise.
// It is nil while the team runs, and for a handle made by Of.
func (t *Team) StopCause() error {
	if t == nil || t.o == nil {
		return nil
	}
	if c := t.o.stopCause.Load(); c != nil {
		return *c
	}
	return nil
}

func noTeam() error {
	return &actor.WarningError{Msg: "orchestrator: not in a team", Err: ErrNoTeam}
}

// reader is what a query reads: the live orchestrator, on its own
// goroutine after a drain, or the final view after the stop.
type reader interface {
	roster() []*message.Address
	stateMap() map[uuid.UUID]any
	metadata() any
	cards() *catalog
	log() logView
	eventLog() *eventIndex
	history() (Archive, <-chan struct{}, int)
	barriers() []<-chan struct{}
}

func (o *orchestrator) stateMap() map[uuid.UUID]any { return o.states }
func (o *orchestrator) metadata() any               { return o.meta }
func (o *orchestrator) cards() *catalog             { return &o.catalog }
func (o *orchestrator) log() logView                { return o.led.consumed() }
func (o *orchestrator) eventLog() *eventIndex       { return &o.events }
func (o *orchestrator) barriers() []<-chan struct{} { return o.pumpBarriers(true) }

// history returns the Archive, a barrier on its queue (closed once it has
// been given everything consumed so far) and the window's size.
func (o *orchestrator) history() (Archive, <-chan struct{}, int) {
	p := o.archivePump()
	if p == nil {
		return nil, nil, int(o.retention)
	}
	return p.s.(Archive), p.barrier(), int(o.retention)
}

// archive returns the first Archive attached with WithSubscribers that is
// still subscribed: one attached later has missed the team's beginning.
func (o *orchestrator) archive() Archive {
	if p := o.archivePump(); p != nil {
		return p.s.(Archive)
	}
	return nil
}

// archivePump returns the queue of archive(), or nil.
func (o *orchestrator) archivePump() *pump {
	for _, p := range o.pumps {
		if _, ok := p.s.(Archive); ok && slices.Contains(o.fromStart, p.s) {
			return p
		}
	}
	return nil
}

// final is what a stopped team's queries read. Nothing in it changes after
// it is made, so any goroutine may read it.
type final struct {
	members []*message.Address
	states  map[uuid.UUID]any
	meta    any
	catalog catalog
	view    logView
	events  eventIndex
	archive Archive
	window  int
}

func (f *final) roster() []*message.Address               { return slices.Clone(f.members) }
func (f *final) stateMap() map[uuid.UUID]any              { return f.states }
func (f *final) metadata() any                            { return f.meta }
func (f *final) cards() *catalog                          { return &f.catalog }
func (f *final) log() logView                             { return f.view }
func (f *final) eventLog() *eventIndex                    { return &f.events }
func (f *final) history() (Archive, <-chan struct{}, int) { return f.archive, nil, f.window }
func (f *final) barriers() []<-chan struct{}              { return nil }

// freeze makes the final view; the orchestrator's goroutine calls it last.
func (o *orchestrator) freeze() *final {
	return &final{members: o.roster(), states: o.states, meta: o.meta, catalog: o.catalog.clone(), view: o.led.consumed(),
		events: o.events.frozen(), archive: o.archive(), window: int(o.retention)}
}

// query runs fn on the orchestrator's goroutine after a drain; once the
// orchestrator has stopped, on its final view.
func query[R any](ctx context.Context, t *Team, fn func(r reader) (R, error)) (R, error) {
	var zero R
	if t == nil || t.addr == nil {
		return zero, noTeam()
	}
	var waits []<-chan struct{}
	r, err := proxy.Ask(ctx, t.addr, func(_ *actor.Context, o *orchestrator) (R, error) {
		o.drain()
		r, err := fn(o)
		waits = o.pumpBarriers(false)
		return r, err
	})
	if err == nil {
		err = awaitBarriers(ctx, waits)
	}
	if err != nil && errors.Is(err, actor.ErrActorDead) && t.o != nil {
		select {
		case <-actor.Done(t.addr): // its last hook has run: the final view is there
			return fn(t.o.final.Load())
		case <-ctx.Done():
		}
	}
	return r, err
}

// Sync returns once everything members emitted before the call is in the
// log (the barrier every query also is) and every subscriber has been
// given it (or, a LossySubscriber, told that it missed it). A subscriber's
// hook must not call Sync: it would wait for itself.
func (t *Team) Sync(ctx context.Context) error {
	waits, err := query(ctx, t, func(r reader) ([]<-chan struct{}, error) { return r.barriers(), nil })
	if err != nil {
		return err
	}
	return awaitBarriers(ctx, waits)
}

// awaitBarriers waits for every barrier of waits, or ctx.
func awaitBarriers(ctx context.Context, waits []<-chan struct{}) error {
	for _, w := range waits {
		if err := awaitBarrier(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// awaitBarrier waits for a subscriber's barrier (nil: none) or ctx.
func awaitBarrier(ctx context.Context, w <-chan struct{}) error {
	if w == nil {
		return nil
	}
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("orchestrator: waiting for a subscriber to catch up: %w", context.Cause(ctx))
	}
}

// Metadata returns the team metadata, nil when unset.
func (t *Team) Metadata(ctx context.Context) (any, error) {
	return query(ctx, t, func(r reader) (any, error) { return r.metadata(), nil })
}

// SetMetadata replaces the team metadata wholesale (nil clears it). It is
// not telemetry: no StateChanged, nothing in the log; subscribers
// get a MetadataChanged so that a durable log can restore it. The value is
// stored as it is: do not modify it afterwards.
func (t *Team) SetMetadata(ctx context.Context, v any) error {
	return t.live(ctx, func(o *orchestrator) {
		o.meta = v
		o.publishMetadata()
	})
}

// Subscribe attaches s; it receives every message logged from now on, on
// a goroutine of its own that the team owns.
func (t *Team) Subscribe(ctx context.Context, s Subscriber) error {
	if s == nil {
		return errors.New("orchestrator: Subscribe(nil)")
	}
	return t.live(ctx, func(o *orchestrator) { o.attach(s) })
}

// Unsubscribe detaches one occurrence of s and returns once s has been
// given what was queued for it and will be called no more; it does nothing
// when s is not attached. A subscriber's hook must not unsubscribe itself:
// it would wait for itself.
func (t *Team) Unsubscribe(ctx context.Context, s Subscriber) error {
	done, err := mutate(ctx, t, func(o *orchestrator) (<-chan struct{}, error) { return o.detach(s), nil })
	if err != nil {
		return err
	}
	return awaitBarrier(ctx, done)
}

// mutate runs fn on the running orchestrator, after a drain; a stopped
// team refuses (actor.ErrActorDead).
func mutate[R any](ctx context.Context, t *Team, fn func(o *orchestrator) (R, error)) (R, error) {
	var zero R
	if t == nil || t.addr == nil {
		return zero, noTeam()
	}
	var waits []<-chan struct{}
	r, err := proxy.Ask(ctx, t.addr, func(_ *actor.Context, o *orchestrator) (R, error) {
		if err := ctx.Err(); err != nil { // the caller gave up while this waited: do nothing
			return zero, err
		}
		if o.finished {
			return zero, fmt.Errorf("orchestrator: team %s has stopped: %w", o.teamID, actor.ErrActorDead)
		}
		o.drain()
		r, err := fn(o)
		waits = o.pumpBarriers(false)
		return r, err
	})
	if err == nil {
		err = awaitBarriers(ctx, waits)
	}
	return r, err
}

// live runs a mutation with no result on the running orchestrator.
func (t *Team) live(ctx context.Context, fn func(o *orchestrator)) error {
	_, err := mutate(ctx, t, func(o *orchestrator) (struct{}, error) { fn(o); return struct{}{}, nil })
	return err
}

// Emit publishes msg as the orchestrator's own: its sender becomes
// the orchestrator, its team the team's, its parent none; it is logged and
// fanned out, never delivered to an agent. msg must not have been sent.
func (t *Team) Emit(ctx context.Context, msg message.Message) error {
	if msg == nil {
		return errors.New("orchestrator: Emit(nil)")
	}
	return t.live(ctx, func(o *orchestrator) { o.emit(msg) })
}

// Stop stops the team and waits until it has stopped, or ctx is done:
// a TeamStoppingEvent is logged, the subscribers are told OnStopRequest,
// every member is told to stop (tools last), and the team ends when
// they all have ended or, after the stop grace (WithStopGrace), without the
// ones still running. Every subscriber then gets OnStop.
// Stopping a stopped team returns nil at once.
func (t *Team) Stop(ctx context.Context) error {
	if t == nil || t.addr == nil {
		return noTeam()
	}
	if err := rt.Stop(t.addr, errTeamStop); err != nil && !errors.Is(err, actor.ErrActorDead) {
		return fmt.Errorf("orchestrator: stop team %s: %w", t.ID(), err)
	}
	select {
	case <-actor.Done(t.addr):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("orchestrator: waiting for team %s to stop: %w", t.ID(), context.Cause(ctx))
	}
}

// Register adds cards to the team's catalog: keyed by role, a card
// with a role already present replaces it in place. All or nothing: when a
// card is invalid, nothing is registered and the error names it. The
// subscribers get a CatalogChanged with the whole catalog, so a durable
// log restores it (Restore).
func (t *Team) Register(ctx context.Context, cards ...*AgentCard) error {
	if t == nil || t.addr == nil {
		return noTeam()
	}
	_, err := mutate(ctx, t, func(o *orchestrator) (struct{}, error) {
		defer o.led.version.Add(1)
		if err := o.catalog.Register(cards...); err != nil {
			return struct{}{}, err
		}
		o.publishCatalog()
		return struct{}{}, nil
	})
	return err
}

// catalogQuery runs a catalog query; with no team it returns the zero
// value and no error.
func catalogQuery[R any](ctx context.Context, t *Team, fn func(c *catalog) R) (R, error) {
	if t == nil || t.addr == nil {
		var zero R
		return zero, nil
	}
	return query(ctx, t, func(r reader) (R, error) { return fn(r.cards()), nil })
}

// Cards returns copies of the catalog's cards in registration order.
func (t *Team) Cards(ctx context.Context) ([]*AgentCard, error) {
	return catalogQuery(ctx, t, (*catalog).Cards)
}

// Card returns a copy of the card for role, or nil.
func (t *Team) Card(ctx context.Context, role string) (*AgentCard, error) {
	return catalogQuery(ctx, t, func(c *catalog) *AgentCard { return c.ByRole(role) })
}

// CardsWithSkill returns copies of the cards having skill.
func (t *Team) CardsWithSkill(ctx context.Context, skill string) ([]*AgentCard, error) {
	return catalogQuery(ctx, t, func(c *catalog) []*AgentCard { return c.BySkill(skill) })
}

// Roles returns the catalog's roles in registration order.
func (t *Team) Roles(ctx context.Context) ([]string, error) {
	return catalogQuery(ctx, t, (*catalog).Roles)
}

// Skills returns the catalog's skills, sorted and unique.
func (t *Team) Skills(ctx context.Context) ([]string, error) {
	return catalogQuery(ctx, t, (*catalog).Skills)
}
