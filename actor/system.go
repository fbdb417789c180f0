package actor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
	"github.com/google/uuid"
)

// defaultShutdownGrace is how long Shutdown lets the actors' stops wait for
// their children when its context has no deadline.
const defaultShutdownGrace = 30 * time.Second

// SystemConfig configures a System. The zero value is ready to use.
type SystemConfig struct {
	// Logger receives the runtime's logs; nil means slog.Default().
	Logger *slog.Logger
}

// System is the gateway between ordinary code and the actor world:
// it spawns root actors, tells and asks them from outside, receives replies
// addressed to it (Listen), and shuts everything down. Its methods are safe
// for concurrent use.
type System struct {
	logger *slog.Logger

	mu     sync.Mutex
	cells  map[uuid.UUID]*cell
	closed bool

	wg       sync.WaitGroup
	abandon  chan struct{} // closed when Shutdown gives up on stuck actors
	endpoint *Endpoint
	once     sync.Once
}

// NewSystem returns a running actor system. Call Shutdown when done: it
// stops every actor and joins every goroutine the system started.
func NewSystem(cfg SystemConfig) *System {
	l := cfg.Logger
	if l == nil {
		l = slog.Default()
	}
	clock.Acquire()
	s := &System{logger: l, cells: map[uuid.UUID]*cell{}, abandon: make(chan struct{})}
	s.endpoint = s.newEndpoint()
	return s
}

// SpawnOption is a per-spawn knob.
type SpawnOption func(*spawnOptions)

type spawnOptions struct {
	agentID   uuid.UUID
	teamID    uuid.UUID
	userID    string
	userEmail string
	restoring bool
	sink      telemetry.Sink
	grace     time.Duration
}

// WithAgentID gives the actor an explicit agent id (restore).
func WithAgentID(id uuid.UUID) SpawnOption { return func(o *spawnOptions) { o.agentID = id } }

// WithTeamID gives a root actor an explicit team id (restore). Ignored for
// children, which always join their parent's team.
func WithTeamID(id uuid.UUID) SpawnOption { return func(o *spawnOptions) { o.teamID = id } }

// WithUser records the user the actor works for; children inherit it.
func WithUser(id, email string) SpawnOption {
	return func(o *spawnOptions) { o.userID, o.userEmail = id, email }
}

// Spawn creates a root actor: a fresh agent id, a fresh team id and a
// fresh squad unless the options or the config say otherwise, and no
// orchestrator (a root is outside every team; orchestrator.New creates
// one). cfg is nil, a Config, or a value or
// pointer of a type embedding Config; the actor gets its own copy, with an
// empty name and role defaulted. An actor embedding Agent[C, S] must be
// given a C (or *C, or nil).
func (s *System) Spawn(a Actor, cfg any, opts ...SpawnOption) (*message.Address, error) {
	return s.spawn(nil, a, cfg, opts)
}

func (s *System) spawn(parent *cell, a Actor, cfg any, optList []SpawnOption) (*message.Address, error) {
	if a == nil {
		return nil, errors.New("actor: Spawn of a nil actor")
	}
	if v := reflect.ValueOf(a); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("actor: Spawn of a nil %T", a)
	}
	var o spawnOptions
	if len(optList) > 0 { // options escape; a spawn without any allocates none
		op := new(spawnOptions)
		for _, f := range optList {
			f(op)
		}
		o = *op
	}
	if cfg == nil {
		if f, ok := a.(configFactory); ok {
			cfg = f.newConfig()
		}
	}
	cfgPtr, base, err := copyConfig(cfg)
	if err != nil {
		return nil, err
	}
	kind := kindOf(a)
	if o.agentID == uuid.Nil {
		o.agentID = message.NewID()
	}
	if base.Role == "" {
		base.Role = typeName(a)
	}
	if base.Name == "" {
		base.Name = base.Role + "-" + o.agentID.String()[:8]
	}
	c := &cell{
		sys:       s,
		actor:     a,
		life:      &lifecycle{done: make(chan struct{})},
		cfg:       cfgPtr,
		userID:    o.userID,
		userEmail: o.userEmail,
		restoring: o.restoring,
	}
	c.ctx.cell = c
	id := message.Identity{AgentID: o.agentID, Name: base.Name, Role: base.Role, Type: kind}
	if parent != nil {
		id.TeamID = parent.self.TeamID()
		if base.SquadID == uuid.Nil {
			base.SquadID = parent.self.SquadID()
		}
		c.parent, c.parentA = parent, parent.self
		c.orch, c.sink = parent.orch, parent.sink
		if parent.root != nil {
			c.orch, c.sink = parent.self, parent.root
		}
		if c.userID == "" && c.userEmail == "" {
			c.userID, c.userEmail = parent.userID, parent.userEmail
		}
	} else {
		id.TeamID = o.teamID
		if id.TeamID == uuid.Nil {
			id.TeamID = message.NewID()
		}
		if base.SquadID == uuid.Nil {
			base.SquadID = message.NewID()
		}
	}
	id.SquadID = base.SquadID
	_, id.UserProxy = a.(UserProxyActor)
	id.Tool = base.Tool
	id.Orchestrate = o.sink != nil
	h := &handle{w: weak.Make(c), life: c.life}
	c.self = addrs.NewLive(id, h)
	h.addr = c.self
	if o.sink != nil {
		c.root, c.rootGrace = o.sink, o.grace
		o.sink.Start(func() { _ = c.enqueue(envelope{kind: envWake}) })
	}
	c.hook, _ = a.(StopRequestHook)
	if sh, ok := a.(stateHolder); ok {
		if err := sh.bind(c, cfgPtr); err != nil {
			return nil, err
		}
		c.state = sh
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrShutdown
	}
	if _, dup := s.cells[id.AgentID]; dup {
		s.mu.Unlock()
		return nil, fmt.Errorf("actor: an actor with agent id %s is already running", id.AgentID)
	}
	s.cells[id.AgentID] = c
	s.wg.Add(1)
	s.mu.Unlock()

	if parent != nil {
		parent.children = append(parent.children, c.self)
	}
	if c.sink != nil {
		c.emitter = c.sink.Attach(c.self)
	}
	// StartMessage from the creator's context.
	c.emit(telemetry.Record{Kind: telemetry.Start, Value: cfgPtr, Recipient: c.parentA})
	go c.run()
	if parent != nil && parent.phase != phaseRunning {
		c.requestStop(parent.stopCause, parent.deadline)
	}
	return c.self, nil
}

