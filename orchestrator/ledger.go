package orchestrator

import (
	"sync"
	"sync/atomic"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// chunkSize is the number of records per ledger chunk. A chunk is never
// moved, so records below a count read under the lock can be read without
// it.
const chunkSize = 1024

// kindReady marks a ledger entry whose Message is a ready-made telemetry
// message (emitted by the orchestrator itself or replayed by a restore)
// rather than a runtime record.
const kindReady actor.RecordKind = 0

// chunk is a fixed block of records; record i's telemetry message has id
// message.IDAt(ids+i), so a record materialized twice has the same id
// without storing it.
type chunk struct {
	recs [chunkSize]actor.Record
	ids  uint64
}

// ledger is the team's record of every telemetry record in the order the
// runtime emitted them (B80). Emitters append under one short mutex (an
// 80-byte copy); the orchestrator goroutine consumes from a cursor, taking
// the lock once per batch to read the count.
//
// One total order gives every guarantee the spec asks for: causal order (a
// Sent record is appended before its message is enqueued, hence before the
// receiver's Received), per-actor order, no drop, and the barrier rule (a
// query first consumes everything appended before it started, so what a
// member emitted before answering an ask is visible to a later query).
//
// A lock-free variant (atomic index claim, per-slot ready flags) measured
// twice as slow here: more cache lines touched per record than the lock.
type ledger struct {
	mu     sync.Mutex
	chunks []*chunk // chunks[0] holds index base
	base   int64
	n      int64    // records appended
	free   []*chunk // retired chunks kept for reuse (no first-touch faults)

	// pending is set when the orchestrator has been told to drain and has
	// not started yet; it keeps the wake-ups to one per drain pass.
	pending atomic.Bool
	wake    func()

	// Orchestrator goroutine only: the cursor and a snapshot of the
	// chunks and count taken under the lock.
	cursor   int64
	seenN    int64
	seenBase int64
	seen     []*chunk
}

// append adds r and wakes the orchestrator if it is not already due to run.
// It never blocks for longer than another append.
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

// look refreshes the consumer's snapshot.
func (l *ledger) look() {
	l.mu.Lock()
	l.seenN, l.seenBase, l.seen = l.n, l.base, l.chunks
	l.mu.Unlock()
}

// next returns the record at the cursor and advances, or false when the
// consumer has caught up with every append made before the call.
func (l *ledger) next() (*actor.Record, uint64, bool) {
	if l.cursor == l.seenN {
		l.look()
		if l.cursor == l.seenN {
			return nil, 0, false
		}
	}
	j := int(l.cursor - l.seenBase)
	c := l.seen[j/chunkSize]
	l.cursor++
	return &c.recs[j%chunkSize], c.ids + uint64(j%chunkSize), true
}

// each calls fn for every retained record before the cursor, in order.
func (l *ledger) each(fn func(r *actor.Record, id uint64)) {
	l.look()
	for i := l.seenBase; i < l.cursor; i++ {
		j := int(i - l.seenBase)
		c := l.seen[j/chunkSize]
		fn(&c.recs[j%chunkSize], c.ids+uint64(j%chunkSize))
	}
}

// retained returns the number of consumed records kept in memory.
func (l *ledger) retained() int64 { return l.cursor - l.seenBase }

// retire drops whole chunks below keepFrom (never past the cursor),
// clearing them so that the messages they point to can be collected, and
// keeps up to four for reuse.
func (l *ledger) retire(keepFrom int64) {
	if keepFrom > l.cursor {
		keepFrom = l.cursor
	}
	l.mu.Lock()
	drop := int((keepFrom - l.base) / chunkSize)
	if drop >= len(l.chunks) {
		drop = len(l.chunks) - 1 // keep the chunk being written
	}
	if drop > 0 {
		for _, c := range l.chunks[:drop] {
			c.recs = [chunkSize]actor.Record{}
			if len(l.free) < 4 {
				l.free = append(l.free, c)
			}
		}
		l.chunks = append([]*chunk(nil), l.chunks[drop:]...)
		l.base += int64(drop) * chunkSize
	}
	l.seenN, l.seenBase, l.seen = l.n, l.base, l.chunks
	l.mu.Unlock()
}

// emitter is one team member's telemetry channel into the ledger.
type emitter struct{ l *ledger }

// Emit appends r to the ledger.
func (e emitter) Emit(r actor.Record) { e.l.append(r) }

// Close does nothing: the member's Stop record, already appended, is what
// the orchestrator watches.
func (e emitter) Close() {}
