package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// fallRow is one row of the waterfall as the page renders it.
type fallRow struct {
	Kind  string `json:"kind"` // turn, model or tool
	Who   string `json:"who"`
	Start int64  `json:"start"`
	Label string `json:"label"`
	Err   bool   `json:"err"`
}

// The waterfall of the demo's request, in a real browser: the person's
// request to @Manager, the reviewer's question answered from the page,
// and the report. The Waterfall tab shows one request (the answer belongs
// to it), the turns of its three agents in the order they began, each
// followed by its own model and tool calls: as many model calls and tool
// calls as the conversation shows, none failed. STUDIO_SCREENSHOTS=dir
// writes it there (docs/studio-waterfall.png).
func TestStudioWaterfall(t *testing.T) {
	bctx, _, step := openAtTheQuestion(t)
	step("answer the reviewer from the page: the task ends", answerTheReviewer()...)
	step("open the waterfall",
		chromedp.Click(chromedp.CSS("#tab-fall")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#fall-rows .frow").length > 0 && !document.querySelector("#fall-rows .frow.open")`,
			chromedp.WithPollingTimeout(20*time.Second)))

	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]fallRow](`[...document.querySelectorAll("#fall-rows .frow")].map((r) => ({
		kind: r.classList.contains("turn") ? "turn" : r.classList.contains("model") ? "model" : "tool",
		who: r.dataset.who, start: Number(r.dataset.start || 0), label: r.querySelector(".flabel").textContent,
		err: r.classList.contains("err")}))`))
	if err != nil {
		t.Fatal(err)
	}
	feedModels, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#feed .item.model").length`))
	if err != nil {
		t.Fatal(err)
	}
	feedTools, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#feed details.tool").length`))
	if err != nil {
		t.Fatal(err)
	}
	requests, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.getElementById("fall-req").options.length`))
	if err != nil {
		t.Fatal(err)
	}
	if requests != 1 {
		t.Errorf("%d requests in the waterfall; want 1 (the answer belongs to the task)", requests)
	}

	count := map[string]int{}
	agents := map[string]bool{}
	var turnOrder []string
	var last int64
	current := ""
	for i, r := range rows {
		count[r.Kind]++
		if r.Err {
			t.Errorf("row %d (%s %s) is marked failed", i, r.Kind, r.Label)
		}
		if r.Kind == "turn" {
			agents[r.Who] = true
			turnOrder = append(turnOrder, r.Who)
			if r.Start < last {
				t.Errorf("turn %d (%s) begins before the one above it", i, r.Who)
			}
			last, current = r.Start, r.Who
			continue
		}
		if r.Who != current {
			t.Errorf("row %d, a %s call of %s, is under a turn of %s", i, r.Kind, r.Who, current)
		}
	}
	if len(agents) != 3 || !agents["@Manager"] || !agents["@Developer100"] || !agents["@QA100"] {
		t.Errorf("the turns' agents: %v; want @Manager, @Developer100 and @QA100", agents)
	}
	if len(turnOrder) == 0 || turnOrder[0] != "@Manager" {
		t.Errorf("the turns begin with %v; want @Manager's first", turnOrder)
	}
	if count["model"] != feedModels || feedModels == 0 {
		t.Errorf("%d model calls in the waterfall, %d in the conversation", count["model"], feedModels)
	}
	if count["tool"] != feedTools || feedTools == 0 {
		t.Errorf("%d tool calls in the waterfall, %d in the conversation", count["tool"], feedTools)
	}
	if sum := text(t, bctx, "#fall-sum"); !strings.HasPrefix(sum, "3 agents · ") || !strings.Contains(sum, "model calls") {
		t.Errorf("the waterfall's summary: %q", sum)
	}
	if t.Failed() {
		t.Logf("rows: %+v", rows)
	}
	shot(t, bctx, "studio-waterfall.png")
}
