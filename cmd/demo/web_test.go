package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/internal/browsertest"
)

// -web ADDR: a port alone is loopback; another host needs the token.
func TestWebAddr(t *testing.T) {
	for _, c := range []struct {
		in, listen string
		public     bool
	}{
		{":8080", "127.0.0.1:8080", false},
		{"8080", "127.0.0.1:8080", false},
		{"localhost:0", "localhost:0", false},
		{"[::1]:8080", "[::1]:8080", false},
		{"0.0.0.0:8080", "0.0.0.0:8080", true},
		{"192.0.2.7:80", "192.0.2.7:80", true},
	} {
		listen, _, public, err := webAddr(c.in)
		if err != nil || listen != c.listen || public != c.public {
			t.Errorf("webAddr(%q) = %q, public %v, %v; want %q, public %v", c.in, listen, public, err, c.listen, c.public)
		}
	}
	if _, _, _, err := webAddr("a:b:c"); err == nil || !strings.Contains(err.Error(), `-web "a:b:c"`) {
		t.Errorf("a bad address: %v", err)
	}
}

// syncBuffer is a bytes.Buffer the demo's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// In a real browser: the demo's team served with -web, opened in
// headless Chromium. The page shows the members and the conversation as
// they happen; the person answers the reviewer's question from the page,
// then sends /team_members (completed from the announced commands) and a
// message from the input box, and sees the answers; the last answer is
// streamed and held half-written (its first stream cut, the request sent
// again held in its Check), so the page shows "@Manager is writing…" with
// the text so far, then the message when it is whole. Assertions are on
// the rendered text. STUDIO_SCREENSHOT=path also writes the screenshot there
// (docs/studio.png, shown in docs/studio.md).
func TestWebInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bctx := newBrowser(t, ctx)

	// The answer to the message sent from the page: streamed, its first
	// stream cut after a few pieces of text, the request sent again held
	// until the page has shown what was written.
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	web := startWebDemo(t, ctx, func(srv *llmtest.Server) {
		again := llmtest.Final(offlineReply)
		again.Check = func(*llmtest.Request) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}
		srv.Model("@Manager").Enqueue(llmtest.Final(offlineReply).CutAfter(16), again)
	})
	page, out := web.page, web.out
	defer free() // first: the model server waits for the held request
	outputHas(t, out.String(), "the recorded task on the offline model, played in the page")

	step := web.stepper(t, bctx)

	step("open the page: the members and the conversation appear",
		chromedp.Navigate(page),
		shows("#members", "@Manager"),
		shows("#feed", "We need a tiny Go command"),
		shows("#feed", "Should the greeting support other languages"),
		shows("#members", "@QA100"))

	step("answer the reviewer's question from the page",
		chromedp.Click(chromedp.CSS(".answer-btn")),
		shows("#answering", "Answering @QA100"),
		chromedp.SendKeys(chromedp.CSS("#text"), "English only, thanks. Default to World."),
		chromedp.Click(chromedp.CSS("#send")),
		shows("#feed", "✓ answered"),
		shows("#feed", "Done: greet.go is written and reviewed."))

	step("send /team_members to @Manager, completed from its announced commands",
		selectRecipient("@Manager"),
		chromedp.SendKeys(chromedp.CSS("#text"), "/team_mem"),
		shows("#hint", "/team_members — List the current team members"),
		chromedp.SendKeys(chromedp.CSS("#text"), kb.Tab),
		chromedp.Poll[chromedp.Void](`document.getElementById("text").value === "/team_members"`, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.SendKeys(chromedp.CSS("#text"), kb.Enter),
		shows("#feed", "Team members:"))

	step("send a message from the input box: its answer shows as it is written",
		chromedp.SendKeys(chromedp.CSS("#text"), "hello from the browser"+kb.Enter),
		shows("#feed", "hello from the browser"),
		shows("#feed .writing", "@Manager is writing…"),
		shows("#feed .writing", "I am the offline demo"))
	if w := text(t, bctx, "#feed .writing"); strings.Contains(w, "Set OPENAI_API_KEY") {
		t.Errorf("the writing bubble shows more than was written: %q", w)
	}
	free()
	step("the whole answer replaces the writing bubble",
		chromedp.Poll[chromedp.Void](`!document.querySelector("#feed .writing") && document.getElementById("feed").innerText.includes("Set OPENAI_API_KEY")`,
			chromedp.WithPollingTimeout(20*time.Second)),
		shows("#feed", "I am the offline demo model"))

	// What the page shows, read back as rendered text.
	members := text(t, bctx, "#members")
	for _, want := range []string{"@Human (you)", "@Manager", "Manager", "@Developer100", "Developer", "@QA100", "QA", "idle"} {
		if !strings.Contains(members, want) {
			t.Errorf("the members panel lacks %q:\n%s", want, members)
		}
	}
	if board := text(t, bctx, "#board"); !strings.Contains(board, "#1 Write greet.go") || !strings.Contains(board, "completed") {
		t.Errorf("the task board shows:\n%s", board)
	}
	if usage := text(t, bctx, "#usage"); !strings.Contains(usage, "@Manager") || !strings.Contains(usage, "total") || !strings.Contains(usage, "$0.") {
		t.Errorf("the usage table shows:\n%s", usage)
	}
	feed := text(t, bctx, "#feed")
	for _, want := range []string{
		"@Human → @Manager", "@QA100 → @Human", "⚙ @Developer100 · workspace_write ✓",
		"@Manager · gpt-4.1: 1,450 in + 120 out tokens", "+ @Developer100 (Developer) joined the team, hired by @Manager",
		"@Manager → @Human", "Team members:",
	} {
		if !strings.Contains(feed, want) {
			t.Errorf("the conversation lacks %q", want)
		}
	}
	if conn := text(t, bctx, "#conn"); conn != "live" {
		t.Errorf("the connection pill shows %q", conn)
	}

	// A page opened now (a second tab) shows the whole history: the
	// question answered, the members, the board.
	late, closeLate := chromedp.NewContext(bctx)
	if err := chromedp.Do(late, chromedp.Navigate(page),
		shows("#feed", "We need a tiny Go command"), shows("#feed", "✓ answered"),
		shows("#feed", "I am the offline demo model"), shows("#members", "@QA100"), shows("#board", "#2 Review greet.go")); err != nil {
		t.Errorf("a page opened late: %v", err)
	}
	if got, want := text(t, late, "#feed"), text(t, bctx, "#feed"); got != want {
		t.Errorf("a page opened late shows another conversation:\n%s\n--- than the first:\n%s", got, want)
	}
	closeLate()

	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(shot, []byte("\x89PNG")) {
		t.Fatal("the screenshot is not a PNG")
	}
	path := filepath.Join(t.TempDir(), "studio.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if dst := os.Getenv("STUDIO_SCREENSHOT"); dst != "" {
		if err := os.WriteFile(dst, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", dst)
	}
	if err := web.stop(); err != nil {
		t.Errorf("the demo: %v", err)
	}

}

// selectRecipient chooses the member whose option starts with name.
func selectRecipient(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](`(() => {
		const s = document.getElementById("to");
		for (const o of s.options) {
			if (o.text.startsWith(`+js(name+" ")+`)) { s.value = o.value; s.dispatchEvent(new Event("change")); return true; }
		}
		return false;
	})()`, chromedp.WithPollingTimeout(10*time.Second))
}

