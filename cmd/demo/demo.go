package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/agent/tool/search"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
	"github.com/akgentic/akgentic-go/proxy"
)

// mode says where the model is.
type mode int

const (
	modeReplay   mode = iota // the recorded transcript (default)
	modeScripted             // the scripted models (records the transcript)
	modeOffline              // anything goes: a fixed offline answer (-i, -restore)
	modeReal                 // OPENAI_API_KEY
)

// options are the demo's settings (flags, environment and streams).
type options struct {
	interactive bool
	cluster     bool // -cluster (cluster.go)
	logFile     string
	restoreFile string
	view        bool // -view: restoreFile is shown read-only (-web): the team stopped at once, nothing written
	model       string
	workspace   string
	timeout     time.Duration
	color       bool // stdout is a terminal: colours, and the agents stream their answers to the printer
	getenv      func(string) string
	stdin       io.Reader
	stdout      io.Writer
	logger      *slog.Logger
	record      io.Writer // scripted mode: where the transcript goes
	forceMode   *mode
	web         webOptions            // -web (web.go)
	approve     []string              // -approve: the tools whose calls wait for the person's approval
	script      func(*llmtest.Server) // tests: steps for the offline model (with -web: after the recorded task), before its fixed reply
}

// demo is one run.
type demo struct {
	opt      options
	mode     mode
	srv      *llmtest.Server
	sys      *actor.System
	team     *orchestrator.Team
	human    *message.Address
	manager  *message.Address
	print    *printer
	inbox    chan *agent.AgentMessage // what the person receives
	log      *eventlog.Writer
	env      *agent.Env    // the agents' model client and name picker
	ln       net.Listener  // -web's listener, opened before anything is printed
	restored *eventlog.Log // -restore's log, read before the team starts
}

func (d *demo) chooseMode() {
	switch {
	case d.opt.forceMode != nil:
		d.mode = *d.opt.forceMode
	case d.opt.getenv("OPENAI_API_KEY") != "":
		d.mode = modeReal
	case d.opt.interactive || d.opt.restoreFile != "":
		d.mode = modeOffline
	case d.opt.web.addr != "" && !d.opt.cluster: // the scripted task, then the offline model
		d.mode = modeScripted
	default:
		d.mode = modeReplay
	}
}

// modelConfig returns the model the agents use, and starts the offline
// server when there is no real one.
func (d *demo) modelConfig() (llm.ModelConfig, error) {
	if d.mode == modeReal {
		m := llm.DefaultConfig().Model
		m.Model = "gpt-4.1-mini"
		if v := d.opt.getenv("AKGENTIC_MODEL"); v != "" {
			m.Model = v
		}
		if d.opt.model != "" {
			m.Model = d.opt.model
		}
		if base := d.opt.getenv("OPENAI_BASE_URL"); base != "" {
			m.Provider, m.BaseURL = "openai-compatible", base
		}
		return m, nil
	}
	var opts []llmtest.Option
	if d.mode == modeScripted && d.opt.record != nil {
		opts = append(opts, llmtest.WithRecorder(d.opt.record))
	}
	if d.mode == modeOffline { // one model answers everyone
		opts = append(opts, llmtest.WithRouter(func(*llmtest.Request) string { return "" }))
	}
	d.srv = llmtest.NewServer(opts...)
	switch d.mode {
	case modeReplay:
		if err := d.srv.Replay(bytes.NewReader(transcript)); err != nil {
			return llm.ModelConfig{}, err
		}
	case modeScripted:
		script(d.srv)
	case modeOffline:
		d.srv.Model("").Otherwise(llmtest.Final(offlineReply))
		if d.opt.script != nil {
			d.opt.script(d.srv)
		}
	}
	return d.srv.ModelConfig("gpt-4.1"), nil
}

