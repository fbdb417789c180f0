package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/message"
)

// benchWorker is a worker of the passivation benchmarks on an embedded
// server (R1), passivating teams idle for idle (0: never), with the
// hooks' channels.
type benchWorker struct {
	w          *Worker
	c          *Client
	inputs     chan uuid.UUID
	passivated chan uuid.UUID
}

func startBench(b *testing.B, ctx context.Context, idle time.Duration, buffer int, opts ...func(*Config)) *benchWorker {
	b.Helper()
	if url := os.Getenv(benchURLEnv); url != "" { // a server of its own process: the figures are the worker's alone
		nc, err := nats.Connect(url)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return benchOn(b, ctx, nc, "bench-"+uuid.NewString()[:8], idle, buffer, opts...)
	}
	e, err := RunEmbedded(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	nc := connectB(b, e)
	b.Cleanup(nc.Close)
	return benchOn(b, ctx, nc, "bench", idle, buffer, opts...)
}

// benchURLEnv, when set, is the URL of a NATS server (JetStream on) the
// benchmarks use instead of an embedded one, e.g. a nats-server process
// built from the module (go build -o /tmp/nats-server
// github.com/nats-io/nats-server/v2; /tmp/nats-server -js -sd DIR).
const benchURLEnv = "AKGENTIC_BENCH_NATS_URL"

// benchOn starts a benchWorker named owner on nc, each of opts changing
// its Config.
func benchOn(b *testing.B, ctx context.Context, nc *nats.Conn, owner string, idle time.Duration, buffer int, opts ...func(*Config)) *benchWorker {
	b.Helper()
	bw := &benchWorker{inputs: make(chan uuid.UUID, buffer), passivated: make(chan uuid.UUID, buffer)}
	sys := actor.NewSystem(actor.SystemConfig{Logger: discard})
	b.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	cfg := Config{Logger: discard, Owner: owner, IdleAfter: idle,
		inputDone:  func(id uuid.UUID) { bw.inputs <- id },
		passivated: func(id uuid.UUID) { bw.passivated <- id },
	}
	for _, o := range opts {
		o(&cfg)
	}
	var err error
	if bw.w, err = StartWorker(ctx, nc, sys, cfg, counters); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bw.w.Close(context.Background()) })
	if bw.c, err = NewClient(ctx, nc, Config{}); err != nil {
		b.Fatal(err)
	}
	return bw
}

// wait waits for id on ch.
func waitB(b *testing.B, ctx context.Context, ch chan uuid.UUID, id uuid.UUID) {
	b.Helper()
	for {
		select {
		case got := <-ch:
			if got == id {
				return
			}
		case <-ctx.Done():
			b.Fatalf("team or input %s: nothing within the bound", id)
		}
	}
}

