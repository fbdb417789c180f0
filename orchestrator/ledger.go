package orchestrator

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/akgentic/akgentic-go/internal/ids"
	"github.com/akgentic/akgentic-go/internal/telemetry"
)

// chunkSize is the number of entries per ledger chunk (10 KiB). A chunk is
// never moved, so entries below a count read under the lock can be read
// without it. Small enough that an idle team's ledger costs little; large
// enough that the lock is taken once per chunk by the consumer.
const chunkSize = 128

// defaultRetention is the in-memory window of a team's ledger, in records,
// unless WithRetention says otherwise: 4,096 records (320 KiB of entries,
// plus the messages they hold).
const defaultRetention = 1 << 12

// maxBacklog is the number of records members may append ahead of the
// orchestrator's consumption and of the slowest lossless subscriber's
// before a member's append waits for them: a slow lossless subscriber
// slows the team down instead of growing its memory without bound (nothing
// is dropped for it). A lossy subscriber never counts. The orchestrator's
// own appends never wait.
const maxBacklog = 4096

// stallTimeout is how long a member waits for room in the backlog before
// the consumer is taken as stalled (a var for tests).
var stallTimeout = 5 * time.Second

// maxFree is the number of retired chunks a ledger keeps for reuse: a team
// at its window recycles chunks instead of touching fresh memory.
const maxFree = 32

// entry is one ledger entry: a record a member emitted, or a message logged
// as it is (the orchestrator's own, or one replayed by a restore). A logged
// message's kind, sender and state are copied into the record when it is
// appended, so that consuming an entry never asks which of the two it is;
// only materializing does, through logged.
//
// An entry is exactly a telemetry.Record (80 bytes): the logged message
// rides in rec.Message, marked by rec.Recipient == loggedMark. A separate
// message field (96-byte entries) measured 7-15% slower on the telemetry
// benchmarks: more memory to clear and to write per record.
type entry struct {
	rec telemetry.Record
}

// chunk is a fixed block of entries; entry i's telemetry message has id
// ids.At(ids+i), so an entry materialized twice has the same id without
// storing it.
type chunk struct {
	ents [chunkSize]entry
	ids  uint64
}

// ledger is the team's record of every telemetry record in the order the
// runtime emitted them. Emitters append under one short mutex; the
// orchestrator goroutine consumes from a cursor, taking the lock once per
// batch to read the count.
//
// One total order gives every guarantee a team promises: causal order (a
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
	n      int64    // entries appended
	free   []*chunk // retired chunks kept for reuse (no first-touch faults)

	// done is the consumer's cursor as last published (under mu): members
	// wait while n-done >= maxBacklog, unless the ledger is closed (the
	// orchestrator has finished and consumes no more).
	done int64
	// published is the orchestrator's cursor as last published and lossless
	// the queues of the lossless subscribers: done is published less the
	// largest of their backlogs, so that a full queue makes members wait.
	published int64
	lossless  []*pump
	closed    bool
	stalled   bool          // the consumer stalled (see appendMember): no waiting until it consumes again
	room      chan struct{} // closed when the backlog has room again; nil when nobody waits
	logger    *slog.Logger

	// The waits members made, for the record that reports them (under
	// mu): since when members wait (zero while none does) and for whom,
	// and the waits that ended since the last report.
	waitSince  time.Time
	waitFor    string                   // the consumer the wait under way is for
	waited     map[string]time.Duration // by consumer
	waits      int
	lastReport time.Time
	unreported atomic.Bool // a wait ended and is not yet reported

	// version counts the Start and Stop records appended (and catalog
	// changes): a roster built at one version is the roster while the
	// version holds (link.TeamNames.Version).
	version atomic.Uint64

	// pending is set when the orchestrator has been woken to drain and has
	// not started yet; it keeps the wake-ups to one per drain pass.
	pending atomic.Bool
	wake    func() // the runtime's wake-up of the team root (telemetry.Sink)

	// Orchestrator goroutine only: the cursor and a view of the chunks and
	// count taken under the lock.
	cursor int64
	seen   logView
}

// append adds e and wakes the orchestrator if it is not already due to run.
// It never blocks for longer than another append.
func (l *ledger) append(e *entry) {
	l.mu.Lock()
	l.put(e)
	l.mu.Unlock()
	l.poke()
}

// appendMember is append for a member's record (and then, when not nil,
// the one after it): past maxBacklog records
// not yet consumed (by the orchestrator and every lossless subscriber) it
// waits for them to catch up, at most stallTimeout: a consumer stuck that
// long (a lossless subscriber's hook that blocks) is logged once and
// members go on past the bound until it consumes again, so that they can
// still stop.
func (l *ledger) appendMember(e, then *entry) {
	var more int64 // records after the first: room for all is needed
	if then != nil {
		more = 1
	}
	l.mu.Lock()
	if l.n+more-l.done >= maxBacklog && !l.closed && !l.stalled {
		l.wait(more)
	}
	l.put(e)
	if then != nil {
		l.put(then)
	}
	l.mu.Unlock()
	l.poke()
}

