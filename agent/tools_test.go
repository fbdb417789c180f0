package agent_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// withTools gives every agent of the harness these cards.
func withTools(cards ...tool.Card) option {
	return func(_ *harness, c *agent.AgentConfig) { c.Tools = append(tool.Cards{}, cards...) }
}

// S21, S23: planning commands through the agent: coercion failures are
// strings, #hash tokens survive, a bad quote on a known command fails.
func TestPlanningCommands(t *testing.T) {
	h := newHarness(t, withTools(planning.New()))
	h.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("", "update_planning",
			`{"update":{"create_tasks":[{"id":2,"description":"fix #urgent bug"},{"id":3,"description":"docs"}]}}`)),
		final(),
	)
	h.say(h.manager, agent.Request, "make a plan")
	for _, c := range []struct{ cmd, want string }{
		{"/get_planning_task abc", "Command 'get_planning_task' failed:"},
		{"/get_planning_task 2", "fix #urgent bug"},
		{"/search_planning #urgent", "fix #urgent bug"},
		{`/search_planning "#urgent"`, "fix #urgent bug"},
		{"/search_planning status=pending foo", "Command 'search_planning' failed:"},
	} {
		h.say(h.manager, agent.Request, c.cmd)
		r := h.expectHuman()
		if !strings.Contains(r.Content, c.want) {
			t.Errorf("%s -> %q, want it to contain %q", c.cmd, r.Content, c.want)
		}
		if strings.Contains(c.cmd, "urgent") && strings.Contains(r.Content, "docs") {
			t.Errorf("%s matched the other task: %q", c.cmd, r.Content)
		}
	}
	h.say(h.manager, agent.Request, `/hire_member "Dev`)
	if r := h.expectHuman(); !strings.HasPrefix(r.Content, "Command 'hire_member' failed:") {
		t.Errorf("unbalanced quote on a known command: %q", r.Content)
	}
	before := len(h.srv.RequestsFor("@Manager"))
	h.say(h.manager, agent.Request, `/nonsense "x`)
	if n := len(h.srv.RequestsFor("@Manager")); n != before+1 {
		t.Errorf("unbalanced quote on an unknown command made %d requests, want 1", n-before)
	}
	// The plan is a system-prompt section of every run (A19).
	reqs := h.srv.RequestsFor("@Manager")
	if sys := strings.Join(reqs[len(reqs)-1].SystemTexts(), "\n"); !strings.Contains(sys, "Team planning") {
		t.Errorf("no planning section in the system prompt:\n%s", sys)
	}
}

// S53-S54, A96-A97: media references become image parts with a
// WorkspaceTool; plain prompts stay strings; without the tool nothing is
// expanded.
func TestMediaReferences(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, withTools(&workspace.Card{Root: root}))
	dir, err := (&workspace.Card{Root: root}).Dir(h.team.ID())
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n fake")
	if err := os.WriteFile(filepath.Join(dir, "my shot.png"), png, 0o600); err != nil {
		t.Fatal(err)
	}
	h.say(h.manager, agent.Request, `see !!"my shot.png" please`)
	h.say(h.manager, agent.Request, "plain text")
	reqs := h.srv.RequestsFor("@Manager")
	hist := reqs[0].History()
	last := hist[len(hist)-1]
	if last.Content[0] != '[' || !strings.Contains(string(last.Content), "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png)) {
		t.Fatalf("media prompt %s", last.Content)
	}
	hist = reqs[1].History()
	if last := hist[len(hist)-1]; last.Content[0] != '"' {
		t.Fatalf("plain prompt sent as %s", last.Content)
	}

	plain := newHarness(t)
	plain.say(plain.manager, agent.Request, "look at !!a.png")
	hist = plain.srv.RequestsFor("@Manager")[0].History()
	if last := hist[len(hist)-1]; last.Content[0] == '[' || !strings.HasSuffix(last.Text(), "!!a.png") {
		t.Fatalf("without a workspace: %s", last.Content)
	}
}

// A14: with TeamTool's hire capability off, routing to a role fails with
// an error naming the missing command; @Name routing still works.
func TestNoHireCommand(t *testing.T) {
	h := newHarness(t, withTools(&teamtool.Card{Hire: tool.Capability{Disabled: true}}))
	h.srv.Model("@Manager").Enqueue(final(out(agent.Response, "@Human", "hi"), out(agent.Request, "Developer", "x")))
	h.say(h.manager, agent.Request, "go")
	if r := h.expectHuman(); r.Content != "hi" {
		t.Fatalf("human got %q", r.Content)
	}
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	if e := of[*message.ErrorMessage](h.sub, h.manager)[0]; !strings.Contains(e.Content, "hire_member command not available") {
		t.Fatalf("error %q", e.Content)
	}
	v, _ := proxy.Ask(h.ctx(), h.manager, func(_ *actor.Context, a *agent.BaseAgent) (bool, error) {
		reg := a.Registry()
		return reg.Has("hire_member") || !reg.Has("fire_member"), nil
	})
	if v {
		t.Fatal("registry does not follow the TeamTool config")
	}
}