// history writes n warning records into a running team's ledger, every
// one acknowledged.
func history(b *testing.B, ctx context.Context, w *Worker, id uuid.UUID, n int) {
	b.Helper()
	t := w.team(id)
	if t == nil {
		b.Fatal("the team does not run")
	}
	for i := range n {
		m := &message.WarningMessage{}
		m.ContentType, m.Content = "text/plain", fmt.Sprint("history ", i)
		if err := t.Emit(ctx, m); err != nil {
			b.Fatal(err)
		}
		if (i+1)%500 == 0 { // within the window of unacknowledged records
			if err := t.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			if err := w.ledgerOf(id).flush(ctx, ^uint64(0)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := acked(ctx, t, w.ledgerOf(id)); err != nil {
		b.Fatal(err)
	}
}

// benchTeam starts a benchWorker that never passivates, with a team of
// counters of n records of history.
func benchTeam(b *testing.B, ctx context.Context, n int, opts ...func(*Config)) (*benchWorker, uuid.UUID) {
	b.Helper()
	bw := startBench(b, ctx, 0, 16, opts...)
	id, err := bw.c.Create(ctx, "counters", nil)
	if err != nil {
		b.Fatal(err)
	}
	history(b, ctx, bw.w, id, n)
	return bw, id
}

// BenchmarkActivation measures an input to a passive team until its turn
// is durable (the input acknowledged): the wake, the restore from the
// stream (snapshots=off: the whole ledger; on: the snapshot its last
// passivation stored, and the records after it), the inbox consumer made
// again (while the ledger is read), the turn. Compare BenchmarkActiveInput, the same input to a team
// that runs. p50 and p99 are reported in ms.
func BenchmarkActivation(b *testing.B) {
	for _, snap := range []struct {
		name  string
		every int
	}{{"off", -1}, {"on", 0}} {
		for _, n := range []int{10, 1000, 10000} {
			b.Run(fmt.Sprintf("snapshots=%s/history=%d", snap.name, n), func(b *testing.B) {
				activation(b, n, func(c *Config) { c.SnapshotEvery = snap.every })
			})
		}
	}
}

// activation is BenchmarkActivation with n records of history, opts
// changing the workers' Config.
func activation(b *testing.B, n int, opts ...func(*Config)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The history on a worker that never passivates; closed, it
	// hands the team to one that passivates it once idle.
	first, id := benchTeam(b, ctx, n, opts...)
	if err := first.w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	bw := benchOn(b, ctx, first.w.nc, "idle", activationIdle, 16, opts...)
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		waitB(b, ctx, bw.passivated, id)
		b.StartTimer()
		start := time.Now()
		in, err := bw.c.Send(ctx, id, "a", "wake up")
		if err != nil {
			b.Fatal(err)
		}
		waitB(b, ctx, bw.inputs, in)
		lat = append(lat, time.Since(start))
	}
	report(b, lat)
}

// BenchmarkReadTeam measures the read of a restore (an activation's
// largest part): every record of a team's ledger of n records of history,
// from the stream, decoded and in ledger order; the ledger is the same on
// every read. It reports the process's CPU per read (server included),
// steadier than the time on a shared machine. Compare BenchmarkActivation.
func BenchmarkReadTeam(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprint("history=", n), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			bw, id := benchTeam(b, ctx, n)
			l := bw.w.ledgerOf(id)
			b.ReportAllocs()
			var r0, r1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			defer func() {
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
				b.ReportMetric(float64(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano())/1e6/float64(b.N), "cpu-ms/op")
			}()
			for b.Loop() {
				log, _, err := readRecords(ctx, l.st, l.recSubj)
				if err != nil || len(log) < n {
					b.Fatalf("read %d records, want at least %d: %v", len(log), n, err)
				}
			}
		})
	}
}

// activationIdle is the IdleAfter of BenchmarkActivation's worker: longer
// than an activation on a loaded machine, so that a team activated is not
// passivated again before its waking input is delivered (with 5 ms, some
// activations restored the team twice, each 40 to 250 ms).
const activationIdle = 50 * time.Millisecond

// BenchmarkActiveInput is BenchmarkActivation's baseline: the same input
// to a team that runs (never passivated).
func BenchmarkActiveInput(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bw := startBench(b, ctx, 0, 16)
	id, err := bw.c.Create(ctx, "counters", nil)
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		in, err := bw.c.Send(ctx, id, "a", "hello")
		if err != nil {
			b.Fatal(err)
		}
		waitB(b, ctx, bw.inputs, in)
		lat = append(lat, time.Since(start))
	}
	report(b, lat)
}

