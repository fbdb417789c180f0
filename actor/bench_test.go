package actor_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// How speed is measured here: the payload is
// built before the timer, everything the runtime adds per send is inside the
// loop, and the timer stops only when the receiver has processed all b.N
// messages. Each Benchmark<X> has a Benchmark<RawX> baseline: the same work
// over a bare goroutine and buffered channel.

type benchMsg struct {
	message.Base
	N int `json:"n"`
}

func init() { message.Register[benchMsg]("actor_test.benchMsg") }

// counter is an actor that counts messages and closes done at total.
type counter struct {
	n     int
	total int
	done  chan struct{}
}

func (c *counter) Receive(_ *actor.Context, msg any) (any, error) {
	c.n++
	if c.n == c.total {
		close(c.done)
	}
	return nil, nil
}

// prebuilt returns n messages, built (and their memory touched) before the
// timer starts: one fresh payload per send, as a caller builds them.
func prebuilt(n int) []benchMsg {
	msgs := make([]benchMsg, n)
	for i := range msgs {
		msgs[i].N = i
	}
	return msgs
}

func quietSystem() *actor.System {
	return actor.NewSystem(actor.SystemConfig{Logger: discard})
}

func shutdown(tb testing.TB, sys *actor.System) {
	tb.Helper()
	if err := sys.Shutdown(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkRawTell is Tell's baseline: a fresh message allocated per send
// (as in BenchmarkTell) through a buffered channel to one goroutine.
func BenchmarkRawTell(b *testing.B) {
	ch := make(chan *benchMsg, 64)
	done := make(chan struct{})
	total := b.N
	go func() {
		n := 0
		for range ch {
			n++
			if n == total {
				close(done)
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < total; i++ {
		ch <- &benchMsg{N: i}
	}
	<-done
	b.StopTimer()
	close(ch)
}

// BenchmarkTell: an outside sender tells one actor; every message is
// allocated fresh in the loop (as in BenchmarkRawTell) and stamped by the
// runtime (id, timestamp, sender, team), with telemetry disabled (no
// team). Target: <= 1.5x BenchmarkRawTell.
func BenchmarkTell(b *testing.B) {
	sys := quietSystem()
	defer shutdown(b, sys)
	c := &counter{total: b.N, done: make(chan struct{})}
	addr, err := sys.Spawn(c, actor.Config{Name: "counter"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := sys.Tell(addr, &benchMsg{N: i}); err != nil {
			b.Fatal(err)
		}
	}
	<-c.done
}

func BenchmarkRawAsk(b *testing.B) {
	type req struct {
		m     *benchMsg
		reply chan int
	}
	ch := make(chan req, 64)
	go func() {
		n := 0
		for r := range ch {
			n++
			r.reply <- n
		}
	}()
	m := &benchMsg{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := req{m, make(chan int, 1)}
		ch <- r
		<-r.reply
	}
	b.StopTimer()
	close(ch)
}

func BenchmarkAsk(b *testing.B) {
	sys := quietSystem()
	defer shutdown(b, sys)
	n := 0
	addr, _ := sys.Spawn(actor.Func(func(_ *actor.Context, msg any) (any, error) {
		n++
		return n, nil
	}), nil)
	ctx := context.Background()
	msgs := prebuilt(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range msgs {
		if _, err := sys.Ask(ctx, addr, &msgs[i]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawPingPong(b *testing.B) {
	a, c := make(chan *benchMsg, 64), make(chan *benchMsg, 64)
	done := make(chan struct{})
	total := b.N
	go func() {
		for m := range a {
			c <- m
		}
		close(c)
	}()
	go func() {
		n := 0
		for m := range c {
			n++
			if n == total {
				close(done)
				continue
			}
			a <- m
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	a <- &benchMsg{}
	<-done
	b.StopTimer()
	close(a)
}

// pinger bounces a message to its peer; the side holding total counts round
// trips. Each bounce is a fresh message sent with Context.Send (stamped,
// SentMessage path, no team so no records).
type kick struct{}

type pinger struct {
	peer  *message.Address
	n     int
	total int
	done  chan struct{}
	pool  []benchMsg
}

func (p *pinger) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *message.Address:
		p.peer = m
		return nil, nil
	case kick:
		next := &p.pool[0]
		return nil, c.Send(p.peer, next)
	case *benchMsg:
		if p.total > 0 {
			p.n++
			if p.n == p.total {
				close(p.done)
				return nil, nil
			}
		}
		next := &p.pool[p.n%len(p.pool)]
		*next = benchMsg{N: m.N + 1}
		return nil, c.Send(p.peer, next)
	}
	return nil, actor.ErrUnhandled
}

func BenchmarkPingPong(b *testing.B) {
	sys := quietSystem()
	defer shutdown(b, sys)
	// Messages are recycled from a ring that is far larger than what can
	// be in flight (one message), so no allocation is left in the loop.
	p1 := &pinger{total: b.N, done: make(chan struct{}), pool: make([]benchMsg, 64)}
	p2 := &pinger{pool: make([]benchMsg, 64)}
	a1, _ := sys.Spawn(p1, nil)
	a2, _ := sys.Spawn(p2, nil)
	ctx := context.Background()
	if _, err := sys.Ask(ctx, a1, a2); err != nil {
		b.Fatal(err)
	}
	if _, err := sys.Ask(ctx, a2, a1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	_ = sys.Tell(a2, kick{})
	<-p1.done
}

func BenchmarkRawSpawnStop(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ch := make(chan any, 64)
		done := make(chan struct{})
		go func() {
			for range ch {
			}
			close(done)
		}()
		close(ch)
		<-done
	}
}

// BenchmarkSpawnStop spawns a no-op actor and stops it (asked, so the
// timer includes the goroutine's end). Target: <= 2x
// BenchmarkRawSpawnStop.
func BenchmarkSpawnStop(b *testing.B) {
	sys := quietSystem()
	defer shutdown(b, sys)
	ctx := context.Background()
	noop := actor.Func(func(*actor.Context, any) (any, error) { return nil, nil })
	cfg := actor.Config{Name: "a", Role: "A"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		addr, err := sys.Spawn(noop, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := sys.Stop(ctx, addr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawIdleActor(b *testing.B) {
	const n = 10000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		chans := make([]chan any, n)
		var wg sync.WaitGroup
		for i := range chans {
			chans[i] = make(chan any, 64)
			wg.Add(1)
			go func(ch chan any) {
				defer wg.Done()
				for range ch {
				}
			}(chans[i])
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.Sys-before.Sys+(after.HeapInuse-before.HeapInuse)+(after.StackInuse-before.StackInuse))/2/n, "B/actor")
		for _, ch := range chans {
			close(ch)
		}
		wg.Wait()
	}
}

// BenchmarkIdleActor reports the memory one idle actor holds (its cell,
// mailbox, address, and goroutine stack), measured over 10,000 actors.
func BenchmarkIdleActor(b *testing.B) {
	const n = 10000
	noop := actor.Func(func(*actor.Context, any) (any, error) { return nil, nil })
	cfg := actor.Config{Name: "idle", Role: "Idle"}
	for b.Loop() {
		sys := quietSystem()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		addrs := make([]*message.Address, n)
		for i := range addrs {
			addrs[i], _ = sys.Spawn(noop, cfg)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapInuse) - float64(before.HeapInuse)
		stack := float64(after.StackInuse) - float64(before.StackInuse)
		b.ReportMetric((heap+stack)/n, "B/actor")
		b.ReportMetric(stack/n, "stackB/actor")
		runtime.KeepAlive(addrs)
		shutdown(b, sys)
	}
}

func BenchmarkRawFanIn(b *testing.B) {
	const senders = 8
	ch := make(chan *benchMsg, 64)
	done := make(chan struct{})
	per := b.N/senders + 1
	total := per * senders
	go func() {
		n := 0
		for range ch {
			n++
			if n == total {
				close(done)
			}
		}
	}()
	m := &benchMsg{}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ch <- m
			}
		}()
	}
	wg.Wait()
	<-done
	b.StopTimer()
	close(ch)
}

// BenchmarkFanIn: 8 outside senders tell one actor concurrently.
func BenchmarkFanIn(b *testing.B) {
	const senders = 8
	sys := quietSystem()
	defer shutdown(b, sys)
	per := b.N/senders + 1
	c := &counter{total: per * senders, done: make(chan struct{})}
	addr, _ := sys.Spawn(c, nil)
	msgs := make([][]benchMsg, senders)
	for s := range msgs {
		msgs[s] = prebuilt(per)
	}
	var started atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(ms []benchMsg) {
			defer wg.Done()
			started.Add(1)
			for i := range ms {
				_ = sys.Tell(addr, &ms[i])
			}
		}(msgs[s])
	}
	wg.Wait()
	<-c.done
}

type rawPayload struct{ n int }

// BenchmarkTellValue: the same pre-built non-Message value told b.N times:
// the mailbox and turn cost alone, with nothing to stamp.
func BenchmarkTellValue(b *testing.B) {
	sys := quietSystem()
	defer shutdown(b, sys)
	c := &counter{total: b.N, done: make(chan struct{})}
	addr, _ := sys.Spawn(c, nil)
	p := &rawPayload{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := sys.Tell(addr, p); err != nil {
			b.Fatal(err)
		}
	}
	<-c.done
}

// BenchmarkTellSameMessage: one pre-built Message told b.N times; every send
// after the first stamps a shallow copy, since a sent message is immutable.
func BenchmarkTellSameMessage(b *testing.B) {
	sys := quietSystem()
	defer shutdown(b, sys)
	c := &counter{total: b.N, done: make(chan struct{})}
	addr, _ := sys.Spawn(c, nil)
	m := &benchMsg{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := sys.Tell(addr, m); err != nil {
			b.Fatal(err)
		}
	}
	<-c.done
}
