package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// Workers as child processes against a three-server cluster of child
// processes (procServers): the test binary run again as a worker
// (workerProcEnv), a client in the test process sending inputs with
// SendOnce and following the teams' records with Watch.

// workerProcEnv makes the test binary run as a worker process (TestMain);
// its value is the worker's settings as JSON (workerProcSpec).
const workerProcEnv = "AKGENTIC_CLUSTER_WORKER_PROC"

// procLease is the workers' lease: the shortest a replicated cluster
// takes (StartWorker refuses less on R3).
const procLease = minReplicatedLease

// procTimeout bounds one case of these tests: three servers and up to
// three workers, each a -race process, on a loaded machine.
const procTimeout = 9 * testTimeout

// workerProcSpec is what a worker process runs: its owner name, the
// servers' URLs, its lease, and whether its held turns wait for their
// stop (holding, the "held" template's counter h).
type workerProcSpec struct {
	URLs  string        `json:"urls"`
	Owner string        `json:"owner"`
	Lease time.Duration `json:"lease"`
	Hold  bool          `json:"hold,omitempty"`
}

// runWorkerProc is the worker process: a Worker with the counters
// templates on a replicated cluster, logging to stderr. On stdout it says
// "ready" once started, "resumed <team>" for each team it takes over,
// "done <input>" for each input it acknowledged (its turn durable),
// "entered" when a held turn begins, and answers the line "teams" on
// stdin with "teams <id>..." (the teams it runs) and the line
// "stopped <id>" with "stopped <id>" once that team does not run there. SIGTERM closes the
// worker (Worker.Close) and it says "closed"; the end of stdin (the test
// process gone) ends it at once, started or not. It returns the exit
// code.
func runWorkerProc(spec string) int {
	var out sync.Mutex
	say := func(words ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Println(words...)
	}
	var sp workerProcSpec
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		say("error: the worker spec:", err)
		return 2
	}
	cmds := make(chan string)
	go func() { // from the start: the test process gone (stdin ended), the worker ends at once, wherever it is
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmds <- sc.Text()
		}
		os.Exit(1)
	}()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("proc", sp.Owner)
	nc, err := nats.Connect(sp.URLs, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectJitter(0, 0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { logger.Warn("nats", "error", err) }))
	if err != nil {
		say("error: connect:", err)
		return 2
	}
	holding.Store(sp.Hold)
	sys := actor.NewSystem(actor.SystemConfig{Logger: logger})
	cfg := Config{Logger: logger, Replicas: 3, Lease: sp.Lease, Owner: sp.Owner,
		resumed:   func(id uuid.UUID) { say("resumed", id) },
		inputDone: func(id uuid.UUID) { say("done", id) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	w, err := StartWorker(ctx, nc, sys, cfg, counters)
	cancel()
	if err != nil {
		say("error: start:", err)
		return 3
	}
	go func() { // ends with the process
		for range entered {
			say("entered")
		}
	}()
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	say("ready")
	for {
		select {
		case <-terms:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := w.Close(ctx)
			cancel()
			if err != nil {
				say("error: close:", err)
				return 4
			}
			say("closed")
			return 0
		case cmd := <-cmds:
			if id, ok := strings.CutPrefix(cmd, "stopped "); ok {
				go func() { // once the team is not running here: its stop done, or it never ran
					if t := w.team(uuid.MustParse(id)); t != nil {
						<-t.Done()
					}
					say("stopped", id)
				}()
				continue
			}
			if cmd != "teams" {
				say("error: unknown command", cmd)
				continue
			}
			words := []any{"teams"}
			for _, id := range w.running() {
				words = append(words, id)
			}
			say(words...)
		}
	}
}

// running returns the ids of the teams the worker runs (not stopped).
func (w *Worker) running() []uuid.UUID {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []uuid.UUID
	for id, o := range w.teams {
		if !isClosed(o.team.Done()) {
			ids = append(ids, id)
		}
	}
	return ids
}

// procEvent is a line a worker process said on stdout, when the test
// read it.
type procEvent struct {
	at     time.Time
	worker string
	kind   string // its first word: ready, resumed, done, entered, teams, stopped, closed, error:, or exit (stdout ended)
	args   []string
}

// seenRecord is a record Watch yielded, when the test got it.
type seenRecord struct {
	at  time.Time
	msg message.Message
}

// fleet is the three servers of a case, its client, its worker processes,
// what they said and what Watch yielded. Every change (a line, a record)
// wakes await.
type fleet struct {
	t       *testing.T
	servers []*procServer
	nc      *conn
	c       *Client
	cfg     Config
	dir     string
	watches sync.WaitGroup
	stop    context.CancelFunc // ends the watches

	mu      sync.Mutex
	events  []procEvent
	records map[uuid.UUID][]seenRecord // by team
	werrs   []error                    // watch errors (the watch is begun again)
	workers map[string]*procWorker
	changed chan struct{}
}

// procWorker is a worker running as a child process.
type procWorker struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logPath string
	log     *logCapture // its stderr, also in logPath
	exited  chan struct{}
}

// newFleet starts a three-server cluster of processes and connects to it;
// withClient makes the client now (which makes the streams and the
// bucket), else the workers make them (client does later). Its workers
// and client run on procLease.
func newFleet(t *testing.T, ctx context.Context, withClient bool) *fleet {
	t.Helper()
	return newFleetLease(t, ctx, withClient, procLease)
}