// text returns the rendered text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.querySelector("+js(sel)+").innerText"))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// shows and js are the browser tests' (internal/browsertest).
var shows, js = browsertest.Shows, browsertest.JS

// webDemo is the demo serving its team with -web on a free loopback port.
type webDemo struct {
	page string      // the page's URL
	out  *syncBuffer // what the demo printed
	// stop is Ctrl-C: it stops the demo and returns its error (once; the
	// test's end calls it too).
	stop func() error
}

// startWebDemo runs the demo with -web; script adds the offline model's
// steps after the recorded task; configure sets other options.
func startWebDemo(t *testing.T, ctx context.Context, script func(*llmtest.Server), configure ...func(*options)) *webDemo {
	t.Helper()
	out := &syncBuffer{}
	opt := options{stdout: out, stdin: strings.NewReader(""), getenv: func(string) string { return "" }, logger: slog.New(slog.DiscardHandler)}
	urls := make(chan string, 1)
	opt.web = webOptions{addr: "127.0.0.1:0", ready: func(u string) { urls <- u }}
	opt.script = script
	for _, c := range configure {
		c(&opt)
	}
	demoCtx, stopDemo := context.WithCancel(ctx)
	demoErr := make(chan error, 1)
	go func() { demoErr <- run(demoCtx, opt) }()
	var once sync.Once
	var err error
	w := &webDemo{out: out, stop: func() error {
		once.Do(func() {
			stopDemo()
			err = <-demoErr
		})
		return err
	}}
	t.Cleanup(func() {
		if err := w.stop(); err != nil {
			t.Errorf("the demo: %v", err)
		}
	})
	select {
	case w.page = <-urls:
	case err := <-demoErr:
		stopDemo()
		once.Do(func() {})
		t.Fatalf("the demo ended before serving: %v\n%s", err, out.String())
	}
	return w
}

// newBrowser opens a tab of headless Chromium (browsertest.Open).
func newBrowser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	return browsertest.Open(t, ctx, "the studio's browser test")
}

// stepper returns a function that runs the steps of what in the tab
// bctx, failing the test with what the page shows and the demo printed.
func (w *webDemo) stepper(t *testing.T, bctx context.Context) func(what string, steps ...chromedp.Action[chromedp.Void]) {
	return browsertest.Stepper(t, bctx, func() string { return "\n--- the demo printed:\n" + w.out.String() })
}
