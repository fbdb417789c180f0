package studio

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// In a real browser: an approval request shows Approve and Deny; the
// person types a reason and clicks Approve, the call runs once and the
// answer shows; the next request is denied from its Deny button, the
// reason reaching the model.
func TestApprovalButtonsInBrowser(t *testing.T) {
	bin, err := exec.LookPath("chromium") // as .ci/run installs it; CHROMIUM names another
	if p := os.Getenv("CHROMIUM"); p != "" {
		bin, err = p, nil
	}
	if err != nil {
		t.Skip("!!! SKIPPED: no chromium (apt-get install chromium, or set CHROMIUM=path): the approval buttons' browser test did not run !!!")
	}
	f := buildFixture(t, Options{}, false, func(cfg *agent.AgentConfig) { cfg.Tools = append(cfg.Tools, &publishCard{}) })
	published.Store(0)
	ctx, cancel := context.WithTimeout(f.ctx, 60*time.Second)
	defer cancel()
	actx, closeBrowser := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true))
	defer closeBrowser()
	bctx, closeTab := chromedp.NewContext(actx)
	defer closeTab()
	shows := func(sel, want string) chromedp.Action[chromedp.Void] {
		q, _ := json.Marshal(sel)
		w, _ := json.Marshal(want)
		return chromedp.Poll[chromedp.Void]("(document.querySelector("+string(q)+")?.innerText ?? \"\").includes("+string(w)+")",
			chromedp.WithPollingTimeout(20*time.Second))
	}
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			text, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			t.Fatalf("%s: %v\n--- the page shows:\n%s", what, err, text)
		}
	}
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
	closeTab()
	closeBrowser()
}
