// Package fleet starts many teams of LLM agents in one process and drives
// turns through them: the "thousand teams" measurement
// (BenchmarkFleet, and cmd/fleet for a run by hand).
//
// A team is an orchestrator with a catalog of two cards (Manager, Worker),
// a person (@Human, an agent.HumanProxy whose Deliver hands the answers to
// the driver), a manager (@Manager) and two workers (@Worker1, @Worker2),
// the three agents being BaseAgents on one scripted model: agent/llmtest
// serving the real OpenAI wire format over loopback HTTP, reached through
// the real go-openai client, one HTTP client shared by every agent.
//
// A turn is one request of the person completed end to end:
//
//	@Human   -> @Manager (request)   model call 1: the manager routes the task to @WorkerK
//	@Manager -> @WorkerK (request)   model call 2: the worker answers the manager
//	@WorkerK -> @Manager (response)  model call 3: the manager answers the person
//	@Manager -> @Human   (response)  Deliver hands the answer to the driver
//
// that is 4 AgentMessages and 3 model calls. Turn k of a team goes to
// @Worker1 for even k and to @Worker2 for odd k. A team's turns are
// sequential (the next is sent when the person has the answer to the last);
// the teams take their turns round robin, at most Config.Concurrency turns
// in flight at once, so every team is touched between two turns of one.
// Histories are kept: a team's later turns send longer model requests.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// DefaultConcurrency is the number of turns in flight when
// Config.Concurrency is 0 (at most Config.Teams). It is the smallest fleet
// of the benchmark, so every fleet size is driven at the same load and
// only the number of teams alive differs.
const DefaultConcurrency = 10

// DefaultTurnTimeout is how long a turn may take when Config.TurnTimeout
// is 0.
const DefaultTurnTimeout = time.Minute

// stopTimeout bounds the stop of one team and the system's shutdown.
const stopTimeout = time.Minute

// Config says how big a fleet is and how it is driven.
type Config struct {
	// Teams is the number of teams (> 0).
	Teams int
	// Turns is the number of turns driven through each team (> 0).
	Turns int
	// Concurrency is the number of turns in flight at once, and of teams
	// set up and stopped at once; 0 means DefaultConcurrency. It is capped
	// at Teams.
	Concurrency int
	// TurnTimeout fails the run when a turn takes longer; 0 means
	// DefaultTurnTimeout.
	TurnTimeout time.Duration
	// Retention, when > 0, is each team's orchestrator.WithRetention; 0
	// leaves the orchestrator's default window (4,096 records).
	Retention int
	// Logger receives the runtime's logs; nil means slog.Default().
	Logger *slog.Logger
	// OnIdle, when set, is called once every team has had its turns and is
	// idle, just after the heap was measured (and garbage collected): the
	// moment to write a heap profile of idle teams.
	OnIdle func()
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	switch {
	case c.Teams <= 0:
		return fmt.Errorf("fleet: Teams must be > 0, got %d", c.Teams)
	case c.Turns <= 0:
		return fmt.Errorf("fleet: Turns must be > 0, got %d", c.Turns)
	case c.Concurrency < 0:
		return fmt.Errorf("fleet: Concurrency must be >= 0, got %d", c.Concurrency)
	case c.TurnTimeout < 0:
		return fmt.Errorf("fleet: TurnTimeout must be >= 0, got %v", c.TurnTimeout)
	case c.Retention < 0:
		return fmt.Errorf("fleet: Retention must be >= 0, got %d", c.Retention)
	}
	return nil
}

