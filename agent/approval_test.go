package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/search"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// deleteCard gives an agent delete_file, which counts its calls in the
// counter its Key names (a card's config is JSON: a restored agent's card
// finds the same counter).
type deleteCard struct {
	Key string `json:"key"`
}

var deletions sync.Map // key -> *atomic.Int32

func counter(key string) *atomic.Int32 {
	c, _ := deletions.LoadOrStore(key, new(atomic.Int32))
	return c.(*atomic.Int32)
}

func init() { tool.Register("DeleteTestTool", func() tool.Card { return &deleteCard{} }) }

func (*deleteCard) Kind() string { return "DeleteTestTool" }

func (d *deleteCard) Attach(context.Context, *tool.Owner) (tool.Capabilities, error) {
	n := counter(d.Key)
	t := &llm.Tool{Name: "delete_file", Description: "Delete a file.", Call: func(context.Context, json.RawMessage) (any, error) {
		n.Add(1)
		return "deleted", nil
	}}
	return tool.Capabilities{Tools: []*llm.Tool{t}}, nil
}

// underProd is the predicate of the approval rule: a path under /prod.
func underProd(args json.RawMessage) bool {
	var a struct {
		Path string `json:"path"`
	}
	return json.Unmarshal(args, &a) == nil && strings.HasPrefix(a.Path, "/prod")
}

// withApproval gives the agents delete_file, its calls under /prod
// waiting for the person's approval (timeout 0: no deadline).
func withApproval(t *testing.T, timeout time.Duration) (option, *atomic.Int32) {
	key := t.Name()
	deletions.Store(key, new(atomic.Int32)) // a fresh count for each run of the test (-count)
	return func(h *harness, c *agent.AgentConfig) {
		c.Tools = tool.Cards{&deleteCard{Key: key}}
		h.env.Guards = &agent.Guards{Approval: &tool.Approval{
			When:    map[string]func(json.RawMessage) bool{"delete_file": underProd},
			Timeout: timeout,
		}}
	}, counter(key)
}

// askedApproval runs a request whose answer calls delete_file on /prod and
// returns the approval request @Human gets.
func askedApproval(t *testing.T, h *harness) *agent.AgentMessage {
	t.Helper()
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "delete_file", `{"path":"/prod/db"}`)),
		final(out(agent.Response, "@Human", "cleaned up")),
	)
	h.say(h.manager, agent.Request, "clean up the database")
	req := h.expectHuman()
	if req.Approval == nil || req.Approval.Tool != "delete_file" || req.Approval.CallID != "c1" || req.Approval.Arguments != `{"path":"/prod/db"}` {
		t.Fatalf("@Human got %+v, want the approval request for delete_file", req)
	}
	if req.Type != agent.Request || !strings.Contains(req.Content, "delete_file") {
		t.Fatalf("the request reads %s %q", req.Type, req.Content)
	}
	return req
}

// decide answers req as @Human.
func decide(t *testing.T, h *harness, human *message.Address, req *agent.AgentMessage, approve bool, reason string) {
	t.Helper()
	if err := agent.Answer(actortest.Context(t), human, req, &agent.AgentMessage{Content: agent.Decision(approve, reason)}); err != nil {
		t.Fatal(err)
	}
}