// cards are the team's roles; the Developer also searches the web (sc).
func cards(model llm.ModelConfig, ws *workspace.Card, sc *search.Card, stream bool) ([]*orchestrator.AgentCard, error) {
	roles := []struct{ role, desc, prompt string }{
		{"Manager", "Project manager who plans, delegates to specialists and reports to the person",
			"You are {name}, a project manager. Keep the team plan up to date, delegate the work to specialists (hire them by role), and report to @Human when it is done."},
		{"Developer", "Writes code in the workspace", "You are {name}, a software developer. Write the code you are asked for in the workspace and report back."},
		{"QA", "Reviews code and asks the person when requirements are unclear", "You are {name}, a QA engineer. Review what you are asked to review; ask @Human when a requirement is unclear."},
	}
	var out []*orchestrator.AgentCard
	for _, r := range roles {
		cfg := agent.NewConfig("@"+r.role, r.role)
		cfg.Prompt = agent.PromptTemplate{Template: r.prompt, Params: map[string]string{"name": "@" + r.role}}
		cfg.Model = model
		cfg.Runtime.Stream = stream // the printer (on a terminal) and the page (-web) show the answers as they are written
		cfg.Tools = tool.Cards{planning.New(), ws}
		if r.role == "Developer" {
			cfg.Tools = append(cfg.Tools, sc)
		}
		card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind, Description: r.desc,
			Skills: []string{strings.ToLower(r.role)}, Config: cfg, CanBeHired: r.role != "Manager",
			RoutesTo: map[string][]string{"Manager": {"Developer", "QA"}}[r.role]})
		if err != nil {
			return nil, err
		}
		out = append(out, card)
	}
	return out, nil
}

// run is the demo: build or restore the team, run the task (or the
// person's lines with -i), stop, print the usage table.
func run(ctx context.Context, opt options) (err error) {
	if err := opt.check(); err != nil {
		return err
	}
	d := &demo{opt: opt, inbox: make(chan *agent.AgentMessage, 64)}
	if opt.web.addr != "" {
		if err := d.listenWeb(); err != nil {
			return err
		}
		defer d.ln.Close() // closed by the studio's server once it serves; here if the run ends before
	}
	d.chooseMode()
	model, err := d.modelConfig()
	if err != nil {
		return err
	}
	if d.srv != nil {
		defer d.srv.Close()
	}
	d.env = &agent.Env{Rand: func(int) int { return 0 }}
	if len(opt.approve) > 0 {
		d.env.Guards = &agent.Guards{Approval: &tool.Approval{Always: opt.approve}}
	}
	if d.srv != nil {
		d.env.HTTPClient = d.srv.HTTPClient()
	}

	if opt.restoreFile != "" { // first: the log names the workspace
		if d.restored, err = eventlog.ReadFile(opt.restoreFile); err != nil {
			return err
		}
	}
	files := &made{}
	defer files.remove()
	paths := loggedPaths(d.restored)
	wsRoot, wsWhy, err := d.workspace(files, paths.root)
	if err != nil {
		return err
	}
	ws := &workspace.Card{Root: wsRoot}
	sc, err := d.searchCard(files, paths.search)
	if err != nil {
		return err
	}
	d.print = newPrinter(opt.stdout, opt.color)
	d.sys = actor.NewSystem(actor.SystemConfig{Logger: opt.logger})
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if serr := d.sys.Shutdown(sctx); serr != nil && err == nil {
			err = serr
		}
	}()
	if opt.cluster {
		err = d.runCluster(ctx, model, ws, sc)
		d.print.table(opt.stdout)
		return d.ended(err)
	}
	if err := d.startTeam(ctx, model, ws, sc); err != nil {
		return err
	}
	fmt.Fprintf(opt.stdout, "akgentic demo: %s\nteam %s, workspace %s (%s)\n", d.describe(), d.team.ID(), wsRoot, wsWhy)

	resumed := false
	if opt.restoreFile != "" && !opt.view {
		if resumed, err = d.goOn(ctx); err != nil {
			return d.ended(d.stop(err))
		}
	}
	switch {
	case opt.web.addr != "":
		err = d.serveWeb(ctx)
	case opt.interactive:
		err = d.interact(ctx)
	case opt.restoreFile == "":
		err = d.runTask(ctx)
	case resumed:
		bctx, cancel := d.bounded(ctx)
		err = d.awaitReport(bctx, nil)
		cancel()
	}
	return d.ended(d.stop(err))
}