// wait blocks until the backlog has room for 1+more records, the ledger
// is closed or the consumer stalled; l.mu is held, and released while
// waiting.
func (l *ledger) wait(more int64) {
	if l.waitSince.IsZero() {
		l.waitSince, l.waitFor = time.Now(), l.slowest()
	}
	l.mu.Unlock()
	l.poke()
	timer := time.NewTimer(stallTimeout)
	defer timer.Stop()
	l.mu.Lock()
	for l.n+more-l.done >= maxBacklog && !l.closed && !l.stalled {
		if l.waitSince.IsZero() { // released for one record while this one needs room for two
			l.waitSince, l.waitFor = time.Now(), l.slowest()
		}
		if l.room == nil {
			l.room = make(chan struct{})
		}
		room := l.room
		l.mu.Unlock()
		select {
		case <-room:
			l.mu.Lock()
		case <-timer.C:
			l.mu.Lock()
			if !l.stalled && l.n+more-l.done >= maxBacklog {
				l.stalled = true
				logger := l.logger
				if logger == nil {
					logger = slog.Default()
				}
				logger.Warn("orchestrator: the team's telemetry backlog has been full for a while: a lossless subscriber's hook is not returning; members go on past the bound until it does",
					"pending", l.n-l.done, "bound", maxBacklog, "waited", stallTimeout)
			}
		}
	}
}

// release lets waiting members go on; l.mu is held.
func (l *ledger) release() {
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
	if !l.waitSince.IsZero() {
		if l.waited == nil {
			l.waited = map[string]time.Duration{}
		}
		l.waited[l.waitFor] += time.Since(l.waitSince)
		l.waits++
		l.waitSince = time.Time{}
		l.unreported.Store(true)
	}
}

// slowest names the consumer members wait for: the lossless subscriber
// with the largest backlog when it holds at least half of the bound (the
// orchestrator's own lag, the rest, is published only now and then), or
// else the orchestrator itself; l.mu is held.
func (l *ledger) slowest() string {
	who, lag := "the orchestrator", int64(maxBacklog/2)-1
	for _, p := range l.lossless {
		if b := p.backlog.Load(); b > lag {
			who, lag = fmt.Sprintf("the subscriber %T", p.s), b
		}
	}
	return who
}

// waitReport returns what members waited since the last report (how
// long in all, how many waits, and for whom, the longest first), at most
// once every reportEvery; "" when there is nothing to report yet.
func (l *ledger) waitReport() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.waits == 0 || now.Sub(l.lastReport) < reportEvery {
		return ""
	}
	var total time.Duration
	whom := slices.Collect(maps.Keys(l.waited))
	slices.SortFunc(whom, func(a, b string) int { return cmp.Compare(l.waited[b], l.waited[a]) })
	parts := make([]string, len(whom))
	for i, w := range whom {
		total += l.waited[w]
		parts[i] = fmt.Sprintf("%s for %s", l.waited[w].Round(time.Microsecond), w)
	}
	text := fmt.Sprintf("orchestrator: the team's members waited %s in %d waits (%s), each time %d records behind: a lossless subscriber slower than the team slows it down",
		total.Round(time.Microsecond), l.waits, strings.Join(parts, ", "), maxBacklog)
	clear(l.waited)
	l.waits, l.lastReport = 0, now
	l.unreported.Store(false)
	return text
}

// reportEvery is how often at most the team reports its members' waits (a
// var for tests).
var reportEvery = time.Second

// put stores e at the end; l.mu is held.
func (l *ledger) put(e *entry) {
	i := int(l.n - l.base)
	ci := i / chunkSize
	if ci == len(l.chunks) {
		l.chunks = append(l.chunks, l.newChunk())
	}
	// Field by field: a whole-entry copy is a bulk write barrier (heap
	// bits looked up word by word) whenever the collector marks, and a
	// team under load keeps it marking much of the time.
	d, r := &l.chunks[ci].ents[i%chunkSize].rec, &e.rec
	d.Kind, d.Time = r.Kind, r.Time
	d.Emitter, d.Recipient = r.Emitter, r.Recipient
	d.Parent, d.Message, d.Value = r.Parent, r.Message, r.Value
	l.n++
	if k := e.rec.Kind; k == telemetry.Start || k == telemetry.Stop {
		l.version.Add(1)
	}
}

// poke wakes the orchestrator unless it is already due to drain.
func (l *ledger) poke() {
	if !l.pending.Load() && !l.pending.Swap(true) && l.wake != nil {
		l.wake()
	}
}

// close releases every waiting member for good: the orchestrator has
// finished and consumes no more.
func (l *ledger) close() {
	l.mu.Lock()
	l.closed = true
	l.release()
	l.mu.Unlock()
}

// newChunk returns a recycled chunk or a new one; l.mu is held.
func (l *ledger) newChunk() *chunk {
	var c *chunk
	if n := len(l.free); n > 0 {
		c, l.free = l.free[n-1], l.free[:n-1]
	} else {
		c = new(chunk)
	}
	c.ids = ids.Block(chunkSize)
	return c
}

