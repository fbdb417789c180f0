package studio

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
)

// publishCard gives an agent publish, a tool its author marked: every
// call waits for the person's approval.
type publishCard struct{}

var published atomic.Int32

func init() { tool.Register("StudioPublishTool", func() tool.Card { return &publishCard{} }) }

func (*publishCard) Kind() string { return "StudioPublishTool" }

func (*publishCard) Attach(context.Context, *tool.Owner) (tool.Capabilities, error) {
	t := &llm.Tool{Name: "publish", Description: "Publish the page.",
		NeedsApproval: func(json.RawMessage) bool { return true },
		Call: func(context.Context, json.RawMessage) (any, error) {
			published.Add(1)
			return "published", nil
		}}
	return tool.Capabilities{Tools: []*llm.Tool{t}}, nil
}

// The page shows an approval request with its tool; approve and deny go
// through /api/send as the person, the text being the reason; a decision
// on a message that asks no approval is refused.
func TestApproveAndDenyFromThePage(t *testing.T) {
	f := buildFixture(t, Options{}, false, func(cfg *agent.AgentConfig) { cfg.Tools = append(cfg.Tools, &publishCard{}) })
	published.Store(0)
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("p1", "publish", `{}`)), reply("response", "@Human", "first done"),
		llmtest.ToolCalls(llmtest.Call("p2", "publish", `{}`)), reply("response", "@Human", "second done"),
	)
	s := f.open("", nil)
	s.until(kind("live"))
	for i, c := range []struct {
		approve      bool
		reason, want string
		runs         int32
	}{{true, "", "first done", 1}, {false, "not today", "second done", 1}} {
		if req := f.say("publish it"); req.Approval == nil || req.Approval.Tool != "publish" {
			t.Fatalf("the person got %+v, want an approval request", req)
		}
		evs := s.until(func(g got) bool { return g.k() == "msg" && g.s("tool") == "publish" && g.s("toName") == "@Human" })
		ev := evs[len(evs)-1]
		if ev.s("call") == "" || ev.s("intent") != "request" {
			t.Fatalf("the page's approval request %v", ev.ev)
		}
		body, _ := json.Marshal(map[string]any{"answer": ev.s("mid"), "approve": c.approve, "text": c.reason})
		if code, resp := f.post(string(body), "application/json", nil); code != http.StatusAccepted {
			t.Fatalf("decision %d: %d %s", i, code, resp)
		}
		if got := f.answer(); got.Content != c.want {
			t.Fatalf("after decision %d the person got %q", i, got.Content)
		}
		if published.Load() != c.runs {
			t.Fatalf("after decision %d publish ran %d times, want %d", i, published.Load(), c.runs)
		}
	}
	reqs := f.model.RequestsFor("@Manager")
	hist := reqs[len(reqs)-1].History()
	if got := hist[len(hist)-1].Text(); !strings.Contains(got, "not today") {
		t.Fatalf("the denial reached the model as %q", got)
	}
	f.model.Model("@Manager").Enqueue(reply("request", "@Human", "Which language?"))
	q := f.say("write it")
	code, resp := f.post(`{"answer":"`+q.ID.String()+`","approve":true}`, "application/json", nil)
	if code != http.StatusBadRequest || !strings.Contains(resp, "asks no approval") {
		t.Fatalf("approving a plain question: %d %s", code, resp)
	}
	if code, resp := f.post(`{"approve":true}`, "application/json", nil); code != http.StatusBadRequest || !strings.Contains(resp, "approve needs answer") {
		t.Fatalf("approving nothing: %d %s", code, resp)
	}
}
