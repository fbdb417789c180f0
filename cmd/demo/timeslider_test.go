package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// recordBefore is the number of records before the first one matching
// the JavaScript condition cond on an event e of the page's log.
func recordBefore(t *testing.T, bctx context.Context, cond string) int {
	t.Helper()
	n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`(() => { let n = 0; for (const x of S.log) { const e = x.ev; if (x.rec && (`+cond+`)) return n; if (x.rec) n++; } return -1; })()`))
	if err != nil || n < 0 {
		t.Fatalf("no record matches %s: %v", cond, err)
	}
	return n
}

// slideTo moves the time slider to record n.
func slideTo(n int) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`(() => { const t = document.getElementById("time"); t.value = "` + strconv.Itoa(n) + `"; t.dispatchEvent(new Event("input")); })()`)
}

// The time slider, in a real browser, over the demo's finished task: at
// the record before the reviewer joined, the page shows the team as it
// was then (no @QA100 among the members, no task completed on the board,
// less spent), read-only; Back to live shows it as it is now.
// STUDIO_SCREENSHOTS=dir writes it there (docs/studio-time.png).
func TestStudioTimeSlider(t *testing.T) {
	bctx, _, step := openAtTheQuestion(t)
	step("answer the reviewer from the page: the task ends", answerTheReviewer()...)
	liveUsage := text(t, bctx, "#usage tfoot")
	n := recordBefore(t, bctx, `e.k === "join" && e.name === "@QA100"`)
	step("slide to the record before the reviewer joined",
		slideTo(n),
		shows("#banner", "An earlier moment: the team as it was at record "+strconv.Itoa(n)+" of "),
		shows("#time-label", "record "+strconv.Itoa(n)+" of "),
		chromedp.Poll[chromedp.Void](`!document.getElementById("members").innerText.includes("@QA100")`, chromedp.WithPollingTimeout(5*time.Second)),
		// The board and the members are drawn from the same moment, maybe
		// a frame after the banner.
		chromedp.Poll[chromedp.Void](`document.getElementById("board").innerText.includes("#1 Write greet.go") && document.getElementById("members").innerText.includes("@Developer100")`, chromedp.WithPollingTimeout(5*time.Second)))
	if m := text(t, bctx, "#members"); !strings.Contains(m, "@Developer100") || !strings.Contains(m, "@Manager") {
		t.Errorf("the members at record %d:\n%s", n, m)
	}
	if b := text(t, bctx, "#board"); !strings.Contains(b, "#1 Write greet.go") || strings.Contains(b, "completed") {
		t.Errorf("the board at record %d:\n%s", n, b)
	}
	if u := text(t, bctx, "#usage tfoot"); u == liveUsage {
		t.Errorf("the usage at record %d is the live one: %q", n, u)
	}
	if f := text(t, bctx, "#feed"); strings.Contains(f, "Done: greet.go is written and reviewed.") || !strings.Contains(f, "We need a tiny Go command") {
		t.Errorf("the conversation at record %d:\n%s", n, f)
	}
	if v, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("time").value`)); err != nil || v != strconv.Itoa(n) {
		t.Errorf("the slider is at %q (%v); want %d", v, err, n)
	}
	disabled, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("text").disabled`))
	if err != nil || !disabled {
		t.Errorf("the input box at an earlier moment is enabled (%v)", err)
	}
	shot(t, bctx, "studio-time.png")
	step("back to live",
		chromedp.Click(chromedp.CSS("#time-live")),
		shows("#members", "@QA100"),
		shows("#board", "completed"),
		shows("#time-label", "live"),
		chromedp.Poll[chromedp.Void](`!document.getElementById("text").disabled && document.getElementById("banner").hidden`, chromedp.WithPollingTimeout(5*time.Second)))
	if u := text(t, bctx, "#usage tfoot"); u != liveUsage {
		t.Errorf("the usage back live: %q, was %q", u, liveUsage)
	}
}

// A log file opened with -web and -restore: the page shows the log's
// history, each member joining once (the restore's Start records show
// as restored), and the time slider goes over its records as over a live
// team's (at the record before the reviewer joined: no @QA100, the board
// as it was then, the conversation up to then).
func TestStudioTimeSliderOverALog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "team.log")
	runDemo(t, "", "-log", logPath)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bctx := newBrowser(t, ctx)
	web := startWebDemo(t, ctx, nil, func(o *options) { o.restoreFile = logPath })
	step := web.stepper(t, bctx)
	step("open the restored team's page: the log's history",
		chromedp.Navigate(web.page),
		shows("#feed", "Done: greet.go is written and reviewed."),
		shows("#members", "@QA100"),
		shows("#board", "completed"),
		shows("#feed", "@QA100 (QA) restored"))
	feed := text(t, bctx, "#feed")
	for _, who := range []string{"@Human (Human)", "@Manager (Manager)", "@Developer100 (Developer)", "@QA100 (QA)"} {
		if n := strings.Count(feed, who+" joined the team"); n != 1 {
			t.Errorf("%s joined %d times; want once (the restore's Start records are no joins)", who, n)
		}
	}
	if rows := text(t, bctx, "#members"); strings.Count(rows, "@QA100") != 1 {
		t.Errorf("the members:\n%s", rows)
	}
	n := recordBefore(t, bctx, `e.k === "join" && e.name === "@QA100"`)
	step("slide to the record before the reviewer joined",
		slideTo(n),
		shows("#time-label", "record "+strconv.Itoa(n)+" of "),
		chromedp.Poll[chromedp.Void](`!document.getElementById("members").innerText.includes("@QA100")`, chromedp.WithPollingTimeout(5*time.Second)),
		shows("#members", "@Developer100"))
	if f := text(t, bctx, "#feed"); strings.Contains(f, "Done: greet.go is written and reviewed.") || !strings.Contains(f, "We need a tiny Go command") {
		t.Errorf("the conversation at record %d:\n%s", n, f)
	}
	if b := text(t, bctx, "#board"); !strings.Contains(b, "#1 Write greet.go") || strings.Contains(b, "completed") {
		t.Errorf("the board at record %d (want the board as it was then, no task completed):\n%s", n, b)
	}
}

// -view shows a log read-only: the page's stream has the log's history
// and says the team stopped, sending is refused, and the log is not
// written.
func TestViewALogReadOnly(t *testing.T) {
	isolateTemp(t)
	logPath := filepath.Join(t.TempDir(), "team.log")
	runDemo(t, "", "-log", logPath)
	before, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	web := startWebDemo(t, ctx, nil, func(o *options) { o.restoreFile, o.view = logPath, true })
	outputHas(t, web.out.String(), "in the browser, read-only: the team as the log ends")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, web.page+"events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body) // the stream ends after the team's stop
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"We need a tiny Go command", "Done: greet.go is written and reviewed.", `"k":"stopped"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the viewed log's stream lacks %q", want)
		}
	}
	post, err := http.Post(web.page+"api/send", "application/json", strings.NewReader(`{"to":"@Manager","text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusForbidden {
		t.Errorf("sending to a viewed log: %d; want 403", post.StatusCode)
	}
	if err := web.stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(web.out.String(), "✗") {
		t.Errorf("viewing a log failed a member:\n%s", web.out.String())
	}
	after, err := os.Stat(logPath)
	if err != nil || after.Size() != before.Size() {
		t.Errorf("the viewed log was written: %d -> %d bytes (%v)", before.Size(), after.Size(), err)
	}
}
