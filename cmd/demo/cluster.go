package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
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

// demoLease is the workers' lease in -cluster: short, so that the team
// of the crashed worker is resumed on the other within about 2 s (a
// deployment keeps the default, 10 s, which survives longer pauses).
const demoLease = 2 * time.Second

// runCluster is -cluster: an embedded NATS server with JetStream in a
// temporary directory, two workers in this process ("worker A" and
// "worker B", each with its own actor system and its own connection)
// serving the template "demo" (the demo's team), and the cluster client
// on a third connection: the team is created through it (on worker A),
// the task goes into the team's durable inbox, and the team's records are
// printed as the client watches them from the stream.
//
// Mid-run, once the reviewer's question to the person is stored (the
// person's proxy processed it), worker A crashes: its connection is
// closed and its team left as it is, without any cleanup (as kill -9
// would). Worker B takes the team over when A's lease runs out, restored
// from the stream; the demo prints where it resumed. The person's answer
// to the question goes into the team's durable inbox right after the
// crash (Client.Answer), waits there while no worker owns the team, and
// is delivered by B; the conversation finishes on B.
func (d *demo) runCluster(ctx context.Context, model llm.ModelConfig, ws *workspace.Card, sc *search.Card) (err error) {
	run := ctx // Ctrl-C: with -web, the pages stay until it
	ctx, cancel := d.bounded(ctx)
	defer cancel()
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
	ncA, err := connectNATS(srv.URL())
	if err != nil {
		return err
	}
	defer ncA.close()
	ncB, err := connectNATS(srv.URL())
	if err != nil {
		return err
	}
	defer ncB.close()
	ncC, err := connectNATS(srv.URL())
	if err != nil {
		return err
	}
	defer ncC.close()

	cs, err := cards(model, ws, sc, false) // records come through the stream: no live deltas
	if err != nil {
		return err
	}
	resumed := make(chan error, 1) // a worker took the team over (worker B: A created it)
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
	}, Resume: func(ctx context.Context, team *orchestrator.Team) error {
		select { // the catalog is back from the ledger: nothing to set again
		case resumed <- nil:
		default:
		}
		return nil
	}}
	// Worker A runs on a system of its own, shut down last (the crashed
	// process's remains); worker B on the demo's.
	// Its logs are dropped: after the crash they would only say that it
	// cannot reach NATS (a dead process says nothing).
	quiet := slog.New(slog.DiscardHandler)
	sysA := actor.NewSystem(actor.SystemConfig{Logger: quiet})
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = sysA.Shutdown(sctx) // the crashed worker's team cannot write: its errors are expected
	}()
	const demoShards = 1
	start := func(nc *nats.Conn, sys *actor.System, owner string, logger *slog.Logger) (*cluster.Worker, error) {
		// One shard: worker A holds it (and the team), worker B stands by
		// until A's lease on it ends (with more shards, B joining would
		// be handed its share, perhaps the team's).
		return cluster.StartWorker(ctx, nc, sys, cluster.Config{Logger: logger, Lease: demoLease, Owner: owner, Shards: demoShards},
			map[string]cluster.Template{"demo": tmpl},
			orchestrator.WithStopGrace(10*time.Second), agent.WithEnv(d.env), agent.WithHumanDelivery(d.newHuman().Deliver))
	}
	wA, err := start(ncA.Conn, sysA, "worker A", quiet)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = wA.Close(cctx) // its connection is closed: it releases nothing
	}()
	c, err := cluster.NewClient(ctx, ncC.Conn, cluster.Config{Shards: demoShards})
	if err != nil {
		return err
	}
	id, err := c.Create(ctx, "demo", nil) // worker A is the only one serving "demo" yet
	if err != nil {
		return err
	}
	wB, err := start(ncB.Conn, d.sys, "worker B", d.opt.logger)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = errors.Join(err, wB.Close(cctx))
	}()
	fmt.Fprintf(d.opt.stdout, "akgentic demo on NATS JetStream (embedded server %s, store %s)\nteam %s created through the cluster client on worker A (worker B stands by; lease %s), workspace %s\n",
		srv.URL(), dir, id, demoLease, ws.Root)
	if d.ln != nil { // -web: the fleet console on the client's connection
		end, err := d.serveFleet(c)
		if err != nil {
			return err
		}
		defer func() {
			if err == nil { // the run is over: its pages stay until Ctrl-C
				err = end(run)
			} else {
				_ = end(nil)
			}
		}()
	}

	wctx, stopWatch := context.WithCancel(ctx)
	ev := clusterEvents{asked: make(chan question, 1), reported: make(chan struct{}), crashed: new(atomic.Bool), resumed: make(chan struct{})}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		d.watchCluster(wctx, c, id, ev)
	}()
	defer func() {
		stopWatch()
		<-watched
	}()
	if _, err := c.Send(ctx, id, "@Manager", task); err != nil {
		return err
	}
	var q question
	select {
	case q = <-ev.asked:
	case <-ev.reported:
		return errors.New("the manager reported before any question to the person: nothing to crash on")
	case <-ctx.Done():
		return context.Cause(ctx)
	}

	// The crash: worker A's connection drops; its team stays as it is.
	ev.crashed.Store(true)
	ncA.Close()
	log, err := cluster.ReadTeam(ctx, ncC.Conn, id, cluster.Config{}) // what A stored: B goes on after it
	if err != nil {
		return err
	}
	fmt.Fprintf(d.opt.stdout, "worker A lost its connection (a crash: no cleanup) with %d records of the team in the stream\n", len(log))
	answer := humanAnswer
	if d.mode == modeReal {
		answer = realAnswer
	}
	// The person answers now, while no worker runs the team: the answer
	// waits in the team's durable inbox, and worker B sends it from the
	// resumed team's person to the resumed reviewer.
	if _, err := c.Answer(ctx, id, q.msg.Message.Envelope().ID, answer); err != nil {
		return err
	}
	fmt.Fprintf(d.opt.stdout, "the person's answer waits in the team's inbox\n")
	select {
	case err := <-resumed:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return fmt.Errorf("waiting for worker B to resume team %s: %w", id, context.Cause(ctx))
	}
	fmt.Fprintf(d.opt.stdout, "worker A lost the team; the team resumed on worker B at record %d (lease %s)\n", len(log)+1, demoLease)
	close(ev.resumed) // the watch prints again
	select {
	case <-ev.reported:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return c.Stop(ctx, id)
}

