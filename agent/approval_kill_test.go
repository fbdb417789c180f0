package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// killChildEnv holds, for the child process of
// TestPendingApprovalSurvivesKill9, its event log's path and the model's
// URL.
const killChildEnv = "AKGENTIC_APPROVAL_CHILD"

// killKey names the deletions counter of the killed team's card.
const killKey = "killed-team"

// approvalEnv is the Env of the killed team and of its restored copy:
// every delete_file call waits for the person.
func approvalEnv() *agent.Env {
	return &agent.Env{Guards: &agent.Guards{Approval: &tool.Approval{Always: []string{"delete_file"}}}}
}

// TestApprovalChild is the child process of
// TestPendingApprovalSurvivesKill9 (skipped otherwise): a team writing
// its event log, whose agent's call waits for approval; it says PAUSED
// once the request is in the log, then waits to be killed.
func TestApprovalChild(t *testing.T) {
	v := os.Getenv(killChildEnv)
	if v == "" {
		t.Skip("only as a child process")
	}
	path, url, _ := strings.Cut(v, " ")
	ctx := context.Background()
	sys := actor.NewSystem(actor.SystemConfig{})
	id := uuid.New()
	w, err := eventlog.Create(path, id, eventlog.Options{Sync: eventlog.SyncEvery})
	if err != nil {
		t.Fatal(err)
	}
	team, err := orchestrator.New(sys, orchestrator.WithTeamID(id), orchestrator.WithSubscribers(w))
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan *agent.AgentMessage, 1)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { asked <- m }}, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.NewConfig("@Manager", "Manager")
	cfg.Model = llm.ModelConfig{Provider: "openai-compatible", BaseURL: url, Model: "gpt-4.1"}
	cfg.Tools = tool.Cards{&deleteCard{Key: killKey}}
	manager, err := team.Spawn(ctx, &agent.BaseAgent{Env: approvalEnv()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(ctx, human, manager, agent.NewRequest("clean up the database")); err != nil {
		t.Fatal(err)
	}
	m := <-asked
	if _, err := team.Members(ctx); err != nil { // every record so far consumed: written and synced
		t.Fatal(err)
	}
	fmt.Printf("PAUSED %s %d\n", m.Approval.Tool, counter(killKey).Load())
	select {} // killed here
}

// A call waiting for approval survives a kill -9: the team restored from
// its event log waits again; approved there, the call runs once and the
// turn goes on.
func TestPendingApprovalSurvivesKill9(t *testing.T) {
	srv := llmtest.NewServer(llmtest.WithReporter(t))
	t.Cleanup(srv.Close)
	srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/prod/db"}`)), // the child's
		final(out(agent.Response, "@Human", "cleaned up")),                          // the restored agent's
	)
	path := filepath.Join(t.TempDir(), "team.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestApprovalChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path+" "+srv.URL())
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() { // ends at the child's first line or its death
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		said <- line
	}()
	var line string
	heard := false
	select {
	case line = <-said:
		heard = true
	case <-actortest.Context(t).Done():
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no stop, no flush
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !heard { // the reader ends with the child
		line = <-said
	}
	if line != "PAUSED delete_file 0\n" {
		t.Fatalf("the child said %q, want that the call waits and has not run", line)
	}

	log, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	deletions.Store(killKey, new(atomic.Int32))
	env := approvalEnv()
	env.HTTPClient = srv.HTTPClient()
	team, human, delivered := restoredFrom(t, env, log.Messages)
	p := pendingIn(t, team)
	if len(p) != 1 || p[0].Approval.Tool != "delete_file" {
		t.Fatalf("the restored team's pending approvals %+v", p)
	}
	if err := agent.Answer(actortest.Context(t), human, p[0], &agent.AgentMessage{Content: agent.Decision(true, "")}); err != nil {
		t.Fatal(err)
	}
	if got := next(t, delivered); got.Content != "cleaned up" {
		t.Fatalf("the restored person got %q", got.Content)
	}
	if n := counter(killKey).Load(); n != 1 {
		t.Fatalf("the call ran %d times after the restore, want once", n)
	}
	if _, err := team.Members(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if err := team.Stop(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
}
