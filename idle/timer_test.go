package idle

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The timer tests run in a synctest bubble: time.Sleep advances a fake clock
// instantly, and synctest.Wait returns once every goroutine of the bubble
// (the expiry goroutines included) is durably blocked, so "the callback has
// run" and "the callback has not run" are exact, with no real sleeping.

const timerDelay = 10 * time.Second

// timerCalls is a callback that counts its calls.
type timerCalls struct{ n atomic.Int32 }

func (c *timerCalls) fn() { c.n.Add(1) }
func (c *timerCalls) get() int {
	return int(c.n.Load())
}

// timerAdvance advances the fake clock by d and lets every goroutine settle.
func timerAdvance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func expectTimerCalls(t *testing.T, c *timerCalls, want int, when string) {
	t.Helper()
	if got := c.get(); got != want {
		t.Fatalf("%s: callback ran %d times, want %d", when, got, want)
	}
}

func TestTimerStartFiresOnceAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c timerCalls
		tm := New(timerDelay, c.fn)
		defer tm.Close()
		timerAdvance(2 * timerDelay)
		expectTimerCalls(t, &c, 0, "never started")
		if tm.armed() {
			t.Fatal("a new timer is armed")
		}

		tm.Start()
		if !tm.armed() {
			t.Fatal("not armed after Start")
		}
		timerAdvance(timerDelay - time.Nanosecond)
		expectTimerCalls(t, &c, 0, "just before the timerDelay")
		timerAdvance(time.Nanosecond)
		expectTimerCalls(t, &c, 1, "at the timerDelay")
		if tm.armed() {
			t.Fatal("still armed after firing")
		}
		timerAdvance(10 * timerDelay)
		expectTimerCalls(t, &c, 1, "long after: one expiry, one call")
	})
}

func TestTimerStartRestartsCountdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c timerCalls
		tm := New(timerDelay, c.fn)
		defer tm.Close()
		start := time.Now()
		tm.Start()
		timerAdvance(timerDelay / 2)
		tm.Start() // re-arm: due timerDelay from now, the first deadline is gone
		timerAdvance(timerDelay/2 + time.Second)
		expectTimerCalls(t, &c, 0, "past the first deadline")
		timerAdvance(timerDelay / 2)
		expectTimerCalls(t, &c, 1, "at the second deadline")
		if got := time.Since(start); got != timerDelay/2+timerDelay+time.Second {
			t.Fatalf("fake clock at %v", got)
		}
	})
}

func TestTimerCancelIsResumablePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c timerCalls
		tm := New(timerDelay, c.fn)
		defer tm.Close()
		tm.Cancel() // cancelling a disarmed timer is harmless
		tm.Start()
		timerAdvance(timerDelay / 2)
		tm.Cancel()
		if tm.armed() {
			t.Fatal("armed after Cancel")
		}
		timerAdvance(5 * timerDelay)
		expectTimerCalls(t, &c, 0, "cancelled")
		tm.Start() // resumes: a full timerDelay from now
		timerAdvance(timerDelay - time.Nanosecond)
		expectTimerCalls(t, &c, 0, "resumed, before the timerDelay")
		timerAdvance(time.Nanosecond)
		expectTimerCalls(t, &c, 1, "resumed, at the timerDelay")
	})
}

func TestTimerCloseIsTerminalAndIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c timerCalls
		tm := New(timerDelay, c.fn)
		tm.Start()
		timerAdvance(timerDelay / 2)
		tm.Close()
		if !tm.isClosed() || tm.armed() {
			t.Fatalf("after Close: Closed=%v Armed=%v", tm.isClosed(), tm.armed())
		}
		timerAdvance(5 * timerDelay)
		expectTimerCalls(t, &c, 0, "closed while armed")

		tm.Start()
		if tm.armed() {
			t.Fatal("Start armed a closed timer")
		}
		tm.TaskStarted()
		tm.TaskCompleted() // back to zero: the re-arm is a no-op too
		tm.Cancel()
		tm.Close()
		tm.Close()
		timerAdvance(5 * timerDelay)
		expectTimerCalls(t, &c, 0, "Start after Close")
		tm.Wait() // nothing running: returns at once
	})
}

func TestTimerTaskCounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c timerCalls
		tm := New(timerDelay, c.fn)
		defer tm.Close()
		tm.Start()
		timerAdvance(timerDelay / 2)

		tm.TaskStarted() // pauses
		tm.TaskStarted()
		if n := tm.tasksInFlight(); n != 2 {
			t.Fatalf("Tasks = %d, want 2", n)
		}
		if tm.armed() {
			t.Fatal("armed with tasks in flight")
		}
		timerAdvance(5 * timerDelay)
		expectTimerCalls(t, &c, 0, "tasks in flight")

		tm.TaskCompleted() // 1 left: stays paused
		if tm.armed() || tm.tasksInFlight() != 1 {
			t.Fatalf("one task left: Armed=%v Tasks=%d", tm.armed(), tm.tasksInFlight())
		}
		timerAdvance(5 * timerDelay)
		expectTimerCalls(t, &c, 0, "one task in flight")

		tm.TaskCompleted() // 0 left: re-armed for a full timerDelay
		if !tm.armed() || tm.tasksInFlight() != 0 {
			t.Fatalf("no task left: Armed=%v Tasks=%d", tm.armed(), tm.tasksInFlight())
		}
		timerAdvance(timerDelay - time.Nanosecond)
		expectTimerCalls(t, &c, 0, "re-armed, before the timerDelay")
		timerAdvance(time.Nanosecond)
		expectTimerCalls(t, &c, 1, "re-armed, at the timerDelay")
	})
}

func TestTimerTaskCompletedFlooredAtZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c timerCalls
		tm := New(timerDelay, c.fn)
		defer tm.Close()
		tm.TaskCompleted() // no task: stays at 0, and 0 re-arms
		tm.TaskCompleted()
		if n := tm.tasksInFlight(); n != 0 {
			t.Fatalf("Tasks = %d, want 0", n)
		}
		if !tm.armed() {
			t.Fatal("TaskCompleted at zero did not arm")
		}
		// The floor matters: one TaskStarted now pauses until one
		// TaskCompleted, not three.
		tm.TaskStarted()
		tm.TaskCompleted()
		timerAdvance(timerDelay)
		expectTimerCalls(t, &c, 1, "after one start and one completion")
	})
}

func TestTimerStartArmsWithTasksInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c timerCalls
		tm := New(timerDelay, c.fn)
		defer tm.Close()
		tm.TaskStarted()
		tm.Start() // Start arms whatever the count
		timerAdvance(timerDelay)
		expectTimerCalls(t, &c, 1, "Start with a task in flight")
		if n := tm.tasksInFlight(); n != 1 {
			t.Fatalf("Tasks = %d, want 1", n)
		}
	})
}

func TestTimerCountingContinuesAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c timerCalls
		tm := New(timerDelay, c.fn)
		tm.TaskStarted()
		tm.Close()
		tm.TaskStarted()
		tm.TaskStarted()
		if n := tm.tasksInFlight(); n != 3 {
			t.Fatalf("Tasks after Close = %d, want 3", n)
		}
		for range 5 {
			tm.TaskCompleted()
		}
		if n := tm.tasksInFlight(); n != 0 {
			t.Fatalf("Tasks = %d, want 0", n)
		}
		if tm.armed() {
			t.Fatal("a closed timer re-armed at zero")
		}
		timerAdvance(5 * timerDelay)
		expectTimerCalls(t, &c, 0, "closed")
	})
}

