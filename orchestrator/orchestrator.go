package orchestrator

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// DefaultStopGrace is how long a team's stop waits for its members before
// the force-stop backstop fires (B96, B99).
const DefaultStopGrace = 30 * time.Second

// Orchestrator is the root actor of a team (B77): every actor spawned under
// it reports its telemetry to it. It keeps the ledger of every record, the
// roster, the latest state per member, the team metadata, the AgentCard
// catalog and the subscribers, and runs the team's stop. It emits no
// telemetry of its own (B79).
//
// Create one with New (or Restore) and use it through the returned *Team;
// the Orchestrator value itself is only touched by its own goroutine.
type Orchestrator struct {
	led       ledger
	retention int64
	self      *message.Address
	teamID    uuid.UUID
	logger    *slog.Logger

	members  map[uuid.UUID]*message.Address // roster by agent id (B81)
	order    []uuid.UUID                    // roster in join order, compacted lazily
	states   map[uuid.UUID]any              // latest state per agent (B84)
	reserved map[string]bool                // member names claimed before the member joins
	snaps    map[*message.Address]*message.Address
	meta     any
	subs     []Subscriber
	catalog  Catalog

	restoring bool
	stopping  bool
	finished  bool
	done      chan struct{} // closed when the team has stopped
	backstop  *time.Timer
	stopGen   int
	ctx       *actor.Context
	deferred  []*message.Address // "#" tools awaiting phase 2 (B98)
	after     sync.Mutex         // serializes queries answered after the stop
}

// The kind names of the package's actors (actor.RegisterKind), recorded in
// their addresses and used by Restore.
const (
	KindOrchestrator = "Orchestrator"
	KindUserProxy    = "UserProxy"
)

func init() {
	actor.RegisterKind(KindOrchestrator, func() actor.Actor { return newOrchestrator(&options{}) })
	actor.RegisterKind(KindUserProxy, func() actor.Actor { return &UserProxy{} })
}

// drainSignal wakes the orchestrator to consume new ledger records; it is a
// raw value, so it produces no telemetry.
type drainSignal struct{}

// backstopSignal is posted by the stop backstop's timer (B99).
type backstopSignal struct{ gen int }

func newOrchestrator(op *options) *Orchestrator {
	o := &Orchestrator{
		retention: int64(op.retention),
		subs:      append([]Subscriber(nil), op.subs...),
		members:   map[uuid.UUID]*message.Address{},
		states:    map[uuid.UUID]any{},
		reserved:  map[string]bool{},
		snaps:     map[*message.Address]*message.Address{},
		done:      make(chan struct{}),
	}
	return o
}

// Attach implements actor.Sink: every member appends to the ledger.
func (o *Orchestrator) Attach(*message.Address) actor.Emitter { return emitter{&o.led} }

// OnStart records the orchestrator's identity and its own StartMessage
// (B78), which no subscriber sees: there are none yet, unless given to New.
func (o *Orchestrator) OnStart(c *actor.Context) error {
	o.self = c.Self()
	o.ctx = c
	o.teamID = c.TeamID()
	o.logger = c.Logger()
	self := c.Self()
	o.led.wake = func() { _ = self.Tell(drainSignal{}) }
	start := &message.StartMessage{Config: c.Config()}
	o.stamp(start)
	o.led.append(actor.Record{Kind: kindReady, Message: start})
	o.drain()
	return nil
}

// Receive handles the orchestrator's own signals. The orchestrator is not a
// message recipient: anything else is logged and reported as unhandled.
func (o *Orchestrator) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case drainSignal:
		o.drain()
		return nil, nil
	case backstopSignal:
		if m.gen == o.stopGen && o.stopping && !o.finished {
			o.forceStop(c)
		}
		return nil, nil
	}
	// An orchestrator takes no messages: the runtime logs the unknown one.
	return nil, fmt.Errorf("orchestrator: %T: %w", msg, actor.ErrUnhandled)
}

// stamp makes msg the orchestrator's own (B93): sender = orchestrator,
// team = its team, parent none, a fresh id and timestamp.
func (o *Orchestrator) stamp(msg message.Message) {
	b := msg.Envelope()
	if b.ID == uuid.Nil {
		b.ID = message.NewID()
	}
	b.Timestamp = time.Now().UTC()
	b.Sender = o.self
	b.TeamID = uuid.NullUUID{UUID: o.teamID, Valid: true}
	b.ParentID = uuid.NullUUID{}
}

