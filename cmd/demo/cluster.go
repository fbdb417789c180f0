package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool/search"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
	"github.com/akgentic/akgentic-go/cluster"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// runCluster is -cluster: an embedded NATS server with JetStream in a
// temporary directory, one worker in this process serving the template
// "demo" (the demo's team), and the cluster client: the team is created
// through it, the task goes into the team's durable inbox, and the
// team's records are printed as the client watches them from the stream.
// Answers to the agents' questions go through the person's proxy in
// this process (the inbox carries the person's own messages).
func (d *demo) runCluster(ctx context.Context, model llm.ModelConfig, ws *workspace.Card, sc *search.Card) (err error) {
	if d.opt.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.opt.timeout)
		defer cancel()
	}
	dir, err := os.MkdirTemp("", "akgentic-demo-nats-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := cluster.RunEmbedded(dir)
	if err != nil {
		return err
	}
	defer srv.Close()
	nc, err := nats.Connect(srv.URL(), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return err
	}
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	defer func() {
		nc.Close()
		<-closed
	}()

	cs, err := cards(model, ws, sc, false) // records come through the stream: no live deltas
	if err != nil {
		return err
	}
	tmpl := cluster.Template{Person: "@Human", Build: func(ctx context.Context, team *orchestrator.Team, _ json.RawMessage) error {
		if err := team.Register(ctx, cs...); err != nil {
			return err
		}
		if _, err := team.Spawn(ctx, d.newHuman(), &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
			return err
		}
		cfg, err := cs[0].ConfigCopy()
		if err != nil {
			return err
		}
		_, err = team.Spawn(ctx, &agent.BaseAgent{Env: d.env}, cfg)
		return err
	}}
	w, err := cluster.StartWorker(ctx, nc, d.sys, cluster.Config{Logger: d.opt.logger}, map[string]cluster.Template{"demo": tmpl},
		orchestrator.WithStopGrace(10*time.Second), agent.WithEnv(d.env), agent.WithHumanDelivery(d.newHuman().Deliver))
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = errors.Join(err, w.Close(cctx))
	}()
	c, err := cluster.NewClient(ctx, nc, cluster.Config{})
	if err != nil {
		return err
	}
	id, err := c.Create(ctx, "demo", nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.opt.stdout, "akgentic demo on NATS JetStream (embedded server %s, store %s)\nteam %s created through the cluster client, workspace %s\n",
		srv.URL(), dir, id, ws.Root)

	// The records, as the client watches them; reported closes once the
	// manager's report to the person is printed.
	wctx, stopWatch := context.WithCancel(ctx)
	reported, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		done := false
		for m, err := range c.Watch(wctx, id, 0) {
			if err != nil {
				fmt.Fprintf(d.opt.stdout, "! %v\n", err)
				continue
			}
			d.print.OnMessage(m)
			if !done && isReport(m) {
				done = true
				close(reported)
			}
		}
	}()
	defer func() {
		stopWatch()
		<-watched
	}()
	if _, err := c.Send(ctx, id, "@Manager", task); err != nil {
		return err
	}
	if err := d.awaitReport(ctx, reported); err != nil {
		return err
	}
	return c.Stop(ctx, id)
}

// isReport reports whether m records the manager's answer to the person.
func isReport(m message.Message) bool {
	s, ok := m.(*message.SentMessage)
	if !ok || s.Sender == nil || s.Recipient == nil || s.Sender.Name() != "@Manager" || s.Recipient.Name() != "@Human" {
		return false
	}
	am, ok := s.Message.(*agent.AgentMessage)
	return ok && am.Type != agent.Request && am.Type != agent.Instruction
}