// Report is what a run measured. Heap figures come from runtime.MemStats
// after two runtime.GC calls, so they count live memory only; the
// allocation figures count everything the process allocated while the
// turns were driven: the agents and the runtime, but also go-openai, both
// ends of the HTTP exchange and the scripted server (BenchmarkRawModelCalls
// measures that share alone).
type Report struct {
	// Teams, TurnsPerTeam and Concurrency are the configuration run.
	Teams, TurnsPerTeam, Concurrency int
	// Turns is the number of turns completed; ModelCalls the requests the
	// scripted model answered while they ran.
	Turns      int
	ModelCalls int64
	// Setup is the time to create every team and see it idle; Driven the
	// wall time of all the turns; Stop the time to stop every team.
	Setup, Driven, Stop time.Duration
	// CPU is the process's CPU time (user + system) while the turns ran,
	// 0 where getrusage is missing. Unlike Driven it hardly depends on what
	// else the machine runs.
	CPU time.Duration
	// LatencyP50 and LatencyP99 are percentiles of one turn's time, from
	// the person's request to the answer in hand.
	LatencyP50, LatencyP99 time.Duration
	// Allocs and Bytes are the heap allocations (count and bytes) made
	// while the turns ran; GCs the garbage collections.
	Allocs, Bytes uint64
	GCs           uint32
	// HeapFreshTeam is the live heap per team once every team is set up and
	// idle, before any turn, over the heap before the first was created.
	HeapFreshTeam int64
	// HeapIdleTeam is the live heap per team once every team has had its
	// turns and is idle, over the heap once every team has stopped: what
	// an idle team holds after Turns turns.
	HeapIdleTeam int64
	// StackIdleTeam is the goroutine stack memory per idle team (not in the
	// heap figures), taken the same way as HeapIdleTeam.
	StackIdleTeam int64
	// Retained is the live heap once every team has stopped over the heap
	// before the first was created: the scripted server's log of every
	// request (llmtest keeps them for Server.Requests), and whatever the
	// stopped teams left behind.
	Retained int64
}

// TurnsPerSec is the throughput of the driven phase.
func (r Report) TurnsPerSec() float64 { return perSec(float64(r.Turns), r.Driven) }

// CallsPerSec is the model calls per second of the driven phase.
func (r Report) CallsPerSec() float64 { return perSec(float64(r.ModelCalls), r.Driven) }

// CPUPerTurn is the process's CPU time per turn of the driven phase.
func (r Report) CPUPerTurn() time.Duration {
	if r.Turns == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Turns)
}

// AllocsPerTurn is the allocations per turn of the driven phase.
func (r Report) AllocsPerTurn() float64 { return per(float64(r.Allocs), r.Turns) }

// BytesPerTurn is the bytes allocated per turn of the driven phase.
func (r Report) BytesPerTurn() float64 { return per(float64(r.Bytes), r.Turns) }

func perSec(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

func per(n float64, count int) float64 {
	if count == 0 {
		return 0
	}
	return n / float64(count)
}

// String is the report in a few lines, for people.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet: %d teams x %d turns, %d in flight\n", r.Teams, r.TurnsPerTeam, r.Concurrency)
	fmt.Fprintf(&b, "setup: %v (%.0f us per team); stop: %v\n", r.Setup.Round(time.Millisecond),
		per(float64(r.Setup.Microseconds()), r.Teams), r.Stop.Round(time.Millisecond))
	fmt.Fprintf(&b, "turns: %d in %v = %.1f turns/s, %.1f model calls/s; turn latency p50 %v, p99 %v\n",
		r.Turns, r.Driven.Round(time.Millisecond), r.TurnsPerSec(), r.CallsPerSec(),
		r.LatencyP50.Round(time.Microsecond), r.LatencyP99.Round(time.Microsecond))
	fmt.Fprintf(&b, "per turn: %v CPU, %.0f allocs, %.0f B (whole process; %d GCs)\n",
		r.CPUPerTurn().Round(time.Microsecond), r.AllocsPerTurn(), r.BytesPerTurn(), r.GCs)
	fmt.Fprintf(&b, "per team: heap %d B fresh, %d B idle after its turns; stacks %d B\n",
		r.HeapFreshTeam, r.HeapIdleTeam, r.StackIdleTeam)
	fmt.Fprintf(&b, "retained once the teams stopped: %d B (%.0f B per model call: the scripted server's request log)\n",
		r.Retained, per(float64(r.Retained), int(r.ModelCalls)))
	return b.String()
}

