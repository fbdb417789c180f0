package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// group owns goroutines: Go starts one with the group's context, Stop
// cancels that context (with a cause) and starts no more, Wait waits for
// those started. As nats-server's startGoRoutine with its WaitGroup, or an
// errgroup without the error: once stopped, Go refuses (false), so a Wait
// after Stop never races a late start, and a caller refused does its work
// inline or refuses it.
//
// The worker has one group for each stage of its Close (see Worker) and
// makes one for each fan-out of a round (renewals, takeovers, a held
// lease).
type group struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool
	running map[string]int // goroutines by name, for Wait's error
}

// newGroup returns a group whose context is a child of parent.
func newGroup(parent context.Context) *group {
	ctx, cancel := context.WithCancelCause(parent)
	return &group{ctx: ctx, cancel: cancel, running: map[string]int{}}
}

// Go runs fn on a goroutine of its own with the group's context, unless
// the group was stopped: false then, and fn does not run.
func (g *group) Go(name string, fn func(ctx context.Context)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.running[name]++
	g.wg.Go(func() {
		defer g.done(name)
		fn(g.ctx)
	})
	return true
}

func (g *group) done(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[name]--; g.running[name] == 0 {
		delete(g.running, name)
	}
}

// Stop cancels the group's context with cause (context.Canceled when nil;
// the first cause stays) and starts no more goroutines. It does not wait.
func (g *group) Stop(cause error) {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.cancel(cause)
}

// Wait waits for the goroutines started, or for ctx's end: then its
// cause, with the names of those still running. Call it after Stop, or
// once no Go can come (a fan-out's own goroutine).
func (g *group) Wait(ctx context.Context) error {
	if ctx.Done() == nil {
		g.wg.Wait()
		return nil
	}
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w (still running: %s)", context.Cause(ctx), g.names())
	}
}

// names describes the goroutines running: "create 2, takeovers 1".
func (g *group) names() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(g.running)) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", name, g.running[name])
	}
	return b.String()
}
