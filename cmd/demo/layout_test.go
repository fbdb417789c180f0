package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// inView is true when the page has no horizontal overflow, the input box
// and the Send button are inside the viewport, and the end of the last
// item of the conversation is visible.
const inView = `(() => {
	const vw = window.innerWidth, vh = window.innerHeight;
	const inside = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= vw + 1 && r.top >= 0 && r.bottom <= vh + 1; };
	const feed = document.getElementById("feed").getBoundingClientRect();
	const items = document.querySelectorAll("#feed .item");
	const last = items[items.length - 1];
	if (!last) return false;
	const r = last.getBoundingClientRect();
	return document.documentElement.scrollWidth <= vw &&
		inside(document.getElementById("text")) && inside(document.getElementById("send")) &&
		r.left >= 0 && r.right <= vw + 1 && r.bottom <= feed.bottom + 1 && r.bottom > feed.top;
})()`

// visible is true when the element sel is displayed.
func visible(sel string) string {
	return "(() => { const e = document.querySelector(" + js(sel) + "); return !!e && e.getClientRects().length > 0; })()"
}

// The studio page from a phone to a wide screen: at 360, 768 and 1,400 px
// the input box, the Send button and the end of the last message are
// inside the viewport and nothing overflows sideways; at 360 px the page
// is one column and the sidebar folds behind the Team button. Then the
// team stops (Ctrl-C): the page shows it stopped (the pill, a banner,
// every member stopped, the input disabled) and has closed its event
// stream instead of reconnecting. STUDIO_SCREENSHOTS=dir writes the
// narrow and the stopped page there (docs/studio-narrow.png,
// docs/studio-stopped.png).
func TestStudioLayoutAndStop(t *testing.T) {
	bctx, web, step := openAtTheQuestion(t)

	for _, size := range []struct{ w, h int64 }{{360, 740}, {768, 1024}, {1400, 900}} {
		step("the page at "+strconv.FormatInt(size.w, 10)+" px",
			chromedp.EmulateViewport(size.w, size.h),
			chromedp.Poll[chromedp.Void](inView, chromedp.WithPollingTimeout(10*time.Second)))
		side, err := chromedp.Run(bctx, chromedp.Evaluate[bool](visible("#side")))
		if err != nil {
			t.Fatal(err)
		}
		if narrow := size.w < 720; side == narrow {
			t.Errorf("at %d px the sidebar is shown: %v", size.w, side)
		}
		if size.w == 360 {
			shot(t, bctx, "studio-narrow.png")
			step("the folded sidebar opens over the conversation and closes again",
				chromedp.Click(chromedp.CSS("#side-toggle")),
				chromedp.Poll[chromedp.Void](visible("#members"), chromedp.WithPollingTimeout(5*time.Second)),
				shows("#members", "@Manager"),
				chromedp.Click(chromedp.CSS("#side-toggle")),
				chromedp.Poll[chromedp.Void]("!"+visible("#side"), chromedp.WithPollingTimeout(5*time.Second)))
		}
	}

	if err := web.stop(); err != nil {
		t.Fatalf("the demo: %v", err)
	}
	step("the stopped team is shown stopped, and the page stops reconnecting",
		shows("#conn", "team stopped"),
		shows("#banner", "The team has stopped"),
		chromedp.Poll[chromedp.Void](`document.getElementById("text").disabled && document.getElementById("send").disabled`, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#members .status")].every((s) => s.textContent === "stopped")`, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.Poll[chromedp.Void](`source.readyState === EventSource.CLOSED`, chromedp.WithPollingTimeout(5*time.Second)))
	shot(t, bctx, "studio-stopped.png")
	if conn := text(t, bctx, "#conn"); conn != "team stopped" {
		t.Errorf("the connection pill shows %q", conn)
	}
}

// shot captures the tab; with STUDIO_SCREENSHOTS=dir it is written there
// as name.
func shot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("STUDIO_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openAtTheQuestion runs the demo with -web and opens its page in a
// browser tab (bctx), at the reviewer's question to the person: the
// recorded task waits there for the answer.
func openAtTheQuestion(t *testing.T) (bctx context.Context, web *webDemo, step func(string, ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	bctx = newBrowser(t, ctx)
	web = startWebDemo(t, ctx, nil)
	step = web.stepper(t, bctx)
	step("open the page at the reviewer's question",
		chromedp.Navigate(web.page),
		shows("#feed", "Should the greeting support other languages"),
		shows("#members", "@QA100"))
	return bctx, web, step
}

// answerTheReviewer answers the reviewer's question from the page and
// waits for the task's end: the manager's report, the board completed.
func answerTheReviewer() []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.Click(chromedp.CSS(".answer-btn")),
		chromedp.SendKeys(chromedp.CSS("#text"), "English only."),
		chromedp.Click(chromedp.CSS("#send")),
		shows("#feed", "Done: greet.go is written and reviewed."),
		shows("#board", "completed"),
	}
}
