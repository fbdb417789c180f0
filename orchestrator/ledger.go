package orchestrator

import (
	"sync"
	"sync/atomic"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// chunkSize is the number of records per ledger chunk. A chunk is allocated
// once and never moved, so a reader that saw a record count under the lock
// can read the records below it without the lock.
const chunkSize = 1024

// kindReady marks a ledger entry whose Message is a ready-made telemetry
// message (emitted by the orchestrator itself or replayed by a restore)
// rather than a runtime record.
const kindReady actor.RecordKind = 0

// chunk is a fixed block of records and the ids of the telemetry messages
// they stand for: record i has id message.IDAt(ids+i), so a record
// materialized twice has the same id without storing it.
type chunk struct {
	recs [chunkSize]actor.Record
	ids  uint64
}

// ledger is the team's record of every telemetry record, in the order the
// runtime emitted them (B80). Emitters append under one mutex: the ledger
// order is then a single total order that keeps causal order (a Sent record
// is appended before its message is enqueued, hence before the receiver's
// Received), per-actor order, and the barrier rule (a record emitted before
// an actor answers an ask is in the ledger before any later query), and no
// record is ever dropped. The orchestrator goroutine consumes the ledger
// from a cursor to keep its roster, states and subscribers up to date.
type ledger struct {
	mu     sync.Mutex
	chunks []*chunk // chunks[0] holds absolute index base
	base   int64    // absolute index of chunks[0].recs[0]
	n      int64    // records appended (absolute)
	free   []*chunk // retired chunks kept for reuse (no first-touch faults)

	// pending is set when the orchestrator has been told to drain and has
	// not started yet; it keeps the wake-up to one tell per drain pass.
	pending atomic.Bool
	wake    func()
}

// append adds r and wakes the orchestrator if it is not already due to run.
func (l *ledger) append(r actor.Record) {
	l.mu.Lock()
	i := int(l.n - l.base)
	ci := i / chunkSize
	if ci == len(l.chunks) {
		l.chunks = append(l.chunks, l.newChunk())
	}
	l.chunks[ci].recs[i%chunkSize] = r
	l.n++
	l.mu.Unlock()
	if !l.pending.Load() && !l.pending.Swap(true) && l.wake != nil {
		l.wake()
	}
}

// newChunk returns a recycled chunk or a new one; l.mu is held.
func (l *ledger) newChunk() *chunk {
	var c *chunk
	if n := len(l.free); n > 0 {
		c, l.free = l.free[n-1], l.free[:n-1]
	} else {
		c = new(chunk)
	}
	c.ids = message.IDBlock(chunkSize)
	return c
}

// view is a consistent read-only window on the ledger: the records in
// [from, to) may be read without the lock, because records below the count
// seen under the lock are never written again and their chunks never move
// until retire (which only the orchestrator goroutine calls).
type view struct {
	chunks []*chunk
	base   int64
	to     int64
}

func (l *ledger) view() view {
	l.mu.Lock()
	v := view{chunks: l.chunks, base: l.base, to: l.n}
	l.mu.Unlock()
	return v
}

// at returns the record with absolute index i and its telemetry id.
func (v view) at(i int64) (*actor.Record, uint64) {
	j := int(i - v.base)
	c := v.chunks[j/chunkSize]
	return &c.recs[j%chunkSize], c.ids + uint64(j%chunkSize)
}

// retire drops whole chunks below keepFrom (absolute index), clearing them
// so that the messages they point to can be collected, and keeps up to four
// for reuse. Only the orchestrator goroutine calls it, and only for records
// it has consumed.
func (l *ledger) retire(keepFrom int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	drop := int((keepFrom - l.base) / chunkSize)
	if drop <= 0 {
		return
	}
	if drop >= len(l.chunks) {
		drop = len(l.chunks) - 1 // keep the chunk being written
	}
	if drop <= 0 {
		return
	}
	for _, c := range l.chunks[:drop] {
		c.recs = [chunkSize]actor.Record{}
		if len(l.free) < 4 {
			l.free = append(l.free, c)
		}
	}
	l.chunks = append([]*chunk(nil), l.chunks[drop:]...)
	l.base += int64(drop) * chunkSize
}

// emitter is one team member's telemetry channel into the ledger.
type emitter struct{ l *ledger }

// Emit appends r to the ledger.
func (e emitter) Emit(r actor.Record) { e.l.append(r) }

// Close does nothing: the member's Stop record, already appended, is what
// the orchestrator watches.
func (e emitter) Close() {}
