package clock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The coarse clock runs while held, never goes backwards, stays within its
// resolution of the wall clock, and stops (joining its goroutine) on the
// last Release.
func TestAcquireRelease(t *testing.T) {
	before := time.Now().UnixNano()
	Acquire()
	Acquire()
	a := UnixNano()
	if a < before-int64(Resolution) {
		t.Fatalf("coarse time %d before wall time %d", a, before)
	}
	b := UnixNano()
	if b < a {
		t.Fatal("clock went backwards")
	}
	Release()
	if now.Load() == 0 {
		t.Fatal("first Release stopped the clock with a holder left")
	}
	Release()
	if now.Load() != 0 {
		t.Fatal("last Release left the clock running")
	}
	Release() // extra releases are harmless
	if d := time.Since(Now()); d < -time.Second || d > time.Second {
		t.Fatalf("fallback Now is off by %v", d)
	}
}

func TestSleepEndsWithTheContextsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if err := Sleep(t.Context(), time.Second); err != nil {
			t.Fatalf("a full sleep: %v, want nil", err)
		}
		why := errors.New("stopped by the test")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Millisecond, func() { cancel(why) })
		if err := Sleep(ctx, time.Hour); !errors.Is(err, why) {
			t.Fatalf("a cancelled sleep: %v, want the cause %v", err, why)
		}
		if err := Sleep(ctx, 0); !errors.Is(err, why) {
			t.Fatalf("a zero sleep on a done context: %v, want the cause", err)
		}
		if err := Sleep(t.Context(), -time.Second); err != nil {
			t.Fatalf("a negative sleep: %v, want nil", err)
		}
	})
}

// A clock nobody reads stops ticking after sleepAfter ticks; while it
// sleeps its stored reading stays; the next reading is the time then (no
// earlier than any before it) and wakes it, and it ticks again.
func TestSleepsUnreadAndWakesOnReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		Acquire()
		defer Release()
		first := UnixNano()
		time.Sleep(2 * sleepAfter * Resolution)
		synctest.Wait()
		if got := state.Load(); got != asleep {
			t.Fatalf("state %d after %d ticks unread, want asleep (%d)", got, 2*sleepAfter, asleep)
		}
		stale := now.Load()
		time.Sleep(time.Second)
		synctest.Wait()
		if now.Load() != stale {
			t.Fatal("the clock ticked while asleep")
		}
		got := UnixNano()
		if got < stale || got < first {
			t.Fatalf("the reading that woke the clock, %d, is before an earlier one (%d, %d)", got, first, stale)
		}
		if late := time.Now().UnixNano() - got; late > int64(Resolution) {
			t.Fatalf("the reading that woke the clock is %v old", time.Duration(late))
		}
		synctest.Wait()
		if state.Load() == asleep {
			t.Fatal("a reading left the clock asleep")
		}
		time.Sleep(10 * Resolution)
		if now.Load() <= got {
			t.Fatal("the clock does not tick again after its wake")
		}
	})
}

// Readers pausing at random (the clock falling asleep and woken again
// and again) never see a reading earlier than one seen before theirs.
func TestNeverBackwardsAcrossSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		Acquire()
		defer Release()
		var seen atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 300 {
					before := seen.Load()
					n := UnixNano()
					if n < before {
						t.Errorf("reading %d after one of %d", n, before)
						return
					}
					for old := seen.Load(); n > old && !seen.CompareAndSwap(old, n); old = seen.Load() {
					}
					time.Sleep(time.Duration(rand.IntN(3*sleepAfter)) * Resolution / 2)
				}
			})
		}
		wg.Wait()
	})
}

// The last Release of a sleeping clock stops it: Now falls back to
// time.Now and a new Acquire ticks again.
func TestReleaseWhileAsleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		Acquire()
		time.Sleep(2 * sleepAfter * Resolution)
		synctest.Wait()
		if state.Load() != asleep {
			t.Fatal("the clock did not fall asleep")
		}
		Release()
		if now.Load() != 0 || state.Load() != unread {
			t.Fatalf("released: reading %d, state %d; want 0, unread", now.Load(), state.Load())
		}
		if got, want := UnixNano(), time.Now().UnixNano(); got != want {
			t.Fatalf("fallback reading %d, want time.Now's %d", got, want)
		}
		Acquire()
		defer Release()
		a := UnixNano()
		time.Sleep(5 * Resolution)
		if b := UnixNano(); b <= a {
			t.Fatalf("acquired again: reading %d after %d, want later", b, a)
		}
	})
}

// BenchmarkUnixNano is a reading of the running clock from every
// processor at once (the hot path: a load, and a store at most once a
// tick); BenchmarkRawTimeNow is its baseline, time.Now.
func BenchmarkUnixNano(b *testing.B) {
	Acquire()
	defer Release()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = UnixNano()
		}
	})
}

func BenchmarkRawTimeNow(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = time.Now().UnixNano()
		}
	})
}
