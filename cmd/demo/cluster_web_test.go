package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// With -cluster -web, the demo serves the fleet console while the cluster
// run goes on: the list shows the team made from the template "demo", a
// click opens its page, which follows the team's records in the stream
// through the crash and the resume to the manager's report (each member
// joining once, restored on the resume), then shows the team stopped;
// the pages stay until Ctrl-C.
func TestDemoClusterWebServesTheFleetConsole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	web := startWebDemo(t, ctx, nil, func(o *options) { o.cluster = true })
	bctx := newBrowser(t, ctx)
	step := web.stepper(t, bctx)
	step("the list shows the demo's team",
		chromedp.Navigate(web.page),
		shows("#teams .template", "demo"))
	step("a click opens the team's page",
		chromedp.Click(chromedp.CSS("#teams a")),
		chromedp.WaitVisible(chromedp.CSS("#feed")))
	step("the page follows the run to its end",
		shows("#members", "@Manager"),
		shows("#feed", "Should the greeting support other languages"),
		shows("#feed", "Done: greet.go is written and reviewed."),
		shows("#conn", "team stopped"))
	// Worker B's restore wrote every member's Start record again: each
	// member joined once, and was restored.
	feed := text(t, bctx, "#feed")
	for _, who := range []string{"@Human (Human)", "@Manager (Manager)"} {
		if n := strings.Count(feed, who+" joined the team"); n != 1 || !strings.Contains(feed, who+" restored") {
			t.Errorf("%s joined %d times (want once, then restored):\n%s", who, n, feed)
		}
	}
	if err := web.stop(); err != nil {
		t.Fatalf("the demo: %v\n%s", err, web.out.String())
	}
	out := web.out.String()
	for _, want := range []string{"fleet: watch the cluster's teams at http://127.0.0.1:", "worker A lost the team; the team resumed on worker B", "(the run is over; its pages stay until Ctrl-C)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo printed no %q:\n%s", want, out)
		}
	}
}
