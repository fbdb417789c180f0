package agent_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
)

// withTools gives every agent of the harness these cards.
func withTools(cards ...tool.Card) option {
	return func(_ *harness, c *agent.AgentConfig) { c.Tools = append(tool.Cards{}, cards...) }
}

// Planning commands through the agent: coercion failures are strings,
// #hash tokens survive, a bad quote on a known command fails.
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
	// The plan is a system-prompt section of every run.
	reqs := h.srv.RequestsFor("@Manager")
	if sys := strings.Join(reqs[len(reqs)-1].SystemTexts(), "\n"); !strings.Contains(sys, "Team planning") {
		t.Errorf("no planning section in the system prompt:\n%s", sys)
	}
}

// Media references become image parts with a WorkspaceTool; plain prompts
// stay strings; without the tool nothing is expanded.
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