// drain consumes every record appended before it started: roster, states,
// fan-out. Queries call it first, which is the barrier rule: what a member
// emitted before answering an ask is visible to a later query.
func (o *Orchestrator) drain() {
	o.led.pending.Store(false)
	for {
		r, id, ok := o.led.next()
		if !ok {
			break
		}
		o.consume(r, id)
	}
	if o.retention > 0 && o.led.retained() > o.retention+chunkSize {
		o.led.retire(o.led.cursor - o.retention)
	}
}

// consume applies one record (B80).
func (o *Orchestrator) consume(r *actor.Record, id uint64) {
	kind := r.Kind
	if kind == kindReady {
		kind = kindOf(r.Message)
	}
	switch kind {
	case actor.RecordStart:
		o.join(o.senderOf(r))
	case actor.RecordStop:
		who := o.senderOf(r)
		o.leave(who)
		if o.stopping { // B97: recorded, not fanned out; drives completion
			o.forget(who)
			o.afterLeave()
			return
		}
	case actor.RecordStateChanged:
		if who := o.senderOf(r); who != nil {
			if r.Kind == kindReady {
				o.states[who.AgentID()] = r.Message.(*message.StateChangedMessage).State
			} else {
				o.states[who.AgentID()] = r.Value
			}
		}
	}
	if len(o.subs) > 0 {
		m := o.forSubscribers(r, id)
		// No hook can change o.subs while this runs (hooks cannot call the
		// team), and Subscribe/Unsubscribe replace the slice, so no copy.
		for _, s := range o.subs {
			o.deliver(s, m)
		}
	}
	if kind == actor.RecordStop {
		o.forget(o.senderOf(r))
	}
}

// deliver calls s.OnMessage(m), isolated (B89).
func (o *Orchestrator) deliver(s Subscriber, m message.Message) {
	defer func() { // no closure per call: this is the fan-out hot path
		if r := recover(); r != nil {
			logPanic(o.logger, "OnMessage", s, r)
		}
	}()
	s.OnMessage(m)
}

// kindOf maps a ready-made telemetry message to its record kind.
func kindOf(m message.Message) actor.RecordKind {
	switch m.(type) {
	case *message.StartMessage:
		return actor.RecordStart
	case *message.StopMessage:
		return actor.RecordStop
	case *message.StateChangedMessage:
		return actor.RecordStateChanged
	case *message.EventMessage:
		return actor.RecordEvent
	}
	return kindReady
}

func (o *Orchestrator) senderOf(r *actor.Record) *message.Address {
	if r.Kind == kindReady {
		return r.Message.Envelope().Sender
	}
	return r.Emitter
}

// join adds a member to the roster; the orchestrator is excluded by id
// (B81, §4 item 4). A restored member's snapshot address is replaced by the
// live one when the recreated actor starts.
func (o *Orchestrator) join(a *message.Address) {
	if a == nil || a.AgentID() == o.self.AgentID() {
		return
	}
	id := a.AgentID()
	if _, ok := o.members[id]; !ok {
		o.order = append(o.order, id)
	}
	o.members[id] = a
	delete(o.reserved, a.Name())
}

func (o *Orchestrator) leave(a *message.Address) {
	if a == nil {
		return
	}
	delete(o.members, a.AgentID())
	if len(o.order) > 32 && len(o.order) > 2*len(o.members) {
		o.order = slices.DeleteFunc(o.order, func(id uuid.UUID) bool { _, ok := o.members[id]; return !ok })
	}
}

// forget drops a stopped member's cached snapshot address.
func (o *Orchestrator) forget(a *message.Address) {
	if a != nil {
		delete(o.snaps, a)
	}
}

// roster returns the members in join order.
func (o *Orchestrator) roster() []*message.Address {
	out := make([]*message.Address, 0, len(o.members))
	seen := make(map[uuid.UUID]bool, len(o.members))
	for _, id := range o.order { // an id that left and came back is listed twice
		if a, ok := o.members[id]; ok && !seen[id] {
			seen[id] = true
			out = append(out, a)
		}
	}
	return out
}

