package planning_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/orchestrator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// twoAgents starts a team with @Manager and @Dev, each with a default
// PlanningTool attached.
func twoAgents(t *testing.T) (*orchestrator.Team, *agent, *agent) {
	t.Helper()
	_, team, _ := actortest.NewTeam(t)
	m := mustAttach(t, spawnOwner(t, team, "@Manager"), planning.New())
	d := mustAttach(t, spawnOwner(t, team, "@Dev"), planning.New())
	return team, m, d
}

const threeTasks = `{"update": {"create_tasks": [
	{"id": 1, "description": "Design the API", "owner": "@Dev"},
	{"id": 2, "description": "Write the API tests", "owner": "@Dev", "status": "started", "dependencies": [1]},
	{"id": 3, "description": "Review the API design"}
]}}`

// One board per team, shared by every agent that attaches the card.
func TestAgentsShareOneBoard(t *testing.T) {
	team, m, d := twoAgents(t)
	b := boards(t, team)
	if len(b) != 1 {
		t.Fatalf("%d #PlanningTool members, want 1", len(b))
	}
	if b[0].Role() != "ToolActor" || b[0].ActorType() != "PlanningBoard" || !b[0].IsTool() {
		t.Fatalf("board %v: role %q kind %q tool %v", b[0], b[0].Role(), b[0].ActorType(), b[0].IsTool())
	}
	if got := m.toolNames(); !slices.Equal(got, []string{"update_planning", "get_planning_task", "search_planning"}) {
		t.Fatalf("tools %v", got)
	}
	if got := d.commandNames(); !slices.Equal(got, []string{"planning_summary", "get_planning_task", "search_planning"}) {
		t.Fatalf("commands %v", got)
	}
	if len(m.caps.SystemPrompts) != 1 {
		t.Fatalf("%d system prompts, want 1", len(m.caps.SystemPrompts))
	}

	if got := m.mustCall("update_planning", threeTasks); got != "Done" {
		t.Fatalf("update_planning = %q, want Done", got)
	}
	// The other agent sees the tasks; the creator is the calling agent.
	v, err := d.call("get_planning_task", `{"task_id": 2}`)
	if err != nil {
		t.Fatal(err)
	}
	task, ok := v.(planning.Task)
	if !ok {
		t.Fatalf("get_planning_task = %T, want a Task", v)
	}
	if task.ID != 2 || task.Description != "Write the API tests" || task.Status != planning.Started ||
		task.Owner != "@Dev" || task.Creator != "@Manager" || !slices.Equal(task.Dependencies, []int{1}) ||
		task.Output != "" || task.UpdatedAt.IsZero() {
		t.Fatalf("task 2 = %+v", task)
	}
	if got := d.mustCall("get_planning_task", `{"task_id": 7}`); got != "No task with that ID." {
		t.Fatalf("unknown id: %q", got)
	}

	// @Dev completes task 1; @Manager sees it, and its creator is unchanged.
	if got := d.mustCall("update_planning", `{"update": {"update_tasks": [{"id": 1, "status": "completed", "output": "api.md"}]}}`); got != "Done" {
		t.Fatal(got)
	}
	var back planning.Task
	if err := json.Unmarshal([]byte(m.dispatch("/get_planning_task 1")), &back); err != nil {
		t.Fatal(err)
	}
	if back.Status != planning.Completed || back.Output != "api.md" || back.Creator != "@Manager" || back.Owner != "@Dev" {
		t.Fatalf("task 1 after @Dev's update: %+v", back)
	}
	if got := m.dispatch("/get_planning_task 3"); !strings.Contains(got, `"id":3,"status":"pending","description":"Review the API design","owner":"","dependencies":[],"output":"","creator":"@Manager","updated_at":"`) {
		t.Fatalf("/get_planning_task 3 = %s", got)
	}
	if got := m.dispatch("/get_planning_task 9"); got != "No task with that ID." {
		t.Fatalf("/get_planning_task 9 = %q", got)
	}
	// The typed surface returns the Task itself.
	tk, err := command.Call[planning.Task](actortest.Context(t), m.reg, "get_planning_task", 3)
	if err != nil || tk.ID != 3 || tk.Owner != "" {
		t.Fatalf("typed get_planning_task(3) = %+v, %v", tk, err)
	}
	// Still one board after more attaches.
	mustAttach(t, spawnOwner(t, team, "@QA"), planning.New())
	if n := len(boards(t, team)); n != 1 {
		t.Fatalf("%d boards after a third attach", n)
	}
}