func pendingIn(t *testing.T, team *orchestrator.Team) []*agent.AgentMessage {
	t.Helper()
	p, err := agent.PendingApprovals(actortest.Context(t), team)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApprovedToolCallRunsOnceAndTheTurnGoesOn(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	req := askedApproval(t, h)
	if calls.Load() != 0 {
		t.Fatal("the tool ran before its approval")
	}
	if n := len(h.srv.RequestsFor("@Manager")); n != 1 {
		t.Fatalf("%d model requests while the call waits, want 1", n)
	}
	if p := pendingIn(t, h.team); len(p) != 1 || p[0].ID != req.ID || p[0].Sender.Name() != "@Manager" {
		t.Fatalf("pending approvals %+v", p)
	}
	decide(t, h, h.human, req, true, "backed up")
	if got := h.expectHuman(); got.Content != "cleaned up" {
		t.Fatalf("@Human got %q, want the turn's answer", got.Content)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the approved call ran %d times, want once", n)
	}
	if p := pendingIn(t, h.team); len(p) != 0 {
		t.Fatalf("still pending after the approval: %+v", p)
	}
	h.barrier()
	var kinds []string
	for _, ev := range of[*message.EventMessage](h.sub, h.manager) {
		switch e := ev.Event.(type) {
		case llm.ApprovalRequestedEvent:
			kinds = append(kinds, "requested")
		case llm.ApprovalGrantedEvent:
			kinds = append(kinds, "granted by "+e.By+": "+e.Reason)
		case llm.ApprovalDeniedEvent:
			kinds = append(kinds, "denied")
		}
	}
	if strings.Join(kinds, "; ") != "requested; granted by @Human: backed up" {
		t.Fatalf("approval records %q", kinds)
	}
}

func TestDeniedToolCallNeverRunsAndTheModelGetsTheRefusal(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	req := askedApproval(t, h)
	decide(t, h, h.human, req, false, "that is the live database")
	if got := h.expectHuman(); got.Content != "cleaned up" {
		t.Fatalf("@Human got %q", got.Content)
	}
	if calls.Load() != 0 {
		t.Fatal("a denied call ran")
	}
	reqs := h.srv.RequestsFor("@Manager")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	hist := reqs[1].History()
	last := hist[len(hist)-1]
	if last.Role != "tool" || !strings.Contains(last.Text(), "denied by @Human") || !strings.Contains(last.Text(), "that is the live database") {
		t.Fatalf("the model's next request ends with %s %q, want the refusal", last.Role, last.Text())
	}
}

// A person who answers in their own words denies, and the words reach the
// model.
func TestAnAnswerInOwnWordsDenies(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	req := askedApproval(t, h)
	if err := orchestrator.ProcessHumanInput(actortest.Context(t), h.human, "use the staging copy instead", req); err != nil {
		t.Fatal(err)
	}
	h.expectHuman()
	if calls.Load() != 0 {
		t.Fatal("an unclear answer approved the call")
	}
	hist := h.srv.RequestsFor("@Manager")[1].History()
	if got := hist[len(hist)-1].Text(); !strings.Contains(got, "use the staging copy instead") {
		t.Fatalf("the refusal %q lacks the person's words", got)
	}
}

// Messages that come while a call waits are held, and handled once the
// run is over.
func TestMessagesWhileACallWaitsAreHeld(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	req := askedApproval(t, h)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "second done")))
	h.say(h.manager, agent.Request, "and then tidy the logs")
	if n := len(h.srv.RequestsFor("@Manager")); n != 1 {
		t.Fatalf("a message while the call waits made %d requests, want none", n-1)
	}
	h.noHuman()
	decide(t, h, h.human, req, true, "")
	heldHandled(t, h, h.expectHuman, calls)
}

// heldHandled checks what follows the approval of a call that held a
// message: the person gets the approved run's answer, then the held
// message's; the call ran once, and the held message reached the model.
func heldHandled(t *testing.T, h *harness, next func() *agent.AgentMessage, calls *atomic.Int32) {
	t.Helper()
	if got := next(); got.Content != "cleaned up" {
		t.Fatalf("first answer %q", got.Content)
	}
	if got := next(); got.Content != "second done" {
		t.Fatalf("second answer %q", got.Content)
	}
	if calls.Load() != 1 {
		t.Fatalf("the call ran %d times", calls.Load())
	}
	if got := h.lastUser("@Manager", 2); !strings.Contains(got, "and then tidy the logs") {
		t.Fatalf("the held message reached the model as %q", got)
	}
}