// materialize returns the telemetry message a ledger entry stands for, as
// the log keeps it (live addresses). Its id is stable across calls.
func materialize(r *actor.Record, id uint64) message.Message {
	if r.Kind == kindReady {
		return r.Message
	}
	return r.ToMessageID(message.IDAt(id))
}

// forSubscribers returns the subscribers' copy of an entry: every address
// in it as a snapshot (B90).
func (o *Orchestrator) forSubscribers(r *actor.Record, id uint64) message.Message {
	var m message.Message
	if r.Kind == kindReady {
		if !hasLive(r.Message) {
			return r.Message
		}
		m = message.Clone(r.Message)
	} else {
		m = r.ToMessageID(message.IDAt(id))
	}
	b := m.Envelope()
	b.Sender = o.snap(b.Sender)
	b.Recipient = o.snap(b.Recipient)
	switch t := m.(type) {
	case *message.SentMessage:
		t.Recipient = o.snap(t.Recipient)
		t.Message = o.snapMessage(t.Message)
	case *message.StartMessage:
		t.Parent = o.snap(t.Parent)
	case *message.ErrorMessage:
		t.CurrentMessage = o.snapMessage(t.CurrentMessage)
	case *message.WarningMessage:
		t.CurrentMessage = o.snapMessage(t.CurrentMessage)
	case *message.NotificationMessage:
		t.CurrentMessage = o.snapMessage(t.CurrentMessage)
	}
	return m
}

// snapMessage returns m, or a copy of it with snapshot sender and recipient
// when either is live.
func (o *Orchestrator) snapMessage(m message.Message) message.Message {
	if m == nil {
		return nil
	}
	b := m.Envelope()
	if !isLive(b.Sender) && !isLive(b.Recipient) {
		return m
	}
	c := message.Clone(m)
	cb := c.Envelope()
	cb.Sender, cb.Recipient = o.snap(b.Sender), o.snap(b.Recipient)
	return c
}

func isLive(a *message.Address) bool { return a != nil && a.Kind() == message.Live }

func hasLive(m message.Message) bool {
	b := m.Envelope()
	if isLive(b.Sender) || isLive(b.Recipient) {
		return true
	}
	switch t := m.(type) {
	case *message.SentMessage:
		return isLive(t.Recipient) || (t.Message != nil && hasLive(t.Message))
	case *message.StartMessage:
		return isLive(t.Parent)
	}
	return false
}

// snap returns the snapshot form of a, cached per live address so that a
// member's records share one snapshot.
func (o *Orchestrator) snap(a *message.Address) *message.Address {
	if !isLive(a) {
		return a
	}
	if s, ok := o.snaps[a]; ok {
		return s
	}
	s := a.Snapshot()
	if _, member := o.members[a.AgentID()]; member {
		o.snaps[a] = s
	}
	return s
}

// emit appends a message of the orchestrator's own to the log and fans it
// out (B93).
func (o *Orchestrator) emit(msg message.Message) {
	o.stamp(msg)
	message.Claim(msg)
	o.led.append(actor.Record{Kind: kindReady, Message: msg})
	o.drain()
}

// fanOut calls one lifecycle hook on every subscriber, isolated (B91).
func (o *Orchestrator) fanOut(hook string, f func(s Subscriber)) {
	for _, s := range slices.Clone(o.subs) {
		guard(o.logger, hook, s, func() { f(s) })
	}
}

// setRestoring fans set_restoring out (B92, B95).
func (o *Orchestrator) setRestoring(on bool) {
	o.drain()
	o.restoring = on
	o.fanOut("SetRestoring", func(s Subscriber) {
		if r, ok := s.(RestoringSubscriber); ok {
			r.SetRestoring(o.teamID, on)
		}
	})
}

// restoreMessage appends a recorded message as it is (B94): no re-stamping;
// an EventMessage carrying a TeamStoppingEvent is skipped.
func (o *Orchestrator) restoreMessage(msg message.Message) {
	if ev, ok := msg.(*message.EventMessage); ok && isStoppingEvent(ev.Event) {
		return
	}
	message.Claim(msg)
	o.led.append(actor.Record{Kind: kindReady, Message: msg})
	o.drain()
}