// newFleetLease is newFleet with the workers' and client's lease.
func newFleetLease(t *testing.T, ctx context.Context, withClient bool, lease time.Duration) *fleet {
	t.Helper()
	f := &fleet{t: t, dir: t.TempDir(), records: map[uuid.UUID][]seenRecord{},
		workers: map[string]*procWorker{}, changed: make(chan struct{})}
	f.servers = procServers(t, ctx)
	f.nc = connectProcs(t, f.servers)
	f.cfg = Config{Logger: discard, Replicas: 3, Lease: lease}
	if withClient {
		f.client(ctx)
	}
	return f
}

// client makes the fleet's client, once.
func (f *fleet) client(ctx context.Context) *Client {
	f.t.Helper()
	if f.c == nil {
		c, err := NewClient(ctx, f.nc.Conn, f.cfg)
		if err != nil {
			f.t.Fatal(err)
		}
		f.c = c
	}
	return f.c
}

// signalLocked wakes await.
func (f *fleet) signalLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// start runs a worker process named name (its Config.Owner), on the
// fleet's lease; hold makes
// its held turns wait for their stop. It returns once the process runs,
// not once the worker started (ready waits for that). The process is
// killed at the end of the test; when the test failed, the end of its log
// is in the test's output.
func (f *fleet) start(name string, hold bool) *procWorker {
	t := f.t
	t.Helper()
	spec, err := json.Marshal(workerProcSpec{URLs: procURLs(f.servers), Owner: name, Lease: f.cfg.Lease, Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	p := &procWorker{name: name, logPath: filepath.Join(f.dir, name+".log"), log: &logCapture{}, exited: make(chan struct{})}
	file, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), workerProcEnv+"="+string(spec))
	p.cmd.Stderr = io.MultiWriter(file, p.log)
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.workers[name] = p
	f.mu.Unlock()
	go func() { // ends when the process's stdout closes (it exited)
		defer close(p.exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.add(name, sc.Text())
		}
		f.add(name, "exit")
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill() // a stopped process too
		<-p.exited
		_ = p.cmd.Wait()
		_ = file.Close()
		if t.Failed() {
			t.Logf("worker %s's log, its warnings and errors (the last 40):\n%s", name, lastLines(warningLines(p.log.String()), 40))
			t.Logf("worker %s's log (%s), its last lines:\n%s", name, p.logPath, lastLines(p.log.String(), 40))
		}
	})
	return p
}

// warningLines returns the lines of a worker's log at level WARN or ERROR.
func warningLines(log string) string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(out, "\n")
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// add takes a line a worker said.
func (f *fleet) add(worker, line string) {
	words := strings.Fields(line)
	if len(words) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, procEvent{at: time.Now(), worker: worker, kind: words[0], args: words[1:]})
	f.signalLocked()
}

// await waits until cond holds, evaluated under the fleet's lock after
// every change; it fails the test at ctx's end, or when a worker said an
// error.
func (f *fleet) await(ctx context.Context, what string, cond func() bool) {
	f.t.Helper()
	f.awaitOr(ctx, what, cond, nil)
}

