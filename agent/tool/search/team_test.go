package search_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/search"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// An agent of a team (a BaseAgent on a scripted model) searches
// with web_search on a SearXNG stand-in, reads a result with web_fetch,
// and is told, as a retry tool message, that a metadata address is
// refused; then it answers the person.
func TestAgentSearchesAndFetches(t *testing.T) {
	pageSrv := page(t, "text/html", article)
	searx := newStandIn(t, func(r *http.Request, _ []byte) {
		if r.URL.Query().Get("q") != "actor model" {
			t.Errorf("searxng asked %q", r.URL.Query().Get("q"))
		}
	}, ok(`{"query": "actor model", "number_of_results": 1, "results": [
		{"url": "`+pageSrv.URL+`/actors", "title": "Actors", "content": "One message at a time.", "engine": "brave", "score": 1.0}],
		"answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}`))

	srv := llmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Model("@Researcher").Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "web_search", `{"query": "actor model", "max_results": 3}`)),
		llmtest.ToolCalls(
			llmtest.Call("c2", "web_fetch", `{"url": "`+pageSrv.URL+`/actors"}`),
			llmtest.Call("c3", "web_fetch", `{"url": "http://169.254.169.254/latest/meta-data/"}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"Actors handle one message at a time."}]}`),
	)

	logs := actortest.NewLogCapture(t)
	sys := actor.NewSystem(actor.SystemConfig{Logger: logs.Logger()})
	t.Cleanup(func() { actortest.Shutdown(t, sys) })
	team, err := orchestrator.New(sys)
	if err != nil {
		t.Fatal(err)
	}
	ctx := actortest.Context(t)
	answers := make(chan *agent.AgentMessage, 1)
	human, err := team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { answers <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.NewConfig("@Researcher", "Researcher")
	cfg.Model = srv.ModelConfig("gpt-4.1")
	// The page is on loopback: the card allows private addresses, not
	// cloud metadata.
	cfg.Tools = tool.Cards{&search.Card{Provider: "searxng", BaseURL: searx.srv.URL, AllowPrivate: true}}
	researcher, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: srv.HTTPClient()}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(ctx, human, researcher, agent.NewRequest("How do actors work?")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-answers:
		if m.Content != "Actors handle one message at a time." {
			t.Fatalf("answer %q", m.Content)
		}
	case <-ctx.Done():
		t.Fatalf("no answer; model failures %v", srv.Failures())
	}

	reqs := srv.RequestsFor("@Researcher")
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if !hasTool(reqs[0], "web_search") || !hasTool(reqs[0], "web_fetch") {
		t.Fatalf("the model was not offered the tools")
	}
	results := toolMessages(reqs[2])
	for id, want := range map[string]string{
		"c1": "Results for \"actor model\":\n\n1. Actors\n   " + pageSrv.URL + "/actors\n   One message at a time.",
		"c2": "URL: " + pageSrv.URL + "/actors\nTitle: Actors & Go\n\n# Actors\n\nAn actor handles one message at a time.",
		"c3": "web_fetch: refused http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a cloud metadata address",
	} {
		if !strings.HasPrefix(results[id], want) {
			t.Errorf("tool result %s:\n%s\nwant a prefix\n%s", id, results[id], want)
		}
	}
	if !strings.HasSuffix(results["c3"], "Fix the errors and try again.") {
		t.Errorf("the refusal is not a retry message: %q", results["c3"])
	}
}

func hasTool(r *llmtest.Request, name string) bool {
	for _, tl := range r.Tools {
		if tl.Function.Name == name {
			return true
		}
	}
	return false
}

// toolMessages returns the tool messages of a request by call id.
func toolMessages(r *llmtest.Request) map[string]string {
	out := map[string]string{}
	for _, m := range r.History() {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text()
		}
	}
	return out
}
