// Package idle provides Timer, a countdown that fires after a quiet period
// and pauses while tasks are in flight: the building block of idle-stop
// subscribers, such as one that stops a team nobody has talked to for
// ten minutes.
package idle

import (
	"sync"
	"time"
)

// Timer calls a callback once a delay has passed without being cancelled,
// and counts tasks in flight so that it only runs while nothing is in
// progress: the building block of idle-stop subscribers. A typical
// use arms it at start, calls TaskStarted when a turn begins (a
// ReceivedMessage) and TaskCompleted when it ends (a ProcessedMessage or
// HandledMessage), and stops the team from the callback.
//
//   - Start (re)arms: the callback is due delay from now, replacing any
//     earlier deadline. Start arms whatever the task count is.
//   - Cancel disarms without closing: a resumable pause, undone by Start.
//   - TaskStarted increments the task count and disarms.
//   - TaskCompleted decrements the task count (never below 0) and, when it
//     reaches 0, re-arms as Start does.
//   - Close disarms for good: Start, and the re-arm of TaskCompleted, are
//     no-ops from then on. Close is idempotent. The task count still
//     changes after Close.
//
// Each expiry runs the callback once, on a goroutine of its own, never while
// the Timer's lock is held, so the callback may call any method of the
// Timer. An expiry that races with Start, Cancel, TaskStarted or Close and
// loses does not run the callback. A panic in the callback is not
// recovered. All methods are safe for concurrent use.
type Timer struct {
	delay    time.Duration
	callback func()

	mu      sync.Mutex
	idle    sync.Cond   // signalled when running drops to 0; L is &mu
	pending *time.Timer // the armed expiry, nil when disarmed
	gen     uint64      // incremented by every arm and disarm
	tasks   int
	running int // callbacks started and not yet returned
	closed  bool
}

// New returns a disarmed Timer that, once armed with Start, calls
// callback after delay. It panics when callback is nil.
func New(delay time.Duration, callback func()) *Timer {
	if callback == nil {
		panic("idle: New with a nil callback")
	}
	t := &Timer{delay: delay, callback: callback}
	t.idle.L = &t.mu
	return t
}

// Start arms the timer: the callback runs delay from now unless the timer
// is cancelled, restarted, paused by TaskStarted or closed first. Starting
// an armed timer restarts its countdown. After Close, Start does nothing.
func (t *Timer) Start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.arm()
}

// Cancel disarms the timer. It is a pause, not an end: Start or a
// TaskCompleted that brings the count to 0 arms it again.
func (t *Timer) Cancel() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.disarm()
}

// Close disarms the timer for good and is idempotent. After Close returns,
// the callback is never started again: a pending expiry is stopped, an
// expiry that already fired but has not yet started the callback is
// suppressed, and Start no longer arms. Close does not wait for a callback
// that is already running (it may be the caller); use Wait for that.
func (t *Timer) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.disarm()
}

// Wait blocks until no callback is running. After Close it guarantees that
// every callback goroutine the Timer started has returned. Calling Wait from
// the callback deadlocks.
func (t *Timer) Wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.running > 0 {
		t.idle.Wait()
	}
}

// TaskStarted records one more task in flight and disarms the timer.
func (t *Timer) TaskStarted() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tasks++
	t.disarm()
}

// TaskCompleted records one task less in flight (the count never goes
// below 0) and, when none is left, arms the timer as Start does.
func (t *Timer) TaskCompleted() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tasks > 0 {
		t.tasks--
	}
	if t.tasks == 0 {
		t.arm()
	}
}

// tasksInFlight returns the number of tasks in flight.
func (t *Timer) tasksInFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tasks
}

// armed reports whether an expiry is pending.
func (t *Timer) armed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending != nil
}

// isClosed reports whether Close was called.
func (t *Timer) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// arm replaces any pending expiry with one due delay from now; t.mu held.
func (t *Timer) arm() {
	if t.closed {
		return
	}
	t.disarm()
	gen := t.gen
	t.pending = time.AfterFunc(t.delay, func() { t.fire(gen) })
}

// disarm stops the pending expiry, and makes any expiry that already fired
// stale; t.mu held.
func (t *Timer) disarm() {
	t.gen++
	if t.pending != nil {
		t.pending.Stop()
		t.pending = nil
	}
}

// fire runs on the expiry's goroutine: it calls the callback unless the
// expiry went stale in the meantime.
func (t *Timer) fire(gen uint64) {
	t.mu.Lock()
	if gen != t.gen || t.closed {
		t.mu.Unlock()
		return
	}
	t.pending = nil
	t.running++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.running--
		if t.running == 0 {
			t.idle.Broadcast()
		}
		t.mu.Unlock()
	}()
	t.callback()
}