func TestApprovalDeadlineDenies(t *testing.T) {
	opt, calls := withApproval(t, time.Millisecond)
	h := newHarness(t, opt)
	req := askedApproval(t, h)
	if req.Approval.Deadline.IsZero() {
		t.Fatal("the request carries no deadline")
	}
	if got := h.expectHuman(); got.Content != "cleaned up" {
		t.Fatalf("@Human got %q", got.Content)
	}
	if calls.Load() != 0 {
		t.Fatal("an expired call ran")
	}
	h.barrier()
	var denied []llm.ApprovalDeniedEvent
	for _, ev := range of[*message.EventMessage](h.sub, h.manager) {
		if d, ok := ev.Event.(llm.ApprovalDeniedEvent); ok {
			denied = append(denied, d)
		}
	}
	if len(denied) != 1 || !denied[0].Expired {
		t.Fatalf("denied records %+v, want one expired", denied)
	}
	// A late answer changes nothing, and says so.
	decide(t, h, h.human, req, true, "")
	if got := h.expectHuman(); !strings.Contains(got.Content, "no longer waits") {
		t.Fatalf("a late answer got %q", got.Content)
	}
	if calls.Load() != 0 {
		t.Fatal("a late approval ran the expired call")
	}
}

// restored restores the harness's log, as a durable log keeps it, in a
// new system; its person's messages come on the returned channel.
func restored(t *testing.T, h *harness, msgs []message.Message) (*orchestrator.Team, *message.Address, chan *agent.AgentMessage) {
	t.Helper()
	return restoredFrom(t, h.env, actortest.Reloaded(t, msgs))
}

// restoredFrom restores a decoded log in a new system, its agents with
// env; its person's messages come on the returned channel.
func restoredFrom(t *testing.T, env *agent.Env, saved []message.Message) (*orchestrator.Team, *message.Address, chan *agent.AgentMessage) {
	t.Helper()
	sys2 := actor.NewSystem(actor.SystemConfig{})
	t.Cleanup(func() { actortest.Shutdown(t, sys2) })
	delivered := make(chan *agent.AgentMessage, 10)
	team2, err := orchestrator.Restore(actortest.Context(t), sys2, saved, agent.WithEnv(env),
		agent.WithHumanDelivery(func(m *agent.AgentMessage) { delivered <- m }))
	if err != nil {
		t.Fatal(err)
	}
	human2, err := team2.Member(actortest.Context(t), "@Human")
	if err != nil || human2 == nil {
		t.Fatalf("the restored team has no @Human (%v)", err)
	}
	return team2, human2, delivered
}

func next(t *testing.T, ch chan *agent.AgentMessage) *agent.AgentMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-actortest.Context(t).Done():
		t.Fatal("the restored person got nothing")
		return nil
	}
}

// A log cut while a call waits restores to a team whose agent waits:
// approved there, the call runs once and the turn goes on.
func TestPendingApprovalSurvivesARestore(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	askedApproval(t, h)
	h.barrier()
	team2, human2, delivered := restored(t, h, h.sub.all())
	p := pendingIn(t, team2)
	if len(p) != 1 || p[0].Approval.CallID != "c1" {
		t.Fatalf("the restored team's pending approvals %+v", p)
	}
	decide(t, h, human2, p[0], true, "")
	if got := next(t, delivered); got.Content != "cleaned up" {
		t.Fatalf("the restored person got %q", got.Content)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the call ran %d times across the restore, want once", n)
	}
	if p := pendingIn(t, team2); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}
}

// A call whose deadline passed while the team was down is denied when the
// team is restored.
func TestDeadlinePassedWhileDownDeniesOnRestore(t *testing.T) {
	opt, calls := withApproval(t, time.Hour)
	h := newHarness(t, opt)
	askedApproval(t, h)
	h.barrier()
	later := time.Now().Add(2 * time.Hour)
	h.env.Now = func() time.Time { return later }
	team2, _, delivered := restored(t, h, h.sub.all())
	if got := next(t, delivered); got.Content != "cleaned up" {
		t.Fatalf("the restored person got %q", got.Content)
	}
	if calls.Load() != 0 {
		t.Fatal("the expired call ran")
	}
	if p := pendingIn(t, team2); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}
}

