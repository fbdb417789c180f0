package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The member panel, in a real browser: a click on a member shows its card,
// a summary of its config (model and endpoint host, tools, retries,
// streaming, limits, backstory), its state, its model context and its
// usage; nothing in the page is a key. A second click closes it.
// STUDIO_SCREENSHOTS=dir writes it there (docs/studio-member.png).
func TestStudioMemberPanel(t *testing.T) {
	bctx, _, step := openAtTheQuestion(t)
	qa := `[...document.querySelectorAll("#members li")].find((li) => li.innerText.startsWith("@QA100"))`
	step("open @QA100's panel",
		chromedp.Poll[chromedp.Void](qa+` !== undefined`, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate[chromedp.Void](qa+`.click()`),
		shows("#member-panel", "Reviews code and asks the person when requirements are unclear"),
		shows("#member-panel", "hired by"))
	panel := text(t, bctx, "#member-panel")
	for _, want := range []string{
		"@QA100", "role\nQA", "state\nidle", "hired by\n@Manager", "hireable\nyes", "routes to\nany role",
		"model\ngpt-4.1 (openai-compatible at 127.0.0.1:", "tokens (no window configured)",
		"tools\nPlanningTool, WorkspaceTool", "retries\n3", "streaming\nyes", "limits\nrun_request_limit 50",
		"usage\n2 requests · 2,600 in + 70 out tokens · $0.0042", "backstory",
	} {
		if !strings.Contains(panel, want) {
			t.Errorf("the member panel lacks %q:\n%s", want, panel)
		}
	}
	page := text(t, bctx, "body")
	for _, secret := range []string{"api_key", "sk-", "Bearer"} {
		if strings.Contains(page, secret) {
			t.Errorf("the page shows %q", secret)
		}
	}
	shot(t, bctx, "studio-member.png")
	step("a second click closes it",
		chromedp.Evaluate[chromedp.Void](qa+`.click()`),
		chromedp.Poll[chromedp.Void](`document.getElementById("member-panel").hidden`, chromedp.WithPollingTimeout(5*time.Second)))
}