// planning_summary as system prompt and slash command.
func TestSummary(t *testing.T) {
	team, m, d := twoAgents(t)
	if got := m.prompt(); got != "No current team planning." {
		t.Fatalf("empty prompt: %q", got)
	}
	if got := d.dispatch("/planning_summary"); got != "No current team planning." {
		t.Fatalf("empty /planning_summary: %q", got)
	}
	m.mustCall("update_planning", threeTasks)
	d.mustCall("update_planning", `{"update": {"update_tasks": [{"id": 1, "status": "completed", "output": "api.md"}]}}`)

	const (
		head = "Team planning: 3 tasks.\nTasks per owner:\n- @Dev: 2\n- unassigned: 1\n"
		t1   = "- Task 1: Design the API [completed] (Owner: @Dev, Creator: @Manager) Output: api.md\n"
		t2   = "- Task 2: Write the API tests [started] (Owner: @Dev, Creator: @Manager)\n"
		t3   = "- Task 3: Review the API design [pending] (Owner: unassigned, Creator: @Manager)\n"
		hint = "Use get_planning_task(task_id) for the details of a task and search_planning(query, status, owner, creator, top_k) to find tasks."
		mine = "Your tasks (owned by you, or created by you and assigned):\n"
	)
	// @Manager created 1 and 2, assigned to @Dev; 3 is unassigned.
	if got, want := m.prompt(), head+mine+t1+t2+hint; got != want {
		t.Fatalf("manager prompt:\n%s\nwant:\n%s", got, want)
	}
	if got, want := d.dispatch("/planning_summary"), head+mine+t1+t2+hint; got != want {
		t.Fatalf("dev /planning_summary:\n%s\nwant:\n%s", got, want)
	}
	if got, want := d.dispatch("/planning_summary filter_by_agent=false"), head+"All tasks:\n"+t1+t2+t3+hint; got != want {
		t.Fatalf("unfiltered summary:\n%s\nwant:\n%s", got, want)
	}
	qa := mustAttach(t, spawnOwner(t, team, "@QA"), planning.New())
	if got, want := qa.prompt(), head+"No tasks owned by you, or created by you and assigned.\n"+hint; got != want {
		t.Fatalf("qa prompt:\n%s\nwant:\n%s", got, want)
	}
	// One task: singular; owners sorted by name, unassigned last.
	m.mustCall("update_planning", `{"update": {"delete_tasks": [1, 2], "update_tasks": [{"id": 3, "owner": "@QA"}]}}`)
	m.mustCall("update_planning", `{"update": {"create_tasks": [{"id": 4, "description": "Ship", "owner": "@Ann"}, {"id": 5, "description": "Tell"}]}}`)
	want := "Team planning: 3 tasks.\nTasks per owner:\n- @Ann: 1\n- @QA: 1\n- unassigned: 1\n" + mine +
		"- Task 3: Review the API design [pending] (Owner: @QA, Creator: @Manager)\n" + hint
	if got := qa.prompt(); got != want {
		t.Fatalf("qa prompt:\n%s\nwant:\n%s", got, want)
	}
	m.mustCall("update_planning", `{"update": {"delete_tasks": [4, 5]}}`)
	if got := qa.dispatch("/planning_summary false"); !strings.HasPrefix(got, "Team planning: 1 task.\n") {
		t.Fatalf("singular: %q", got)
	}
}

