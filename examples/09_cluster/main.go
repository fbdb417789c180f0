// Teams on NATS JetStream: a worker and a client.
//
//	go run ./examples/09_cluster                              # an embedded server, in a temporary directory
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/09_cluster # a NATS server started with -js
//
// The worker serves a template, "assistant": a person (@Human) and an LLM
// agent (@Assistant) on a scripted model. The client creates a team from
// it, sends the person's message into the team's durable inbox, watches
// the team's records from the stream (catch-up, then follow) until the
// assistant answers, lists the team with its owner, and stops it. The
// worker and the client share one connection here; in a deployment they
// run in different processes, each with its own.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/cluster"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// connectNATS connects to url, or, when url is empty, to an embedded
// server in a temporary directory. done closes what it opened.
func connectNATS(url string) (nc *nats.Conn, done func(), err error) {
	var srv *cluster.Embedded
	var dir string
	if url == "" {
		if dir, err = os.MkdirTemp("", "akgentic-09-"); err != nil {
			return nil, nil, err
		}
		if srv, err = cluster.RunEmbedded(dir); err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, err
		}
		url = srv.URL()
	}
	closed := make(chan struct{})
	nc, err = nats.Connect(url, nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err == nil {
		return nc, func() {
			nc.Close()
			<-closed // the connection's goroutines have ended
			if srv != nil {
				srv.Close()
				_ = os.RemoveAll(dir)
			}
		}, nil
	}
	if srv != nil {
		srv.Close()
		_ = os.RemoveAll(dir)
	}
	return nil, nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
}

// assistant is the worker's template: the person, and an agent on model.
func assistant(model llm.ModelConfig, env *agent.Env) cluster.Template {
	return cluster.Template{Person: "@Human", Build: func(ctx context.Context, t *orchestrator.Team, _ json.RawMessage) error {
		if _, err := t.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
			return err
		}
		cfg := agent.NewConfig("@Assistant", "Assistant")
		cfg.Prompt = agent.PromptTemplate{Template: "You are a helpful assistant."}
		cfg.Model = model
		_, err := t.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
		return err
	}}
}

func run(ctx context.Context, natsURL string, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	srv := llmtest.NewServer() // the scripted model (see examples/07_llm_team)
	defer srv.Close()
	srv.Model("@Assistant").Enqueue(llmtest.Final(
		`{"messages":[{"message_type":"response","recipient":"@Human","message":"Hello! The team runs on a worker; its records are in JetStream."}]}`))

	nc, done, err := connectNATS(natsURL)
	if err != nil {
		return err
	}
	defer done()

	// The worker: it takes teams from the leases bucket and runs them on sys.
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = errors.Join(err, sys.Shutdown(sctx))
	}()
	env := &agent.Env{HTTPClient: srv.HTTPClient()}
	w, err := cluster.StartWorker(ctx, nc, sys, cluster.Config{Owner: "worker-1"},
		map[string]cluster.Template{"assistant": assistant(srv.ModelConfig("gpt-4.1"), env)}, agent.WithEnv(env))
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = errors.Join(err, w.Close(cctx))
	}()

	// The client: create, send, watch, list, stop.
	c, err := cluster.NewClient(ctx, nc, cluster.Config{})
	if err != nil {
		return err
	}
	id, err := c.Create(ctx, "assistant", nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "team created from the template \"assistant\"")
	if _, err := c.Send(ctx, id, "@Assistant", "Hello, where do you run?"); err != nil {
		return err
	}
	if err := watch(ctx, c, id, out); err != nil {
		return err
	}
	// The template's teams that a worker holds now, by page (a cluster of
	// many teams is never read whole): Next is the cursor of the next page,
	// 0 at the end. A team stored again while the listing pages on comes
	// again: keep them by ID when each must come once.
	for after := uint64(0); ; {
		page, err := c.TeamsPage(ctx, cluster.TeamFilter{Template: "assistant", State: cluster.TeamHeld}, after, 100)
		if err != nil {
			return err
		}
		for _, t := range page.Teams {
			if t.ID == id {
				fmt.Fprintf(out, "listed: template %s, owner %s, stopped %v\n", t.Template, t.Owner, t.Stopped)
				break
			}
		}
		if page.Next == 0 {
			break
		}
		after = page.Next
	}
	if err := c.Stop(ctx, id); err != nil {
		return err
	}
	fmt.Fprintln(out, "team stopped")
	if failures := srv.Failures(); len(failures) > 0 {
		return fmt.Errorf("scripted model: %v", failures)
	}
	return nil
}

// watch prints the team's AgentMessages from its first record (index 0:
// catch-up from the start, then follow) until the assistant answers.
func watch(ctx context.Context, c *cluster.Client, id uuid.UUID, out io.Writer) error {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	for m, err := range c.Watch(wctx, id, 0) {
		if err != nil {
			return err
		}
		s, ok := m.(*message.SentMessage)
		if !ok {
			continue
		}
		if am, ok := s.Message.(*agent.AgentMessage); ok {
			fmt.Fprintf(out, "%s -> %s (%s): %s\n", s.Sender.Name(), s.Recipient.Name(), am.Type, am.Content)
			if s.Sender.Name() == "@Assistant" {
				return nil
			}
		}
	}
	return fmt.Errorf("the watch ended before the assistant answered: %w", context.Cause(ctx))
}

func main() {
	if err := run(context.Background(), os.Getenv("NATS_URL"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}
