package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A group runs its goroutines with its context, cancels it with Stop's
// cause, starts none once stopped, and names those still running when a
// Wait ends first.
func TestGroupStopsWaitsAndRefuses(t *testing.T) {
	g := newGroup(context.Background())
	started, release := make(chan struct{}), make(chan struct{})
	cause := errors.New("closing")
	var seen error
	if !g.Go("loop", func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		seen = context.Cause(ctx)
		<-release
	}) {
		t.Fatal("Go refused before Stop")
	}
	<-started
	g.Stop(cause)
	g.Stop(errors.New("a second cause")) // the first one stays
	if g.Go("late", func(context.Context) { t.Error("a goroutine started after Stop") }) {
		t.Fatal("Go started a goroutine after Stop")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := g.Wait(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "still running: loop 1") {
		t.Fatalf("Wait with an ended context: %v; want context.Canceled naming loop 1", err)
	}
	close(release)
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if !errors.Is(seen, cause) {
		t.Fatalf("the goroutine's context ended with %v, want %v", seen, cause)
	}
	if names := g.names(); names != "" {
		t.Fatalf("running after Wait: %q", names)
	}
}
