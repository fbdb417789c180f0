package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// childEnv makes the test binary run as a worker child process; its value
// is the NATS URL.
const childEnv = "AKGENTIC_CLUSTER_WORKER_CHILD"

// testLease is the lease of the failover tests: a dead worker's team is
// resumed about this long after its last renewal.
const testLease = 2 * time.Second

// childLeaseEnv, when set (a time.ParseDuration string), is the lease of
// a child process's worker instead of testLease (BenchmarkFailover).
const childLeaseEnv = "AKGENTIC_CLUSTER_CHILD_LEASE"

// childShardsEnv, when set, is the child's worker's Config.Shards
// (childTeam).
const childShardsEnv = "AKGENTIC_CLUSTER_CHILD_SHARDS"

// counters is the templates of the worker tests: "counters", a person
// (@Human) and counters a (step 2) and b (step 7).
// "held" has a counter h (step 5) whose turns wait for its stop while
// holding is set.
var counters = map[string]Template{
	"counters": {Person: "@Human", Build: hireCounters},
	"held": {Person: "@Human", Build: func(ctx context.Context, t *orchestrator.Team, _ json.RawMessage) error {
		if _, err := t.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
			return err
		}
		_, err := t.Spawn(ctx, &counter{}, &counterConfig{Config: actor.Config{Name: "h", Role: "Counter"}, Step: 5, Hold: true})
		return err
	}},
}

// hireCounters is the counters template's Build.
func hireCounters(ctx context.Context, t *orchestrator.Team, _ json.RawMessage) error {
	if _, err := t.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
		return err
	}
	if _, err := t.Spawn(ctx, &counter{}, &counterConfig{Config: actor.Config{Name: "a", Role: "Counter"}, Step: 2}); err != nil {
		return err
	}
	_, err := t.Spawn(ctx, &counter{}, &counterConfig{Config: actor.Config{Name: "b", Role: "Counter"}, Step: 7})
	return err
}

// runWorkerChild is the child: a worker with one team, some work, every
// record acknowledged, then "ready <team> <a's total> <a's id> <records acknowledged>" on stdout;
// then it keeps working until it is killed.
func runWorkerChild(url string) {
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	w, sys, team, err := childTeam(ctx, url, discard)
	if err != nil {
		fail(err)
	}
	a, err := team.Member(ctx, "a")
	if err != nil {
		fail(err)
	}
	b, err := team.Member(ctx, "b")
	if err != nil {
		fail(err)
	}
	var total any
	for i := range 10 {
		if total, err = sys.Ask(ctx, a, message.NewUserMessage(fmt.Sprint("a", i))); err != nil {
			fail(err)
		}
	}
	stored, err := acked(ctx, team, w.ledgerOf(team.ID())) // every record so far acknowledged
	if err != nil {
		fail(err)
	}
	fmt.Println("ready", team.ID(), total, a.AgentID(), len(stored))
	for i := 0; ; i++ { // records that may or may not make it
		if _, err := sys.Ask(ctx, b, message.NewUserMessage(fmt.Sprint("more", i))); err != nil {
			fail(err)
		}
	}
}

