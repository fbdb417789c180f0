package clock

import (
	"context"
	"errors"
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
