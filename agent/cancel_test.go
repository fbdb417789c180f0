package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// Cancelling a running turn: a CancelMessage (a person's "/cancel") sent
// to a busy agent cancels its model call or tool calls at once through the
// turn's context, the turn ends with a warning naming who cancelled, what
// was queued behind it is handled, and the next request's history is one
// OpenAI accepts (llmtest's strict checks).

// blockCard is a tool card whose tool block_until_cancelled signals its
// start on the channel registered under Key and waits for its context.
// The card's config goes through JSON (AgentConfig.CopyConfig), hence the
// key into a package table rather than a channel field.
type blockCard struct {
	Key string `json:"key"`
}

var blockEntered sync.Map // Key -> chan struct{}

func (*blockCard) Kind() string { return "BlockTool" }

func (c *blockCard) Attach(context.Context, *tool.Owner) (tool.Capabilities, error) {
	t, err := llm.NewTool("block_until_cancelled", "Wait until the turn is cancelled.",
		func(ctx context.Context, _ struct{}) (any, error) {
			if ch, ok := blockEntered.Load(c.Key); ok {
				ch.(chan struct{}) <- struct{}{}
			}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
	if err != nil {
		return tool.Capabilities{}, err
	}
	return tool.Capabilities{Tools: []*llm.Tool{t}}, nil
}

func init() { tool.Register("BlockTool", func() tool.Card { return &blockCard{} }) }

// arrived returns a Hang step that signals on the returned channel when
// its request has reached the server (the model call is in flight).
func arrived() (llmtest.Step, <-chan struct{}) {
	ch := make(chan struct{}, 1)
	s := llmtest.Hang()
	s.Check = func(*llmtest.Request) error { ch <- struct{}{}; return nil }
	return s, ch
}

func (h *harness) await(what string, ch <-chan struct{}) {
	h.t.Helper()
	select {
	case <-ch:
	case <-time.After(actortest.Timeout):
		h.t.Fatalf("timed out waiting for %s", what)
	}
}

// cancelWarning waits for the agent's WarningMessage about a cancelled
// turn and checks that it came within 100 ms of the CancelMessage (the
// records' own timestamps, so the subscriber's delay is not counted).
func (h *harness) cancelWarning(who *message.Address, want string) *message.WarningMessage {
	h.t.Helper()
	waitFrom[*message.WarningMessage](h, who, "the cancel warning")
	ms := h.sub.all()
	var warn *message.WarningMessage
	var sent time.Time
	for _, m := range ms {
		switch x := m.(type) {
		case *message.WarningMessage:
			if x.Sender.AgentID() == who.AgentID() {
				warn = x
			}
		case *message.SentMessage:
			if _, ok := x.Message.(*message.CancelMessage); ok && x.Recipient.AgentID() == who.AgentID() {
				sent = x.Message.Envelope().Timestamp
			}
		}
	}
	if warn.Content != want {
		h.t.Fatalf("warning %q, want %q", warn.Content, want)
	}
	if sent.IsZero() {
		h.t.Fatal("no SentMessage for the CancelMessage")
	}
	if d := warn.Timestamp.Sub(sent); d > 100*time.Millisecond {
		h.t.Fatalf("the turn ended %v after the cancel, want at most 100 ms", d)
	}
	return warn
}

// A model call held open by llmtest is cancelled by a person's "/cancel"
// (agent.Say); the message queued behind the cancelled turn is handled,
// and its request carries a valid history with both prompts.
func TestCancelDuringModelCall(t *testing.T) {
	h := newHarness(t)
	hang, inFlight := arrived()
	h.srv.Model("@Manager").Enqueue(hang, final(out(agent.Response, "@Human", "done: second")))
	if err := agent.Say(actortest.Context(t), h.human, h.manager, agent.NewRequest("first, slow")); err != nil {
		t.Fatal(err)
	}
	h.await("the model call", inFlight)
	second := agent.NewRequest("second")
	if err := agent.Say(actortest.Context(t), h.human, h.manager, second); err != nil { // queued behind the running turn
		t.Fatal(err)
	}
	if err := agent.Say(actortest.Context(t), h.human, h.manager, &agent.AgentMessage{Content: "/cancel too slow"}); err != nil {
		t.Fatal(err)
	}
	h.cancelWarning(h.manager, "agent @Manager: turn cancelled by @Human: too slow")
	if got := h.expectHuman(); got.Content != "done: second" {
		t.Fatalf("the queued message's answer %q", got.Content)
	}
	h.sync(h.manager)
	if f := h.srv.Failures(); len(f) > 0 {
		t.Fatalf("server refused requests: %v", f)
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	users := userTexts(reqs[1])
	if len(users) != 2 || !strings.HasSuffix(users[0], "first, slow") || !strings.HasSuffix(users[1], "second") {
		t.Fatalf("the next request's user messages %q", users)
	}
	// The CancelMessage had its own turn: Processed once, no second warning.
	h.barrier()
	if n := len(of[*message.WarningMessage](h.sub, h.manager)); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
	var cancels, processed int
	for _, s := range of[*message.SentMessage](h.sub, h.human) {
		if cm, ok := s.Message.(*message.CancelMessage); ok {
			cancels++
			for _, p := range of[*message.ProcessedMessage](h.sub, h.manager) {
				if p.MessageID == cm.ID {
					processed++
				}
			}
		}
	}
	if cancels != 1 || processed != 1 {
		t.Fatalf("%d CancelMessages sent, %d processed; want 1 and 1", cancels, processed)
	}
	h.noHuman() // a cancel that cancelled a turn is not answered "nothing to cancel"
}

// A tool call blocked on its context is cancelled the same way; the next
// request answers the cancelled call (no orphaned tool call: llmtest
// refuses one with a 400).
func TestCancelDuringToolCall(t *testing.T) {
	h := newHarness(t)
	entered := make(chan struct{}, 1)
	blockEntered.Store(t.Name(), entered)
	t.Cleanup(func() { blockEntered.Delete(t.Name()) })
	cfg := h.config("@Worker", "Worker")
	cfg.Tools = tool.Cards{&blockCard{Key: t.Name()}}
	worker := h.spawnAgent(cfg)
	h.srv.Model("@Worker").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_block", "block_until_cancelled", `{}`)),
		final(out(agent.Response, "@Human", "ready again")),
	)
	if err := agent.Say(actortest.Context(t), h.human, worker, agent.NewRequest("do the long thing")); err != nil {
		t.Fatal(err)
	}
	h.await("the tool call", entered)
	if err := agent.Say(actortest.Context(t), h.human, worker, &agent.AgentMessage{Content: "/cancel"}); err != nil {
		t.Fatal(err)
	}
	h.cancelWarning(worker, "agent @Worker: turn cancelled by @Human")
	h.say(worker, agent.Request, "are you there?")
	if got := h.expectHuman(); got.Content != "ready again" {
		t.Fatalf("answer %q", got.Content)
	}
	if f := h.srv.Failures(); len(f) > 0 {
		t.Fatalf("server refused requests: %v", f)
	}
	reqs := h.srv.RequestsFor("@Worker")
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var reply string
	for _, m := range reqs[1].History() {
		if m.Role == "tool" && m.ToolCallID == "call_block" {
			reply = m.Text()
		}
	}
	if !strings.Contains(reply, "turn cancelled by @Human") {
		t.Fatalf("the cancelled call's reply %q", reply)
	}
}

// A person's answer "/cancel" (orchestrator.ProcessHumanInput on a
// HumanProxy) cancels the turn its addressee is running; a "/cancel" that
// reaches an idle agent as text finds nothing to cancel and says so.
func TestCancelFromPersonReply(t *testing.T) {
	h := newHarness(t)
	hang, inFlight := arrived()
	h.srv.Model("@Manager").Enqueue(final(out(agent.Request, "@Human", "Which colour?")), hang)
	h.say(h.manager, agent.Request, "paint it")
	question := h.expectHuman()
	if err := agent.Say(actortest.Context(t), h.human, h.manager, agent.NewRequest("and think hard")); err != nil {
		t.Fatal(err)
	}
	h.await("the model call", inFlight)
	if err := orchestrator.ProcessHumanInput(actortest.Context(t), h.human, "/cancel", question); err != nil {
		t.Fatal(err)
	}
	h.cancelWarning(h.manager, "agent @Manager: turn cancelled by @Human")

	// Idle: a "/cancel" sent as text (not through Say) is answered.
	text := &agent.AgentMessage{Type: agent.Request, Content: "/cancel"}
	if err := proxy.Do(actortest.Context(t), h.human, func(c *actor.Context, _ actor.Actor) error { return c.Send(h.manager, text) }); err != nil {
		t.Fatal(err)
	}
	if got := h.expectHuman(); got.Content != "Nothing to cancel: no turn was running." {
		t.Fatalf("idle /cancel answered %q", got.Content)
	}
	if n := len(h.srv.RequestsFor("@Manager")); n != 2 {
		t.Fatalf("%d model requests, want 2 (the idle /cancel is not a prompt)", n)
	}
	// Idle: a person's CancelMessage (agent.Say turns "/cancel" into one)
	// finds no turn and the person is told.
	if err := agent.Say(actortest.Context(t), h.human, h.manager, &agent.AgentMessage{Content: "/cancel"}); err != nil {
		t.Fatal(err)
	}
	if got := h.expectHuman(); got.Content != "Nothing to cancel: no turn was running." {
		t.Fatalf("idle CancelMessage answered %q", got.Content)
	}
}

// A slash command is cancelled the same way: /compact waiting for its
// summarizer ends with the cancel warning and leaves the history whole
// (a failed summary would otherwise truncate it).
func TestCancelDuringCommand(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "one")), final(out(agent.Response, "@Human", "two")))
	h.say(h.manager, agent.Request, "first")
	h.say(h.manager, agent.Request, "second")
	h.expectHuman()
	h.expectHuman()
	hang, inFlight := arrived()
	h.srv.Summarizer().Enqueue(hang)
	if err := agent.Say(actortest.Context(t), h.human, h.manager, &agent.AgentMessage{Content: "/compact"}); err != nil {
		t.Fatal(err)
	}
	h.await("the summarizer call", inFlight)
	if err := agent.Say(actortest.Context(t), h.human, h.manager, &agent.AgentMessage{Content: "/cancel"}); err != nil {
		t.Fatal(err)
	}
	if got := h.expectHuman().Content; !strings.HasPrefix(got, "Command 'compact' failed") {
		t.Fatalf("the person got %q, want the command's failure", got)
	}
	h.cancelWarning(h.manager, "agent @Manager: turn cancelled by @Human")
	h.sync(h.manager)
	if errs := of[*message.ErrorMessage](h.sub, h.manager); len(errs) != 0 {
		t.Fatalf("errors %+v: the cancelled command should end with the warning only", errs)
	}
	// Nothing was compacted: the history is whole, not truncated.
	n, err := proxy.Ask(actortest.Context(t), h.manager, func(_ *actor.Context, a *agent.BaseAgent) (int, error) { return len(a.Runner().History()), nil })
	if err != nil || n != 4 {
		t.Fatalf("history of %d entries (%v) after a cancelled /compact, want the 4 it had", n, err)
	}
}