// A worker in a child process owns a team mid-conversation; it is killed with
// SIGKILL; input sent to the team while it has no owner waits in its inbox; a
// second worker takes the team once the lease expired, restores it from the
// stream with every record acknowledged before the kill (no duplicate, no
// hole: ReadTeam fails on a hole), delivers the waiting input once each, and
// the team goes on from its state.
func TestWorkerFailover(t *testing.T) {
	if url := os.Getenv(childEnv); url != "" {
		runWorkerChild(url)
		return
	}
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)

	cmd, _, f := startChild(t, "TestWorkerFailover", childEnv, e.URL(), 5)
	teamID, aID := uuid.MustParse(f[1]), uuid.MustParse(f[3])
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// Input sent while the team's owner is dead waits in its inbox.
	c := client(t, ctx, nc)
	inputs := send(t, ctx, c, teamID, "a", "while", "dead")

	sys := system(t)
	w := startNamed(t, ctx, nc, sys, "parent")
	team := takenOver(t, ctx, w.Worker, w.resumed, teamID)
	waitInputs(t, ctx, w.inputs, inputs...)
	a, err := team.Member(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if a.AgentID() != aID {
		t.Fatalf("resumed a has id %s, want %s", a.AgentID(), aID)
	}
	total, err := sys.Ask(ctx, a, message.NewUserMessage("after the failover"))
	if err != nil || fmt.Sprint(total) != fmt.Sprint(atoi(t, f[2])+3*2) {
		t.Fatalf("resumed a answered %v, %v; want %s + 3*2 (the two inputs once each, then this)", total, err, f[2])
	}
	inboxEmpty(t, ctx, c, teamID)
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	log, err := ReadTeam(ctx, nc.Conn, teamID, Config{})
	if err != nil {
		t.Fatalf("the stream after the failover: %v", err)
	}
	if len(log) < atoi(t, f[4]) {
		t.Fatalf("the stream holds %d records; the child had %d acknowledged before the kill", len(log), atoi(t, f[4]))
	}
	assertUnique(t, log)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// startChild runs the test binary as the child of test (env=url) and
// returns it with its stdout once it said "ready" and n-1 more fields; it
// is killed at the end of the test if still running.
func startChild(t testing.TB, test, env, url string, n int) (*exec.Cmd, *bufio.Reader, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	child := bufio.NewReader(out)
	line, err := child.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != n || f[0] != "ready" {
		t.Fatalf("child said %q, %v", line, err)
	}
	return cmd, child, f
}

// startParent starts the test's own worker on sys; the channel receives
// the id of each team it takes over. It is closed at the end of the test.
func startParent(t *testing.T, ctx context.Context, nc *conn, sys *actor.System, opts ...orchestrator.Option) (*Worker, chan uuid.UUID) {
	t.Helper()
	tw := startNamed(t, ctx, nc, sys, "parent", opts...)
	return tw.Worker, tw.resumed
}

// testWorker is a worker of a test with its hooks' channels.
type testWorker struct {
	*Worker
	resumed chan uuid.UUID // the teams it took over
	inputs  chan uuid.UUID // the inputs it acknowledged or refused
}

// startNamed starts a worker named owner on sys, with the counters
// template, closed at the end of the test.
func startNamed(t *testing.T, ctx context.Context, nc *conn, sys *actor.System, owner string, opts ...orchestrator.Option) *testWorker {
	t.Helper()
	return startNamedWith(t, ctx, nc, sys, owner, nil, opts...)
}

// startNamedWith is startNamed with its Config changed by edit (nil: left
// as is).
func startNamedWith(t *testing.T, ctx context.Context, nc *conn, sys *actor.System, owner string, edit func(*Config), opts ...orchestrator.Option) *testWorker {
	t.Helper()
	tw := &testWorker{resumed: make(chan uuid.UUID, 256), inputs: make(chan uuid.UUID, 256)} // a handover resumes a shard's teams at once
	cfg := Config{Logger: discard, Lease: testLease, Owner: owner,
		resumed:   func(id uuid.UUID) { tw.resumed <- id },
		inputDone: func(id uuid.UUID) { tw.inputs <- id },
	}
	if edit != nil {
		edit(&cfg)
	}
	w, err := StartWorker(ctx, nc.Conn, sys, cfg, counters, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	tw.Worker = w
	return tw
}

// takenOver waits until w took the team over and returns it.
func takenOver(t *testing.T, ctx context.Context, w *Worker, resumed chan uuid.UUID, teamID uuid.UUID) *orchestrator.Team {
	t.Helper()
	select {
	case id := <-resumed:
		if id != teamID {
			t.Fatalf("resumed team %s, want %s", id, teamID)
		}
	case <-ctx.Done():
		t.Fatal("the team was not taken over")
	}
	team := w.team(teamID)
	if team == nil {
		t.Fatal("the resumed team is not among the worker's")
	}
	return team
}

// childTeam is a child process's worker and its one new team, every
// record of its start acknowledged.
func childTeam(ctx context.Context, url string, logger *slog.Logger) (*Worker, *actor.System, *orchestrator.Team, error) {
	nc, err := nats.Connect(url, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return nil, nil, nil, err
	}
	lease := testLease
	if s := os.Getenv(childLeaseEnv); s != "" {
		if lease, err = time.ParseDuration(s); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", childLeaseEnv, err)
		}
	}
	shards := 0
	if s := os.Getenv(childShardsEnv); s != "" {
		if shards, err = strconv.Atoi(s); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", childShardsEnv, err)
		}
	}
	sys := actor.NewSystem(actor.SystemConfig{Logger: discard})
	w, err := StartWorker(ctx, nc, sys, Config{Logger: logger, Lease: lease, Owner: "child", Shards: shards}, counters)
	if err != nil {
		return nil, nil, nil, err
	}
	team, err := w.Create(ctx, "counters", nil)
	if err != nil {
		return nil, nil, nil, err
	}
	// Every record so far acknowledged: the members' Start records are in.
	_, err = acked(ctx, team, w.ledgerOf(team.ID()))
	return w, sys, team, err
}

