package cluster

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkFleetTurns measures turns across many active teams of one
// worker: b.N inputs sent round-robin to the counters of n teams by
// fleetSenders goroutines (each Send waits for JetStream to store the
// input), every turn a person's message delivered from the inbox, the
// counter's answer, the turn's close durable in the stream and the input
// acknowledged. turns/s is b.N over the time from the first send to the
// last acknowledgement. teams=1 is the one-team baseline; the teams are
// made before the timer starts.
func BenchmarkFleetTurns(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("teams=%d", n), func(b *testing.B) { benchTurns(b, n) })
	}
}

// profileCPU starts a CPU profile into the file the environment variable
// env names, when it is set, and returns what stops it.
func profileCPU(b *testing.B, env string) (stop func()) {
	b.Helper()
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// turnsProfileEnv, when set, is the file BenchmarkFleetTurns writes a CPU
// profile of its timed part to (the teams' creation left out).
const turnsProfileEnv = "AKGENTIC_BENCH_TURNS_PROFILE"

// fleetSenders is how many goroutines send BenchmarkFleetTurns' inputs.
const fleetSenders = 16

func benchTurns(b *testing.B, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bw := startBench(b, ctx, 0, b.N+16)
	teams := make([]uuid.UUID, n)
	for i := range teams {
		id, err := bw.c.Create(ctx, "counters", nil)
		if err != nil {
			b.Fatal(err)
		}
		teams[i] = id
	}
	defer profileCPU(b, turnsProfileEnv)()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, fleetSenders)
	for s := range fleetSenders {
		wg.Go(func() {
			for k := s; k < b.N; k += fleetSenders {
				if _, err := bw.c.Send(ctx, teams[k%n], "a", "hello"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range b.N {
		select {
		case <-bw.inputs:
		case err := <-errs:
			b.Fatal(err)
		case <-ctx.Done():
			b.Fatal("the inputs were not all acknowledged within the bound")
		}
	}
	b.StopTimer()
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
