package orchestrator

import (
	"runtime"
	"sync/atomic"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// chunkSize is the number of records per ledger chunk.
const chunkSize = 1024

// kindReady marks a ledger entry whose Message is a ready-made telemetry
// message (emitted by the orchestrator itself or replayed by a restore)
// rather than a runtime record.
const kindReady actor.RecordKind = 0

// chunk is a fixed block of ledger slots. Record base+i is recs[i], valid
// once ready[i] is set; its telemetry message has id message.IDAt(ids+i),
// so a record materialized twice has the same id without storing it.
type chunk struct {
	recs  [chunkSize]actor.Record
	ready [chunkSize]atomic.Uint32
	base  int64
	ids   uint64
	next  atomic.Pointer[chunk]
}

func newChunk(base int64) *chunk {
	return &chunk{base: base, ids: message.IDBlock(chunkSize)}
}

// ledger is the team's record of every telemetry record in the order the
// runtime emitted them (B80). It is a multi-producer, single-consumer log
// without locks: an emitter claims the next index with one atomic add,
// writes the record into its slot and marks it ready; the orchestrator
// goroutine consumes ready slots in index order.
//
// One total order gives every guarantee the spec asks for: causal order (a
// Sent record is appended before its message is enqueued, hence before the
// receiver's Received), per-actor order, no drop, and the barrier rule (a
// query first consumes every index claimed before it started, so what a
// member emitted before answering an ask is visible to a later query).
type ledger struct {
	n    atomic.Int64 // indexes claimed
	_    [56]byte
	tail atomic.Pointer[chunk] // a chunk at or before the newest
	_    [56]byte
	// pending is set when the orchestrator has been told to drain and has
	// not started yet; it keeps the wake-ups to one per drain pass.
	pending atomic.Bool
	_       [60]byte
	wake    func()

	// Orchestrator goroutine only.
	head   *chunk // oldest retained chunk
	cur    *chunk // chunk holding cursor
	cursor int64  // next index to consume
}

func (l *ledger) init() {
	c := newChunk(0)
	l.tail.Store(c)
	l.head, l.cur = c, c
}

// append adds r to the ledger and wakes the orchestrator if it is not
// already due to run. It never blocks.
func (l *ledger) append(r actor.Record) {
	c := l.tail.Load() // before the claim: c.base <= i (see below)
	i := l.n.Add(1) - 1
	// The tail is only advanced by a producer whose index lies in the new
	// chunk, so when we read it, some index >= c.base was already claimed
	// and our i is >= c.base.
	for i >= c.base+chunkSize {
		nx := c.next.Load()
		if nx == nil {
			nc := newChunk(c.base + chunkSize)
			if c.next.CompareAndSwap(nil, nc) {
				nx = nc
			} else {
				nx = c.next.Load()
			}
		}
		l.tail.CompareAndSwap(c, nx)
		c = nx
	}
	j := i - c.base
	c.recs[j] = r
	c.ready[j].Store(1)
	if !l.pending.Load() && !l.pending.Swap(true) && l.wake != nil {
		l.wake()
	}
}

// next returns the slot at the cursor if it is ready. With wait, a slot
// already claimed by a producer that has not finished writing it is waited
// for (a few instructions, unless the producer was descheduled).
func (l *ledger) next(wait bool) (*actor.Record, uint64, bool) {
	for {
		c := l.cur
		j := l.cursor - c.base
		if j == chunkSize {
			nx := c.next.Load()
			if nx == nil {
				if !wait || l.cursor >= l.n.Load() {
					return nil, 0, false
				}
				runtime.Gosched()
				continue
			}
			l.cur = nx
			continue
		}
		if c.ready[j].Load() == 0 {
			if !wait || l.cursor >= l.n.Load() {
				return nil, 0, false
			}
			runtime.Gosched()
			continue
		}
		l.cursor++
		return &c.recs[j], c.ids + uint64(j), true
	}
}

// each calls fn for every retained record before the cursor, in order.
func (l *ledger) each(fn func(r *actor.Record, id uint64)) {
	for c := l.head; c != nil; c = c.next.Load() {
		for j := int64(0); j < chunkSize && c.base+j < l.cursor; j++ {
			fn(&c.recs[j], c.ids+uint64(j))
		}
		if c == l.cur {
			return
		}
	}
}

// retained returns the number of records kept in memory.
func (l *ledger) retained() int64 { return l.cursor - l.head.base }

// retire drops the chunks wholly below keepFrom, clearing them so that the
// messages they point to can be collected. Every slot in them has been
// consumed, so no producer writes to them again.
func (l *ledger) retire(keepFrom int64) {
	for l.head != l.cur && l.head.base+chunkSize <= keepFrom {
		old := l.head
		l.head = old.next.Load()
		old.recs = [chunkSize]actor.Record{}
	}
}

// emitter is one team member's telemetry channel into the ledger.
type emitter struct{ l *ledger }

// Emit appends r to the ledger.
func (e emitter) Emit(r actor.Record) { e.l.append(r) }

// Close does nothing: the member's Stop record, already appended, is what
// the orchestrator watches.
func (e emitter) Close() {}