// A message held while a call waits is held again by the restored agent,
// and handled once the call is decided there.
func TestHeldMessageSurvivesARestore(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	askedApproval(t, h)
	h.say(h.manager, agent.Request, "and then tidy the logs")
	h.barrier()
	team2, human2, delivered := restored(t, h, h.sub.all())
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "second done")))
	p := pendingIn(t, team2)
	if len(p) != 1 {
		t.Fatalf("pending %+v", p)
	}
	decide(t, h, human2, p[0], true, "")
	heldHandled(t, h, func() *agent.AgentMessage { return next(t, delivered) }, calls)
}

// A /clear while a call waits drops the waiting run with the history: the
// call never runs, the messages it held are handled at once, and a late
// answer is told it changed nothing.
func TestClearWhileACallWaits(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	req := askedApproval(t, h)
	h.say(h.manager, agent.Request, "and then tidy the logs")
	h.say(h.manager, agent.Request, "/clear")
	if got := h.expectHuman(); !strings.Contains(got.Content, "Cleared") {
		t.Fatalf("the clear answered %q", got.Content)
	}
	if got := h.expectHuman(); got.Content != "cleaned up" { // the model's next scripted answer
		t.Fatalf("the held message's answer %q", got.Content)
	}
	if p := h.srv.RequestsFor("@Manager"); len(p) != 2 {
		t.Fatalf("%d model requests, want 2", len(p))
	}
	decide(t, h, h.human, req, true, "")
	if got := h.expectHuman(); !strings.Contains(got.Content, "no longer waits") {
		t.Fatalf("a late answer got %q", got.Content)
	}
	if calls.Load() != 0 {
		t.Fatal("the dropped call ran")
	}
	if p := pendingIn(t, h.team); len(p) != 0 {
		t.Fatalf("the dropped call is still pending: %+v", p)
	}
}

// Decision's text reads back as the decision and its reason; any other
// text denies, never approves unless its first word says so.
func FuzzDecision(f *testing.F) {
	f.Add(true, "backed up")
	f.Add(false, "")
	f.Add(false, "  not the live database ")
	f.Add(true, "deny")
	f.Fuzz(func(t *testing.T, approve bool, reason string) {
		got, why := agent.ParseDecision(agent.Decision(approve, reason))
		if got != approve || why != strings.TrimSpace(reason) {
			t.Fatalf("Decision(%v, %q) reads back as (%v, %q)", approve, reason, got, why)
		}
		if ok, _ := agent.ParseDecision(reason); ok {
			first := strings.ToLower(strings.TrimRight(strings.Fields(reason + " x")[0], ".,:;!"))
			switch first {
			case "approve", "approved", "yes", "y", "ok":
			default:
				t.Fatalf("%q approves", reason)
			}
		}
	})
}

// A crash that cuts the turn that paused (its Processed record not in the
// log): the durable inbox delivers its message again to the restored
// agent, whose run waits; that copy is not held a second time, so the
// approved run answers once and the prompt is not run twice.
func TestRerunOfThePausingTurnIsNotHeld(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	req := askedApproval(t, h)
	h.barrier()
	var cut []message.Message
	for _, m := range h.sub.all() {
		if p, ok := m.(*message.ProcessedMessage); ok && p.MessageID == req.ParentID.UUID {
			break // the log ends before the pausing turn's Processed record
		}
		cut = append(cut, m)
	}
	team2, human2, delivered := restored(t, h, cut)
	manager2, err := team2.Member(actortest.Context(t), "@Manager")
	if err != nil || manager2 == nil {
		t.Fatalf("no @Manager (%v)", err)
	}
	if err := agent.Say(actortest.Context(t), human2, manager2, agent.NewRequest("clean up the database")); err != nil {
		t.Fatal(err)
	}
	p := pendingIn(t, team2)
	if len(p) != 1 {
		t.Fatalf("pending %+v", p)
	}
	decide(t, h, human2, p[0], true, "")
	if got := next(t, delivered); got.Content != "cleaned up" {
		t.Fatalf("the restored person got %q", got.Content)
	}
	if calls.Load() != 1 {
		t.Fatalf("the call ran %d times", calls.Load())
	}
	// The resumed turn is over (a call queues behind it), and so is
	// anything it handled after the run.
	if err := proxy.Do(actortest.Context(t), manager2, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-delivered:
		t.Fatalf("the person got a second answer %q: the rerun was run", m.Content)
	default:
	}
	if n := len(h.srv.RequestsFor("@Manager")); n != 2 {
		t.Fatalf("%d model requests, want 2 (the paused one, the one after the approval)", n)
	}
}

