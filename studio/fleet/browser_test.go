package fleet

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/akgentic/akgentic-go/internal/browsertest"
)

// In a real browser: the list shows the cluster's two teams with their
// template and state; a click opens one team's page, which shows its
// members from the cluster's records, then its conversation live after
// a Send through the team's inbox. FLEET_SCREENSHOT=path also writes the
// list's screenshot there (docs/studio-fleet.png, shown in
// docs/studio.md).
func TestTeamListAndPageInBrowser(t *testing.T) {
	f := newFleet(t)
	a, r := f.create("assistant"), f.create("reviewer")
	ctx, cancel := context.WithTimeout(f.ctx, 60*time.Second)
	defer cancel()
	bctx := browsertest.Open(t, ctx, "the fleet console's browser test")
	shows, step := browsertest.Shows, browsertest.Stepper(t, bctx, nil)
	row := func(id string) string { return `#teams tr[data-team="` + id + `"]` }
	step("the list shows both teams",
		chromedp.Navigate(f.http.URL+"/"),
		shows(row(a.String())+" .template", "assistant"),
		shows(row(a.String())+" .state", "active"),
		shows(row(r.String())+" .template", "reviewer"),
		shows(row(r.String())+" .state", "active"),
		shows(row(r.String())+" .owner", "worker-1"))
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
		chromedp.Click(chromedp.CSS(row(r.String())+" a")),
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