// awaitOr is await; when ctx ends first, the failure adds what diagnose
// says (it runs without the fleet's lock).
func (f *fleet) awaitOr(ctx context.Context, what string, cond func() bool, diagnose func() string) {
	f.t.Helper()
	for {
		f.mu.Lock()
		ok := cond()
		ch := f.changed
		var said []string
		for _, e := range f.events {
			if e.kind == "error:" {
				said = append(said, e.worker+": "+strings.Join(e.args, " "))
			}
		}
		f.mu.Unlock()
		if len(said) > 0 {
			f.t.Fatalf("waiting for %s: a worker said an error: %s", what, strings.Join(said, "; "))
		}
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if diagnose != nil {
				f.t.Fatalf("waiting for %s: %v; %s", what, ctx.Err(), diagnose())
			}
			f.t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// eventLocked returns the first event of worker (any worker when empty)
// of kind whose first argument is arg (any when empty).
func (f *fleet) eventLocked(worker, kind, arg string) (procEvent, bool) {
	for _, e := range f.events {
		if (worker == "" || e.worker == worker) && e.kind == kind && (arg == "" || len(e.args) > 0 && e.args[0] == arg) {
			return e, true
		}
	}
	return procEvent{}, false
}

// event is eventLocked under the lock.
func (f *fleet) event(worker, kind, arg string) (procEvent, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.eventLocked(worker, kind, arg)
}

// ready waits until each named worker said it started.
func (f *fleet) ready(ctx context.Context, names ...string) {
	f.t.Helper()
	for _, name := range names {
		f.await(ctx, "worker "+name+" to start", func() bool {
			_, ok := f.eventLocked(name, "ready", "")
			return ok
		})
	}
	f.balanced(ctx)
}

// createOn creates a team of template in a shard the worker named owner
// holds (CreateOnce with a key whose team falls there), so that the team
// runs on it.
func (f *fleet) createOn(ctx context.Context, owner, template string) uuid.UUID {
	f.t.Helper()
	for i := range 10000 {
		key := fmt.Sprint("on ", owner, " ", i)
		holder, err := f.c.holder(ctx, shardKey(shardRef{template: template, n: shardOf(onceTeam(key), f.c.shards)}))
		if err != nil {
			f.t.Fatal(err)
		}
		if holder != f.c.cfg.workerSubject(owner) {
			continue
		}
		id, err := f.c.CreateOnce(ctx, key, template, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		return id
	}
	f.t.Fatalf("no team key falls in a shard of %s's", owner)
	return uuid.Nil
}

// balanced waits until the live worker processes hold every shard of the
// counters template, none more than its share (the handovers to the ones
// that joined done), as the leases bucket says.
func (f *fleet) balanced(ctx context.Context) {
	f.t.Helper()
	js, err := jetstream.New(f.nc.Conn)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	var live []string
	for name, p := range f.workers {
		if !isClosed(p.exited) {
			live = append(live, name)
		}
	}
	f.mu.Unlock()
	tick := time.NewTicker(20 * time.Millisecond) // polled: the handovers are the workers' own
	defer tick.Stop()
	var last string
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kv, err := js.KeyValue(rctx, f.cfg.withDefaultsT(f.t).bucketName())
		var n int
		var leases map[int]shardLease
		if err == nil {
			n, err = readLayout(rctx, kv, 0)
		}
		if err == nil {
			leases, err = readShards(rctx, kv, "counters")
		}
		cancel()
		if err == nil {
			count := map[string]int{}
			for _, x := range leases {
				if x.Until.After(time.Now()) {
					count[x.Owner]++
				}
			}
			share, sum, ok := (n+len(live)-1)/max(len(live), 1), 0, true
			for _, name := range live {
				sum += count[name]
				ok = ok && count[name] <= share
			}
			if ok && sum == n {
				return
			}
			last = fmt.Sprintf("shards held %v of %d", count, n)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			f.t.Fatalf("the workers %v never held the shards evenly: %s", live, last)
		case <-tick.C:
		}
	}
}

// teamsOf asks a worker process which teams it runs.
func (f *fleet) teamsOf(ctx context.Context, p *procWorker) []string {
	f.t.Helper()
	f.mu.Lock()
	from := len(f.events)
	f.mu.Unlock()
	if _, err := io.WriteString(p.stdin, "teams\n"); err != nil {
		f.t.Fatalf("ask worker %s its teams: %v", p.name, err)
	}
	var got []string
	f.await(ctx, "worker "+p.name+" to tell its teams", func() bool {
		for _, e := range f.events[from:] {
			if e.worker == p.name && e.kind == "teams" {
				got = e.args
				return true
			}
		}
		return false
	})
	return got
}

// resumedSince reports whether worker took team id over (said
// "resumed") at or after since.
func (f *fleet) resumedSince(worker, id string, since time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.events {
		if e.worker == worker && e.kind == "resumed" && len(e.args) > 0 && e.args[0] == id && !e.at.Before(since) {
			return true
		}
	}
	return false
}

// stoppedOn waits until team id does not run on worker p: its stop done,
// or never there.
func (f *fleet) stoppedOn(ctx context.Context, p *procWorker, id uuid.UUID) {
	f.t.Helper()
	if _, err := io.WriteString(p.stdin, "stopped "+id.String()+"\n"); err != nil {
		f.t.Fatalf("ask worker %s about team %s: %v", p.name, id, err)
	}
	f.await(ctx, "team "+id.String()+" to stop on worker "+p.name, func() bool {
		_, ok := f.eventLocked(p.name, "stopped", id.String())
		return ok
	})
}

// watch follows each team's records through the client's Watch, from the
// first, until the end of the test; a watch that fails is begun again
// after the last record it yielded.
func (f *fleet) watch(teams ...uuid.UUID) {
	ctx, stop := context.WithCancel(context.Background())
	prev := f.stop
	f.stop = func() {
		stop()
		if prev != nil {
			prev()
		}
	}
	c := f.c
	for _, team := range teams {
		f.watches.Go(func() {
			next := uint64(1)
			for ctx.Err() == nil {
				for m, err := range c.Watch(ctx, team, next) {
					if err != nil {
						f.mu.Lock()
						f.werrs = append(f.werrs, err)
						f.mu.Unlock()
						break
					}
					f.mu.Lock()
					f.records[team] = append(f.records[team], seenRecord{at: time.Now(), msg: m})
					f.signalLocked()
					f.mu.Unlock()
					next++
				}
				select { // a pause before the watch begins again, not to spin on a failing one
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
	if prev == nil {
		f.t.Cleanup(func() {
			f.stop()
			f.watches.Wait()
		})
	}
}

// answeredLocked reports whether Watch yielded a close of a turn of
// input (any attempt).
func (f *fleet) answeredLocked(team, input uuid.UUID) bool {
	for _, r := range f.records[team] {
		if mid, ok := closes(r.msg); ok && attemptOf(input, mid) > 0 {
			return true
		}
	}
	return false
}

// attemptOf returns n when mid is the message of input's n-th delivery
// (attemptID), 0 when it is none of its first eight.
func attemptOf(input, mid uuid.UUID) uint64 {
	for n := uint64(1); n <= 8; n++ {
		if attemptID(input, n) == mid {
			return n
		}
	}
	return 0
}

// procInput is an input a case sent: its team, its key and its id.
type procInput struct {
	team uuid.UUID
	key  string
	id   uuid.UUID
	sent time.Time // when SendOnce stored it
}

// sendKeyed sends text to member to of the team with SendOnce under key,
// again with the same key while it fails, each try bounded; it returns
// the input and the number of failed tries.
func sendKeyed(ctx context.Context, c *Client, team uuid.UUID, key, to, text string) (procInput, int, error) {
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, sendAttempt)
		id, err := c.SendOnce(actx, team, key, to, text)
		cancel()
		if err == nil {
			return procInput{team: team, key: key, id: id, sent: time.Now()}, n, nil
		}
		if errors.Is(err, ErrNoSuchTeam) {
			return procInput{}, n, fmt.Errorf("send %s: %w", key, err)
		}
		select { // a pause between tries, not to spin while a send fails
		case <-ctx.Done():
			return procInput{}, n, fmt.Errorf("send %s never stored: %w", key, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// send is sendKeyed for a test's own goroutine: the test fails on an
// error.
func (f *fleet) send(ctx context.Context, team uuid.UUID, key, to string) procInput {
	f.t.Helper()
	in, _, err := sendKeyed(ctx, f.c, team, key, to, "input "+key)
	if err != nil {
		f.t.Fatal(err)
	}
	return in
}

// allAnswered waits until Watch yielded a close of each input's turn,
// then until each team's inbox holds nothing delivered or pending (the
// inputs' acknowledgements confirmed).
func (f *fleet) allAnswered(ctx context.Context, inputs []procInput) {
	f.t.Helper()
	f.awaitOr(ctx, fmt.Sprintf("the %d inputs answered", len(inputs)), func() bool {
		for _, in := range inputs {
			if !f.answeredLocked(in.team, in.id) {
				return false
			}
		}
		return true
	}, func() string { return f.unanswered(inputs) })
	var teams []uuid.UUID
	for _, in := range inputs {
		if !slices.Contains(teams, in.team) {
			teams = append(teams, in.team)
		}
	}
	for _, team := range teams {
		f.drained(ctx, team)
	}
}

// unanswered says, for each input whose close Watch did not yield,
// whether a worker said it acknowledged it and whether the team's ledger
// closes it, with the watches' errors and the records each watch yielded:
// it tells an input never run from a watch that stopped seeing records.
func (f *fleet) unanswered(inputs []procInput) string {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	f.mu.Lock()
	var missing []procInput
	for _, in := range inputs {
		if !f.answeredLocked(in.team, in.id) {
			missing = append(missing, in)
		}
	}
	seen := map[uuid.UUID]int{}
	for team, rs := range f.records {
		seen[team] = len(rs)
	}
	werrs := slices.Clone(f.werrs)
	f.mu.Unlock()
	logs := map[uuid.UUID][]message.Message{}
	var b strings.Builder
	for _, in := range missing {
		log, ok := logs[in.team]
		if !ok {
			var err error
			if log, err = ReadTeam(ctx, f.nc.Conn, in.team, f.cfg); err != nil {
				fmt.Fprintf(&b, "team %s's ledger: %v; ", in.team, err)
			}
			logs[in.team] = log
		}
		inLedger := false
		for _, m := range log {
			if mid, ok := closes(m); ok && attemptOf(in.id, mid) > 0 {
				inLedger = true
			}
		}
		e, acked := f.event("", "done", in.id.String())
		fmt.Fprintf(&b, "input %s (team %s): acknowledged by %q %v, closed in the ledger %v; ", in.key, in.team, e.worker, acked, inLedger)
	}
	for team, log := range logs {
		fmt.Fprintf(&b, "team %s: %d records in the ledger, %d yielded by Watch (a watch begun again yields some again); ", team, len(log), seen[team])
	}
	if n, err := teamInputsAll(ctx, f, missing); err != nil {
		fmt.Fprintf(&b, "the inbox not read: %v; ", err)
	} else {
		fmt.Fprintf(&b, "inputs held in the inbox: %s; ", n)
	}
	fmt.Fprintf(&b, "watch errors: %v; ", werrs)
	if st, err := f.c.js.Stream(ctx, f.cfg.withDefaultsT(f.t).Stream); err == nil {
		for ci := range st.ListConsumers(ctx).Info() {
			if ci.Cluster != nil {
				fmt.Fprintf(&b, "consumer %s on the records: leader %q, replicas %d, pending %d; ", ci.Name, ci.Cluster.Leader, len(ci.Cluster.Replicas), ci.NumPending)
			}
		}
	}
	var stacks bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
	for g := range strings.SplitSeq(stacks.String(), "\n\n") {
		if strings.Contains(g, "(*Client).Watch") {
			fmt.Fprintf(&b, "a watch's goroutine:\n%s\n", g)
		}
	}
	return b.String()
}

// teamInputsAll says how many inputs the inbox holds for each team of
// inputs.
func teamInputsAll(ctx context.Context, f *fleet, inputs []procInput) (string, error) {
	var parts []string
	done := map[uuid.UUID]bool{}
	for _, in := range inputs {
		if done[in.team] {
			continue
		}
		done[in.team] = true
		n, err := teamInputs(ctx, f.c.js, f.c.cfg, in.team)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s %d", in.team, n))
	}
	return strings.Join(parts, ", "), nil
}

// drained waits until the inbox holds no input of the team (each
// acknowledged): its acknowledgements follow the closes Watch shows, a
// moment later.
func (f *fleet) drained(ctx context.Context, team uuid.UUID) {
	f.t.Helper()
	var last string
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := teamInputs(cctx, f.c.js, f.c.cfg, team)
		cancel()
		switch {
		case err != nil:
			last = err.Error()
		case n == 0:
			return
		default:
			last = fmt.Sprintf("%d inputs held", n)
		}
		select { // polled: the acknowledgements are not events the test sees
		case <-ctx.Done():
			f.t.Fatalf("the inbox of team %s never drained: %s", team, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ledgerCheck reads each team's ledger (ReadTeam: no hole) and checks it:
// no record twice; every record Watch yielded is in it; each input's turn
// closed exactly once; its turn begun once, or more only when rerun
// allows it (a turn cut by a fault). It returns the inputs whose turn was
// begun more than once.
func (f *fleet) ledgerCheck(ctx context.Context, inputs []procInput, rerun func(procInput) bool) []procInput {
	f.t.Helper()
	byTeam := map[uuid.UUID][]procInput{}
	for _, in := range inputs {
		byTeam[in.team] = append(byTeam[in.team], in)
	}
	var again []procInput
	for team, ins := range byTeam {
		rctx, cancel := context.WithTimeout(ctx, testTimeout)
		log, err := ReadTeam(rctx, f.nc.Conn, team, f.cfg)
		cancel()
		if err != nil {
			f.t.Fatalf("the records of team %s: %v", team, err)
		}
		assertUnique(f.t, log)
		stored := map[uuid.UUID]bool{}
		for _, m := range log {
			stored[m.Envelope().ID] = true
		}
		f.mu.Lock()
		seen := slices.Clone(f.records[team])
		f.mu.Unlock()
		for _, r := range seen {
			if !stored[r.msg.Envelope().ID] {
				f.t.Errorf("team %s: Watch yielded a %s record %s the stream does not hold afterwards",
					team, message.TypeName(r.msg), r.msg.Envelope().ID)
			}
		}
		begun, closed := map[uuid.UUID]int{}, map[uuid.UUID][]uint64{}
		for _, m := range log {
			if sm, ok := m.(*message.SentMessage); ok && sm.Message != nil {
				for _, in := range ins {
					if attemptOf(in.id, sm.Message.Envelope().ID) > 0 {
						begun[in.id]++
					}
				}
			}
			if mid, ok := closes(m); ok {
				for _, in := range ins {
					if n := attemptOf(in.id, mid); n > 0 {
						closed[in.id] = append(closed[in.id], n)
					}
				}
			}
		}
		for _, in := range ins {
			if len(closed[in.id]) != 1 {
				f.t.Errorf("input %s (team %s): its turn closed %d times (attempts %v); want once", in.key, team, len(closed[in.id]), closed[in.id])
			}
			switch n := begun[in.id]; {
			case n == 0:
				f.t.Errorf("input %s (team %s): no turn of it in the ledger", in.key, team)
			case n > 1 && (rerun == nil || !rerun(in)):
				f.t.Errorf("input %s (team %s): its turn begun %d times, though no fault cut it", in.key, team, n)
			case n > 1:
				again = append(again, in)
			}
		}
	}
	return again
}

// owners returns each team's lease owner and end as the bucket says.
func (f *fleet) owners(ctx context.Context) map[uuid.UUID]TeamInfo {
	f.t.Helper()
	var teams []TeamInfo
	for {
		tctx, cancel := context.WithTimeout(ctx, sendAttempt)
		var err error
		teams, err = f.c.Teams(tctx)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			f.t.Fatalf("the leases: %v", err)
		}
		select { // JetStream not answering for a moment, on a loaded machine: read again
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	out := map[uuid.UUID]TeamInfo{}
	for _, x := range teams {
		out[x.ID] = x
	}
	return out
}

// createTeams creates n teams of template through the client.
func (f *fleet) createTeams(ctx context.Context, template string, n int) []uuid.UUID {
	f.t.Helper()
	var ids []uuid.UUID
	for range n {
		id, err := f.c.Create(ctx, template, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// procRepeats is how many times a fault case runs (faultRepeatsEnv), once
// by default.
func procRepeats(t *testing.T) int {
	t.Helper()
	s := os.Getenv(faultRepeatsEnv)
	if s == "" {
		return 1
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of at least 1", faultRepeatsEnv, s)
	}
	return n
}

// procInputs is how many inputs a fault case sends, round robin over the
// teams; the fault comes before input procFaultAt.
const (
	procInputs  = 36
	procFaultAt = 12
)

// A worker process holding teams is killed with SIGKILL while inputs flow
// to them (sent with SendOnce, again with the same key on an error): the
// other two take its teams once their leases end (never before), every
// input is answered and its turn closed once, and an input's turn runs
// twice only when the kill cut it (at least once). It logs how long after
// the kill the first input of an affected team was answered and all its
// teams were held again.
func TestKilledWorkerProcessTeamsResumeElsewhere(t *testing.T) {
	for r := range procRepeats(t) {
		t.Run(fmt.Sprint(r), workerProcKilled)
	}
}

func workerProcKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	f := newFleet(t, ctx, true)
	names := []string{"wa", "wb", "wc"}
	for _, n := range names {
		f.start(n, false)
	}
	f.ready(ctx, names...)
	teams := f.createTeams(ctx, "counters", 6)
	f.watch(teams...)
	held := map[string][]uuid.UUID{}
	for _, x := range f.owners(ctx) {
		held[x.Owner] = append(held[x.Owner], x.ID)
	}
	victim := names[0]
	for _, n := range names {
		if len(held[n]) > len(held[victim]) {
			victim = n
		}
	}
	affected := held[victim]
	if len(affected) == 0 {
		t.Fatalf("no worker holds a team: %v", held)
	}

	var inputs []procInput
	var killedAt time.Time
	ends := map[uuid.UUID]time.Time{}  // the affected teams' lease ends just before the kill
	doneBefore := map[uuid.UUID]bool{} // inputs the victim acknowledged before the kill
	for i := range procInputs {
		if i == procFaultAt {
			for _, id := range affected {
				ends[id] = f.owners(ctx)[id].Until
			}
			if err := f.workers[victim].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-f.workers[victim].exited // nothing more from it
			killedAt = time.Now()
			f.mu.Lock()
			for _, e := range f.events {
				if e.worker == victim && e.kind == "done" && len(e.args) == 1 {
					doneBefore[uuid.MustParse(e.args[0])] = true
				}
			}
			f.mu.Unlock()
		}
		inputs = append(inputs, f.send(ctx, teams[i%len(teams)], fmt.Sprint("k", i), "a"))
	}
	// The affected teams held again by the survivors.
	f.await(ctx, "the killed worker's teams resumed", func() bool {
		for _, id := range affected {
			if _, ok := f.eventLocked("", "resumed", id.String()); !ok {
				return false
			}
		}
		return true
	})
	f.allAnswered(ctx, inputs)

	var first, last, ended time.Duration = -1, -1, -1
	for _, id := range affected {
		ended = max(ended, ends[id].Sub(killedAt))
		e, _ := f.event("", "resumed", id.String())
		if e.worker == victim {
			t.Fatalf("team %s resumed by the killed worker", id)
		}
		if e.at.Before(ends[id]) {
			t.Errorf("team %s resumed by %s %v before its lease's end", id, e.worker, ends[id].Sub(e.at))
		}
		if d := e.at.Sub(killedAt); d > last {
			last = d
		}
	}
	if last > 2*procLease {
		t.Errorf("the killed worker's teams held again %v after the kill; want about a lease (%v)", last, procLease)
	}
	f.mu.Lock()
	for _, e := range f.events {
		if e.kind != "done" || e.worker == victim || len(e.args) != 1 {
			continue
		}
		for _, in := range inputs {
			if in.id.String() == e.args[0] && slices.Contains(affected, in.team) {
				if d := e.at.Sub(killedAt); first < 0 || d < first {
					first = d
				}
			}
		}
	}
	f.mu.Unlock()
	now := f.owners(ctx)
	for _, id := range affected {
		if now[id].Owner == victim {
			t.Errorf("team %s is still leased to the killed worker", id)
		}
	}
	sentBefore := map[uuid.UUID]bool{}
	for _, in := range inputs[:procFaultAt] {
		sentBefore[in.id] = true
	}
	again := f.ledgerCheck(ctx, inputs, func(in procInput) bool {
		// Cut by the kill: sent to one of its teams before it, not
		// acknowledged by it.
		return slices.Contains(affected, in.team) && sentBefore[in.id] && !doneBefore[in.id]
	})
	var keys []string
	for _, in := range again {
		keys = append(keys, in.key)
	}
	t.Logf("kill -9 of %s holding %d of %d teams: their leases ended %v after the kill, the first input of its teams answered %v after it, all its teams held again after %v; %d inputs' turns run twice, cut by the kill %v",
		victim, len(affected), len(teams), ended.Round(time.Millisecond), first.Round(time.Millisecond), last.Round(time.Millisecond), len(again), keys)
}

// A worker process holding teams is paused with SIGSTOP past its lease
// while inputs flow to them, and resumed with SIGCONT once another worker
// took its teams: it stops its copies (its lease renewal refused, or its
// records refused: fenced) and runs none of them again; no record of it
// is stored after the new owner's claim; every input is answered, its turn
// closed once; every record a client saw through Watch is in the stream
// afterwards.
func TestPausedWorkerProcessStopsItsCopies(t *testing.T) {
	for r := range procRepeats(t) {
		t.Run(fmt.Sprint(r), workerProcPaused)
	}
}

func workerProcPaused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	f := newFleet(t, ctx, true)
	a := f.start("wa", false)
	f.ready(ctx, "wa")
	f.start("wb", false)
	f.ready(ctx, "wb")
	teams := f.createTeams(ctx, "counters", 4)
	f.watch(teams...)
	var affected []uuid.UUID
	for _, x := range f.owners(ctx) {
		if x.Owner == "wa" {
			affected = append(affected, x.ID)
		}
	}
	if len(affected) == 0 {
		t.Fatal("the first worker holds no team")
	}

	var inputs []procInput
	var stoppedAt time.Time
	doneBefore := map[uuid.UUID]bool{}
	for i := range procInputs {
		if i == procFaultAt {
			if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stoppedAt = time.Now()
			f.mu.Lock()
			for _, e := range f.events {
				if e.worker == "wa" && e.kind == "done" && len(e.args) == 1 {
					doneBefore[uuid.MustParse(e.args[0])] = true
				}
			}
			f.mu.Unlock()
		}
		inputs = append(inputs, f.send(ctx, teams[i%len(teams)], fmt.Sprint("k", i), "a"))
	}
	f.await(ctx, "the paused worker's teams taken by the other", func() bool {
		for _, id := range affected {
			if _, ok := f.eventLocked("wb", "resumed", id.String()); !ok {
				return false
			}
		}
		return true
	})
	var taken time.Duration
	for _, id := range affected {
		e, _ := f.event("wb", "resumed", id.String())
		taken = max(taken, e.at.Sub(stoppedAt))
	}
	f.allAnswered(ctx, inputs)

	// Resumed, the paused worker finds its leases taken (or its records
	// refused) and stops each of its copies, saying so in its log.
	mark := len(a.log.String())
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	contAt := time.Now()
	for _, id := range affected {
		for ch := a.log.changed(); !stoppedCopy(a.log.String()[mark:], id); {
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatalf("the resumed worker never said it stopped its copy of team %s", id)
			}
		}
	}
	// The log says so as the stop begins; the stop ends a moment later.
	for _, id := range affected {
		f.stoppedOn(ctx, a, id)
	}
	stoppedAfter := time.Since(contAt)
	if got := f.teamsOf(ctx, a); len(got) != 0 {
		t.Fatalf("the resumed worker still runs teams %v", got)
	}
	// Input after it: the new owner answers.
	for i := range len(teams) {
		inputs = append(inputs, f.send(ctx, teams[i], fmt.Sprint("after", i), "a"))
	}
	f.allAnswered(ctx, inputs)
	// Alive again, it may be handed shards back (the other worker holds
	// them all, above its share): a team it runs now it took anew, after
	// its resume, never a copy of before.
	for _, id := range f.teamsOf(ctx, a) {
		if !f.resumedSince(a.name, id, contAt) {
			t.Fatalf("the resumed worker runs team %s again, not taken anew since its resume", id)
		}
	}

	sentBefore := map[uuid.UUID]bool{}
	for _, in := range inputs[:procFaultAt] {
		sentBefore[in.id] = true
	}
	again := f.ledgerCheck(ctx, inputs, func(in procInput) bool {
		return slices.Contains(affected, in.team) && sentBefore[in.id] && !doneBefore[in.id]
	})
	js, err := jetstream.New(f.nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range affected {
		fencedWrites(t, ctx, js, f.cfg, id, "wa", "wb")
	}
	why := "its lease renewal refused"
	if s := a.log.String()[mark:]; strings.Contains(s, "taken over by another owner") {
		why = "its records refused (fenced)"
	}
	t.Logf("SIGSTOP of wa holding %d of %d teams: all taken by wb %v after the stop; after SIGCONT its copies stopped within %v (%s); %d inputs' turns run twice",
		len(affected), len(teams), taken.Round(time.Millisecond), stoppedAfter.Round(time.Millisecond), why, len(again))
}

// stoppedCopy reports whether a worker's log says it stopped its copy of
// team: its lease lost, or its records refused.
func stoppedCopy(log string, team uuid.UUID) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "team_id="+team.String()) &&
			(strings.Contains(line, "stopping a team") || strings.Contains(line, "taken over by another owner")) {
			return true
		}
	}
	return false
}

// rawWrite is one message of a team's claims or records subject as the
// stream holds it.
type rawWrite struct {
	seq   uint64
	claim string // the claim's owner; empty for a record
	epoch uint64 // a record's claim (the claims subject's sequence it was published expecting)
}

// fencedWrites reads a team's claims and records as the stream holds them
// and checks that every record was stored before the claim that followed
// its own (no owner wrote after the next one claimed the team), and that
// the claims of from and then to are there (to took the team over).
func fencedWrites(t *testing.T, ctx context.Context, js jetstream.JetStream, cfg Config, team uuid.UUID, from, to string) {
	t.Helper()
	full, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var writes []rawWrite
	for {
		rctx, cancel := context.WithTimeout(ctx, testTimeout)
		writes, err = readWrites(rctx, js, full, team)
		cancel()
		if err == nil {
			break
		}
		if !transient(err) || ctx.Err() != nil { // JetStream not answering for a moment, on a loaded machine: read again
			t.Fatalf("team %s: its claims and records: %v", team, err)
		}
		select { // a pause between reads, not to spin
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	var owners []string
	next := map[uint64]uint64{} // a claim's sequence → the next claim's
	var prev uint64
	for _, w := range writes {
		if w.claim != "" {
			owners = append(owners, w.claim)
			if prev != 0 {
				next[prev] = w.seq
			}
			prev = w.seq
		}
	}
	for _, w := range writes {
		if w.claim == "" && next[w.epoch] != 0 && w.seq > next[w.epoch] {
			t.Errorf("team %s: a record at stream sequence %d, written under the claim at %d, stored after the next claim (at %d)",
				team, w.seq, w.epoch, next[w.epoch])
		}
	}
	if i := slices.Index(owners, from); i < 0 || !slices.Contains(owners[i+1:], to) {
		t.Errorf("team %s: claims by %v; want %s's, then %s's", team, owners, from, to)
	}
}

// readWrites is one read of a team's claims and records, in stream
// order.
func readWrites(ctx context.Context, js jetstream.JetStream, cfg Config, team uuid.UUID) ([]rawWrite, error) {
	cons, err := js.OrderedConsumer(ctx, cfg.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{cfg.recordsSubject(team), cfg.claimsSubject(team)}})
	if err != nil {
		return nil, err
	}
	var writes []rawWrite
	for pending := cons.CachedInfo().NumPending; uint64(len(writes)) < pending; {
		batch, err := cons.Fetch(int(pending)-len(writes), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			w := rawWrite{seq: md.Sequence.Stream}
			if m.Subject() == cfg.claimsSubject(team) {
				var c claim
				if err := json.Unmarshal(m.Data(), &c); err != nil {
					return nil, fmt.Errorf("the claim at stream sequence %d: %w", w.seq, err)
				}
				w.claim = c.Owner
			} else if _, err := fmt.Sscan(m.Headers().Get(jetstream.ExpectedLastSubjSeqHeader), &w.epoch); err != nil {
				return nil, fmt.Errorf("a record at stream sequence %d without its claim: %w", w.seq, err)
			}
			writes = append(writes, w)
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
	}
	return writes, nil
}

// A worker process told to close (SIGTERM, handled as Worker.Close) while
// a turn runs: the cut turn's close is not in the ledger, its input is not
// acknowledged, and the next holder, another worker process, runs it
// again and answers it, once.
func TestClosedWorkerProcessCutTurnRunsOnTheNextHolder(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	f := newFleet(t, ctx, true)
	a := f.start("wa", true) // its held turns wait for their stop
	f.start("wb", false)
	f.ready(ctx, "wa", "wb")
	team := f.createOn(ctx, "wa", "held")
	f.watch(team)
	in := f.send(ctx, team, "cut", "h")
	f.await(ctx, "the held turn to begin", func() bool {
		_, ok := f.eventLocked("wa", "entered", "")
		return ok
	})
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termAt := time.Now()
	<-a.exited
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("the closed worker: %v", err)
	}
	if _, ok := f.event("wa", "closed", ""); !ok {
		t.Fatal("the worker process ended without closing")
	}
	if _, ok := f.event("wa", "done", in.id.String()); ok {
		t.Fatal("the closing worker acknowledged the input of the turn it cut")
	}
	f.await(ctx, "the next holder to resume the team", func() bool {
		_, ok := f.eventLocked("wb", "resumed", team.String())
		return ok
	})
	f.allAnswered(ctx, []procInput{in})
	answered, _ := f.event("wb", "done", in.id.String())
	resumed, _ := f.event("wb", "resumed", team.String())
	again := f.ledgerCheck(ctx, []procInput{in}, func(procInput) bool { return true })
	if len(again) != 1 {
		t.Fatalf("the cut turn was begun once; want twice (cut, then run again)")
	}
	log, err := ReadTeam(ctx, f.nc.Conn, team, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range log {
		if p, ok := m.(*message.ProcessedMessage); ok && p.MessageID == in.id {
			t.Fatal("the cut turn's close is in the ledger")
		}
	}
	t.Logf("SIGTERM (Close) of wa mid-turn: the team resumed on wb %v after it, the input answered %v after it",
		resumed.at.Sub(termAt).Round(time.Millisecond), answered.at.Sub(termAt).Round(time.Millisecond))
}

// A worker process joins a running fleet of two while inputs flow to their
// teams: it gets its share of the shards by handover (the others hand
// their surplus over, their turns under way finished first), and nothing
// is lost or run twice; the teams that moved are the handed-over shards'.
func TestJoiningWorkerProcessGetsItsShareByHandover(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	f := newFleet(t, ctx, true)
	f.start("wa", false)
	f.start("wb", false)
	f.ready(ctx, "wa", "wb")
	teams := f.createTeams(ctx, "counters", 4)
	before := f.owners(ctx)
	f.watch(teams...)

	type sent struct {
		inputs []procInput
		err    error
	}
	flow := make(chan sent, 1)
	joined := make(chan struct{})
	go func() { // the inputs to the first teams, while the third worker joins
		var s sent
		defer func() { flow <- s }()
		for i := range procInputs {
			if i == procFaultAt {
				select { // the rest once it joined: inputs flow before, during and after
				case <-joined:
				case <-ctx.Done():
					s.err = ctx.Err()
					return
				}
			}
			in, _, err := sendKeyed(ctx, f.c, teams[i%len(teams)], fmt.Sprint("k", i), "a", "input")
			if err != nil {
				s.err = err
				return
			}
			s.inputs = append(s.inputs, in)
		}
	}()
	f.start("wc", false)
	f.ready(ctx, "wc")
	close(joined)
	fresh := f.createTeams(ctx, "counters", 2)
	f.watch(fresh...)
	var inputs []procInput
	for i, id := range fresh {
		inputs = append(inputs, f.send(ctx, id, fmt.Sprint("new", i), "a"))
	}
	s := <-flow
	if s.err != nil {
		t.Fatal(s.err)
	}
	inputs = append(inputs, s.inputs...)
	f.allAnswered(ctx, inputs)
	f.ledgerCheck(ctx, inputs, nil) // each input begun and closed once
	now := f.owners(ctx)
	moved := 0
	for _, id := range teams {
		switch o := now[id].Owner; {
		case o == before[id].Owner:
		case o == "wc":
			moved++
		default:
			t.Errorf("team %s moved from %s to %s; want it kept, or handed over to wc", id, before[id].Owner, o)
		}
	}
	t.Logf("wc joined: %d of %d running teams handed over to it with their shards", moved, len(teams))
}

// Three worker processes starting at once on a fresh three-server cluster
// (no stream, no bucket yet) all start, and each serves: three teams
// created go one to each.
func TestThreeWorkerProcessesStartAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	f := newFleet(t, ctx, false)
	names := []string{"wa", "wb", "wc"}
	for _, n := range names {
		f.start(n, false)
	}
	f.ready(ctx, names...)
	f.client(ctx)
	teams := f.createTeams(ctx, "counters", 3)
	on := map[string]bool{}
	for _, x := range f.owners(ctx) {
		on[x.Owner] = true
	}
	if len(on) != 3 {
		t.Fatalf("three teams on workers %v; want one on each", on)
	}
	f.watch(teams...)
	var inputs []procInput
	for i, id := range teams {
		inputs = append(inputs, f.send(ctx, id, fmt.Sprint("k", i), "a"))
	}
	f.allAnswered(ctx, inputs)
}
