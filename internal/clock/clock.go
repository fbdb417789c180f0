// Package clock provides the runtime's coarse wall clock: one goroutine
// refreshes an atomic every millisecond while at least one user holds it, so
// the hot path reads the time with a single atomic load instead of time.Now.
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

var (
	now atomic.Int64 // unix nanoseconds; 0 when not running

	mu      sync.Mutex
	holders int
	stop    chan struct{}
	done    chan struct{}
	base    time.Time
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
	base = time.Now()
	now.Store(base.UnixNano())
	stop = make(chan struct{})
	done = make(chan struct{})
	go run(base, stop, done)
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
	now.Store(0)
}

func run(base time.Time, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(Resolution)
	defer t.Stop()
	wall := base.UnixNano()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			n := wall + int64(time.Since(base))
			if n > now.Load() {
				now.Store(n)
			}
		}
	}
}

// UnixNano returns the current coarse time in nanoseconds since the epoch.
func UnixNano() int64 {
	if n := now.Load(); n != 0 {
		return n
	}
	return time.Now().UnixNano()
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