// Keyword search with filters, ordering and top_k.
func TestSearch(t *testing.T) {
	_, m, d := twoAgents(t)
	m.mustCall("update_planning", `{"update": {"create_tasks": [
		{"id": 4, "description": "Review API", "owner": "@Dev"},
		{"id": 1, "description": "Design the API", "owner": "@Dev"},
		{"id": 3, "description": "Deploy", "status": "started"}
	]}}`)
	d.mustCall("update_planning", `{"update": {"create_tasks": [{"id": 2, "description": "Test the api and the API docs", "owner": "@Manager", "status": "completed"}]}}`)
	const (
		l1 = "Task 1: Design the API [pending] (Owner: @Dev, Creator: @Manager)"
		l2 = "Task 2: Test the api and the API docs [completed] (Owner: @Manager, Creator: @Dev)"
		l3 = "Task 3: Deploy [started] (Owner: unassigned, Creator: @Manager)"
		l4 = "Task 4: Review API [pending] (Owner: @Dev, Creator: @Manager)"
		km = " (keyword match)"
	)
	for _, c := range []struct{ cmd, want string }{
		{"/search_planning", strings.Join([]string{l1, l2, l3, l4}, "\n")},
		{"/search_planning api", strings.Join([]string{l2 + km, l1 + km, l4 + km}, "\n")},
		{`/search_planning "  api "`, strings.Join([]string{l2 + km, l1 + km, l4 + km}, "\n")},
		{"/search_planning API owner=@Dev", l1 + km + "\n" + l4 + km},
		{"/search_planning owner=", l3},
		{"/search_planning status=started", l3},
		{"/search_planning creator=@Dev", l2},
		{"/search_planning api top_k=1", l2 + km},
		{"/search_planning top_k=2", l1 + "\n" + l2},
		{"/search_planning nothing", "No matching tasks."},
		{"/search_planning api status=abort", "No matching tasks."},
		{"/search_planning top_k=0", "Command 'search_planning' failed: search_planning: top_k must be at least 1, got 0"},
	} {
		if got := d.dispatch(c.cmd); got != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.cmd, got, c.want)
		}
	}
	if got := d.dispatch("/search_planning status=done"); !strings.HasPrefix(got, "Command 'search_planning' failed: argument status:") {
		t.Errorf("bad status: %q", got)
	}
	// The tool has the same behaviour.
	if got := m.mustCall("search_planning", `{"query": "API", "owner": "@Dev", "top_k": 1}`); got != l1+km {
		t.Errorf("tool search: %q", got)
	}
	if got := m.mustCall("search_planning", `{"owner": ""}`); got != l3 {
		t.Errorf("tool search unassigned: %q", got)
	}
	if got := m.mustCall("search_planning", `{"query": null, "owner": null, "top_k": null}`); got != strings.Join([]string{l1, l2, l3, l4}, "\n") {
		t.Errorf("tool search with nulls: %q", got)
	}
	if got := m.retryText("search_planning", `{"top_k": 0}`); got != "search_planning: top_k must be at least 1, got 0" {
		t.Errorf("top_k 0: %q", got)
	}
	if got := m.retryText("search_planning", `{"status": "done"}`); !strings.Contains(got, "status") {
		t.Errorf("bad status: %q", got)
	}
}