func isStoppingEvent(v any) bool {
	switch v.(type) {
	case message.TeamStoppingEvent, *message.TeamStoppingEvent:
		return true
	}
	return false
}

// GracefulStop implements actor.GracefulStopper: System.Shutdown runs the
// team's stop (B96) instead of a blocking recursive stop.
func (o *Orchestrator) GracefulStop(c *actor.Context, grace time.Duration) {
	o.stop(c, grace, true)
}

// RawStop implements actor.RawStopper: StopRecursively or System.Stop on
// the orchestrator stops the members without blocking on them, like the
// team's stop, but announces nothing (B102: no TeamStoppingEvent, no
// OnStopRequest; OnStop still runs).
func (o *Orchestrator) RawStop(c *actor.Context) {
	o.stop(c, DefaultStopGrace, false)
}

// stop runs the team's stop sequence (B96), announced or not. It never
// blocks.
func (o *Orchestrator) stop(c *actor.Context, grace time.Duration, announce bool) <-chan struct{} {
	if o.stopping || o.finished {
		return o.done
	}
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	o.drain()
	if announce {
		o.emit(&message.EventMessage{Event: message.TeamStoppingEvent{}}) // (1)
		o.fanOut("OnStopRequest", func(s Subscriber) {                    // (2)
			if r, ok := s.(StopRequestSubscriber); ok {
				r.OnStopRequest(o.teamID)
			}
		})
	}
	o.stopping = true // (3)
	// (4) phase 1: live direct children, newest first; "#" tools deferred.
	children := c.Children()
	slices.Reverse(children)
	for _, ch := range children {
		if !ch.IsAlive() {
			continue
		}
		if strings.HasPrefix(ch.Name(), "#") {
			o.deferred = append(o.deferred, ch)
			continue
		}
		_ = ch.Tell(message.StopRecursively{})
	}
	o.maybeStopTools() // (5)
	o.stopGen++        // (6) the timer only posts a signal (B99, §4 21i)
	self, gen := o.self, o.stopGen
	o.backstop = time.AfterFunc(grace, func() { _ = self.Tell(backstopSignal{gen: gen}) })
	o.afterLeave() // (7) an empty team finalizes at once
	return o.done
}

// maybeStopTools runs phase 2 once no non-tool member is left (B98).
func (o *Orchestrator) maybeStopTools() {
	if len(o.deferred) == 0 {
		return
	}
	for _, a := range o.members {
		if !strings.HasPrefix(a.Name(), "#") {
			return
		}
	}
	o.stopTools()
}

func (o *Orchestrator) stopTools() {
	for _, t := range o.deferred {
		_ = t.Tell(message.StopRecursively{})
	}
	o.deferred = nil
}

// afterLeave checks, while stopping, whether the team can finish (B97).
func (o *Orchestrator) afterLeave() {
	if !o.stopping || o.finished {
		return
	}
	o.maybeStopTools()
	if len(o.members) == 0 {
		o.finalize()
	}
}

// forceStop is the backstop (B99).
func (o *Orchestrator) forceStop(*actor.Context) {
	names := make([]string, 0, len(o.members))
	for _, a := range o.roster() {
		names = append(names, a.Name())
	}
	o.logger.Warn("orchestrator: stop grace expired; forcing teardown",
		"team", o.teamID, "still_running", strings.Join(names, ", "))
	o.stopTools()
	o.finalize()
}

// finalize posts the orchestrator's own stop marker; OnStop completes.
func (o *Orchestrator) finalize() {
	if o.finished {
		return
	}
	o.finished = true
	if o.backstop != nil {
		o.backstop.Stop()
	}
	_ = o.ctx.StopSelf()
}

// OnStop is the orchestrator's last step (B100): on_stop to every
// subscriber still attached, then the subscribers are cleared and the
// completion handle closes. A raw stop (not through Stop) reaches only this
// (B102).
func (o *Orchestrator) OnStop(*actor.Context) {
	o.drain()
	if o.backstop != nil {
		o.backstop.Stop()
	}
	o.finished = true
	o.fanOut("OnStop", func(s Subscriber) {
		if r, ok := s.(StopSubscriber); ok {
			r.OnStop(o.teamID)
		}
	})
	o.subs = nil
	close(o.done)
}