// stop stops the team, closes the log and prints the usage table; err is
// the run's error so far, returned unless it is nil and stopping failed.
func (d *demo) stop(err error) error {
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if serr := d.team.Stop(stopCtx); serr != nil && err == nil {
		err = serr
	}
	if d.log != nil {
		if cerr := d.log.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	d.print.table(d.opt.stdout)
	return err
}

// goOn says what work the restored log left unfinished, and on a real
// model sends it again (resumed); offline it says plainly that the
// recording has nothing more for it.
func (d *demo) goOn(ctx context.Context) (resumed bool, err error) {
	u := pendingWork(d.restored.Messages)
	out := d.opt.stdout
	if u.empty() {
		fmt.Fprintln(out, "The log left no work unfinished.")
		if !d.opt.interactive && d.opt.web.addr == "" {
			fmt.Fprintln(out, "Nothing more to do: add -i to talk to the team, or -web :8080 to watch it in the browser.")
		}
		return false, nil
	}
	fmt.Fprintln(out, "The log left this work unfinished:")
	u.describe(out)
	if d.mode != modeReal {
		fmt.Fprintln(out, "Offline, the recording has nothing more: the restored team cannot go on with it. Set OPENAI_API_KEY to go on with a real model; -i talks to the team (its slash commands work offline).")
		return false, nil
	}
	fmt.Fprintln(out, "On the real model the team goes on with it: the cut messages are sent again, and the questions answered.")
	return true, d.resume(ctx, u)
}

// bounded is ctx bounded by -timeout (not when it is 0).
func (d *demo) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.opt.timeout > 0 {
		return context.WithTimeout(ctx, d.opt.timeout)
	}
	return context.WithCancel(ctx)
}

// ended is the run's error once it ended: a recorded transcript that no
// longer matches, or none after Ctrl-C.
func (d *demo) ended(err error) error {
	if d.srv != nil && d.mode == modeReplay {
		if fails := d.srv.Failures(); len(fails) > 0 && err == nil {
			err = fmt.Errorf("the recorded transcript no longer matches the code (re-record it with go test ./cmd/demo -run TestRecordTranscript -update): %s", fails[0])
		}
	}
	if errors.Is(err, context.Canceled) {
		return nil // Ctrl-C: the team was stopped cleanly
	}
	return err
}

// streams reports whether the agents stream their answers: on a terminal
// (the printer's live line) and with -web (the page's "is writing" bubble).
func (d *demo) streams() bool { return d.opt.color || d.opt.web.addr != "" }

func (d *demo) describe() string {
	switch {
	case d.opt.view:
		return "the log " + d.opt.restoreFile + " in the browser, read-only: the team as the log ends (nothing runs, nothing is written)"
	case d.mode == modeReal && d.opt.restoreFile != "":
		return "the team restored from " + d.opt.restoreFile + " on a real model: it goes on with the work the log left unfinished"
	case d.mode == modeReal:
		return "a team of agents on a real model"
	case d.opt.restoreFile != "":
		return "the team restored from " + d.opt.restoreFile + " on the offline model, which has no recording beyond the log (slash commands work; set OPENAI_API_KEY for a real model)"
	case d.mode == modeOffline:
		return "the team on the offline model, which answers anything but slash commands with a fixed reply (set OPENAI_API_KEY for a real model)"
	case d.mode == modeScripted && d.opt.record != nil:
		return "recording the offline transcript from the scripted models"
	case d.mode == modeScripted:
		return "the recorded task on the offline model, played in the page (answer the reviewer's question there); then a fixed reply to anything but slash commands"
	}
	return "a team of agents on the offline model (a recorded conversation, served over the OpenAI wire format)"
}

