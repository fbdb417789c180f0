package orchestrator

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

// defaultStopGrace is how long a team's stop waits for its members before
// it ends without them, unless WithStopGrace says otherwise: 30 s.
const defaultStopGrace = 30 * time.Second

// orchestrator is the root actor of a team: every actor spawned under
// it reports its telemetry to it (it is the team's telemetry.Sink, given to
// the runtime at spawn). It keeps the ledger of every record, the roster,
// the latest state per member, the team metadata, the AgentCard catalog and
// the subscribers, and announces the team's stop. It emits no telemetry of
// its own. Users reach it only through a *Team; its fields are
// touched only by its own goroutine, and after its stop queries read the
// immutable final view it leaves behind.
type orchestrator struct {
	stopCause atomic.Pointer[error] // why the team stops (OnStopRequest), read by Team.StopCause
	led       ledger
	retention int64
	self      *message.Address
	teamID    uuid.UUID
	logger    *slog.Logger

	members   map[uuid.UUID]*message.Address // roster by agent id
	order     []uuid.UUID                    // roster in join order, compacted lazily
	states    map[uuid.UUID]any              // latest state per agent
	reserved  map[string]bool                // member names claimed before the member joins
	meta      any
	subs      []Subscriber // given to New or Restore; their pumps start with the orchestrator
	pumps     []*pump      // one per subscriber, in subscription order
	leaving   []*pump      // detached lossless subscribers still delivering
	fromStart []Subscriber // the subscribers given to New or Restore: they saw the whole log
	catalog   catalog
	events    eventIndex // every EventMessage of the log, outside the window
	pumpWG    sync.WaitGroup

	restoring bool
	stopping  bool
	announced bool
	finished  bool
	final     atomic.Pointer[final] // set once, at the end of OnStop
}

// kindOrchestrator is the kind name of the orchestrator actor
// (actor.RegisterKind), recorded in its address; Restore recognises a
// decoded orchestrator address by it.
const kindOrchestrator = "Orchestrator"

// kindUserProxy is the kind name of UserProxy (actor.RegisterKind), so that
// Restore can recreate a team's user proxy.
const kindUserProxy = "UserProxy"

func init() {
	actor.RegisterKind(kindOrchestrator, func() actor.Actor { return newOrchestrator(&options{}) })
	actor.RegisterKind(kindUserProxy, func() actor.Actor { return &UserProxy{} })
}

// errTeamStop is the cause of a stop asked for with Team.Stop: unlike a raw
// stop (System.Stop, StopRecursively) it is announced.
var errTeamStop = fmt.Errorf("%w: %w", actor.ErrStopped, ErrStopRequested)

// ErrStopRequested is matched (errors.Is) by Team.StopCause when the team
// stopped because Team.Stop asked it to (not its system's shutdown, not a
// raw stop).
var ErrStopRequested = errors.New("the team was asked to stop")

func newOrchestrator(op *options) *orchestrator {
	return &orchestrator{
		retention: int64(cmp.Or(op.retention, defaultRetention)),
		subs:      append([]Subscriber(nil), op.subs...),
		fromStart: op.subs,
		members:   map[uuid.UUID]*message.Address{},
		states:    map[uuid.UUID]any{},
		reserved:  map[string]bool{},
	}
}

// Start implements telemetry.Sink: wake schedules a Drain on the
// orchestrator's goroutine.
func (o *orchestrator) Start(wake func()) { o.led.wake = wake }

// Attach implements telemetry.Sink: every member appends to the ledger.
func (o *orchestrator) Attach(*message.Address) telemetry.Emitter { return &emitter{l: &o.led} }

// Drain implements telemetry.Sink.
func (o *orchestrator) Drain() { o.drain() }

// OnStart records the orchestrator's identity and its own StartMessage,
// which no subscriber sees: there are none yet, unless given to New.
func (o *orchestrator) OnStart(c *actor.Context) error {
	o.self = c.Self()
	o.teamID = c.Self().TeamID()
	o.logger = c.Logger()
	o.led.mu.Lock()
	o.led.logger = o.logger
	o.led.mu.Unlock()
	for _, s := range o.subs {
		o.attach(s)
	}
	o.subs = nil
	start := &message.StartMessage{Config: c.Config()}
	o.stamp(start)
	o.led.append(logged(start))
	o.drain()
	return nil
}

