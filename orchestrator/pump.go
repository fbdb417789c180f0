package orchestrator

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/internal/ids"
	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

// LossySubscriber is a Subscriber that would rather miss records than
// slow the team down (a viewer, an exporter): when its queue is full, the
// records that do not fit are dropped for it alone, and OnMissed tells it,
// in order, what it did not get. A Subscriber that is not a
// LossySubscriber is lossless: when its queue is full the team's members
// wait for it (a durable sink, such as the event log).
type LossySubscriber interface {
	Subscriber
	// OnMissed is called, in the subscriber's order, where the records it
	// describes would have been.
	OnMissed(m Missed)
}

// Missed describes a run of consecutive records a LossySubscriber did not
// get because its queue was full: how many, and the message ids of the
// first and the last of them, so that the subscriber can read them back
// with Team.Messages while they are in the team's window or Archive.
type Missed struct {
	Records     int
	First, Last uuid.UUID
}

// lossyQueue is how many records wait in a lossy subscriber's queue at
// most; further records are dropped for it until it takes them.
const lossyQueue = 1024

// maxIdleItems is the largest queue buffer a subscriber's goroutine keeps
// while it waits for items.
const maxIdleItems = 4 * maxStage

// maxStage is how many items the orchestrator gathers for a subscriber
// before it hands them to its queue (one lock and one wake-up per batch).
const maxStage = 256

type op uint8

const (
	opRecord      op = iota // e, id: a record of the log
	opRange                 // id..to: records of the log, read from the ledger (lossless)
	opMessage               // x: a message that is not a record (MetadataChanged)
	opRestoring             // on: SetRestoring
	opStopRequest           // OnStopRequest
	opStop                  // OnStop, the last item
	opBarrier               // x: a chan struct{} closed once every item before it was delivered
	opMissed                // x: the Missed that stands where records were dropped
	opDropped               // x: a *Missed, records a lossy pump dropped while staging (its queue was full)
)

// item is one entry of a subscriber's queue, stored by value: a record is
// a copy of its ledger entry (the values it points to are immutable), so
// the subscriber's goroutine never reads the ledger.
type item struct {
	e  entry
	id uint64 // opRange: the first ledger index
	to int64  // opRange: the ledger index after the last
	x  any
	op op
	on bool
}

// pump is one subscriber's queue and the goroutine, owned by the team,
// that drains it into the subscriber's hooks. The orchestrator only
// appends (stage, flush): it never calls the subscriber, never waits for
// it. A lossless pump's backlog counts toward the ledger's bound, so that
// members wait when it is full; a lossy one drops what does not fit and
// records the gap.
type pump struct {
	s      Subscriber
	rs     RecordSubscriber // s as a RecordSubscriber, or nil
	lossy  LossySubscriber  // s as a LossySubscriber, or nil: lossless
	teamID uuid.UUID
	logger *slog.Logger
	led    *ledger
	done   chan struct{} // closed when the goroutine has ended

	// backlog is the number of records given to a lossless pump (staged or
	// queued) and not yet delivered: the ledger adds it to its own.
	backlog atomic.Int64
	// low is the lowest ledger index a lossless pump may still read: the
	// ledger retires nothing from it on.
	low atomic.Int64

	// The orchestrator's goroutine only: items gathered in a drain, and
	// whether an opDropped is among them.
	stage   []item
	dropped bool
	// full says a lossy pump's queue was full when the orchestrator last
	// handed it items: records are then dropped as they are staged,
	// without a copy (cleared when the goroutine takes the queue).
	full atomic.Bool

	mu    sync.Mutex
	q     []item
	spare []item
	gap   Missed // records dropped since the last item queued (lossy)
	idle  bool
	quit  bool
	wake  chan struct{}

	last int // the size of the last batch delivered

	// The pump's goroutine only.
	mat  materializer
	view Record
}