// ledgerOf returns the Ledger of a team the worker runs.
func (w *Worker) ledgerOf(id uuid.UUID) *Ledger {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o := w.teams[id]; o != nil {
		return o.ledger
	}
	return nil
}

// mustLedger is the Ledger of a team w runs; the test fails when w runs
// no such team.
func mustLedger(t *testing.T, w *Worker, id uuid.UUID) *Ledger {
	t.Helper()
	l := w.ledgerOf(id)
	if l == nil {
		t.Fatalf("team %s is not among the worker's", id)
	}
	return l
}

// A worker that runs beside another never runs a team whose lease the
// other holds (its shard the other's): it reads the leases again and
// again, takes nothing, and never claims the team's ledger.
func TestWorkerLeavesHeldTeams(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	sys := system(t)
	w1, _ := startParent(t, ctx, connect(t, e), sys)
	scans := make(chan struct{}, 16)
	cfg := Config{Logger: discard, Lease: testLease, Owner: "second", scanned: func() {
		select {
		case scans <- struct{}{}:
		default:
		}
	}}
	w2, err := StartWorker(ctx, connect(t, e).Conn, system(t), cfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w2.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	waitShares(t, ctx, "counters", w1, w2) // the handover to w2 over: the team stays on w1
	team, err := w1.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	claimSeq := mustLedger(t, w1, team.ID()).claimSeq
	for len(scans) > 0 { // the scans before the team was made
		<-scans
	}
	for range 4 { // a lease's worth of scans (one every third of a lease)
		select {
		case <-scans:
		case <-ctx.Done():
			t.Fatal("the second worker does not read the leases")
		}
	}
	if w2.team(team.ID()) != nil {
		t.Fatal("the second worker runs a team whose lease the first holds")
	}
	last, err := mustLedger(t, w1, team.ID()).st.GetLastMsgForSubject(ctx, w1.cfg.claimsSubject(team.ID()))
	if err != nil {
		t.Fatal(err)
	}
	if last.Sequence != claimSeq {
		t.Fatalf("the team's last claim is at %d, not the first worker's %d: the second claimed it", last.Sequence, claimSeq)
	}
	select {
	case <-team.Done():
		t.Fatal("the first worker's team stopped")
	default:
	}
}

// A template's Resume runs on a team taken over, restored, on the worker that
// took it (what the ledger does not hold is set again).
func TestTemplateResumeRunsOnTakeover(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	w1 := startNamed(t, ctx, nc, system(t), "w1")
	team, err := w1.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.Close(ctx); err != nil { // the lease released: the next worker takes the team
		t.Fatal(err)
	}
	resumed := make(chan *orchestrator.Team, 1)
	tmpls := map[string]Template{"counters": {Person: "@Human", Build: hireCounters,
		Resume: func(_ context.Context, rt *orchestrator.Team) error { resumed <- rt; return nil }}}
	w2, err := StartWorker(ctx, nc.Conn, system(t), Config{Logger: discard, Lease: testLease, Owner: "w2"}, tmpls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w2.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	select {
	case rt := <-resumed:
		if rt.ID() != team.ID() || w2.team(team.ID()) != rt {
			t.Fatalf("Resume ran on team %s; want the team %s w2 runs", rt.ID(), team.ID())
		}
	case <-ctx.Done():
		t.Fatal("Resume did not run on the team taken over")
	}
}
