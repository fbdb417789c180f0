package eventlog_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// killChildEnv makes the test binary run as the child team process.
const killChildEnv = "AKGENTIC_EVENTLOG_KILL_CHILD"

type counterConfig struct {
	actor.Config
	Step int `json:"step"`
}

type counterState struct {
	Total int `json:"total"`
	Calls int `json:"calls"`
}

// counter adds its step per UserMessage and answers the total; recreated
// by a restore, it takes its last state back.
type counter struct {
	actor.Agent[counterConfig, counterState]
}

func init() {
	actor.RegisterKind("eventlog_test.counter", func() actor.Actor { return &counter{} })
}

func (w *counter) OnStart(c *actor.Context) error {
	st := &counterState{}
	if c.Restoring() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, ok, err := orchestrator.RestoredState[counterState](ctx, c)
		if err != nil {
			return err
		}
		if ok {
			st = s
		}
	}
	if err := w.InitState(st); err != nil {
		return err
	}
	return w.ObserveState()
}

func (w *counter) Receive(c *actor.Context, msg any) (any, error) {
	if _, ok := msg.(*message.UserMessage); ok {
		w.State().Total += w.Config().Step
		w.State().Calls++
		return w.State().Total, nil
	}
	return nil, nil
}

// runKillChild is the child: a team logging to the file named by the
// environment, some work, "ready" on stdout, then it waits to be killed.
func runKillChild(path string) {
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	teamID := uuid.New()
	w, err := eventlog.Create(path, teamID, eventlog.Options{Sync: eventlog.SyncNone})
	if err != nil {
		fail(err)
	}
	sys := actor.NewSystem(actor.SystemConfig{})
	team, err := orchestrator.New(sys, orchestrator.WithTeamID(teamID), orchestrator.WithSubscribers(w))
	if err != nil {
		fail(err)
	}
	a, err := team.Spawn(ctx, &counter{}, &counterConfig{Config: actor.Config{Name: "a", Role: "Counter"}, Step: 2})
	if err != nil {
		fail(err)
	}
	b, err := team.Spawn(ctx, &counter{}, &counterConfig{Config: actor.Config{Name: "b", Role: "Counter"}, Step: 7})
	if err != nil {
		fail(err)
	}
	for i := range 50 {
		if _, err := sys.Ask(ctx, a, message.NewUserMessage(fmt.Sprint("a", i))); err != nil {
			fail(err)
		}
	}
	for i := range 3 {
		if _, err := sys.Ask(ctx, b, message.NewUserMessage(fmt.Sprint("b", i))); err != nil {
			fail(err)
		}
	}
	if _, err := team.Members(ctx); err != nil { // barrier: every record is written
		fail(err)
	}
	fmt.Println("ready")
	// Keep working until killed: these records may or may not make it.
	for i := 0; ; i++ {
		if _, err := sys.Ask(ctx, b, message.NewUserMessage(fmt.Sprint("more", i))); err != nil {
			fail(err)
		}
	}
}

// A team killed with SIGKILL is restored in a fresh process from its event
// log, with every record written before the kill, and goes on working.
func TestKillRestore(t *testing.T) {
	if path := os.Getenv(killChildEnv); path != "" {
		runKillChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "team.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillRestore$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	log, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatalf("read the killed team's log: %v", err)
	}
	if log.Truncated != nil {
		t.Logf("truncated tail reported and skipped: %v", log.Truncated)
	}
	sys := actor.NewSystem(actor.SystemConfig{})
	defer actortest.Shutdown(t, sys)
	ctx := actortest.Context(t)
	// The restored team appends to the same log.
	w, err := eventlog.Append(path, eventlog.Options{Sync: eventlog.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	team, err := orchestrator.Restore(ctx, sys, log.Messages, orchestrator.WithSubscribers(w), orchestrator.WithStopGrace(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if team.ID() != log.TeamID {
		t.Fatalf("restored team %s, log header %s", team.ID(), log.TeamID)
	}
	a, _ := team.Member(ctx, "a")
	b, _ := team.Member(ctx, "b")
	if a == nil || b == nil || !a.IsAlive() || !b.IsAlive() {
		t.Fatalf("members after restore: a=%v b=%v", a, b)
	}
	// a did exactly 50 calls before "ready" and none after: its state is
	// whole. b went on until the kill: at least 3 calls.
	total, err := sys.Ask(ctx, a, message.NewUserMessage("after"))
	if err != nil || total != 51*2 {
		t.Fatalf("restored a answered %v, %v; want %d", total, err, 51*2)
	}
	states, _ := team.States(ctx)
	var st counterState // replayed states are raw JSON until the actor publishes again
	if raw, err := json.Marshal(states[b.AgentID()]); err != nil || json.Unmarshal(raw, &st) != nil || st.Calls < 3 || st.Total != 7*st.Calls {
		t.Fatalf("b's restored state %s", raw)
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The continued log reads back clean, with the restored team's work.
	again, err := eventlog.ReadFile(path)
	if err != nil || again.Truncated != nil {
		t.Fatalf("continued log: %v, truncated %v", err, again.Truncated)
	}
	if len(again.Messages) <= len(log.Messages) {
		t.Fatalf("continued log has %d records, before %d", len(again.Messages), len(log.Messages))
	}
}