// Run sets up cfg.Teams teams, drives cfg.Turns turns through each, measures
// the idle teams, stops them and shuts the system down. The first failure
// (a turn that times out, an unexpected answer, an error of the runtime)
// ends the run and is returned; the teams are stopped either way.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	cfg.Concurrency = min(cfg.Concurrency, cfg.Teams)
	if cfg.TurnTimeout == 0 {
		cfg.TurnTimeout = DefaultTurnTimeout
	}
	rep = Report{Teams: cfg.Teams, TurnsPerTeam: cfg.Turns, Concurrency: cfg.Concurrency}

	sc := newScript()
	defer sc.srv.Close()
	client := sc.client(cfg.Concurrency) // one for every agent
	defer client.CloseIdleConnections()
	f := &fleet{cfg: cfg, env: &agent.Env{HTTPClient: client}, script: sc}
	f.sys = actor.NewSystem(actor.SystemConfig{Logger: cfg.Logger})
	defer func() {
		// The run's ctx may be over: shutting down has its own deadline.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		err = errors.Join(err, f.sys.Shutdown(sctx))
	}()
	if f.cards, err = newCards(sc.srv.ModelConfig("gpt-4.1")); err != nil {
		return rep, err
	}
	if cfg.Retention > 0 {
		f.opts = append(f.opts, orchestrator.WithRetention(cfg.Retention))
	}
	f.teams = make([]*team, cfg.Teams)
	latency := make([]time.Duration, cfg.Teams*cfg.Turns)

	if err := f.warmUp(ctx); err != nil {
		return rep, err
	}
	before := settled()
	start := time.Now()
	err = each(ctx, cfg.Teams, cfg.Concurrency, func(ctx context.Context, i int) error {
		var err error
		if f.teams[i], err = f.newTeam(ctx); err != nil {
			return fmt.Errorf("fleet: team %d: %w", i, err)
		}
		return f.teams[i].waitIdle(ctx)
	})
	rep.Setup = time.Since(start)
	if err == nil {
		fresh := settled()
		rep.HeapFreshTeam = heapDiff(fresh, before) / int64(cfg.Teams)

		calls := sc.calls.Load()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start, cpu := time.Now(), processCPU()
		err = f.drive(ctx, latency)
		rep.Driven, rep.CPU = time.Since(start), processCPU()-cpu
		runtime.ReadMemStats(&m1)
		rep.ModelCalls = sc.calls.Load() - calls
		rep.Allocs, rep.Bytes, rep.GCs = m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc, m1.NumGC-m0.NumGC
	}
	if err == nil {
		err = each(ctx, cfg.Teams, cfg.Concurrency, func(ctx context.Context, i int) error { return f.teams[i].waitIdle(ctx) })
	}
	var idle runtime.MemStats
	if err == nil {
		idle = settled()
		if cfg.OnIdle != nil {
			cfg.OnIdle()
		}
	}

	start = time.Now()
	stopErr := each(context.WithoutCancel(ctx), cfg.Teams, cfg.Concurrency, func(ctx context.Context, i int) error {
		if f.teams[i] == nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, stopTimeout)
		defer cancel()
		return f.teams[i].t.Stop(ctx)
	})
	rep.Stop = time.Since(start)
	for i, tm := range f.teams {
		if tm != nil {
			rep.Turns += tm.done
		}
		// A stopped Team keeps its final view for queries: let it go.
		f.teams[i] = nil
	}
	if err = errors.Join(err, stopErr); err != nil {
		return rep, err
	}
	stopped := settled()
	rep.HeapIdleTeam = heapDiff(idle, stopped) / int64(cfg.Teams)
	rep.StackIdleTeam = (int64(idle.StackInuse) - int64(stopped.StackInuse)) / int64(cfg.Teams)
	rep.Retained = heapDiff(stopped, before)

	slices.Sort(latency)
	rep.LatencyP50, rep.LatencyP99 = latency[len(latency)/2], latency[len(latency)*99/100]
	if n := f.stray.Load(); n > 0 {
		return rep, fmt.Errorf("fleet: %d answers reached a person who was not waiting for one", n)
	}
	if n := sc.unexpected.Load(); n > 0 {
		return rep, fmt.Errorf("fleet: %d model requests matched no step of a turn", n)
	}
	return rep, nil
}