// startTeam creates (or restores) the team: cards, @Human, @Manager.
func (d *demo) startTeam(ctx context.Context, model llm.ModelConfig, ws *workspace.Card, sc *search.Card) error {
	subs := []orchestrator.Subscriber{d.print}
	if d.opt.restoreFile != "" {
		if err := d.restore(ctx, subs, model); err != nil {
			return err
		}
		// The catalog is not in the log (it is not telemetry): register it
		// again, so that the restored agents can hire by role.
		cs, err := cards(model, ws, sc, d.streams())
		if err != nil {
			return err
		}
		if err := d.team.Register(ctx, cs...); err != nil {
			return err
		}
		if d.opt.view {
			return d.stopStarted(ctx)
		}
		return nil
	}
	teamID := uuid.New()
	if d.opt.logFile != "" {
		w, err := eventlog.Create(d.opt.logFile, teamID, eventlog.Options{Sync: eventlog.SyncBatch, Logger: d.opt.logger})
		if err != nil {
			return err
		}
		d.log = w
		subs = append(subs, w)
	}
	team, err := orchestrator.New(d.sys, orchestrator.WithTeamID(teamID), orchestrator.WithStopGrace(10*time.Second), orchestrator.WithSubscribers(subs...))
	if err != nil {
		return err
	}
	d.team = team
	cs, err := cards(model, ws, sc, d.streams())
	if err != nil {
		return err
	}
	if err := team.Register(ctx, cs...); err != nil {
		return err
	}
	d.human, err = team.Spawn(ctx, d.newHuman(), &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		return err
	}
	cfg, err := cs[0].ConfigCopy()
	if err != nil {
		return err
	}
	d.manager, err = team.Spawn(ctx, &agent.BaseAgent{Env: d.env}, cfg)
	return err
}

// searchResults are the fixed search results of the offline demo.
//
//go:embed testdata/search.json
var searchResults []byte

// searchCard is the Developer's SearchTool: on a real model, the provider
// the environment names (TAVILY_API_KEY, then BRAVE_API_KEY; without
// either, web_search tells the model that no provider is configured);
// offline, fixed results (testdata/search.json), so the run stays
// deterministic, in a file of a temporary folder. A restored team's
// agents read the file their log names (the path is part of their
// recorded config): it is written there again when it is gone.
func (d *demo) searchCard(files *made, fromLog string) (*search.Card, error) {
	if d.mode == modeReal && fromLog == "" {
		return &search.Card{}, nil
	}
	path, err := files.searchFixture(fromLog)
	if err != nil {
		return nil, fmt.Errorf("demo: the offline search results: %w", err)
	}
	return &search.Card{Provider: "fixed", File: path}, nil
}

func (d *demo) newHuman() *agent.HumanProxy {
	return &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) {
		select {
		case d.inbox <- m:
		default: // the loop is behind; the printer showed it anyway
		}
	}}
}