// Validation errors are retry errors naming the field; the valid
// parts of an update are applied.
func TestUpdateValidation(t *testing.T) {
	_, m, d := twoAgents(t)
	m.mustCall("update_planning", threeTasks)

	got := m.retryText("update_planning", `{"update": {
		"create_tasks": [{"id": 1, "description": "again"}, {"id": 5, "description": "Five"}, {"id": 5, "description": "Five again"}],
		"update_tasks": [{"id": 9, "status": "started"}, {"id": 3, "owner": "@Dev"}],
		"delete_tasks": [8, 2]}}`)
	want := "Update errors: create_tasks: task 1: id 1 is already used by another task; " +
		"create_tasks: task 5: id 5 is already used by another task; update_tasks: no task with id 9; delete_tasks: no task with id 8"
	if got != want {
		t.Fatalf("errors:\n%s\nwant:\n%s", got, want)
	}
	// Task 5 created, 3 assigned, 2 deleted.
	if got := d.dispatch("/search_planning"); got != strings.Join([]string{
		"Task 1: Design the API [pending] (Owner: @Dev, Creator: @Manager)",
		"Task 3: Review the API design [pending] (Owner: @Dev, Creator: @Manager)",
		"Task 5: Five [pending] (Owner: unassigned, Creator: @Manager)",
	}, "\n") {
		t.Fatalf("board after a partly failed update:\n%s", got)
	}

	long := strings.Repeat("é", 301)
	for _, c := range []struct{ args, want string }{
		{`{"update": {"create_tasks": [{"id": 6, "description": "` + long + `"}]}}`,
			"Update errors: create_tasks: task 6: description has 301 characters, at most 300 are allowed"},
		{`{"update": {"create_tasks": [{"id": 6, "description": "  "}]}}`,
			"Update errors: create_tasks: task 6: description is empty"},
		{`{"update": {"update_tasks": [{"id": 1, "description": "", "owner": "@QA"}]}}`,
			"Update errors: update_tasks: task 1: description is empty"},
		{`{"update": {"update_tasks": [{"id": 1, "description": "` + long + `"}]}}`,
			"Update errors: update_tasks: task 1: description has 301 characters, at most 300 are allowed"},
	} {
		if got := m.retryText("update_planning", c.args); got != c.want {
			t.Errorf("%.80s:\n%s\nwant:\n%s", c.args, got, c.want)
		}
	}
	// A bad status is refused by the schema, naming the field.
	for _, args := range []string{
		`{"update": {"create_tasks": [{"id": 7, "description": "x", "status": "done"}]}}`,
		`{"update": {"update_tasks": [{"id": 1, "status": "finished"}]}}`,
	} {
		if got := m.retryText("update_planning", args); !strings.Contains(got, "status") || !strings.Contains(got, "not one of") {
			t.Errorf("bad status %s: %q", args, got)
		}
	}
	if got := m.retryText("update_planning", `{"update": {"create_tasks": [{"description": "no id"}]}}`); !strings.Contains(got, `"id"`) {
		t.Errorf("missing id: %q", got)
	}
	// Task 1 is unchanged by the refused updates.
	if got := d.dispatch(`/search_planning "Design the"`); got != "Task 1: Design the API [pending] (Owner: @Dev, Creator: @Manager) (keyword match)" {
		t.Fatalf("task 1 changed by a refused update: %s", got)
	}

	// A long output is cut to 147 characters and "..."; null fields are
	// left alone; an empty owner unassigns, an empty list clears.
	out := strings.Repeat("o", 200)
	m.mustCall("update_planning", `{"update": {"create_tasks": [{"id": 6, "description": "Six", "output": "`+out+`", "dependencies": [1, 3]}]}}`)
	tk, err := command.Call[planning.Task](actortest.Context(t), d.reg, "get_planning_task", 6)
	if err != nil || tk.Output != strings.Repeat("o", 147)+"..." || !slices.Equal(tk.Dependencies, []int{1, 3}) {
		t.Fatalf("task 6 = %+v, %v", tk, err)
	}
	d.mustCall("update_planning", `{"update": {"update_tasks": [{"id": 6, "status": null, "description": "Six!", "owner": " @Dev ", "dependencies": [], "output": "`+out+`"}]}}`)
	tk, _ = command.Call[planning.Task](actortest.Context(t), d.reg, "get_planning_task", 6)
	if tk.Description != "Six!" || tk.Owner != "@Dev" || tk.Status != planning.Pending || len(tk.Dependencies) != 0 ||
		len(tk.Output) != 150 || tk.Creator != "@Manager" {
		t.Fatalf("task 6 after update = %+v", tk)
	}
	d.mustCall("update_planning", `{"update": {"update_tasks": [{"id": 6, "owner": ""}]}}`)
	tk, _ = command.Call[planning.Task](actortest.Context(t), d.reg, "get_planning_task", 6)
	if tk.Owner != "" || tk.Description != "Six!" {
		t.Fatalf("task 6 after unassigning = %+v", tk)
	}
	// An empty update changes nothing and succeeds.
	if got := m.mustCall("update_planning", `{"update": {}}`); got != "Done" {
		t.Fatal(got)
	}
}