func (s *System) deregister(c *cell) {
	s.mu.Lock()
	if s.cells[c.self.AgentID()] == c {
		delete(s.cells, c.self.AgentID())
	}
	s.mu.Unlock()
}

// Get returns the live address of the running actor with that agent id, or
// nil.
func (s *System) Get(agentID uuid.UUID) *message.Address {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.cells[agentID]; ok {
		return c.self
	}
	return nil
}

// Stats counts the running actors: team roots, and the others.
func (s *System) Stats() (orchestrators, agents int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cells {
		if c.self.IsOrchestrator() {
			orchestrators++
		} else {
			agents++
		}
	}
	return orchestrators, agents
}

// Tell delivers msg to the actor at to from the system's own endpoint:
// a message is stamped with the endpoint as its sender and the
// recipient's team; no telemetry. It fails with ErrActorDead when the actor
// cannot receive and with ErrNotDeliverable for a snapshot address.
func (s *System) Tell(to *message.Address, msg any) error { return s.endpoint.Tell(to, msg) }

// Ask delivers msg like Tell and waits for the handler's result or ctx.
// A handler error comes back as the error; when ctx's deadline
// passes first the error is a *TimeoutError (errors.Is ErrTimeout) and the
// message is still handled later, its reply dropped.
func (s *System) Ask(ctx context.Context, to *message.Address, msg any) (any, error) {
	return s.endpoint.Ask(ctx, to, msg)
}

// Listen returns the next message sent to the system's endpoint.
func (s *System) Listen(ctx context.Context) (any, error) { return s.endpoint.Listen(ctx) }

// Address returns the address of the system's endpoint: the sender of what
// the system tells, and where replies to it land.
func (s *System) Address() *message.Address { return s.endpoint.addr }

// Private returns a new endpoint with its own listener: replies to
// what is told through it arrive only there. Close it when done.
func (s *System) Private() *Endpoint { return s.newEndpoint() }

// Stop stops the actor at addr: its context is cancelled with
// ErrStopped, its children are stopped first, and Stop waits until it and
// every descendant have ended, or ctx is done. A team root's stop announces
// nothing. Stopping a dead actor returns nil.
func (s *System) Stop(ctx context.Context, addr *message.Address) error {
	h, ok := addrs.HandleOf(addr).(*handle)
	if !ok {
		return fmt.Errorf("actor: Stop %s: %w", addr, ErrNotDeliverable)
	}
	if c := h.cell(); c != nil {
		c.requestStop(ErrStopped, time.Time{}) // refused when it is already finishing
	}
	select { // wait for its end either way: its OnStop may still be running
	case <-h.life.done:
		return nil
	case <-ctx.Done():
		return waitError(ctx, "stop", addr, message.StopRecursively{})
	}
}

// Done returns a channel closed when the actor at addr has ended; for a
// snapshot address or nil, a closed channel.
func Done(addr *message.Address) <-chan struct{} {
	if h, ok := addrs.HandleOf(addr).(*handle); ok {
		return h.life.done
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Shutdown stops every actor and waits for every goroutine the system
// started. Every root actor is asked to stop, team roots first, with
// cause ErrShutdown and the time left before ctx's deadline
// (defaultShutdownGrace without one) to wait for its children. If ctx ends
// first, the actors still
// running are marked stopped (their addresses report not alive and refuse
// delivery), a warning lists them, and the error says which did not stop;
// their goroutines cannot be joined while their handlers block.
func (s *System) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	var roots []*cell
	for _, c := range s.cells {
		if c.parent == nil {
			roots = append(roots, c)
		}
	}
	s.mu.Unlock()
	if already {
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("actor: shutdown: %w", waitError(ctx, "shutdown", nil, nil))
		}
	}
	s.endpoint.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultShutdownGrace)
	}
	// Team roots first, without waiting, then everything else.
	sort.SliceStable(roots, func(i, j int) bool {
		return roots[i].self.IsOrchestrator() && !roots[j].self.IsOrchestrator()
	})
	for _, c := range roots {
		c.requestStop(ErrShutdown, deadline)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.release()
		return nil
	case <-ctx.Done():
	}
	close(s.abandon)
	s.mu.Lock()
	var stuck []string
	for _, c := range s.cells {
		stuck = append(stuck, fmt.Sprintf("%s (%s)", c.self.Name(), c.self.ActorType()))
		c.forceStop()
	}
	s.mu.Unlock()
	sort.Strings(stuck)
	if len(stuck) == 0 { // they all finished while we looked
		<-done
		s.release()
		return nil
	}
	s.logger.Warn("actor: shutdown gave up on actors that did not stop", "actors", strings.Join(stuck, ", "))
	go func() { <-done; s.release() }()
	return fmt.Errorf("actor: shutdown: %d actor(s) did not stop: %s: %w", len(stuck), strings.Join(stuck, ", "), waitError(ctx, "shutdown", nil, nil))
}

func (s *System) release() { s.once.Do(clock.Release) }