// fleet is one run: the system, the teams and what they share.
type fleet struct {
	cfg    Config
	sys    *actor.System
	env    *agent.Env
	script *script
	cards  [2]*orchestrator.AgentCard // Manager, Worker
	opts   []orchestrator.Option
	teams  []*team
	// stray counts answers delivered to a person with one already waiting
	// in the channel.
	stray atomic.Int64
}

// team is one team and its members. done is written by the driver that
// holds the team (the work channel hands it over).
type team struct {
	t              *orchestrator.Team
	human, manager *message.Address
	workers        [2]*message.Address
	answers        chan *agent.AgentMessage
	done           int
}

// newCards builds the catalog every team registers (the catalog keeps
// copies, so one set serves all).
func newCards(model llm.ModelConfig) (cards [2]*orchestrator.AgentCard, err error) {
	mcfg := agent.NewConfig(managerName, "Manager")
	mcfg.Prompt = agent.PromptTemplate{Template: "You are a manager. Hand each task to a worker and report back."}
	mcfg.Model = model
	wcfg := agent.NewConfig("@Worker", "Worker")
	wcfg.Prompt = agent.PromptTemplate{Template: "You are a worker. Do the task and report to the manager."}
	wcfg.Model = model
	if cards[0], err = orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind,
		Description: "Manager who hands tasks to workers", Skills: []string{"coordination"},
		Config: mcfg, RoutesTo: []string{"Worker"}}); err != nil {
		return cards, err
	}
	cards[1], err = orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind,
		Description: "Worker who does tasks", Skills: []string{"work"}, Config: wcfg, CanBeHired: true})
	return cards, err
}

// newTeam creates a team: the catalog, the person, the manager and the
// two workers.
func (f *fleet) newTeam(ctx context.Context) (*team, error) {
	t, err := orchestrator.New(f.sys, f.opts...)
	if err != nil {
		return nil, err
	}
	if err := t.Register(ctx, f.cards[:]...); err != nil {
		return nil, err
	}
	tm := &team{t: t, answers: make(chan *agent.AgentMessage, 1)}
	deliver := func(m *agent.AgentMessage) {
		select {
		case tm.answers <- m:
		default:
			f.stray.Add(1)
		}
	}
	if tm.human, err = t.Spawn(ctx, &agent.HumanProxy{Deliver: deliver}, &actor.Config{Name: humanName, Role: "Human"}); err != nil {
		return nil, err
	}
	if tm.manager, err = f.spawn(ctx, t, f.cards[0], managerName); err != nil {
		return nil, err
	}
	for k, name := range workerNames {
		if tm.workers[k], err = f.spawn(ctx, t, f.cards[1], name); err != nil {
			return nil, err
		}
	}
	return tm, nil
}

// spawn starts a BaseAgent named name from card's config.
func (f *fleet) spawn(ctx context.Context, t *orchestrator.Team, card *orchestrator.AgentCard, name string) (*message.Address, error) {
	cfg, err := card.ConfigCopy()
	if err != nil {
		return nil, err
	}
	acfg := cfg.(*agent.AgentConfig)
	acfg.Name = name
	return t.Spawn(ctx, &agent.BaseAgent{Env: f.env}, acfg)
}