// report adds the p50 and p99 of lat, in ms.
func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchmarkPassiveTeams creates b.N teams on one worker, each passivated
// after its first input, and reports the create time per team, the heap
// and goroutines left per passive team (worker and embedded server in one
// process: an upper bound of the worker's) and the process's CPU while
// they all sleep (over idleWindow).
func BenchmarkPassiveTeams(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bw := startBench(b, ctx, 400*time.Millisecond, b.N+16) // a tick of 100 ms: the idle figure is not a 5 ms ticker's
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	b.ResetTimer()
	ids := make([]uuid.UUID, 0, b.N)
	start := time.Now()
	for range b.N {
		id, err := bw.c.Create(ctx, "counters", nil)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
		if _, err := bw.c.Send(ctx, id, "a", "first turn"); err != nil {
			b.Fatal(err)
		}
	}
	create := time.Since(start)
	b.StopTimer()
	left := map[uuid.UUID]bool{}
	for _, id := range ids {
		left[id] = true
	}
	for len(left) > 0 {
		select {
		case id := <-bw.passivated:
			delete(left, id)
		case <-ctx.Done():
			b.Fatalf("%d teams not passivated", len(left))
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(create.Microseconds())/1000/float64(b.N), "create-ms/team")
	b.ReportMetric((float64(after.HeapInuse)-float64(before.HeapInuse))/float64(b.N), "heap-B/passive-team")
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(b.N), "goroutines/passive-team")
	if extra := benchInt(b, passiveLeasesEnv); extra > 0 {
		passiveLeases(b, ctx, bw.w, extra)
		runtime.GC()
		var more runtime.MemStats
		runtime.ReadMemStats(&more)
		b.ReportMetric(float64(b.N+extra), "passive-leases")
		b.ReportMetric((float64(more.HeapInuse)-float64(before.HeapInuse))/float64(b.N+extra), "heap-B/passive-lease")
	}
	defer profileCPU(b, idleProfileEnv)()
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	t0 := time.Now()
	window := idleWindow
	if v := os.Getenv(idleWindowEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("%s=%q: want a positive duration (%v)", idleWindowEnv, v, err)
		}
		window = d
	}
	<-time.After(window) // a measure of idleness over a window, not a synchronisation
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(100*cpu.Seconds()/time.Since(t0).Seconds(), "idle-cpu-%")
}

// idleProfileEnv, when set, is the file BenchmarkPassiveTeams writes a CPU
// profile of its idle window to.
const idleProfileEnv = "AKGENTIC_BENCH_IDLE_PROFILE"

// idleWindow is how long BenchmarkPassiveTeams measures the CPU of its
// sleeping teams.
const idleWindow = 3 * time.Second

// idleWindowEnv, when set, is BenchmarkPassiveTeams' idle window (a
// duration: a longer one gives a CPU profile more samples).
const idleWindowEnv = "AKGENTIC_BENCH_IDLE_WINDOW"

// passiveLeasesEnv, when set, is how many passive leases of another
// (dead) worker's teams BenchmarkPassiveTeams stores in the bucket after
// its teams are passivated, written directly (no records, no inbox): what
// a passive team costs a worker is its lease in the worker's view, so the
// idle window then measures a worker that knows of that many more passive
// teams than it could create in the benchmark's time.
const passiveLeasesEnv = "AKGENTIC_BENCH_PASSIVE_LEASES"

// benchInt is the integer in the environment variable name, 0 when unset.
func benchInt(b *testing.B, name string) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a count (%v)", name, v, err)
	}
	return n
}

// passiveLeases stores n passive leases of teams of the counters template
// in w's bucket (several puts in flight) and waits until w's view holds
// them.
func passiveLeases(b *testing.B, ctx context.Context, w *Worker, n int) {
	b.Helper()
	data, err := json.Marshal(lease{Owner: "bench-gone", Template: "counters", Passive: true, Instance: uuid.NewString()})
	if err != nil {
		b.Fatal(err)
	}
	fan := newGroup(ctx)
	ids := make(chan uuid.UUID)
	var failed atomic.Pointer[error]
	for range 16 {
		fan.Go("put", func(ctx context.Context) {
			for id := range ids {
				if _, err := w.kv.Put(ctx, id.String(), data); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	for range n {
		ids <- uuid.New()
	}
	close(ids)
	_ = fan.Wait(ctx)
	if err := failed.Load(); err != nil {
		b.Fatalf("a passive lease could not be stored: %v", *err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for viewTeams(w) < n {
		if time.Now().After(deadline) {
			b.Fatalf("the worker's view holds %d teams, want at least %d", viewTeams(w), n)
		}
		if err := clock.Sleep(ctx, 50*time.Millisecond); err != nil { // polling a condition with a deadline
			b.Fatal(err)
		}
	}
}

// viewTeams is how many teams' leases w's view of the bucket holds.
func viewTeams(w *Worker) int {
	w.view.mu.Lock()
	defer w.view.mu.Unlock()
	n := 0
	for _, s := range w.view.index.teams {
		if s.has {
			n++
		}
	}
	return n
}