// restore resumes a team from an event log, which goes on in that file.
func (d *demo) restore(ctx context.Context, subs []orchestrator.Subscriber, model llm.ModelConfig) error {
	log := d.restored
	if err := useModel(log.Messages, model); err != nil {
		return err
	}
	if log.Truncated != nil {
		fmt.Fprintf(d.opt.stdout, "note: %v (skipped)\n", log.Truncated)
	}
	if !d.opt.view { // -view writes nothing
		w, err := eventlog.Append(d.opt.restoreFile, eventlog.Options{Sync: eventlog.SyncBatch, Logger: d.opt.logger})
		if err != nil {
			return err
		}
		d.log = w
		subs = append(subs, w)
	}
	d.print.mute(true) // the replay is history: do not print it again
	team, err := orchestrator.Restore(ctx, d.sys, log.Messages, orchestrator.WithStopGrace(10*time.Second),
		orchestrator.WithSubscribers(subs...),
		agent.WithEnv(d.env),                          // the recreated agents' Env
		agent.WithHumanDelivery(d.newHuman().Deliver)) // the person's hook (not configuration)
	if team == nil {
		d.print.mute(false)
		return err
	}
	_, _ = team.Members(ctx) // barrier: the replay has reached the printer
	d.print.mute(false)
	d.team = team
	if err != nil {
		fmt.Fprintf(d.opt.stdout, "note: %v\n", err)
	}
	d.human, _ = team.Member(ctx, "@Human")
	d.manager, _ = team.Member(ctx, "@Manager")
	if d.human == nil || d.manager == nil {
		return fmt.Errorf("the restored team has no @Human or @Manager (members: %v)", members(ctx, team))
	}
	fmt.Fprintf(d.opt.stdout, "restored %d records; members: %s\n", len(log.Messages), strings.Join(members(ctx, team), ", "))
	return nil
}

// stopStarted stops the restored team once each member has started (its
// start reads the log back from the team): -view shows the team as its
// log ends, and nothing runs.
func (d *demo) stopStarted(ctx context.Context) error {
	ms, err := d.team.Members(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := proxy.Do(ctx, m, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
			return fmt.Errorf("-view: %s did not start: %w", m.Name(), err)
		}
	}
	return d.team.Stop(ctx)
}

func members(ctx context.Context, team *orchestrator.Team) []string {
	ms, _ := team.Members(ctx)
	var out []string
	for _, m := range ms {
		out = append(out, m.Name())
	}
	return out
}

// runTask asks the manager for the task and waits for its answer to the
// person, answering agents' questions on the person's behalf.
func (d *demo) runTask(ctx context.Context) error {
	ctx, cancel := d.bounded(ctx)
	defer cancel()
	if err := agent.Say(ctx, d.human, d.manager, agent.NewRequest(task)); err != nil {
		return err
	}
	return d.awaitReport(ctx, nil)
}

// awaitReport waits for the manager's report to the person (or for
// reported to close, when not nil), answering agents' questions on the
// person's behalf.
func (d *demo) awaitReport(ctx context.Context, reported <-chan struct{}) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-reported:
			return nil
		case m := <-d.inbox:
			switch {
			case reported == nil && m.Sender != nil && m.Sender.Name() == "@Manager" && m.Type != agent.Request && m.Type != agent.Instruction:
				return nil // the manager reported (a real model may say it as a notification): done
			case m.Type == agent.Request || m.Type == agent.Instruction:
				answer := humanAnswer
				switch {
				case m.Approval != nil: // -approve without -i: the scripted person approves
					answer = agent.Decision(true, "the demo approves every call")
				case d.mode == modeReal:
					answer = realAnswer
				}
				person := d.human
				if person == nil { // -cluster: the team is the worker's
					person = m.Recipient
				}
				if err := orchestrator.ProcessHumanInput(ctx, person, answer, m); err != nil {
					return err
				}
			}
		}
	}
}

// settle waits until the manager has handled what it was sent and every
// record so far is printed, so that the next line (typed or piped) comes
// after the answer to the last.
func (d *demo) settle(ctx context.Context) {
	_ = proxy.Do(ctx, d.manager, func(*actor.Context, actor.Actor) error { return nil })
	_, _ = d.team.Members(ctx)
}

