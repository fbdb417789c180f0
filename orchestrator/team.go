package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// Option configures a team created by New or Restore.
type Option func(*options)

type options struct {
	teamID    uuid.UUID
	agentID   uuid.UUID // the orchestrator's (Restore: its recorded id)
	subs      []Subscriber
	retention int
	retained  bool // WithRetention was given
	grace     time.Duration
	spawn     []actor.SpawnOption
	prepare   []func(actor.Actor) // Restore: called on each recreated actor, in order
}

// WithStopGrace sets how long the team's stop waits for its members before
// it ends without them; 30 s by default. System.Shutdown
// uses its own context's deadline instead.
func WithStopGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithTeamID gives the team a chosen id instead of a fresh one.
func WithTeamID(id uuid.UUID) Option { return func(o *options) { o.teamID = id } }

// WithSubscribers attaches subscribers from the start, so that they see the
// whole log, including a restore's replay.
func WithSubscribers(s ...Subscriber) Option {
	return func(o *options) { o.subs = append(o.subs, s...) }
}

// WithRetention sets the team's in-memory window: about n of the most
// recent records are kept in memory (n > 0; 4,096 by default, 320 KiB
// of records plus the messages they hold); older ones are released once
// the orchestrator has consumed them (fanned them out to the subscribers,
// such as a durable event log). Messages reads history older than the
// window from the team's Archive (ErrOutsideWindow without one). The
// roster, states, metadata, cards and events are indexes, not part of the
// window: they are never dropped. Use math.MaxInt to keep everything.
func WithRetention(n int) Option {
	return func(o *options) { o.retention, o.retained = n, true }
}

// WithUser passes a user id and email to the orchestrator and, by
// inheritance, to every member (actor.WithUser).
func WithUser(id, email string) Option {
	return func(o *options) { o.spawn = append(o.spawn, actor.WithUser(id, email)) }
}

// WithPrepare adds a function Restore calls with every actor it
// recreates, before spawning it: it hands the actor what its recorded
// config does not carry because it is not configuration (an agent's model
// client and clocks: agent.WithEnv; a person's delivery hook:
// agent.WithHumanDelivery). Several WithPrepare options all apply, in the
// order given. New ignores them.
func WithPrepare(f func(a actor.Actor)) Option {
	return func(o *options) {
		if f != nil {
			o.prepare = append(o.prepare, f)
		}
	}
}

// configurer is implemented by a pointer to actor.Config and to every
// struct embedding it.
type configurer interface{ ActorConfig() *actor.Config }

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
	history() (Archive, int)
}

func (o *orchestrator) stateMap() map[uuid.UUID]any { return o.states }
func (o *orchestrator) metadata() any               { return o.meta }
func (o *orchestrator) cards() *catalog             { return &o.catalog }
func (o *orchestrator) log() logView                { return o.led.consumed() }
func (o *orchestrator) eventLog() *eventIndex       { return &o.events }
func (o *orchestrator) history() (Archive, int)     { return o.archive(), int(o.retention) }

