package fleet

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/akgentic/akgentic-go/internal/browsertest"
)

// browser opens a tab (60 s at most) for the test what names, and its
// stepper.
func (f *fleet) browser(what string) (context.Context, func(string, ...chromedp.Action[chromedp.Void])) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, 60*time.Second)
	f.t.Cleanup(cancel)
	bctx := browsertest.Open(f.t, ctx, what)
	return bctx, browsertest.Stepper(f.t, bctx, nil)
}

// shows waits until the element's text contains want.
var shows = browsertest.Shows

// rowOf is the list's row of the team id.
func rowOf(id string) string { return `#teams tr[data-team="` + id + `"]` }

// In a real browser: the list shows the cluster's two teams with their
// template and state; a click opens one team's page, which shows its
// members from the cluster's records, then its conversation live after
// a Send through the team's inbox. FLEET_SCREENSHOT=path also writes the
// list's screenshot there (docs/studio-fleet.png, shown in
// docs/studio.md).
func TestTeamListAndPageInBrowser(t *testing.T) {
	f := newFleet(t)
	a, r := f.create("assistant"), f.create("reviewer")
	bctx, step := f.browser("the fleet console's browser test")
	step("the list shows both teams",
		chromedp.Navigate(f.http.URL+"/"),
		shows(rowOf(a.String())+" .template", "assistant"),
		shows(rowOf(a.String())+" .state", "active"),
		shows(rowOf(r.String())+" .template", "reviewer"),
		shows(rowOf(r.String())+" .state", "active"),
		shows(rowOf(r.String())+" .owner", "worker-1"))
	if dst := os.Getenv("FLEET_SCREENSHOT"); dst != "" {
		shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", dst)
	}
	step("a click opens the reviewer's page",
		chromedp.Click(chromedp.CSS(rowOf(r.String())+" a")),
		chromedp.WaitVisible(chromedp.CSS("#feed")))
	step("the reviewer's page shows its members",
		shows("#conn", "live"),
		shows("#members", "@Reviewer"),
		shows("#members", "@Human"))
	if _, err := f.client.Send(f.ctx, r, "@Reviewer", "please review the cluster"); err != nil {
		t.Fatal(err)
	}
	step("the page shows the conversation live",
		shows("#feed", "please review the cluster"),
		shows("#feed", "reviewed"))
}

// In a real browser, the list refreshes itself: a team created, and a
// team stopped, after the page was loaded show without a reload, the
// rows already shown kept; a click on the new team opens its page.
func TestTeamListRefreshesItselfInBrowser(t *testing.T) {
	f := newFleetWith(t, func(c *Console) { c.refresh = 200 * time.Millisecond })
	a := f.create("assistant")
	bctx, step := f.browser("the fleet list's refresh browser test")
	step("the list shows the team",
		chromedp.Navigate(f.http.URL+"/"),
		shows(rowOf(a.String())+" .state", "active"),
		shows("#pageinfo", "page 1 of 1 · 1 teams"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+browsertest.JS(rowOf(a.String()))+`).dataset.mark = "kept"`))
	r := f.create("reviewer")
	if err := f.client.Stop(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	step("the new team and the stop show without a reload",
		shows(rowOf(r.String())+" .template", "reviewer"),
		shows(rowOf(r.String())+" .state", "active"),
		shows(rowOf(a.String())+" .state", "stopped"),
		shows("#pageinfo", "2 teams"),
		shows("#updated", "Updated"))
	// A row shown is updated in place, never replaced (a click on it
	// while the list refreshes is not lost).
	if mark, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector(`+browsertest.JS(rowOf(a.String()))+`).dataset.mark || ""`)); err != nil || mark != "kept" {
		t.Errorf("the stopped team's row was replaced by a refresh (mark %q, %v)", mark, err)
	}
	step("a click on the new team opens its page",
		chromedp.Click(chromedp.CSS(rowOf(r.String())+" a")),
		chromedp.WaitVisible(chromedp.CSS("#feed")))
	step("the new team's page shows its members", shows("#members", "@Reviewer"))
}
