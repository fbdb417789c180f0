package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/cluster"
)

// child is a process of the load: the server or a worker.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner // its standard output
	done  chan error     // its Wait, once it exited
}

// start runs this program again as role, with env added, and waits for
// its first line (returned).
func start(ctx context.Context, name, role string, stderr io.Writer, env ...string) (*child, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), append([]string{roleEnv + "=" + role}, env...)...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, stdin: stdin, lines: bufio.NewScanner(out), done: make(chan error, 1)}
	first, err := c.line(ctx)
	if err != nil {
		c.stop()
		return nil, "", err
	}
	return c, first, nil
}

// line waits for the child's next line of output.
func (c *child) line(ctx context.Context) (string, error) {
	got := make(chan string, 1)
	go func() { // ends with the line, or when the child's output closes
		if c.lines.Scan() {
			got <- c.lines.Text()
		}
		close(got)
	}()
	select {
	case l, ok := <-got:
		if !ok {
			return "", fmt.Errorf("%s exited before it was ready: %w", c.name, c.cmd.Wait())
		}
		return l, nil
	case <-ctx.Done():
		return "", fmt.Errorf("%s: no answer: %w", c.name, ctx.Err())
	}
}

// stop closes the child's input (it exits) and waits for it, a minute at
// most, then kills it.
func (c *child) stop() error {
	_ = c.stdin.Close()
	go func() { c.done <- c.cmd.Wait() }()
	select {
	case err := <-c.done:
		return err
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("%s did not exit within a minute of its input closing: killed: %w", c.name, <-c.done)
	}
}

// usage is a child's resident memory and CPU time so far, from /proc.
type usage struct {
	rss, cpu int64 // bytes; clock ticks
	ok       bool
}

// clockTicks is the unit of /proc/<pid>/stat's times on Linux (USER_HZ).
const clockTicks = 100

func (c *child) usage() usage {
	pid := c.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return usage{}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return usage{}
	}
	var u usage
	for l := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err == nil {
				u.rss = kb << 10
			}
		}
	}
	// The fields after the command's name, which ends with the last ")":
	// state ppid pgrp session tty tpgid flags minflt cminflt majflt
	// cmajflt utime stime ...
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) > 12 {
		var ut, st int64
		_, err1 := fmt.Sscan(fields[11], &ut)
		_, err2 := fmt.Sscan(fields[12], &st)
		u.cpu, u.ok = ut+st, err1 == nil && err2 == nil && u.rss > 0
	}
	return u
}

// report is what one run measured.
type report struct {
	cfg              config
	created, failed  int
	createTime       time.Duration
	latency          []time.Duration // each team's create and first input
	allPassive       time.Duration   // from the first create
	workersBefore    []usage
	workersAfter     []usage
	serverBefore     usage
	serverAfter      usage
	workersStart     []usage // at the start of the idle window
	serverStart      usage
	workersIdle      []usage // at the end of the idle window
	serverIdle       usage
	idleWindow       time.Duration
	lastFailure      error
	passiveTeams     int
	teamsOnEachOwner map[string]int
}