// settleOrCancel is settle, except that a /cancel typed meanwhile is sent
// at once (agent.Say sends it as a CancelMessage, which cancels the
// manager's running turn); the other lines typed meanwhile are held for
// after. closed is set when the input ended.
func (d *demo) settleOrCancel(ctx context.Context, lines <-chan string, held *[]string, closed *bool) {
	done := make(chan struct{})
	go func() { d.settle(ctx); close(done) }()
	for {
		select {
		case <-done:
			return
		case line, ok := <-lines:
			switch {
			case !ok:
				*closed, lines = true, nil
			case strings.HasPrefix(strings.TrimSpace(line), "/cancel"):
				if err := agent.Say(ctx, d.human, d.manager, agent.NewRequest(strings.TrimSpace(line))); err != nil {
					fmt.Fprintf(d.opt.stdout, "! %v\n", err)
				}
			default:
				*held = append(*held, line)
			}
		}
	}
}

// demoHelp lists what -i takes besides the manager's slash commands.
const demoHelp = `The demo's own commands:
  /usage    print the usage table (requests, tokens, cost per agent)
  /cancel   cancel @Manager's running turn
  /quit     stop the team and print the usage (also /exit, or the end of input)
  /help     this list, then @Manager's commands (/help <command> describes one)
A line without a slash goes to @Manager, or answers the last question an agent asked you.
@Manager's commands follow.
`

// interact sends the person's lines to the manager; a line answers the
// last question an agent asked the person; /cancel cancels the manager's
// running turn; /usage prints the table; /quit or the end of input stops.
func (d *demo) interact(ctx context.Context) error {
	d.settle(ctx)
	fmt.Fprintln(d.opt.stdout, "Type a message for @Manager, a /command (/help), /cancel, /usage, or /quit.")
	lines := make(chan string)
	readErr := make(chan error, 1)
	stop, readerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(d.opt.stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
		readErr <- sc.Err()
		close(lines)
	}()
	defer func() {
		close(stop)
		// A read blocked on a pipe or file ends at a deadline; a reader
		// that cannot take one is left to the process's exit.
		if dl, ok := d.opt.stdin.(interface{ SetReadDeadline(time.Time) error }); ok && dl.SetReadDeadline(time.Now()) == nil {
			<-readerDone
		}
	}()
	var question *agent.AgentMessage
	asked := func(m *agent.AgentMessage) {
		switch {
		case m.Approval != nil:
			question = m
			fmt.Fprintf(d.opt.stdout, "(your next line decides on %s's call of %s: approve or deny, then a reason if you like)\n",
				name(m.Sender), m.Approval.Tool)
		case m.Type == agent.Request || m.Type == agent.Instruction:
			question = m
			fmt.Fprintf(d.opt.stdout, "(your next line answers %s)\n", name(m.Sender))
		}
	}
	var held []string // lines typed while the manager was busy
	closed := false
	for {
		var line string
		switch {
		case len(held) > 0:
			select {
			case m := <-d.inbox: // what came first is seen first
				asked(m)
				continue
			default:
			}
			line, held = held[0], held[1:]
		case closed:
			return <-readErr
		default:
			var ok bool
			select {
			case <-ctx.Done():
				return ctx.Err()
			case m := <-d.inbox:
				asked(m)
				continue
			case line, ok = <-lines:
				if !ok {
					return <-readErr
				}
			}
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case line == "/quit" || line == "/exit":
			return nil
		case line == "/usage":
			d.print.table(d.opt.stdout)
		case line == "/help":
			// The demo's own commands, then the manager's (its answer).
			fmt.Fprint(d.opt.stdout, demoHelp)
			if err := agent.Say(ctx, d.human, d.manager, agent.NewRequest(line)); err != nil {
				fmt.Fprintf(d.opt.stdout, "! %v\n", err)
			}
		case question != nil && !strings.HasPrefix(line, "/"):
			if err := orchestrator.ProcessHumanInput(ctx, d.human, line, question); err != nil {
				fmt.Fprintf(d.opt.stdout, "! %v\n", err)
			}
			question = nil
		default:
			if err := agent.Say(ctx, d.human, d.manager, agent.NewRequest(line)); err != nil {
				fmt.Fprintf(d.opt.stdout, "! %v\n", err)
			}
		}
		d.settleOrCancel(ctx, lines, &held, &closed)
	}
}
