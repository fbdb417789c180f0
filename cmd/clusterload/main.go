// Command clusterload measures a cluster of teams at scale, each part a
// process of its own: a NATS server with JetStream (cluster.RunEmbedded in
// a child process), workers (cluster.StartWorker, each in a child
// process, passivating idle teams), and this process as the client. It
// creates -teams teams through the client, -concurrency at a time, sends
// each its first input and waits until every team answered it and was
// passivated; then it measures each child's memory (its resident set
// growth) and its CPU while every team sleeps. With -idle-after 0 the
// teams are not passivated: the same figures are then those of a fleet
// holding that many active, quiet teams.
//
// Usage:
//
//	go run ./cmd/clusterload -teams 10000 -workers 3
//	go run ./cmd/clusterload -teams 100000 -workers 3 -concurrency 64
//	go run ./cmd/clusterload -teams 3000 -idle-after 0
//
// The figures are read from /proc (Linux); elsewhere they are left out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := mainErr(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clusterload:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	teams, workers, concurrency int
	idleAfter, idleWindow       time.Duration
	idleSettle                  time.Duration
	timeout                     time.Duration
	serverProfile, serverHeap   string
	workerHeap                  string
	workerProfile               string
}

// mainErr parses the flags, runs the load and prints its report.
func mainErr(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clusterload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.teams, "teams", 1000, "teams to create")
	fs.IntVar(&cfg.workers, "workers", 3, "worker processes")
	fs.IntVar(&cfg.concurrency, "concurrency", 32, "creates in flight at once")
	fs.DurationVar(&cfg.idleAfter, "idle-after", time.Second, "the workers' Config.IdleAfter: a team answered is passivated after this long idle (0: the teams stay active, and the idle window measures the fleet holding them)")
	fs.DurationVar(&cfg.idleWindow, "idle-window", 10*time.Second, "how long the sleeping fleet's CPU is measured")
	fs.DurationVar(&cfg.idleSettle, "idle-settle", 0, "how long the fleet is left, once passive and its memory measured, before the idle window: each worker's view of the leases bucket catches up with the creation's lease changes meanwhile (100,000 teams: about a minute), which the window would otherwise count")
	fs.DurationVar(&cfg.timeout, "timeout", time.Hour, "give up after this long")
	fs.StringVar(&cfg.serverProfile, "server-profile", "", "write a CPU profile of the server process's whole run to `FILE`")
	fs.StringVar(&cfg.serverHeap, "server-heap", "", "write a heap profile of the server process, as it stops, to `FILE`")
	fs.StringVar(&cfg.workerProfile, "worker-profile", "", "write a CPU profile of each worker process, from when its memory is measured to the end of the idle window (the settle included), to `PREFIX`-<worker name>")
	fs.StringVar(&cfg.workerHeap, "worker-heap", "", "write a heap profile of each worker process, when its memory is measured, to `PREFIX`-<worker name>")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	case cfg.teams < 1, cfg.workers < 1, cfg.concurrency < 1:
		return errors.New("-teams, -workers and -concurrency must be at least 1")
	case cfg.idleAfter < 0:
		return errors.New("-idle-after must be positive, or 0 to keep the teams active")
	case cfg.idleWindow <= 0, cfg.timeout <= 0:
		return errors.New("-idle-window and -timeout must be positive")
	case cfg.idleSettle < 0:
		return errors.New("-idle-settle must not be negative")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	r, err := run(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	r.print(stdout)
	return nil
}
