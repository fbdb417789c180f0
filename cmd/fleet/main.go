// Command fleet starts many teams of LLM agents in one process (a manager
// and two workers each, on a scripted model served over the OpenAI wire
// format in process) and drives turns through them, then prints what it
// measured: turns/s, model calls/s, allocations per turn, heap per idle
// team. A turn is one request of the person completed end to end (3 model
// calls); package internal/fleet documents the details.
//
// Usage:
//
//	go run ./cmd/fleet -teams 1000 -turns 4
//	go run ./cmd/fleet -teams 1000 -heapprofile idle.pprof   # what idle teams hold
//	go tool pprof -sample_index=inuse_space -top idle.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/akgentic/akgentic-go/cmd/fleet/internal/fleet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := mainErr(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// mainErr parses the flags, runs the fleet and prints its report.
func mainErr(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg fleet.Config
	fs.IntVar(&cfg.Teams, "teams", 100, "number of teams")
	fs.IntVar(&cfg.Turns, "turns", 4, "turns driven through each team")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "turns in flight at once (default 10, at most -teams)")
	fs.IntVar(&cfg.Retention, "retention", 0, "records each team keeps in memory (0: the orchestrator's default window, 4,096)")
	fs.DurationVar(&cfg.TurnTimeout, "turn-timeout", 0, "fail when a turn takes longer (default 1m)")
	heapProfile := fs.String("heapprofile", "", "write a heap profile of the idle teams (after their turns) to `FILE`; samples every 4 KB allocated")
	verbose := fs.Bool("v", false, "log the runtime's warnings to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	level := slog.LevelError
	if *verbose {
		level = slog.LevelWarn
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	var profErr error
	if *heapProfile != "" {
		// Sample one allocation in 4 KB rather than in 512 KB: the idle
		// teams' smaller holdings show up, at some cost in speed.
		runtime.MemProfileRate = 4096
		cfg.OnIdle = func() { profErr = writeHeapProfile(*heapProfile) }
	}
	rep, err := fleet.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep)
	return profErr
}

// writeHeapProfile writes the heap profile as of the last GC to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