// update_planning may run on any goroutine, concurrently with the other
// agents' tools and the owners' commands.
func TestConcurrentUpdates(t *testing.T) {
	_, m, d := twoAgents(t)
	const perAgent = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*perAgent+1)
	for i := range perAgent {
		for j, a := range []*agent{m, d} {
			tl := a.tool("update_planning")
			wg.Go(func() {
				args := fmt.Sprintf(`{"update": {"create_tasks": [{"id": %d, "description": "task %d"}]}}`, 2*i+j, 2*i+j)
				if v, err := tl.Call(actortest.Context(t), json.RawMessage(args)); err != nil || v != "Done" {
					errs <- fmt.Errorf("%s: %v, %v", args, v, err)
				}
			})
		}
	}
	wg.Go(func() {
		if got := m.prompt(); got == "Cannot get the team planning." {
			errs <- errors.New(got)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := d.dispatch("/planning_summary false"); !strings.HasPrefix(got, fmt.Sprintf("Team planning: %d tasks.\n", 2*perAgent)) {
		t.Fatalf("summary after concurrent updates:\n%s", got)
	}
}

// Disabled capabilities contribute nothing, exposure and instructions
// are honoured, and channels a capability cannot use are refused.
func TestCapabilityConfiguration(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	a := mustAttach(t, spawnOwner(t, team, "@A"), &planning.Card{
		Search:  tool.Capability{Disabled: true},
		Summary: tool.Capability{Expose: tool.Command | tool.ToolCall},
		Get:     tool.Capability{Instructions: "Look tasks up before changing them."},
	})
	if got := a.toolNames(); !slices.Equal(got, []string{"update_planning", "planning_summary", "get_planning_task"}) {
		t.Fatalf("tools %v", got)
	}
	if got := a.commandNames(); !slices.Equal(got, []string{"planning_summary", "get_planning_task"}) {
		t.Fatalf("commands %v", got)
	}
	if len(a.caps.SystemPrompts) != 0 {
		t.Fatal("summary not exposed as a system prompt, but a section was returned")
	}
	if d := a.tool("get_planning_task").Description; !strings.HasSuffix(d, "\n\nAdditional Instructions:\nLook tasks up before changing them.") {
		t.Fatalf("description %q", d)
	}
	a.mustCall("update_planning", `{"update": {"create_tasks": [{"id": 1, "description": "One"}]}}`)
	want := "Team planning: 1 task.\nTasks per owner:\n- unassigned: 1\nAll tasks:\n" +
		"- Task 1: One [pending] (Owner: unassigned, Creator: @A)\nUse get_planning_task(task_id) for the details of a task."
	if got := a.mustCall("planning_summary", `{"filter_by_agent": false}`); got != want {
		t.Fatalf("summary tool:\n%s\nwant:\n%s", got, want)
	}
	if got := a.mustCall("planning_summary", `{}`); !strings.Contains(got, "No tasks owned by you") {
		t.Fatalf("summary tool, filtered: %s", got)
	}

	// Search only: the hint names search_planning.
	s := mustAttach(t, spawnOwner(t, team, "@S"), &planning.Card{Get: tool.Capability{Disabled: true}})
	if got := s.prompt(); !strings.HasSuffix(got, "\nUse search_planning(query, status, owner, creator, top_k) to find tasks.") {
		t.Fatalf("hint with search only:\n%s", got)
	}
	// Neither: no hint.
	n := mustAttach(t, spawnOwner(t, team, "@N"), &planning.Card{Get: tool.Capability{Disabled: true}, Search: tool.Capability{Disabled: true}})
	if got := n.prompt(); !strings.HasSuffix(got, "\nNo tasks owned by you, or created by you and assigned.") {
		t.Fatalf("no hint expected:\n%s", got)
	}

	for _, c := range []struct {
		card planning.Card
		want string
	}{
		{planning.Card{Update: tool.Capability{Expose: tool.Command}}, "update cannot be exposed as COMMAND"},
		{planning.Card{Get: tool.Capability{Expose: tool.SystemPrompt | tool.Command}}, "get cannot be exposed as SYSTEM_PROMPT"},
		{planning.Card{Search: tool.Capability{Expose: tool.SystemPrompt}}, "search cannot be exposed as SYSTEM_PROMPT"},
	} {
		_, err := attach(t, spawnOwner(t, team, "@X"+c.want[:3]), c.card)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("attach %+v: %v, want an error containing %q", c.card, err, c.want)
		}
	}
}

// With every capability off, the card attaches nothing and creates no board.
func TestAllDisabled(t *testing.T) {
	_, team, _ := actortest.NewTeam(t)
	off := tool.Capability{Disabled: true}
	a := mustAttach(t, spawnOwner(t, team, "@A"), &planning.Card{Update: off, Summary: off, Get: off, Search: off})
	if len(a.caps.Tools)+len(a.caps.SystemPrompts)+len(a.caps.Commands) != 0 {
		t.Fatalf("capabilities %+v", a.caps)
	}
	if n := len(boards(t, team)); n != 0 {
		t.Fatalf("%d boards created by a card with every capability off", n)
	}
}

// The card is serializable config and round-trips through tool.Cards.
func TestCardJSON(t *testing.T) {
	in := tool.Cards{&planning.Card{
		Update: tool.Capability{Instructions: "Keep ids small."},
		Get:    tool.Capability{Expose: tool.Command},
		Search: tool.Capability{Disabled: true},
	}, planning.New()}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `{"kind":"PlanningTool","config":{"update":{"instructions":"Keep ids small."},"summary":{},"get":{"expose":"COMMAND"},"search":{"disabled":true}}}`) {
		t.Fatalf("encoded %s", data)
	}
	var out tool.Cards
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip: %+v, want %+v", out, in)
	}
	c := out[0]
	if c.Kind() != "PlanningTool" {
		t.Fatalf("kind %q", c.Kind())
	}
	if d, ok := c.(interface{ DependsOn() []string }); ok {
		t.Fatalf("PlanningTool depends on %v", d.DependsOn())
	}
}

