// Package clock provides the runtime's coarse wall clock: one goroutine
// refreshes an atomic every millisecond while at least one user holds it, so
// the hot path reads the time with a single atomic load instead of time.Now.
// A clock nobody has read for sleepAfter ticks stops ticking (an idle
// process is not woken a thousand times a second for nothing); the next
// reading takes the time itself and wakes the goroutine.
//
// Readings never go backwards: they are a fixed wall-clock base plus the
// monotonic time elapsed since it. With no holder, Now falls back to
// time.Now, so the clock is correct whether or not it is running.
package clock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Resolution is the refresh period of the coarse clock.
const Resolution = time.Millisecond

// sleepAfter is how many ticks in a row without a reading put the clock's
// goroutine to sleep.
const sleepAfter = 64

// The clock's states, as its readers and its goroutine share them (state).
const (
	unread int32 = iota // no reading since the last tick
	read                // a reading since the last tick
	asleep              // the goroutine does not tick: the next reading wakes it
)

// origin is a running clock's base (its readings are wall plus the
// monotonic time since base) and how a reading wakes its goroutine.
type origin struct {
	base time.Time
	wall int64
	wake chan struct{}
}

// at is the clock's reading at this instant.
func (o *origin) at() int64 { return o.wall + int64(time.Since(o.base)) }

var (
	now   atomic.Int64 // unix nanoseconds; 0 when not running
	state atomic.Int32 // unread, read or asleep
	since atomic.Pointer[origin]
	// wakeMu serialises the readings that wake the goroutine and the
	// last Release.
	wakeMu sync.Mutex

	mu      sync.Mutex
	holders int
	stop    chan struct{}
	done    chan struct{}
)

// Acquire starts the clock goroutine if it is not running and registers one
// holder. Every Acquire must be paired with one Release.
func Acquire() {
	mu.Lock()
	defer mu.Unlock()
	holders++
	if holders > 1 {
		return
	}
	base := time.Now()
	o := &origin{base: base, wall: base.UnixNano(), wake: make(chan struct{}, 1)}
	since.Store(o)
	state.Store(unread)
	now.Store(o.wall)
	stop = make(chan struct{})
	done = make(chan struct{})
	go run(o, stop, done)
}

// Release unregisters one holder; the last one stops the goroutine and waits
// for it to exit.
func Release() {
	mu.Lock()
	defer mu.Unlock()
	if holders == 0 {
		return
	}
	holders--
	if holders > 0 {
		return
	}
	close(stop)
	<-done
	wakeMu.Lock()
	now.Store(0)
	state.Store(unread)
	since.Store(nil)
	wakeMu.Unlock()
}

// advance stores the reading n unless a later one is stored.
func advance(n int64) {
	for {
		old := now.Load()
		if old >= n || now.CompareAndSwap(old, n) {
			return
		}
	}
}

// run ticks until stop closes: every Resolution while the clock is read,
// asleep (no timer) from sleepAfter ticks without a reading until the next
// reading wakes it.
func run(o *origin, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(Resolution)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		advance(o.at())
		if state.Swap(unread) == read {
			idle = 0
			continue
		}
		if idle++; idle < sleepAfter {
			continue
		}
		select { // a wake left by a reading of an earlier sleep: not this one's
		case <-o.wake:
		default:
		}
		if !state.CompareAndSwap(unread, asleep) {
			idle = 0 // read meanwhile
			continue
		}
		t.Stop()
		select {
		case <-stop:
			return
		case <-o.wake:
		}
		advance(o.at())
		t.Reset(Resolution)
		idle = 0
	}
}

// wake is a reading of a clock whose goroutine sleeps: the reading is
// taken now (stored, so that no later reading is earlier) and the
// goroutine woken. It returns the reading.
func wake() int64 {
	wakeMu.Lock()
	if state.Load() == asleep {
		o := since.Load()
		advance(o.at()) // asleep: running, so o is set
		state.Store(read)
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	wakeMu.Unlock()
	if n := now.Load(); n != 0 {
		return n
	}
	return time.Now().UnixNano()
}

// UnixNano returns the current coarse time in nanoseconds since the epoch.
func UnixNano() int64 {
	n := now.Load()
	if n == 0 {
		return time.Now().UnixNano()
	}
	switch state.Load() {
	case unread:
		state.CompareAndSwap(unread, read)
	case asleep:
		return wake()
	}
	return n
}

// Now returns the current coarse time in UTC.
func Now() time.Time {
	return time.Unix(0, UnixNano()).UTC()
}

// Sleep waits for d, or until ctx is done, whichever is first. It returns
// nil after a full wait and context.Cause(ctx) when ctx ended first (the
// cause says why: ctx.Err() unless the context was cancelled with one). A
// d of zero or less returns at once, with the cause if ctx is already done.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
