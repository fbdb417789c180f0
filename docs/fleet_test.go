package docs_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/cluster"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/studio"
	"github.com/akgentic/akgentic-go/studio/fleet"
)

// serveFleet serves the list of the cluster's teams, and each team's live
// page, on ln until ctx ends.
func serveFleet(ctx context.Context, nc *nats.Conn, ln net.Listener, token string) error {
	c, err := cluster.NewClient(ctx, nc, cluster.Config{}) // the workers' Config: Stream, Prefix
	if err != nil {
		return err
	}
	console, err := fleet.New(ctx, c, studio.Options{Token: token}) // every team page's options
	if err != nil {
		return err
	}
	return console.Serve(ctx, ln) // or mount it: mux.Handle("/fleet/", http.StripPrefix("/fleet", console))
}

// The fleet console of a cluster with one team: the list shows it with
// its template and state; its page's input box posts the person's
// message, which reaches the team through its durable inbox.
func Example_fleet() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, done := tempNATS("docs-fleet")
	defer done()
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Assistant").Enqueue(llmtest.Final(hello))
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)
	env := &agent.Env{HTTPClient: model.HTTPClient()}
	w, err := cluster.StartWorker(ctx, nc, sys, cluster.Config{Owner: "worker-1"},
		map[string]cluster.Template{"assistant": assistantTemplate(env, model)}, agent.WithEnv(env))
	if err != nil {
		panic(err)
	}
	defer w.Close(ctx)
	c, err := cluster.NewClient(ctx, nc, cluster.Config{})
	if err != nil {
		panic(err)
	}
	team, err := c.Create(ctx, "assistant", nil)
	if err != nil {
		panic(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() { served <- serveFleet(sctx, nc, ln, "") }()
	base := "http://" + ln.Addr().String()

	resp, err := http.Get(base + "/")
	if err != nil {
		panic(err)
	}
	list, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("listed:", strings.Contains(string(list), `<td class="template">assistant</td>`),
		strings.Contains(string(list), `<td class="state">active</td>`))

	// What the team page's input box posts.
	resp, err = http.Post(base+"/teams/"+team.String()+"/api/send", "application/json",
		strings.NewReader(`{"to": "@Assistant", "text": "Hi"}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("sent:", resp.Status)
	watch, stopWatch := context.WithCancel(ctx)
	for rec, err := range c.Watch(watch, team, 0) {
		if err != nil {
			panic(err)
		}
		if s, ok := rec.(*message.SentMessage); ok && s.Sender.Name() == "@Assistant" {
			fmt.Println("answer:", s.Message.(*agent.AgentMessage).Content)
			break
		}
	}
	stopWatch()
	stop()
	fmt.Println("served:", <-served)
	// Output:
	// listed: true true
	// sent: 202 Accepted
	// answer: Hello!
	// served: <nil>
}
