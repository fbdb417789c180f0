package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
)

// benchTurns is the number of turns per team in BenchmarkFleet: the same
// for every fleet size, so every size sends requests of the same lengths
// (histories are kept, and a longer one costs more per call).
const benchTurns = 4

// BenchmarkFleet starts N teams of a manager and two workers on the
// scripted model and drives benchTurns turns through each, DefaultConcurrency
// turns in flight, for N = 10, 100, 1000 (see the package doc for what a
// turn is). One op is one whole run (Run: setup, turns, idle measurement,
// stop), so ns/op is not the figure to read; the metrics are, summed over
// the ops' driven phases:
//
//	turns/s          turns completed per second of the driven phase
//	calls/s          model calls per second (3 per turn)
//	cpu-us/turn      process CPU time per turn: on a shared machine the
//	                 steadier figure (turns/s follows the other load)
//	allocs/turn      heap allocations per turn, whole process (agents,
//	B/turn           runtime, go-openai, both HTTP ends, the scripted server)
//	heap-B/idle-team live heap of a team idle after its turns
//	heap-B/fresh-team live heap of a team idle before any turn
//	stack-B/idle-team goroutine stacks of an idle team (not in the heap)
//	setup-us/team    time to create a team and see it idle
//
// Targets (issue 12): turns/s at N=1000 within 25% of N=10; heap per idle
// team <= 150 KB. BenchmarkRawModelCalls is the baseline: the same
// server answering bare go-openai calls at the same concurrency.
//
//	go test -run '^$' -bench Fleet -count 5 ./internal/fleet
//
// An op at N=1000 takes 5-20 s on the 2-core machine (the default
// -benchtime runs one); N=10 runs several ops per second.
//
// Measured 2026-12-01 on the shared 2-core machine, load average 5-9 from
// other sessions, so turns/s swung by 2x between runs (medians; N=1000 of
// 3 runs, the others of 5):
//
//	         turns/s  cpu-us/turn  allocs/turn  B/turn  heap-B/idle-team  heap-B/fresh-team  stack-B/idle-team
//	N=10       314       1553         2060      258 K        164 K             132 K              17 K
//	N=100      237       1790         2040      248 K        150 K             133 K              22 K
//	N=1000     354       1682         2038      247 K        149 K             133 K              21 K
//	raw        993 (2980 calls/s)  650 (3 x 217)  1083 (3 x 361)  105 K (3 x 35 K)
//
// Both targets hold, barely: N=1000 is within the noise of N=10 (+13%
// turns/s, +8% CPU per turn), and an idle team holds 149 KB. What it
// holds (heap profile of the idle teams, cmd/fleet -heapprofile): the
// orchestrator's first ledger chunk, 90,112 B (1024 80-byte entries plus
// the 8-byte ids field: 81,928 B, rounded up to 11 pages), of which a
// team holds 92 records after its 4 turns; ~31 KB of agent start (tool schemas built by
// reflection per agent, the command descriptors, the runner); ~7 KB of
// actor cells; the histories, ~4 KB more per turn.
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ctx := context.Background()
			var sum Report
			var heapIdle, heapFresh, stack int64
			var setup time.Duration
			runs := 0
			for b.Loop() {
				rep, err := Run(ctx, Config{Teams: n, Turns: benchTurns, Logger: discard})
				if err != nil {
					b.Fatal(err)
				}
				runs++
				sum.Turns += rep.Turns
				sum.ModelCalls += rep.ModelCalls
				sum.Driven += rep.Driven
				sum.CPU += rep.CPU
				sum.Allocs += rep.Allocs
				sum.Bytes += rep.Bytes
				heapIdle += rep.HeapIdleTeam
				heapFresh += rep.HeapFreshTeam
				stack += rep.StackIdleTeam
				setup += rep.Setup
			}
			b.ReportMetric(sum.TurnsPerSec(), "turns/s")
			b.ReportMetric(sum.CallsPerSec(), "calls/s")
			b.ReportMetric(float64(sum.CPUPerTurn().Microseconds()), "cpu-us/turn")
			b.ReportMetric(sum.AllocsPerTurn(), "allocs/turn")
			b.ReportMetric(sum.BytesPerTurn(), "B/turn")
			b.ReportMetric(float64(heapIdle)/float64(runs), "heap-B/idle-team")
			b.ReportMetric(float64(heapFresh)/float64(runs), "heap-B/fresh-team")
			b.ReportMetric(float64(stack)/float64(runs), "stack-B/idle-team")
			b.ReportMetric(float64(setup.Microseconds())/float64(runs*n), "setup-us/team")
		})
	}
}

// BenchmarkRawModelCalls is BenchmarkFleet's baseline: one op is one bare
// go-openai call to the fleet's scripted server (routed and answered as a
// worker's call is), DefaultConcurrency calls in flight, with the agents'
// response format but none of their system prompt, tools or history. A
// turn of the fleet is 3 such calls: compare its turns/s with calls/s / 3
// and its allocs/turn with 3 x allocs/op.
func BenchmarkRawModelCalls(b *testing.B) {
	sc := newScript()
	defer sc.srv.Close()
	cfg := openai.DefaultConfig("sk-test")
	hc := sc.client(DefaultConcurrency)
	defer hc.CloseIdleConnections()
	cfg.BaseURL, cfg.HTTPClient = sc.srv.URL(), hc
	client := openai.NewClientWithConfig(cfg)
	out, err := llm.NewOutput[agent.StructuredOutput]("StructuredOutput")
	if err != nil {
		b.Fatal(err)
	}
	format := &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "StructuredOutput", Schema: out.Schema(), Strict: true}}
	call := func(ctx context.Context, _ int) error {
		resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4.1",
			Messages: []openai.ChatCompletionMessage{{Role: "system", Content: "You are @Worker1."},
				{Role: "user", Content: "You received a request from @Manager.\n\n" + taskText}},
			ResponseFormat: format})
		if err != nil {
			return err
		}
		got, err := out.Parse(resp.Choices[0].Message.Content)
		if err != nil {
			return err
		}
		if len(got.Messages) != 1 || got.Messages[0].Message != resultText {
			return fmt.Errorf("answer %+v", got)
		}
		return nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), processCPU()
	if err := each(context.Background(), b.N, DefaultConcurrency, call); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-us/call")
	if n := sc.unexpected.Load(); n > 0 {
		b.Fatalf("%d calls matched no step", n)
	}
}