// A search marked by its tool's name: web_search waits for the person;
// denied, the model gets the refusal and no search is made.
func TestSearchWaitsForApproval(t *testing.T) {
	results := filepath.Join(t.TempDir(), "search.json")
	if err := os.WriteFile(results, []byte(`{"default":[{"title":"T","url":"https://example.com/","snippet":"S"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(h *harness, c *agent.AgentConfig) {
		c.Tools = tool.Cards{&search.Card{Provider: "fixed", File: results}}
		h.env.Guards = &agent.Guards{Approval: &tool.Approval{Always: []string{"web_search"}}}
	})
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("s1", "web_search", `{"query":"anything","max_results":1}`)),
		final(out(agent.Response, "@Human", "searched")),
	)
	h.say(h.manager, agent.Request, "look it up")
	req := h.expectHuman()
	if req.Approval == nil || req.Approval.Tool != "web_search" {
		t.Fatalf("@Human got %+v, want the approval of web_search", req)
	}
	decide(t, h, h.human, req, false, "no web today")
	if got := h.expectHuman(); got.Content != "searched" {
		t.Fatalf("@Human got %q", got.Content)
	}
	hist := h.srv.RequestsFor("@Manager")[1].History()
	if got := hist[len(hist)-1].Text(); !strings.Contains(got, "no web today") || strings.Contains(got, "example.com") {
		t.Fatalf("the search's result %q, want the refusal and no results", got)
	}
}

// A crash after the decision and before the call ran (the log ends with
// the approval): the restored agent goes on by itself, and the call runs
// once.
func TestDecidedCallRunsAfterARestore(t *testing.T) {
	opt, calls := withApproval(t, 0)
	h := newHarness(t, opt)
	req := askedApproval(t, h)
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "answered after the restore")))
	decide(t, h, h.human, req, true, "")
	h.expectHuman()
	h.barrier()
	var cut []message.Message
	for _, m := range h.sub.all() {
		cut = append(cut, m)
		if ev, ok := m.(*message.EventMessage); ok {
			if _, ok := ev.Event.(llm.ApprovalGrantedEvent); ok {
				break // the log ends with the decision
			}
		}
	}
	calls.Store(0)
	team2, _, delivered := restored(t, h, cut)
	if got := next(t, delivered); got.Content != "answered after the restore" {
		t.Fatalf("the restored person got %q, want the resumed run's answer", got.Content)
	}
	if calls.Load() != 1 {
		t.Fatalf("the decided call ran %d times after the restore, want once", calls.Load())
	}
	if p := pendingIn(t, team2); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}
}

// The request's text shows at most 2,000 bytes of the arguments, cut on a
// character; the Approval holds them all.
func TestApprovalTextClipsLongArguments(t *testing.T) {
	long := `{"content":"` + strings.Repeat("é", 3000) + `"}`
	text := agent.ApprovalText("@Dev", llm.ApprovalRequestedEvent{ToolName: "workspace_write", Arguments: long})
	if len(text) > 2300 || !strings.Contains(text, "bytes in all)") || !utf8.ValidString(text) {
		t.Fatalf("the request's text (%d bytes) %q", len(text), text[len(text)-120:])
	}
}
