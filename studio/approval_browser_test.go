package studio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/internal/browsertest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// In a real browser: an approval request shows Approve and Deny; the
// person types a reason and clicks Approve, the call runs once and the
// answer shows; the next request is denied from its Deny button, the
// reason reaching the model.
func TestApprovalButtonsInBrowser(t *testing.T) {
	f := buildFixture(t, Options{}, false, func(cfg *agent.AgentConfig) { cfg.Tools = append(cfg.Tools, &publishCard{}) })
	published.Store(0)
	ctx, cancel := context.WithTimeout(f.ctx, 60*time.Second)
	defer cancel()
	bctx := browsertest.Open(t, ctx, "the approval buttons' browser test")
	shows, step := browsertest.Shows, browsertest.Stepper(t, bctx, nil)
	step("open the page", chromedp.Navigate(f.http.URL+"/"), shows("#conn", "live"))

	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("p1", "publish", `{}`)), reply("response", "@Human", "first done"),
		llmtest.ToolCalls(llmtest.Call("p2", "publish", `{}`)), reply("response", "@Human", "second done"),
	)
	if req := f.say("publish it"); req.Approval == nil {
		t.Fatalf("the person got %q, want an approval request", req.Content)
	}
	step("approve from the page, with a reason",
		shows("#feed", "asks your approval to call the tool publish"),
		chromedp.SendKeys(chromedp.CSS("#text"), "ship it"),
		chromedp.Click(chromedp.CSS(".approval button")), // Approve
		shows("#feed", "✓ answered"),
		shows("#feed", "first done"))
	if got := f.answer(); got.Content != "first done" {
		t.Fatalf("the person got %q after the approval", got.Content)
	}
	if published.Load() != 1 {
		t.Fatalf("publish ran %d times after the approval, want once", published.Load())
	}
	if req := f.say("publish it again"); req.Approval == nil {
		t.Fatalf("the person got %q, want an approval request", req.Content)
	}
	step("deny from the page, with a reason",
		chromedp.SendKeys(chromedp.CSS("#text"), "not today"),
		chromedp.Click(chromedp.CSS(".approval button:last-child")), // Deny
		shows("#feed", "second done"))
	if got := f.answer(); got.Content != "second done" {
		t.Fatalf("the person got %q after the denial", got.Content)
	}
	if published.Load() != 1 {
		t.Fatal("a denied call ran")
	}
	f.sync()
	evs, err := f.team.Events(f.ctx, orchestrator.EventFilter{Agent: f.manager.AgentID()})
	if err != nil {
		t.Fatal(err)
	}
	var decisions []string
	for _, ev := range evs {
		if g, ok := message.EventAs[llm.ApprovalGrantedEvent](ev); ok {
			decisions = append(decisions, "granted: "+g.Reason)
		}
		if d, ok := message.EventAs[llm.ApprovalDeniedEvent](ev); ok {
			decisions = append(decisions, "denied: "+d.Reason)
		}
	}
	if got := strings.Join(decisions, "; "); got != "granted: ship it; denied: not today" {
		t.Fatalf("the decisions in the log: %q", got)
	}
}