func newPump(s Subscriber, o *orchestrator) *pump {
	p := &pump{s: s, teamID: o.teamID, logger: o.logger, led: &o.led, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	p.rs, _ = s.(RecordSubscriber)
	p.lossy, _ = s.(LossySubscriber)
	p.mat.snaps = map[*message.Address]*message.Address{}
	return p
}

// addIndex gathers the record at ledger index at for a lossless queue: a
// run of consecutive records is one item.
func (p *pump) addIndex(at int64) {
	p.backlog.Add(1)
	if n := len(p.stage); n > 0 && p.stage[n-1].op == opRange && p.stage[n-1].to == at {
		p.stage[n-1].to++
		if p.stage[n-1].to-int64(p.stage[n-1].id) >= maxStage {
			p.flush()
		}
		return
	}
	p.stage = append(p.stage, item{op: opRange, id: uint64(at), to: at + 1})
}

// add gathers one item for the queue; the orchestrator's goroutine only.
func (p *pump) add(it item) {
	if it.op == opRecord && p.lossy == nil {
		p.backlog.Add(1) // counted from now on: the ledger's bound holds while it is staged
	}
	p.stage = append(p.stage, it)
	if len(p.stage) >= maxStage {
		p.flush()
	}
}

// addLossy gathers a record for a lossy queue: a copy of the entry, or,
// while the queue is full, only its place in a run of dropped records.
func (p *pump) addLossy(e *entry, id uint64) {
	if !p.full.Load() {
		p.add(item{e: *e, id: id})
		return
	}
	mid := ids.At(id) // the record's message id, as item.messageID gives it
	if m := e.logged(); m != nil {
		mid = m.Envelope().ID
	}
	if n := len(p.stage); n > 0 && p.stage[n-1].op == opDropped {
		m := p.stage[n-1].x.(*Missed)
		m.Records++
		m.Last = mid
		return
	}
	p.dropped = true
	p.add(item{op: opDropped, x: &Missed{First: mid, Last: mid, Records: 1}})
}

// flush hands the gathered items to the queue and wakes the goroutine; a
// lossy pump drops the records that do not fit, never a control item.
func (p *pump) flush() {
	if len(p.stage) == 0 {
		return
	}
	p.mu.Lock()
	if len(p.q) == 0 && p.gap.Records == 0 && !p.dropped && (p.lossy == nil || len(p.stage) <= lossyQueue) {
		// The goroutine took everything queued: hand the staged items over
		// as they are, no copy.
		p.q, p.stage = p.stage, p.q[:0]
		if p.lossy != nil {
			p.full.Store(len(p.q) >= lossyQueue)
		}
		wake := p.idle
		p.idle = false
		p.mu.Unlock()
		if wake {
			p.wake <- struct{}{}
		}
		return
	}
	for i := range p.stage {
		it := &p.stage[i]
		switch {
		case it.op == opDropped:
			m := it.x.(*Missed)
			if p.gap.Records == 0 {
				p.gap.First = m.First
			}
			p.gap.Records += m.Records
			p.gap.Last = m.Last
		case it.op == opRecord && p.lossy != nil && len(p.q) >= lossyQueue:
			p.drop(it)
		case p.gap.Records > 0: // the gap stays where it was: before what came after it
			p.q = append(p.q, item{op: opMissed, x: p.gap}, *it)
			p.gap = Missed{}
		default:
			p.q = append(p.q, *it)
		}
	}
	if p.lossy != nil {
		p.full.Store(len(p.q) >= lossyQueue)
	}
	wake := p.idle
	p.idle = false
	p.mu.Unlock()
	clear(p.stage)
	p.stage, p.dropped = p.stage[:0], false
	if wake {
		p.wake <- struct{}{}
	}
}

// drop adds a record to the gap; p.mu is held.
func (p *pump) drop(it *item) {
	id := it.messageID()
	if p.gap.Records == 0 {
		p.gap.First = id
	}
	p.gap.Records++
	p.gap.Last = id
}

// messageID is the id of a record's message, as its subscribers and
// Team.Messages see it.
func (it *item) messageID() uuid.UUID {
	if m := it.e.logged(); m != nil {
		return m.Envelope().ID
	}
	return ids.At(it.id)
}

// stop queues OnStop, the last item, and ends the goroutine after it.
func (p *pump) stop() {
	p.add(item{op: opStop})
	p.end()
}

// end lets the goroutine end once it has delivered what is queued (an
// Unsubscribe: no OnStop).
func (p *pump) end() {
	p.flush()
	p.mu.Lock()
	p.quit = true
	wake := p.idle
	p.idle = false
	p.mu.Unlock()
	if wake {
		p.wake <- struct{}{}
	}
}

// barrier queues a barrier and returns the channel closed once the
// subscriber has been given everything queued before it.
func (p *pump) barrier() <-chan struct{} {
	ch := make(chan struct{})
	p.add(item{op: opBarrier, x: ch})
	p.flush()
	return ch
}

// run is the pump's goroutine: it takes the queue a batch at a time and
// delivers it, until the stop.
func (p *pump) run() {
	defer close(p.done)
	for {
		p.mu.Lock()
		for len(p.q) == 0 && p.gap.Records == 0 {
			if p.quit {
				p.mu.Unlock()
				return
			}
			if cap(p.spare) > maxIdleItems && p.last < cap(p.spare)/8 {
				p.spare = nil // parking after a burst (its last batch was small): keep no burst-sized buffer
			}
			p.idle = true
			p.mu.Unlock()
			<-p.wake
			p.mu.Lock()
		}
		batch := p.q
		p.q, p.spare = p.spare[:0], nil
		p.full.Store(false)
		if p.gap.Records > 0 { // after everything queued: it was dropped after them
			batch = append(batch, item{op: opMissed, x: p.gap})
			p.gap = Missed{}
		}
		p.mu.Unlock()
		records := 0
		var v logView
		for i := range batch {
			switch batch[i].op {
			case opRecord:
				records++
			case opRange:
				if v.chunks == nil {
					v = p.led.view()
				}
				records += p.deliverRange(&v, batch[i].id, batch[i].to)
				p.low.Store(batch[i].to)
				continue
			}
			p.deliver(&batch[i])
		}
		p.endBatch()
		clear(batch)
		p.mu.Lock()
		p.spare, p.last = batch[:0], len(batch)
		p.mu.Unlock()
		if p.lossy == nil && records > 0 {
			p.backlog.Add(-int64(records))
			p.led.progress()
		}
	}
}

// deliverRange delivers the records at ledger indexes from..to-1 of v and
// returns how many.
func (p *pump) deliverRange(v *logView, from uint64, to int64) int {
	for i := int64(from); i < to; {
		i = p.deliverFrom(v, i, to)
	}
	return int(to - int64(from))
}

// deliverFrom delivers the records at i..to-1 of v, one recover for the
// run: it returns where to go on from (to, or past a record whose hook
// panicked, the panic logged).
func (p *pump) deliverFrom(v *logView, i, to int64) (next int64) {
	defer func() {
		if r := recover(); r != nil {
			logPanic(p.logger, hookName(opRecord, p.rs != nil), p.s, r)
			next = i + 1
		}
	}()
	for ; i < to; i++ {
		e, id := v.at(i)
		p.record(e, id)
	}
	return i
}

// deliver calls the hook an item stands for, a panic recovered and logged.
func (p *pump) deliver(it *item) {
	defer func() { // no closure per call: the hot path
		if r := recover(); r != nil {
			logPanic(p.logger, hookName(it.op, p.rs != nil), p.s, r)
		}
	}()
	switch it.op {
	case opRecord:
		p.record(&it.e, it.id)
	case opMessage:
		p.s.OnMessage(it.x.(message.Message))
	case opRestoring:
		if r, ok := p.s.(RestoringSubscriber); ok {
			r.SetRestoring(p.teamID, it.on)
		}
	case opStopRequest:
		if r, ok := p.s.(StopRequestSubscriber); ok {
			r.OnStopRequest(p.teamID)
		}
	case opStop:
		if r, ok := p.s.(StopSubscriber); ok {
			r.OnStop(p.teamID)
		}
	case opBarrier:
		close(it.x.(chan struct{}))
	case opMissed:
		p.lossy.OnMissed(it.x.(Missed))
	}
}

// record gives the subscriber one record.
//
// The view is the pump's, rewritten field by field (a pointer written to
// the heap costs a write barrier while the collector marks, and it marks
// much of the time under load): the view is cleared once per batch (see
// endBatch), not after every record.
func (p *pump) record(e *entry, id uint64) {
	if p.view.m != nil { // the previous record's message was made
		p.view.m = nil
	}
	if p.view.mat == nil {
		p.view.mat = &p.mat
	}
	p.view.e, p.view.id = e, id
	if p.rs != nil {
		p.rs.OnRecord(&p.view)
	} else {
		p.s.OnMessage(p.view.Message())
	}
	if e.rec.Kind == telemetry.Stop {
		p.mat.forget(e.rec.Emitter)
	}
}

// endBatch drops the view's references once a batch is delivered.
func (p *pump) endBatch() {
	p.view = Record{}
}

func hookName(o op, records bool) string {
	switch o {
	case opRecord:
		if records {
			return "OnRecord"
		}
		return "OnMessage"
	case opMessage:
		return "OnMessage"
	case opRestoring:
		return "SetRestoring"
	case opStopRequest:
		return "OnStopRequest"
	case opStop:
		return "OnStop"
	case opMissed:
		return "OnMissed"
	}
	return "barrier"
}
