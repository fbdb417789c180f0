package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/cluster"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// The children are this program run again with roleEnv set: "server"
// (a NATS server with JetStream storing under dirEnv) or "worker" (a
// worker named nameEnv on the server at urlEnv, passivating teams idle for
// idleEnv). A child prints one line when ready ("url <url>" or "ready")
// and runs until its standard input closes (its parent's end of the pipe:
// a parent that dies takes its children with it).
const (
	roleEnv = "CLUSTERLOAD_ROLE"
	dirEnv  = "CLUSTERLOAD_DIR"
	urlEnv  = "CLUSTERLOAD_URL"
	nameEnv = "CLUSTERLOAD_NAME"
	idleEnv = "CLUSTERLOAD_IDLE_AFTER"
	// profileEnv, when set, is the file the server writes a CPU profile
	// of its whole run to (the flag -server-profile).
	profileEnv = "CLUSTERLOAD_SERVER_PROFILE"
	// heapEnv, when set, is the file the server writes a heap profile to
	// as it stops (the flag -server-heap).
	heapEnv = "CLUSTERLOAD_SERVER_HEAP"
	// workerHeapEnv, when set, is the file a worker writes a heap profile
	// to when its memory is measured (the flag -worker-heap).
	workerHeapEnv = "CLUSTERLOAD_WORKER_HEAP"
	// workerProfileEnv, when set, is the file a worker writes a CPU
	// profile to, from when its memory is measured (SIGUSR1) to the end
	// of the idle window (SIGUSR2; the flag -worker-profile).
	workerProfileEnv = "CLUSTERLOAD_WORKER_PROFILE"
)

// template is the name of the workers' one template.
const template = "echo"

// runRole runs this process as a child and returns its exit code.
func runRole(role string) int {
	var err error
	switch role {
	case "server":
		err = runServer(os.Getenv(dirEnv))
	case "worker":
		err = runWorker(os.Getenv(urlEnv), os.Getenv(nameEnv), os.Getenv(idleEnv))
	default:
		err = fmt.Errorf("%s=%q: want server or worker", roleEnv, role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clusterload", role+":", err)
		return 1
	}
	return 0
}

// untilStdinCloses blocks until the parent closes its end of the pipe.
func untilStdinCloses() { _, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin)) }

func runServer(dir string) error {
	if dir == "" {
		return fmt.Errorf("%s is not set", dirEnv)
	}
	e, err := cluster.RunEmbedded(dir)
	if err != nil {
		return err
	}
	defer e.Close()
	if path := os.Getenv(profileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Println("url", e.URL())
	untilStdinCloses()
	if path := os.Getenv(heapEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		runtime.GC()
		return pprof.WriteHeapProfile(f)
	}
	return nil
}

func runWorker(url, name, idle string) error {
	idleAfter, err := time.ParseDuration(idle)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", idleEnv, idle, err)
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sys := actor.NewSystem(actor.SystemConfig{Logger: logger})
	ctx := context.Background()
	w, err := cluster.StartWorker(ctx, nc, sys, cluster.Config{Owner: name, IdleAfter: idleAfter, Logger: logger},
		map[string]cluster.Template{template: {Person: "@Human", Build: buildEcho}})
	if err != nil {
		return err
	}
	free := make(chan os.Signal, 1)
	signal.Notify(free, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() { // ends when free is closed, below
		var profile *os.File
		for sig := range free {
			if sig == syscall.SIGUSR2 { // the idle window ended
				if profile != nil {
					pprof.StopCPUProfile()
					if err := profile.Close(); err != nil {
						logger.Error("clusterload: the CPU profile", "error", err)
					}
					profile = nil
				}
				fmt.Println("profiled")
				continue
			}
			debug.FreeOSMemory()
			if path := os.Getenv(workerHeapEnv); path != "" {
				if err := writeHeap(path); err != nil {
					logger.Error("clusterload: the heap profile", "error", err)
				}
			}
			if path := os.Getenv(workerProfileEnv); path != "" && profile == nil {
				var err error
				if profile, err = startCPU(path); err != nil {
					logger.Error("clusterload: the CPU profile", "error", err)
				}
			}
			fmt.Println("freed")
		}
	}()
	defer func() {
		signal.Stop(free) // no more sends on it
		close(free)
	}()
	fmt.Println("ready")
	untilStdinCloses()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := w.Close(cctx); err != nil {
		return err
	}
	return sys.Shutdown(cctx)
}

// startCPU starts a CPU profile of this process into path.
func startCPU(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// writeHeap writes a heap profile of this process to path.
func writeHeap(path string) error {
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

// buildEcho makes a team of the person's proxy and an echo member.
func buildEcho(ctx context.Context, t *orchestrator.Team, _ json.RawMessage) error {
	if _, err := t.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
		return err
	}
	_, err := t.Spawn(ctx, &echo{}, &actor.Config{Name: "echo", Role: "Echo"})
	return err
}

// echo answers each message of the person with its content: a turn of
// the team, as small as one gets.
type echo struct{}

func init() { actor.RegisterKind("clusterload.echo", func() actor.Actor { return &echo{} }) }

func (*echo) Receive(_ *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*agent.AgentMessage); ok {
		return m.Content, nil
	}
	return nil, nil
}
