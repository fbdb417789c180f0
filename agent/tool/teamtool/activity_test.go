package teamtool_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// note is a message with an intent and a text, shaped like an agent's.
type note struct {
	message.Base
	Type    string `json:"type"`
	Content string `json:"content"`
}

// blocker holds each message until release is closed, saying when it has
// one (its Received record is then in the ledger).
type blocker struct{ entered, release chan struct{} }

func (b *blocker) Receive(*actor.Context, any) (any, error) {
	b.entered <- struct{}{}
	<-b.release
	return nil, nil
}

// send tells msg to to as the owner.
func (e *env) send(to *message.Address, msg any) {
	e.t.Helper()
	if err := proxy.Do(e.ctx, e.owner, func(c *actor.Context, _ actor.Actor) error { return c.Send(to, msg) }); err != nil {
		e.t.Fatal(err)
	}
}

// team_activity (opt-in here): the latest messages between members, oldest
// first, with intent and text on one line, cut when long; a member filter;
// a limit; who is working now; model mistakes are retry errors.
func TestTeamActivity(t *testing.T) {
	e := newEnv(t, &teamtool.Card{Activity: tool.Capability{Expose: tool.ToolCall | tool.Command}})
	ada, err := e.hire("Developer", "@Ada")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := e.hire("Developer", "@Bob")
	if err != nil {
		t.Fatal(err)
	}
	busy := &blocker{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(busy.release)
	worker, err := e.team.Spawn(e.ctx, busy, &actor.Config{Name: "@Busy", Role: "Busy"})
	if err != nil {
		t.Fatal(err)
	}
	e.send(ada, &note{Type: "request", Content: "write\n the   parser"})
	long := strings.Repeat("é", 250)
	e.send(bob, &note{Type: "instruction", Content: long})
	e.send(worker, &note{Type: "notification", Content: "hold this"})
	<-busy.entered
	for _, a := range []*message.Address{ada, bob} { // their turns are over: a call queues behind them
		if err := proxy.Do(e.ctx, a, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}

	all, err := e.cmd("team_activity")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(all, "\n")
	if len(lines) != 5 || lines[0] != "Team activity (oldest first):" {
		t.Fatalf("activity:\n%s", all)
	}
	for i, want := range []string{"@Manager -> @Ada (request): write the parser", "@Manager -> @Bob (instruction): " + strings.Repeat("é", 200) + "…", "@Manager -> @Busy (notification): hold this"} {
		if !strings.HasPrefix(lines[i+1], "[") || !strings.HasSuffix(lines[i+1], "] "+want) {
			t.Errorf("line %d %q, want a time then %q", i+1, lines[i+1], want)
		}
	}
	if !strings.HasPrefix(lines[4], "Working now: @Busy (since ") {
		t.Errorf("last line %q, want @Busy working", lines[4])
	}

	onlyAda, err := e.call("team_activity", map[string]any{"member": "@Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(onlyAda, "\n") != 1 || !strings.HasSuffix(onlyAda, "@Manager -> @Ada (request): write the parser") {
		t.Errorf("activity of @Ada:\n%s", onlyAda)
	}
	last, err := e.cmd("team_activity", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(last, "Team activity (the latest 1 of 3 messages, oldest first):\n") || !strings.Contains(last, "@Busy (notification)") || strings.Contains(last, "@Ada") {
		t.Errorf("activity limited to 1:\n%s", last)
	}
	_, err = e.call("team_activity", map[string]any{"limit": 500})
	if msg := retryMessage(t, err); msg != "limit 500 is out of range: give 1 to 100" {
		t.Errorf("limit 500: %q", msg)
	}
	_, err = e.call("team_activity", map[string]any{"member": "@Nobody"})
	if msg := retryMessage(t, err); !strings.HasPrefix(msg, `member "@Nobody" not found. Current members: `) || !strings.Contains(msg, "@Ada") {
		t.Errorf("unknown member: %q", msg)
	}
}

// team_activity is off by default (opt-in): no tool, no command.
func TestTeamActivityOffByDefault(t *testing.T) {
	e := newEnv(t, teamtool.New())
	if e.tool("team_activity") != nil || e.o.Registry.Has("team_activity") {
		t.Fatal("team_activity is on by default")
	}
}