// Attach needs a team; once the team has stopped, the capabilities fail
// cleanly.
func TestNoTeamAndBoardGone(t *testing.T) {
	sys, team, _ := actortest.NewTeam(t)
	root, err := sys.Spawn(&owner{}, &actor.Config{Name: "@Loner"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attach(t, root, planning.New()); !errors.Is(err, orchestrator.ErrNoTeam) {
		t.Fatalf("attach outside a team: %v, want orchestrator.ErrNoTeam", err)
	}
	if _, err := planning.New().Attach(actortest.Context(t), nil); err == nil {
		t.Fatal("attach with no owner succeeded")
	}

	a := mustAttach(t, spawnOwner(t, team, "@A"), planning.New())
	if err := team.Stop(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	_, err = a.call("update_planning", `{"update": {}}`)
	var r *llm.RetryError
	if !errors.Is(err, actor.ErrActorDead) || errors.As(err, &r) {
		t.Fatalf("update after the team stopped: %v, want ErrActorDead, not a retry", err)
	}
	for name, args := range map[string]string{"get_planning_task": `{"task_id": 1}`, "search_planning": `{}`} {
		if _, err := a.call(name, args); !errors.Is(err, actor.ErrActorDead) {
			t.Errorf("%s after the team stopped: %v", name, err)
		}
	}
	if got := a.caps.SystemPrompts[0](actortest.Context(t)); got != "Cannot get the team planning." {
		t.Fatalf("prompt after the team stopped: %q", got)
	}
	if _, err := command.Call[string](actortest.Context(t), a.reg, "planning_summary"); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("planning_summary after the team stopped: %v", err)
	}
}
