package orchestrator_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// The benchmarks follow DESIGN.md "How speed is measured": payloads are
// built before the timer; the timer stops when the receiver has handled all
// b.N messages and the ledger holds every record (a team query is the
// barrier); BenchmarkRawTell is the bare-channel baseline.

type benchMsg struct {
	message.Base
	N int `json:"n"`
}

func init() { message.Register[benchMsg]("orchestrator_test.benchMsg") }

type countTo struct {
	n, total int
	done     chan struct{}
}

func (c *countTo) Receive(*actor.Context, any) (any, error) {
	c.n++
	if c.n == c.total {
		close(c.done)
	}
	return nil, nil
}

type noopSub struct{}

func (noopSub) OnMessage(message.Message) {}

// BenchmarkTellWithTelemetry: agent A tells agent B of the same team b.N
// times; every Sent/Received/Processed record lands in the ledger and goes
// to one no-op subscriber.
func BenchmarkTellWithTelemetry(b *testing.B) {
	benchTell(b, true)
}

// BenchmarkTellWithTelemetryNoSubscriber is the same without subscriber:
// the ledger alone.
func BenchmarkTellWithTelemetryNoSubscriber(b *testing.B) {
	benchTell(b, false)
}

// BenchmarkTellWithTelemetryRetention keeps a window of 64Ki records in
// memory (WithRetention), as a team with a durable log would.
func BenchmarkTellWithTelemetryRetention(b *testing.B) {
	benchTell(b, true, orchestrator.WithRetention(1<<16))
}

func benchTell(b *testing.B, subscribe bool, opts ...orchestrator.Option) {
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	defer func() { _ = sys.Shutdown(context.Background()) }()
	team, err := orchestrator.New(sys, opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if subscribe {
		_ = team.Subscribe(ctx, noopSub{})
	}
	recv := &countTo{total: b.N, done: make(chan struct{})}
	bAddr, _ := team.Spawn(ctx, recv, named("b"))
	aAddr, _ := team.Spawn(ctx, actor.Func(func(*actor.Context, any) (any, error) { return nil, nil }), named("a"))
	msgs := make([]benchMsg, b.N)
	for i := range msgs {
		msgs[i].N = i
	}
	before, _ := team.Messages(ctx, orchestrator.Filter{})
	b.ReportAllocs()
	b.ResetTimer()
	err = proxy.Do(ctx, aAddr, func(c *actor.Context, _ actor.Actor) error {
		for i := range msgs {
			if err := c.Send(bAddr, &msgs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	<-recv.done
	if _, err := team.Members(ctx); err != nil { // barrier: the ledger holds every record
		b.Fatal(err)
	}
	b.StopTimer()
	if b.N <= 100_000 && len(opts) == 0 { // materializing millions of records would dominate the run
		after, _ := team.Messages(ctx, orchestrator.Filter{})
		if got := len(after) - len(before); got != 3*b.N {
			b.Fatalf("ledger grew by %d records, want %d", got, 3*b.N)
		}
	}
	b.ReportMetric(float64(orchestrator.LedgerEntrySize), "ledger-B/record")
}

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
	m := &benchMsg{}
	b.ReportAllocs()
	b.ResetTimer()
	for range total {
		ch <- m
	}
	<-done
	b.StopTimer()
	close(ch)
}