// run starts the server and the workers, creates the teams and measures.
func run(ctx context.Context, cfg config, stderr io.Writer) (*report, error) {
	dir, err := os.MkdirTemp("", "clusterload-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := []string{dirEnv + "=" + dir}
	if cfg.serverProfile != "" {
		env = append(env, profileEnv+"="+cfg.serverProfile)
	}
	if cfg.serverHeap != "" {
		env = append(env, heapEnv+"="+cfg.serverHeap)
	}
	srv, first, err := start(ctx, "the server", "server", stderr, env...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	url, ok := strings.CutPrefix(first, "url ")
	if !ok {
		return nil, fmt.Errorf("the server said %q, not its url", first)
	}
	var workers []*child
	defer func() {
		for _, w := range workers {
			if err := w.stop(); err != nil {
				fmt.Fprintln(stderr, "clusterload:", err)
			}
		}
	}()
	for i := range cfg.workers {
		name := fmt.Sprint("worker-", i)
		wenv := []string{urlEnv + "=" + url, nameEnv + "=" + name, idleEnv + "=" + cfg.idleAfter.String()}
		if cfg.workerProfile != "" {
			wenv = append(wenv, workerProfileEnv+"="+cfg.workerProfile+"-"+name)
		}
		if cfg.workerHeap != "" {
			wenv = append(wenv, workerHeapEnv+"="+cfg.workerHeap+"-"+name)
		}
		w, l, err := start(ctx, name, "worker", stderr, wenv...)
		if err != nil {
			return nil, err
		}
		workers = append(workers, w)
		if l != "ready" {
			return nil, fmt.Errorf("%s said %q, not ready", name, l)
		}
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	c, err := cluster.NewClient(ctx, nc, cluster.Config{})
	if err != nil {
		return nil, err
	}
	r := &report{cfg: cfg, idleWindow: cfg.idleWindow, serverBefore: srv.usage()}
	for _, w := range workers {
		r.workersBefore = append(r.workersBefore, w.usage())
	}
	begin := time.Now()
	if err := r.create(ctx, c); err != nil {
		return nil, err
	}
	if err := r.waitPassive(ctx, c, begin); err != nil {
		return nil, err
	}
	r.serverAfter = srv.usage()
	for _, w := range workers {
		// The worker's heap given back to the system first: its resident
		// set is then what its passive teams hold, not the garbage of
		// their creation.
		if err := w.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		if l, err := w.line(ctx); err != nil || l != "freed" {
			return nil, fmt.Errorf("%s said %q, not freed: %v", w.name, l, err)
		}
		r.workersAfter = append(r.workersAfter, w.usage())
	}
	select { // the fleet left to settle, not a synchronisation
	case <-time.After(cfg.idleSettle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.serverStart = srv.usage()
	for _, w := range workers {
		r.workersStart = append(r.workersStart, w.usage())
	}
	select { // a window of the sleeping fleet, not a synchronisation
	case <-time.After(cfg.idleWindow):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.serverIdle = srv.usage()
	for _, w := range workers {
		r.workersIdle = append(r.workersIdle, w.usage())
	}
	if cfg.workerProfile != "" {
		for _, w := range workers { // the window's end: the profiles stop
			if err := w.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
				return nil, fmt.Errorf("%s: %w", w.name, err)
			}
			if l, err := w.line(ctx); err != nil || l != "profiled" {
				return nil, fmt.Errorf("%s said %q, not profiled: %v", w.name, l, err)
			}
		}
	}
	return r, nil
}

// createTries is how many times a team's create or first input is tried
// (the same key each time: a retry makes no second team or input).
const createTries = 3

// create makes the teams, cfg.concurrency at a time, each with its first
// input, and times them.
func (r *report) create(ctx context.Context, c *cluster.Client) error {
	batch := uuid.NewString()[:8]
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range r.cfg.concurrency {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(r.cfg.teams) || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := createOne(ctx, c, fmt.Sprint(batch, "-", i))
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					r.failed++
					r.lastFailure = err
				} else {
					r.created++
					r.latency = append(r.latency, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.createTime = time.Since(start)
	if r.created == 0 {
		return fmt.Errorf("no team was created: %w", r.lastFailure)
	}
	return ctx.Err()
}

// createOne creates the team of key and sends it its first input.
func createOne(ctx context.Context, c *cluster.Client, key string) error {
	var err error
	for range createTries {
		var id uuid.UUID
		if id, err = c.CreateOnce(ctx, key, template, nil); err != nil {
			continue
		}
		if _, err = c.SendOnce(ctx, id, "first", "echo", "hello"); err == nil {
			return nil
		}
	}
	return err
}

// waitPassive waits until every team created is passive, reading the
// list of teams every second at most; with the teams kept active
// (-idle-after 0) it reads the list once.
func (r *report) waitPassive(ctx context.Context, c *cluster.Client, begin time.Time) error {
	for {
		t0 := time.Now()
		teams, err := c.Teams(ctx)
		if err != nil {
			return fmt.Errorf("list the teams: %w", err)
		}
		r.passiveTeams = 0
		r.teamsOnEachOwner = map[string]int{}
		for _, t := range teams {
			if t.Passive {
				r.passiveTeams++
			}
			r.teamsOnEachOwner[t.Owner]++
		}
		if r.passiveTeams >= r.created || r.cfg.idleAfter == 0 {
			r.allPassive = time.Since(begin)
			return nil
		}
		select {
		case <-time.After(max(time.Second, 2*time.Since(t0))): // a poll of the bucket, paced by its cost
		case <-ctx.Done():
			return fmt.Errorf("%d of %d teams passive when the time ran out: %w", r.passiveTeams, r.created, ctx.Err())
		}
	}
}

// print writes the report.
func (r *report) print(w io.Writer) {
	cfg := r.cfg
	kept := fmt.Sprintf("passivated after %v idle", cfg.idleAfter)
	if cfg.idleAfter == 0 {
		kept = "kept active (-idle-after 0)"
	}
	fmt.Fprintf(w, "clusterload: %d teams on %d worker processes and a server process, %d creates in flight, %s\n",
		cfg.teams, cfg.workers, cfg.concurrency, kept)
	slices.Sort(r.latency)
	q := func(p float64) time.Duration {
		return r.latency[min(len(r.latency)-1, int(p*float64(len(r.latency))))].Round(100 * time.Microsecond)
	}
	fmt.Fprintf(w, "create and first input: %d in %v (%.0f teams/s); each p50 %v, p99 %v; %d failed\n",
		r.created, r.createTime.Round(time.Millisecond), float64(r.created)/r.createTime.Seconds(), q(0.5), q(0.99), r.failed)
	if r.lastFailure != nil {
		fmt.Fprintf(w, "last failure: %v\n", r.lastFailure)
	}
	if cfg.idleAfter == 0 {
		fmt.Fprintf(w, "%d teams active, %d passive, %v after the first create\n", r.created, r.passiveTeams, r.allPassive.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "all %d passive %v after the first create\n", r.passiveTeams, r.allPassive.Round(time.Millisecond))
	}
	owners := make([]string, 0, len(r.teamsOnEachOwner))
	for o := range r.teamsOnEachOwner {
		owners = append(owners, fmt.Sprintf("%s %d", o, r.teamsOnEachOwner[o]))
	}
	slices.Sort(owners)
	fmt.Fprintf(w, "teams by last owner: %s\n", strings.Join(owners, ", "))
	if !r.serverBefore.ok {
		fmt.Fprintln(w, "memory and CPU: not measured (no /proc)")
		return
	}
	var grew int64
	for i := range r.workersBefore {
		b, a, start, idle := r.workersBefore[i], r.workersAfter[i], r.workersStart[i], r.workersIdle[i]
		grew += a.rss - b.rss
		fmt.Fprintf(w, "worker-%d: RSS %s -> %s; CPU %.0f%% of a core until then, %.2f%% idle\n",
			i, mb(b.rss), mb(a.rss), cpuPercent(b, a, r.allPassive), cpuPercent(start, idle, r.idleWindow))
	}
	fmt.Fprintf(w, "workers: RSS growth %.0f B a team\n", float64(grew)/float64(max(1, r.created)))
	fmt.Fprintf(w, "server: RSS %s -> %s; CPU %.0f%% of a core until then, %.2f%% idle\n", mb(r.serverBefore.rss), mb(r.serverAfter.rss),
		cpuPercent(r.serverBefore, r.serverAfter, r.allPassive), cpuPercent(r.serverStart, r.serverIdle, r.idleWindow))
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

func cpuPercent(from, to usage, over time.Duration) float64 {
	return 100 * float64(to.cpu-from.cpu) / clockTicks / over.Seconds()
}