// warmUp runs one turn through a throwaway team before anything is
// measured: what the first model call of the process initializes (the
// HTTP connection, encoders' caches) is not counted in the fleet's
// figures. It also makes that first call alone. go-openai's
// jsonschema.Definition.MarshalJSON sets a nil Properties map on the
// definition it encodes, and agent's StructuredOutput schema is one
// process-wide value encoded on every request: the first requests sent in
// parallel race on it (go test -race reports it). Encoding the schema once
// in agent/llm, as the agent-turn work does, removes the race; the warm-up
// then stays for the first reason.
func (f *fleet) warmUp(ctx context.Context) error {
	tm, err := f.newTeam(ctx)
	if err == nil {
		err = f.turn(ctx, tm)
	}
	if tm == nil {
		return fmt.Errorf("fleet: warm-up team: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	if err = errors.Join(err, tm.t.Stop(sctx)); err != nil {
		return fmt.Errorf("fleet: warm-up team: %w", err)
	}
	return nil
}

// waitIdle returns once every member has handled everything sent to it
// (a proxy call queues behind it) and the orchestrator has consumed every
// record emitted before (Sync drains the ledger).
func (tm *team) waitIdle(ctx context.Context) error {
	for _, a := range []*message.Address{tm.human, tm.manager, tm.workers[0], tm.workers[1]} {
		if err := proxy.Do(ctx, a, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
			return fmt.Errorf("fleet: waiting for %s to be idle: %w", a.Name(), err)
		}
	}
	return tm.t.Sync(ctx)
}

// drive runs every team's turns: the teams go round robin through a
// channel, each held by one driver for one turn, Concurrency drivers.
// latency[i*Turns+k] is turn k of team i.
func (f *fleet) drive(ctx context.Context, latency []time.Duration) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	n := len(f.teams)
	work := make(chan int, n) // never full: a team is in it at most once
	for i := range n {
		work <- i
	}
	var left atomic.Int64 // teams with turns still to drive
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range f.cfg.Concurrency {
		wg.Go(func() {
			for {
				var i int
				var ok bool
				select {
				case <-ctx.Done():
					return
				case i, ok = <-work:
					if !ok {
						return
					}
				}
				tm := f.teams[i]
				start := time.Now()
				if err := f.turn(ctx, tm); err != nil {
					cancel(fmt.Errorf("fleet: team %d, turn %d: %w", i, tm.done, err))
					return
				}
				latency[i*f.cfg.Turns+tm.done] = time.Since(start)
				tm.done++
				if tm.done < f.cfg.Turns {
					work <- i
				} else if left.Add(-1) == 0 {
					close(work)
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// turn sends the person's request for turn tm.done and waits for the
// manager's answer.
func (f *fleet) turn(ctx context.Context, tm *team) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.TurnTimeout)
	defer cancel()
	worker := workerNames[tm.done%2]
	if err := agent.Say(ctx, tm.human, tm.manager, agent.NewRequest("Please ask "+worker+" to do the task.")); err != nil {
		return err
	}
	select {
	case m := <-tm.answers:
		if m.Content != answerText || m.Sender.Name() != managerName || m.Sender.TeamID() != tm.t.ID() {
			return fmt.Errorf("the person got %q from %s of team %v", m.Content, m.Sender.Name(), m.Sender.TeamID())
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no answer: %w", context.Cause(ctx))
	}
}

// each runs fn(ctx, i) for every i in [0, n) on at most conc goroutines;
// the first error cancels the others' ctx and is returned.
func each(ctx context.Context, n, conc int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, conc) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// settled collects garbage twice (the second frees what finalizers of the
// first released) and returns the memory statistics.
func settled() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// heapDiff is a's live heap minus b's.
func heapDiff(a, b runtime.MemStats) int64 { return int64(a.HeapAlloc) - int64(b.HeapAlloc) }