func TestTimerCallbackRunsOnItsOwnGoroutineAndMayUseTheTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tm *Timer
		var calls atomic.Int32
		tm = New(timerDelay, func() {
			// Re-entering the timer from the callback must not deadlock:
			// re-arm twice, then close from inside.
			if calls.Add(1) < 3 {
				tm.Start()
				return
			}
			tm.Close()
		})
		tm.Start()
		timerAdvance(10 * timerDelay)
		if n := calls.Load(); n != 3 {
			t.Fatalf("periodic callback ran %d times, want 3", n)
		}
		if !tm.isClosed() {
			t.Fatal("Close from the callback did not close")
		}
	})
}

func TestTimerCloseDoesNotWaitButWaitDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		entered := make(chan struct{})
		tm := New(timerDelay, func() {
			close(entered)
			<-release
		})
		tm.Start()
		time.Sleep(timerDelay)
		<-entered // the callback is running and blocked

		tm.Close() // returns although the callback is still running
		waited := make(chan struct{})
		go func() {
			tm.Wait()
			close(waited)
		}()
		synctest.Wait()
		select {
		case <-waited:
			t.Fatal("Wait returned while the callback was running")
		default:
		}
		close(release)
		<-waited // and now it returns: no callback goroutine is left
	})
}

func TestTimerCallbacksMayOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Each expiry runs the callback on its own goroutine: a slow
		// callback does not delay the next expiry, and Wait waits for all.
		release := make(chan struct{})
		var started atomic.Int32
		tm := New(timerDelay, func() {
			started.Add(1)
			<-release
		})
		tm.Start()
		timerAdvance(timerDelay)
		tm.Start()
		timerAdvance(timerDelay)
		if n := started.Load(); n != 2 {
			t.Fatalf("%d callbacks running, want 2", n)
		}
		tm.Close()
		close(release)
		tm.Wait()
	})
}

// TestTimerConcurrentUse hammers every method from several goroutines on the
// real clock, for the race detector. Once Close and Wait returned, the
// callback never runs again.
func TestTimerConcurrentUse(t *testing.T) {
	var calls atomic.Int32
	tm := New(time.Microsecond, func() { calls.Add(1) })
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				switch (g + i) % 5 {
				case 0:
					tm.Start()
				case 1:
					tm.Cancel()
				case 2:
					tm.TaskStarted()
				case 3:
					tm.TaskCompleted()
				case 4:
					_ = tm.armed()
					_ = tm.tasksInFlight()
				}
			}
		})
	}
	wg.Wait()
	tm.Close()
	tm.Wait()
	before := calls.Load()
	// Arm a second timer with the same tiny delay and wait for its
	// callback: by then an expiry of the closed timer would have fired too.
	done := make(chan struct{})
	probe := New(time.Microsecond, func() { close(done) })
	probe.Start()
	<-done
	probe.Close()
	probe.Wait()
	if got := calls.Load(); got != before {
		t.Fatalf("callback ran %d times after Close and Wait", got-before)
	}
}

// On the real clock the callback runs once, no sooner than the delay after
// Start.
func TestTimerRealClockCallback(t *testing.T) {
	const delay = 5 * time.Millisecond
	var calls atomic.Int32
	fired := make(chan time.Duration, 1)
	start := time.Now()
	tm := New(delay, func() {
		if calls.Add(1) == 1 {
			fired <- time.Since(start)
		}
	})
	tm.Start()
	if elapsed := <-fired; elapsed < delay {
		t.Fatalf("callback ran %v after Start, before the %v delay", elapsed, delay)
	}
	tm.Close()
	tm.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("callback ran %d times, want 1", n)
	}
}

func TestNewTimerNilCallbackPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewTimer(nil) did not panic")
		}
	}()
	New(time.Second, nil)
}

func ExampleTimer() {
	idle := make(chan struct{})
	tm := New(time.Millisecond, func() { close(idle) })
	tm.TaskStarted()   // a turn began: no idle expiry while it runs
	tm.TaskCompleted() // it ended: the count is back to 0, the timer is armed
	<-idle             // nothing else happened for a millisecond
	tm.Close()
	tm.Wait()
	fmt.Println("idle")
	// Output: idle
}