// look refreshes the consumer's view and publishes its cursor, releasing
// members that wait on the backlog.
func (l *ledger) look() {
	l.mu.Lock()
	l.seen = logView{chunks: l.chunks, base: l.base, n: l.n}
	l.published = l.cursor
	l.settle()
	l.mu.Unlock()
}

// settle recomputes done from the orchestrator's cursor and the lossless
// queues' backlogs, and releases waiting members when there is room; l.mu
// is held.
func (l *ledger) settle() {
	var lag int64
	for _, p := range l.lossless {
		lag = max(lag, p.backlog.Load())
	}
	done := l.published - lag
	if done > l.done {
		l.stalled = false // consuming again
	}
	l.done = done
	if l.n-l.done < maxBacklog {
		l.release()
	} else if !l.waitSince.IsZero() {
		l.waitFor = l.slowest() // whom members wait for now
	}
}

// progress is a lossless subscriber's goroutine saying it has delivered
// a batch: waiting members may have room again.
func (l *ledger) progress() {
	l.mu.Lock()
	l.settle()
	l.mu.Unlock()
}

// watch adds a lossless queue to the ledger's bound, unwatch removes it.
func (l *ledger) watch(p *pump) {
	l.mu.Lock()
	l.lossless = append(l.lossless, p)
	l.mu.Unlock()
}

func (l *ledger) unwatch(p *pump) {
	l.mu.Lock()
	l.lossless = slices.DeleteFunc(slices.Clone(l.lossless), func(x *pump) bool { return x == p })
	l.settle()
	l.mu.Unlock()
}

// next returns the entry at the cursor and its id and advances, or false
// when the consumer has caught up with every append made before the call.
func (l *ledger) next() (*entry, uint64, bool) {
	// Caught up with the view, or at a chunk boundary: publish the cursor
	// (waiting members see the room a long pass makes) and refresh.
	if l.cursor == l.seen.n || l.cursor%chunkSize == 0 {
		l.look()
		if l.cursor == l.seen.n {
			return nil, 0, false
		}
	}
	e, id := l.seen.at(l.cursor)
	l.cursor++
	return e, id, true
}

// consumed returns a view of the retained entries before the cursor. The
// entries it covers never change again, so the view may be read from any
// goroutine.
func (l *ledger) consumed() logView {
	l.look()
	v := l.seen
	v.n = l.cursor
	return v
}

// retained returns the number of consumed entries kept in memory.
func (l *ledger) retained() int64 { return l.cursor - l.seen.base }

// retire drops whole chunks below keepFrom (never past the cursor) and
// keeps up to maxFree of them for reuse. A kept chunk is not cleared: its
// stale entries (at most maxFree*chunkSize) are overwritten when it is
// reused; the others become garbage with the messages they point to.
// The orchestrator's goroutine reads views (a query's view is used up
// before the next drain can retire), and so do lossless subscribers'
// goroutines, but only at or past their low mark, which keepFrom never
// passes; the final view is made after the last retire. So no view reads
// a reused chunk.
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
			if len(l.free) < maxFree {
				l.free = append(l.free, c)
			}
		}
		// A new slice: a lossless subscriber's goroutine may hold a view of
		// the old one (it reads only chunks this keeps).
		l.chunks = append(make([]*chunk, 0, len(l.chunks)-drop+4), l.chunks[drop:]...)
		l.base += int64(drop) * chunkSize
	}
	l.seen = logView{chunks: l.chunks, base: l.base, n: l.n}
	l.mu.Unlock()
}

// view returns a view of every entry appended so far, for a lossless
// subscriber's goroutine: it reads only entries at or past its low mark,
// which the ledger does not retire.
func (l *ledger) view() logView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return logView{chunks: l.chunks, base: l.base, n: l.n}
}

// logView is a read-only window on the ledger: entries base..n-1.
type logView struct {
	chunks []*chunk
	base   int64
	n      int64
}

func (v *logView) at(i int64) (*entry, uint64) {
	j := int(i - v.base)
	c := v.chunks[j/chunkSize]
	return &c.ents[j%chunkSize], c.ids + uint64(j%chunkSize)
}

// each calls fn for every entry of the view, in order.
func (v logView) each(fn func(e *entry, id uint64)) {
	for i := v.base; i < v.n; i++ {
		fn(v.at(i))
	}
}

// emitter is one team member's telemetry channel into the ledger.
type emitter struct {
	l       *ledger
	started bool
}

// Emit appends r to the ledger. The member's Start record is emitted by
// its creator, which may be the orchestrator itself (Team.Spawn, Hire):
// it never waits for the backlog, since the orchestrator cannot wait for
// its own consumption.
func (e *emitter) Emit(r telemetry.Record) {
	if !e.started {
		e.started = true
		e.l.append(&entry{rec: r})
		return
	}
	e.l.appendMember(&entry{rec: r}, nil)
}

// EmitPair appends a and b in one step (a member's records: never its
// Start record).
func (e *emitter) EmitPair(a, b telemetry.Record) {
	e.l.appendMember(&entry{rec: a}, &entry{rec: b})
}