// archive returns the first Archive attached with WithSubscribers that is
// still subscribed: one attached later has missed the team's beginning.
func (o *orchestrator) archive() Archive {
	for _, s := range o.subs {
		if a, ok := s.(Archive); ok && slices.Contains(o.fromStart, s) {
			return a
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

func (f *final) roster() []*message.Address  { return slices.Clone(f.members) }
func (f *final) stateMap() map[uuid.UUID]any { return f.states }
func (f *final) metadata() any               { return f.meta }
func (f *final) cards() *catalog             { return &f.catalog }
func (f *final) log() logView                { return f.view }
func (f *final) eventLog() *eventIndex       { return &f.events }
func (f *final) history() (Archive, int)     { return f.archive, f.window }

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
	r, err := proxy.Ask(ctx, t.addr, func(_ *actor.Context, o *orchestrator) (R, error) {
		o.drain()
		return fn(o)
	})
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
// log and every subscriber has seen it: the barrier every query also is.
func (t *Team) Sync(ctx context.Context) error {
	_, err := query(ctx, t, func(reader) (struct{}, error) { return struct{}{}, nil })
	return err
}

// Spawn creates a member as a child of the orchestrator, with the same
// options as actor.Context.Spawn.
func (t *Team) Spawn(ctx context.Context, a actor.Actor, cfg any, opts ...actor.SpawnOption) (*message.Address, error) {
	if t == nil || t.addr == nil {
		return nil, noTeam()
	}
	return proxy.Ask(ctx, t.addr, func(c *actor.Context, o *orchestrator) (*message.Address, error) {
		if err := ctx.Err(); err != nil { // the caller gave up while this waited: do nothing
			return nil, err
		}
		if o.stopping || o.finished {
			return nil, fmt.Errorf("orchestrator: spawn %T: team is stopping: %w", a, actor.ErrActorDead)
		}
		return c.Spawn(a, cfg, opts...)
	})
}

func init() {
	link.InstallTeamNames(link.TeamNames[*Team]{Reserve: (*Team).reserveName, Release: (*Team).releaseName, Version: (*Team).version})
}

// versions maps each running orchestrator's agent id to its ledger's
// roster-and-catalog version (ledger.version), so that a Team made with Of
// reads it without a round trip.
var versions sync.Map // uuid.UUID -> *atomic.Uint64

// version returns the team's roster-and-catalog version (link.TeamNames).
func (t *Team) version() (uint64, bool) {
	if t == nil || t.addr == nil {
		return 0, false
	}
	v, ok := versions.Load(t.addr.AgentID())
	if !ok {
		return 0, false
	}
	return v.(*atomic.Uint64).Load(), true
}

// reserveName claims name for a member about to be created, so that two
// creators choosing names at once cannot both take it: it reports false
// when a member or an earlier reservation has it. The reservation ends when
// a member with that name joins, or with releaseName. Package teamtool
// reaches both through internal/link.
func (t *Team) reserveName(ctx context.Context, name string) (bool, error) {
	return mutate(ctx, t, func(o *orchestrator) (bool, error) {
		if o.reserved[name] || name == o.self.Name() {
			return false, nil
		}
		for _, a := range o.members {
			if a.Name() == name {
				return false, nil
			}
		}
		o.reserved[name] = true
		return true, nil
	})
}

// releaseName gives back a name reserved for a member that was not created.
func (t *Team) releaseName(ctx context.Context, name string) error {
	return t.live(ctx, func(o *orchestrator) { delete(o.reserved, name) })
}

// Hire creates a member from the catalog's card for role, as a child of
// the orchestrator: a new actor of the card's kind (NewActor) with a deep
// copy of its config (ConfigCopy) whose role is the card's and whose name
// is name, or the card config's name when name is empty. An unknown role is
// an error listing the roles the catalog has. It is the program building its
// team, so the card's CanBeHired is not checked (agents hiring through
// TeamTool are refused a card without it).
func (t *Team) Hire(ctx context.Context, role, name string, opts ...actor.SpawnOption) (*message.Address, error) {
	if t == nil || t.addr == nil {
		return nil, noTeam()
	}
	card, err := t.Card(ctx, role)
	if err != nil {
		return nil, err
	}
	if card == nil {
		roles, _ := t.Roles(ctx)
		return nil, fmt.Errorf("orchestrator: hire %q: no such role in the catalog (roles: %s)", role, strings.Join(roles, ", "))
	}
	a, err := card.NewActor()
	if err != nil {
		return nil, fmt.Errorf("orchestrator: hire %q: %w", role, err)
	}
	cfg, err := card.ConfigCopy()
	if err != nil {
		return nil, fmt.Errorf("orchestrator: hire %q: %w", role, err)
	}
	if c, ok := cfg.(configurer); ok {
		ac := c.ActorConfig()
		ac.Role = card.Role()
		if name != "" {
			ac.Name = name
		}
	}
	return t.Spawn(ctx, a, cfg, opts...)
}

// ChildOrCreate returns the live direct child named cfg's name, or spawns
// a as a new one. cfg is a pointer to actor.Config or to a struct
// embedding it. It looks at the orchestrator's children, not the
// roster, so a child created moments ago is found.
func (t *Team) ChildOrCreate(ctx context.Context, a actor.Actor, cfg any) (*message.Address, error) {
	if t == nil || t.addr == nil {
		return nil, noTeam()
	}
	base, ok := cfg.(configurer)
	if !ok || base.ActorConfig() == nil {
		return nil, fmt.Errorf("orchestrator: ChildOrCreate needs a pointer to a config embedding actor.Config, got %T", cfg)
	}
	name := base.ActorConfig().Name
	return proxy.Ask(ctx, t.addr, func(c *actor.Context, o *orchestrator) (*message.Address, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, ch := range c.Children() {
			if ch.IsAlive() && ch.Name() == name && name != "" {
				return ch, nil
			}
		}
		if o.stopping || o.finished {
			return nil, fmt.Errorf("orchestrator: create %q: team is stopping: %w", name, actor.ErrActorDead)
		}
		return c.Spawn(a, cfg)
	})
}

// Members returns the team's roster: every actor that started in the
// team and has not stopped, the orchestrator excluded, in join order.
func (t *Team) Members(ctx context.Context) ([]*message.Address, error) {
	return query(ctx, t, func(r reader) ([]*message.Address, error) { return r.roster(), nil })
}

// Member returns the first member named name, or nil.
func (t *Team) Member(ctx context.Context, name string) (*message.Address, error) {
	return query(ctx, t, func(r reader) (*message.Address, error) {
		for _, a := range r.roster() {
			if a.Name() == name {
				return a, nil
			}
		}
		return nil, nil
	})
}

// Filter selects messages of the log. The zero Filter selects all.
type Filter struct {
	// Sender keeps messages whose sender has this agent id.
	Sender uuid.UUID
	// Type keeps messages of this registered type name (message.TypeName),
	// e.g. "SentMessage". "StateChangedMessage" asks for the state changes,
	// which Messages otherwise leaves out: each with its parent id,
	// the message whose turn changed the state.
	Type string
}

// states reports whether f asks for the StateChanged records.
func (f Filter) states() bool { return f.Type == "StateChangedMessage" }

func (f Filter) match(m message.Message) bool {
	if f.Sender != uuid.Nil {
		s := m.Envelope().Sender
		if s == nil || s.AgentID() != f.Sender {
			return false
		}
	}
	return f.Type == "" || message.TypeName(m) == f.Type
}

// Messages returns the team's log in ledger order: every telemetry
// message except StateChanged (those update States; Filter.Type
// "StateChangedMessage" asks for them), filtered by f.
// Addresses in it are live where the actor is; the slice is the caller's.
//
// The team keeps a window of its most recent records in memory (4,096 by
// default; WithRetention changes it). While the whole log fits in it,
// Messages reads memory. Once older records have left it, Messages reads
// the whole log from the team's Archive subscriber (eventlog.Writer) when
// one is attached (its messages carry snapshot addresses, as a
// subscriber's do); without one it returns the window's messages and an
// error wrapping ErrOutsideWindow that says how many records are missing.
// Events are never outside the window (Events).
func (t *Team) Messages(ctx context.Context, f Filter) ([]message.Message, error) {
	// The window is read on the orchestrator's goroutine; the archive, if
	// needed, on the caller's.
	type answer struct {
		window  []message.Message // the window's messages, filtered
		first   uuid.UUID         // id of the window's oldest record (any kind)
		dropped int64             // records that left the window
		arch    Archive
		limit   int
	}
	a, err := query(ctx, t, func(r reader) (answer, error) {
		var out answer
		v := r.log()
		eachMessage(v, f.states(), func(m message.Message) {
			if f.match(m) {
				out.window = append(out.window, m)
			}
		})
		if v.base > 0 && v.n > v.base {
			e, id := v.at(v.base)
			out.first = e.message(id).Envelope().ID
		}
		out.dropped = v.base
		out.arch, out.limit = r.history()
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	if a.dropped == 0 {
		return a.window, nil
	}
	if a.arch == nil {
		return a.window, fmt.Errorf("orchestrator: %w: the %d oldest records left the in-memory window of %d records (WithRetention) and no Archive was attached with WithSubscribers; the %d messages returned are the window's",
			ErrOutsideWindow, a.dropped, a.limit, len(a.window))
	}
	hist, herr := a.arch.ReadHistory(ctx)
	if herr != nil && len(hist) == 0 {
		return a.window, fmt.Errorf("orchestrator: %w: reading the records before the in-memory window from %T: %w; the %d messages returned are the window's",
			ErrOutsideWindow, a.arch, herr, len(a.window))
	}
	// The archive up to the window's oldest record, then the window: the
	// window's messages keep their live addresses, and records the
	// subscribers never got (members' Stop records during the team's stop)
	// are there.
	var out []message.Message
	found := a.first == uuid.Nil // the window is empty: the whole archive
	for _, m := range hist {
		if m.Envelope().ID == a.first && !found {
			found = true
			break
		}
		switch m.(type) {
		case *MetadataChanged: // not a log message
			continue
		case *message.StateChangedMessage: // only when asked for
			if !f.states() {
				continue
			}
		}
		if f.match(m) {
			out = append(out, m)
		}
	}
	if !found {
		return a.window, fmt.Errorf("orchestrator: %w: the Archive %T does not reach the in-memory window (its record %s is missing); the %d messages returned are the window's",
			ErrOutsideWindow, a.arch, a.first, len(a.window))
	}
	out = append(out, a.window...)
	if herr != nil {
		return out, fmt.Errorf("orchestrator: the Archive %T reported an error (its history may lack records): %w", a.arch, herr)
	}
	return out, nil
}

// ErrOutsideWindow is wrapped by the error of a query whose answer lies
// partly outside the team's in-memory window with no Archive to read it
// from (Messages).
var ErrOutsideWindow = errors.New("history outside the in-memory window")

// Archive is a Subscriber that keeps the team's whole log durably, such as
// eventlog.Writer: when the in-memory window no longer holds a team's
// oldest records, Messages reads them from the first Archive attached with
// WithSubscribers (one subscribed later has missed the team's beginning
// and is not used).
type Archive interface {
	Subscriber
	// ReadHistory returns every message written so far, in order (and an
	// error when some could not be written or read). It is called on the
	// goroutine of the Messages call, concurrently with OnMessage, and
	// after the team stopped.
	ReadHistory(ctx context.Context) ([]message.Message, error)
}

// eachMessage calls fn for every log message of v in order, StateChanged
// excluded unless states.
func eachMessage(v logView, states bool, fn func(m message.Message)) {
	v.each(func(e *entry, id uint64) {
		if states || e.rec.Kind != telemetry.StateChanged {
			fn(e.message(id))
		}
	})
}

// Select returns the messages of type T, in order: the typed form of
// Filter.Type.
func Select[T message.Message](msgs []message.Message) []T {
	var out []T
	for _, m := range msgs {
		if t, ok := m.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// EventFilter selects events. The zero EventFilter selects all.
type EventFilter struct {
	// Agent keeps events emitted by the agent with this id.
	Agent uuid.UUID
	// Payload keeps events whose payload has this registered type name
	// (message.TypeName), e.g. "ClosedNotification".
	Payload string
}

// Events returns the EventMessages of the log, filtered; an event
// that is message.Ephemeral (a streamed answer's text deltas) reached the
// subscribers only and is not among them.
func (t *Team) Events(ctx context.Context, f EventFilter) ([]*message.EventMessage, error) {
	return query(ctx, t, func(r reader) ([]*message.EventMessage, error) {
		var out []*message.EventMessage
		r.eventLog().each(f.Agent, func(ev *message.EventMessage) {
			if f.Payload == "" || message.TypeName(ev.Event) == f.Payload {
				out = append(out, ev)
			}
		})
		return out, nil
	})
}

// States returns the latest published state of every agent that published
// one, by agent id. Each call returns new copies.
func (t *Team) States(ctx context.Context) (map[uuid.UUID]any, error) {
	return query(ctx, t, func(r reader) (map[uuid.UUID]any, error) {
		states := r.stateMap()
		out := make(map[uuid.UUID]any, len(states))
		for k, v := range states {
			out[k] = copyState(v)
		}
		return out, nil
	})
}

// copyState returns an independent copy of a published state: a JSON round
// trip into a new value of the same type (raw JSON is copied as bytes).
func copyState(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return append(json.RawMessage(nil), x...)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v // a state that was published could be encoded: not reached
	}
	t := reflect.TypeOf(v)
	ptr := t.Kind() == reflect.Pointer
	if ptr {
		t = t.Elem()
	}
	p := reflect.New(t)
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		return v
	}
	if ptr {
		return p.Interface()
	}
	return p.Elem().Interface()
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

// Subscribe attaches s; it receives every message logged from now on.
func (t *Team) Subscribe(ctx context.Context, s Subscriber) error {
	if s == nil {
		return errors.New("orchestrator: Subscribe(nil)")
	}
	return t.live(ctx, func(o *orchestrator) { o.subs = append(slices.Clone(o.subs), s) })
}

// Unsubscribe detaches one occurrence of s; it does nothing when s is not
// attached.
func (t *Team) Unsubscribe(ctx context.Context, s Subscriber) error {
	return t.live(ctx, func(o *orchestrator) {
		if i := slices.IndexFunc(o.subs, func(x Subscriber) bool { return x == s }); i >= 0 {
			o.subs = slices.Delete(slices.Clone(o.subs), i, i+1)
		}
	})
}

// mutate runs fn on the running orchestrator, after a drain; a stopped
// team refuses (actor.ErrActorDead).
func mutate[R any](ctx context.Context, t *Team, fn func(o *orchestrator) (R, error)) (R, error) {
	var zero R
	if t == nil || t.addr == nil {
		return zero, noTeam()
	}
	return proxy.Ask(ctx, t.addr, func(_ *actor.Context, o *orchestrator) (R, error) {
		if err := ctx.Err(); err != nil { // the caller gave up while this waited: do nothing
			return zero, err
		}
		if o.finished {
			return zero, fmt.Errorf("orchestrator: team %s has stopped: %w", o.teamID, actor.ErrActorDead)
		}
		o.drain()
		return fn(o)
	})
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
// card is invalid, nothing is registered and the error names it.
func (t *Team) Register(ctx context.Context, cards ...*AgentCard) error {
	if t == nil || t.addr == nil {
		return noTeam()
	}
	_, err := mutate(ctx, t, func(o *orchestrator) (struct{}, error) {
		defer o.led.version.Add(1)
		return struct{}{}, o.catalog.Register(cards...)
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