// Receive rejects every message: the orchestrator is not a message
// recipient, and the runtime logs the unknown one.
func (o *orchestrator) Receive(_ *actor.Context, msg any) (any, error) {
	return nil, fmt.Errorf("orchestrator: %T: %w", msg, actor.ErrUnhandled)
}

// stamp makes msg the orchestrator's own: sender = orchestrator,
// team = its team, parent none, a fresh id and timestamp.
func (o *orchestrator) stamp(msg message.Message) {
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
func (o *orchestrator) drain() {
	o.led.pending.Store(false)
	for {
		r, id, ok := o.led.next()
		if !ok {
			break
		}
		o.consume(r, id)
	}
	o.flush()
	if o.led.unreported.Load() {
		o.reportWaits()
	}
	if o.led.retained()-chunkSize > o.retention { // no overflow for math.MaxInt
		o.led.retire(o.keepFrom(o.led.cursor - o.retention))
	}
}

// consume applies one entry.
func (o *orchestrator) consume(e *entry, id uint64) {
	who := e.rec.Emitter
	switch e.rec.Kind {
	case telemetry.Start:
		o.join(who)
	case telemetry.Stop:
		o.leave(who)
		if o.stopping { // recorded, not fanned out
			return
		}
	case telemetry.StateChanged:
		if who != nil {
			o.states[who.AgentID()] = e.rec.Value
		}
	case telemetry.Event:
		if _, live := e.rec.Value.(message.Ephemeral); !live { // an ephemeral event goes to subscribers only
			o.events.add(e, id)
		}
	}
	if len(o.pumps) > 0 {
		// For each subscriber, gathered and handed to its queue once per
		// drain: no subscriber code runs here. A lossless subscriber is
		// given the entry's index (it reads the entry in place: the ledger
		// keeps what it has not been given); a lossy one a copy (it may
		// fall behind without holding the ledger).
		at := o.led.cursor - 1
		for _, p := range o.pumps {
			if p.lossy == nil {
				p.addIndex(at)
			} else {
				p.addLossy(e, id)
			}
		}
	}
}

// join adds a member to the roster; the orchestrator is excluded by id.
// A restored member's snapshot address is replaced by the
// live one when the recreated actor starts.
func (o *orchestrator) join(a *message.Address) {
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

func (o *orchestrator) leave(a *message.Address) {
	if a == nil {
		return
	}
	delete(o.members, a.AgentID())
	if len(o.order) > 32 && len(o.order) > 2*len(o.members) {
		o.order = slices.DeleteFunc(o.order, func(id uuid.UUID) bool { _, ok := o.members[id]; return !ok })
	}
}

// roster returns the members in join order.
func (o *orchestrator) roster() []*message.Address {
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

// emit appends a message of the orchestrator's own to the log and fans it
// out.
func (o *orchestrator) emit(msg message.Message) {
	o.stamp(msg)
	addrs.Claim(msg)
	o.led.append(logged(msg))
	o.drain()
}

// reportWaits logs, and records as a WarningMessage of the orchestrator's,
// how long members waited for a full backlog since the last report: the
// one wait a send can feel, made visible.
func (o *orchestrator) reportWaits() {
	text := o.led.waitReport()
	if text == "" {
		return
	}
	o.logger.Warn(text)
	w := &message.WarningMessage{}
	w.ContentType, w.Content = "text/plain", text
	o.emit(w)
}

// attach gives s its queue and its goroutine; the orchestrator's
// goroutine only.
func (o *orchestrator) attach(s Subscriber) {
	p := newPump(s, o)
	p.low.Store(o.led.cursor) // it is given nothing before
	if p.lossy == nil {
		o.led.watch(p)
	}
	o.pumps = append(slices.Clone(o.pumps), p)
	o.pumpWG.Go(p.run)
}

// detach ends the queue of the first occurrence of s and returns the
// channel closed when its goroutine has ended (nil when s is not attached).
func (o *orchestrator) detach(s Subscriber) <-chan struct{} {
	i := slices.IndexFunc(o.pumps, func(p *pump) bool { return p.s == s })
	if i < 0 {
		return nil
	}
	p := o.pumps[i]
	o.pumps = slices.Delete(slices.Clone(o.pumps), i, i+1)
	o.led.unwatch(p)
	p.end()
	if p.lossy == nil {
		o.leaving = append(o.leaving, p)
	}
	return p.done
}

// keepFrom lowers keep to the lowest ledger index a lossless subscriber's
// goroutine may still read, a detached one's included until it ended.
func (o *orchestrator) keepFrom(keep int64) int64 {
	for _, p := range o.pumps {
		if p.lossy == nil {
			keep = min(keep, p.low.Load())
		}
	}
	o.leaving = slices.DeleteFunc(o.leaving, func(p *pump) bool {
		select {
		case <-p.done:
			return true
		default:
			keep = min(keep, p.low.Load())
			return false
		}
	})
	return keep
}

// flush hands every subscriber what the last drain gathered for it.
func (o *orchestrator) flush() {
	for _, p := range o.pumps {
		p.flush()
	}
	if len(o.led.lossless) > 0 { // read on this goroutine, which alone changes it
		o.led.progress()
	}
}

// fanOut queues one lifecycle hook for every subscriber, after what is
// queued already.
func (o *orchestrator) fanOut(it item) {
	for _, p := range o.pumps {
		p.add(it)
		p.flush()
	}
}

// pumpBarriers queues a barrier on the queue of every subscriber (every
// lossless one unless all) and returns them.
func (o *orchestrator) pumpBarriers(all bool) []<-chan struct{} {
	var out []<-chan struct{}
	for _, p := range o.pumps {
		if all || p.lossy == nil {
			out = append(out, p.barrier())
		}
	}
	return out
}

// setRestoring fans set_restoring out.
func (o *orchestrator) setRestoring(on bool) {
	o.drain()
	o.restoring = on
	o.fanOut(item{op: opRestoring, on: on})
}

// restoreMessage appends a recorded message as it is: no re-stamping;
// an EventMessage carrying a TeamStoppingEvent is skipped.
func (o *orchestrator) restoreMessage(msg message.Message) {
	if ev, ok := msg.(*message.EventMessage); ok && isStoppingEvent(ev.Event) {
		return
	}
	addrs.Claim(msg)
	o.led.append(logged(msg))
	o.drain()
}

func isStoppingEvent(v any) bool {
	switch v.(type) {
	case message.TeamStoppingEvent, *message.TeamStoppingEvent:
		return true
	}
	return false
}

// OnStopRequest implements actor.StopRequestHook: the team's stop has
// begun. A stop asked for with Team.Stop or by the system's shutdown
// is announced first: a TeamStoppingEvent is logged and every subscriber is
// told OnStopRequest. A raw stop (System.Stop, StopRecursively) announces
// nothing. Either way, from now on members' StopMessages are logged
// but not fanned out, and the runtime stops the members (tools last)
// and ends the orchestrator once they have all ended or the stop grace
// has run out.
func (o *orchestrator) OnStopRequest(_ *actor.Context, cause error) {
	o.stopCause.CompareAndSwap(nil, &cause)
	o.drain()
	if !o.announced && (errors.Is(cause, errTeamStop) || errors.Is(cause, actor.ErrShutdown)) {
		o.announced = true
		o.emit(&message.EventMessage{Event: message.TeamStoppingEvent{}})
		o.fanOut(item{op: opStopRequest})
	}
	o.stopping = true
}

// OnStop is the orchestrator's last step: OnStop is queued for every
// subscriber still attached, their goroutines deliver what is queued and
// end, and the final view is left for queries. A raw stop reaches it too.
func (o *orchestrator) OnStop(*actor.Context) {
	o.drain()
	o.led.close()
	versions.Delete(o.self.AgentID())
	o.finished = true
	for _, p := range o.pumps {
		p.stop()
	}
	// Every subscriber's goroutine delivers what is queued, OnStop last,
	// and ends: the team's stop waits for them (a lossless subscriber
	// gets everything).
	o.pumpWG.Wait()
	o.final.Store(o.freeze()) // keeps the Archive, if any, for history queries
	o.pumps = nil
}
