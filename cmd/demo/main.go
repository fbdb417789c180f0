// Command demo runs a team of LLM agents end to end: a Manager, a
// Developer and a QA with planning and workspace tools, and a person
// (@Human). The person asks for a small program; the manager plans it and
// hires a developer and a reviewer by role; the reviewer asks the person a
// question; the manager reports back. Every message, tool call and model
// call is printed as it happens, then the usage per agent.
//
// By default it runs offline and deterministically: agent/llmtest serves a
// recorded conversation over the real OpenAI wire format, in process, and
// the agents reach it through the real go-openai client. With
// OPENAI_API_KEY set (and optionally OPENAI_BASE_URL and AKGENTIC_MODEL or
// -model) the same team runs on a real model. On a terminal, and with
// -web, the agents stream their answers and each is shown as it is
// written.
//
// Usage:
//
//	go run ./cmd/demo                  # the recorded conversation
//	go run ./cmd/demo -i               # type to @Manager; /team_members, /hire_member QA, /usage, /cancel, /help
//	go run ./cmd/demo -log team.log    # keep the durable event log
//	go run ./cmd/demo -restore team.log -i   # resume a team from its log
//	go run ./cmd/demo -web :8080       # watch the team and talk to it in the browser
//	go run ./cmd/demo -web :8080 -view team.log   # a log in the browser, read-only, with its time slider
//	go run ./cmd/demo -cluster         # the same task on NATS JetStream (embedded), two workers, the first crashing mid-run
//	go run ./cmd/demo -cluster -web :8080   # the same, watched in the browser: the cluster's teams, each team's page live
//
// Ctrl-C stops the team cleanly (the event log stays readable).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := mainErr(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// mainErr parses the flags and runs the demo until it ends or a signal
// stops it.
func mainErr(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opt := options{stdin: stdin, stdout: stdout, getenv: getenv}
	fs.BoolVar(&opt.interactive, "i", false, "interactive: lines typed go to @Manager (slash commands work)")
	fs.BoolVar(&opt.cluster, "cluster", false, "run the team on NATS JetStream: an embedded server in a temporary directory, two workers (the first crashes mid-run; the team resumes on the second), the team created, fed and watched through the cluster client")
	fs.StringVar(&opt.logFile, "log", "", "write the team's durable event log to `FILE`")
	fs.StringVar(&opt.restoreFile, "restore", "", "resume the team from the event log `FILE` (and go on writing it)")
	view := fs.String("view", "", "with -web: show the event log `FILE` in the browser, read-only (the team as the log ends; nothing runs, nothing is written)")
	fs.StringVar(&opt.model, "model", "", "model name with a real API (default $AKGENTIC_MODEL or gpt-4.1-mini)")
	fs.StringVar(&opt.workspace, "workspace", "", "keep the agents' files under `DIR` (default: a temporary directory)")
	fs.StringVar(&opt.web.addr, "web", "", "serve a live page of the team at `ADDR` (e.g. :8080, loopback; a host other than loopback needs the printed token) until Ctrl-C")
	fs.Func("approve", "the tools (e.g. `workspace_write,web_search`) whose calls wait for the person's approval: with -i, approve or deny at the prompt", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				opt.approve = append(opt.approve, name)
			}
		}
		return nil
	})
	fs.DurationVar(&opt.timeout, "timeout", 10*time.Minute, "give up on the task after this long")
	verbose := fs.Bool("v", false, "log the runtime's warnings and debug lines to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h: the flags are listed, as asked
		}
		return err
	}
	if *view != "" {
		if opt.restoreFile != "" {
			return errors.New("-view and -restore cannot be combined: -view shows a log read-only, -restore goes on with it")
		}
		opt.restoreFile, opt.view = *view, true
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: the demo takes flags only (-h lists them)", fs.Arg(0))
	}
	level := slog.LevelError
	if *verbose {
		level = slog.LevelDebug
	}
	opt.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opt.color = isTerminal(stdout)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, opt)
}

// isTerminal reports whether w is a character device (colour is used only
// there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
