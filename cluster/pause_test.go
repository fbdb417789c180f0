package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// pausedEnv makes the test binary run as the worker child of
// TestPausedWorkerIsFenced; its value is the NATS URL.
const pausedEnv = "AKGENTIC_CLUSTER_PAUSED_CHILD"

// runPausedChild is a worker with one team that says "ready <team>", then
// works until its team stops, then says "stopped" with what its log says.
func runPausedChild(url string) {
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	var logs logCapture
	_, sys, team, err := childTeam(ctx, url, logs.logger())
	if err != nil {
		fail(err)
	}
	b, err := team.Member(ctx, "b")
	if err != nil {
		fail(err)
	}
	fmt.Println("ready", team.ID())
	for i := 0; ; i++ {
		if _, err := sys.Ask(ctx, b, message.NewUserMessage(fmt.Sprint("more", i))); err != nil {
			break // the team stopped
		}
	}
	<-team.Done()
	why := "unknown"
	switch s := logs.String(); {
	case strings.Contains(s, "taken over by another owner"):
		why = "fenced"
	case strings.Contains(s, "no longer holds"):
		why = "lease-lost"
	}
	fmt.Println("stopped", why)
	os.Exit(0)
}

// A worker paused (SIGSTOP) past its lease while another takes its team over,
// then resumed (SIGCONT): its writes are refused or its lease renewal fails,
// it stops its copy of the team and says why in its log, and the stream holds
// no record of its after the takeover.
func TestPausedWorkerIsFenced(t *testing.T) {
	if url := os.Getenv(pausedEnv); url != "" {
		runPausedChild(url)
		return
	}
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)

	// One shard: the child, resumed and alive again, is below its share
	// but the parent is not above it (one shard for two workers), so the
	// parent keeps the team rather than handing the shard over to a child
	// about to exit.
	t.Setenv(childShardsEnv, "1")
	cmd, child, f := startChild(t, "TestPausedWorkerIsFenced", pausedEnv, e.URL(), 2)
	teamID := uuid.MustParse(f[1])
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	seen := &idSet{m: map[uuid.UUID]bool{}} // every record the new owner's team has
	sys := system(t)
	tw := startNamedWith(t, ctx, nc, sys, "parent", func(c *Config) { c.Shards = 1 }, orchestrator.WithSubscribers(seen))
	w, resumed := tw.Worker, tw.resumed
	team := takenOver(t, ctx, w, resumed, teamID)
	a, err := team.Member(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	ask(t, ctx, sys, a, 3)

	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	line, err := child.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "stopped") {
		t.Fatalf("the resumed child said %q, %v; want it to stop its team", line, err)
	}
	if strings.Contains(line, "unknown") {
		t.Fatalf("the child stopped its team without saying why in its log: %q", line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	ask(t, ctx, sys, a, 1) // the new owner goes on
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := ReadTeam(ctx, nc.Conn, teamID, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stored {
		if !seen.has(m.Envelope().ID) {
			t.Fatalf("the stream holds a %s record %s the new owner's team never had: the old owner wrote after the takeover",
				message.TypeName(m), m.Envelope().ID)
		}
	}
	assertUnique(t, stored)
	t.Logf("the child stopped its team: %s", strings.TrimSpace(line))
}