// question is an agent's question to the person, as the stream holds it.
type question struct {
	msg *message.SentMessage
}

// clusterEvents is what watchCluster tells runCluster: the first question
// to the person once processed by its proxy (asked), and the manager's
// report to the person (reported, closed).
type clusterEvents struct {
	asked    chan question
	reported chan struct{}
	// crashed is set by runCluster before worker A crashes: the Start
	// records of the team's restore on worker B (every member again) are
	// not printed, up to the next message sent.
	crashed *atomic.Bool
	// resumed is closed by runCluster once it printed where the team
	// resumed: while crashed is set, the watch prints nothing before it
	// (the lines are in order, and never written at the same time).
	resumed chan struct{}
}

// watchCluster prints the team's records as the client watches them.
func (d *demo) watchCluster(ctx context.Context, c *cluster.Client, id uuid.UUID, ev clusterEvents) {
	var q *message.SentMessage
	asked, reported := false, false
	for m, err := range c.Watch(ctx, id, 0) {
		if ev.crashed.Load() {
			select {
			case <-ev.resumed:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			fmt.Fprintf(d.opt.stdout, "! %v\n", err)
			continue
		}
		if _, start := m.(*message.StartMessage); start && ev.crashed.Load() {
			continue // worker B's restore
		}
		if _, sent := m.(*message.SentMessage); sent {
			ev.crashed.Store(false) // the restore is over
		}
		d.print.OnMessage(m)
		switch r := m.(type) {
		case *message.SentMessage:
			if am, ok := r.Message.(*agent.AgentMessage); ok && q == nil && r.Recipient != nil && r.Recipient.Name() == "@Human" &&
				(am.Type == agent.Request || am.Type == agent.Instruction) {
				q = r
			}
			if !reported && isReport(m) {
				reported = true
				close(ev.reported)
			}
		case *message.ProcessedMessage:
			if !asked && q != nil && r.Sender != nil && r.Sender.Name() == "@Human" && r.MessageID == q.Message.Envelope().ID {
				asked = true
				ev.asked <- question{msg: q}
			}
		}
	}
}

// natsConn is a connection whose close waits for its goroutines.
type natsConn struct {
	*nats.Conn
	closed chan struct{}
}

func connectNATS(url string) (*natsConn, error) {
	c := &natsConn{closed: make(chan struct{})}
	nc, err := nats.Connect(url, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
		nats.ClosedHandler(func(*nats.Conn) { close(c.closed) }))
	if err != nil {
		return nil, err
	}
	c.Conn = nc
	return c, nil
}

// close closes the connection (again, after a crash) and waits for it.
func (c *natsConn) close() {
	c.Close()
	<-c.closed
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
