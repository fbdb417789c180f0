// Package browsertest opens pages in headless Chromium for the tests of
// the library's web pages (the studio's, the demo's, the fleet console's):
// a tab with a fresh profile, closed with the test, and the waits and
// steps those tests share. A test skips, saying so loudly, where no
// Chromium is installed (.ci/run installs Debian's).
package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium finds a Chromium or Chrome binary: $CHROMIUM, else the first
// of the usual names on the PATH ("" when there is none).
func Chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Open opens a tab of headless Chromium (1,440 × 960) with a fresh
// profile, closed, and its process waited for, when the test ends. The
// test skips when there is no Chromium; what names the test that did not
// run.
func Open(t testing.TB, ctx context.Context, what string) context.Context {
	t.Helper()
	bin := Chromium()
	if bin == "" {
		t.Skip("!!! SKIPPED: no chromium binary found (apt-get install chromium, or set CHROMIUM=path): " + what + " did not run !!!")
	}
	actx, closeBrowser := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1440, 960),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true))
	bctx, closeTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		closeTab()
		closeBrowser()
		if err := chromedp.Cancel(bctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("closing the browser: %v", err)
		}
	})
	return bctx
}

// JS is s as a JavaScript string literal.
func JS(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Shows waits (20 s at most) until the element's rendered text contains
// want (an element not there yet shows nothing).
func Shows(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](
		"(document.querySelector("+JS(sel)+")?.innerText ?? \"\").includes("+JS(want)+")",
		chromedp.WithPollingTimeout(20*time.Second))
}

// Stepper returns a function that runs the steps of what in the tab
// bctx, failing the test with what the page shows, and then what more
// says (nil: nothing more).
func Stepper(t testing.TB, bctx context.Context, more func() string) func(what string, steps ...chromedp.Action[chromedp.Void]) {
	return func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			text, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			extra := ""
			if more != nil {
				extra = more()
			}
			t.Fatalf("%s: %v\n--- the page shows:\n%s%s", what, err, text, extra)
		}
	}
}
