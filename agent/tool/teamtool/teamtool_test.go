package teamtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCardContract(t *testing.T) {
	c := teamtool.New()
	if c.Kind() != "TeamTool" {
		t.Errorf("Kind = %q", c.Kind())
	}
	if d, ok := any(c).(interface{ DependsOn() []string }); ok {
		t.Errorf("DependsOn = %v, want none", d.DependsOn())
	}
	if !reflect.DeepEqual(c, &teamtool.Card{}) {
		t.Errorf("New() = %+v, want the zero card (every capability on its defaults)", c)
	}
}

// The default capabilities, their tools, commands and prompts.
func TestDefaultCapabilities(t *testing.T) {
	e := newEnv(t, teamtool.New())
	var tools []string
	for _, tl := range e.caps.Tools {
		tools = append(tools, tl.Name)
		if !tl.Serial {
			t.Errorf("tool %s is not Serial", tl.Name)
		}
	}
	if want := []string{"hire_members", "fire_members"}; !slices.Equal(tools, want) {
		t.Errorf("tools = %v, want %v", tools, want)
	}
	var cmds []string
	for _, c := range e.caps.Commands {
		cmds = append(cmds, c.Name())
	}
	if want := []string{"hire_member", "fire_member", "team_members", "team_roles"}; !slices.Equal(cmds, want) {
		t.Errorf("commands = %v, want %v", cmds, want)
	}
	for _, d := range e.o.Registry.Descriptors() {
		if d.Name != "help" && d.ToolCard != "TeamTool" {
			t.Errorf("command %s registered under %q, want TeamTool", d.Name, d.ToolCard)
		}
	}
	if n := len(e.caps.SystemPrompts); n != 2 {
		t.Fatalf("%d system prompts, want 2 (roster, roles)", n)
	}
	roster := e.caps.SystemPrompts[0](e.ctx)
	if !strings.HasPrefix(roster, "Team members:") {
		t.Errorf("first prompt = %q, want the roster", roster)
	}
	if roles := e.caps.SystemPrompts[1](e.ctx); !strings.HasPrefix(roles, "Available roles:") {
		t.Errorf("second prompt = %q, want the roles", roles)
	}
}

// Hiring by role makes a child of the hiring agent, in the team, with a
// generated name.
func TestHireByRole(t *testing.T) {
	e := newEnv(t, &teamtool.Card{Rand: fixed(23)})
	addr, err := e.hire("Developer")
	if err != nil {
		t.Fatal(err)
	}
	if addr.Name() != "@Developer123" || addr.Role() != "Developer" {
		t.Errorf("hired %s, want @Developer123 (role Developer)", addr)
	}
	if addr.ActorType() != workerKind {
		t.Errorf("actor type %q, want %q", addr.ActorType(), workerKind)
	}
	if addr.TeamID() != e.team.ID() {
		t.Errorf("team %s, want %s", addr.TeamID(), e.team.ID())
	}
	if !slices.ContainsFunc(e.children(), addr.Equal) {
		t.Errorf("%s is not a child of the owner (children %v)", addr, e.children())
	}
	parent, err := proxy.Ask(e.ctx, addr, func(c *actor.Context, _ actor.Actor) (*message.Address, error) { return c.Parent(), nil })
	if err != nil {
		t.Fatal(err)
	}
	if !parent.Equal(e.owner) {
		t.Errorf("parent %v, want the owner", parent)
	}
	if !slices.Contains(e.names(), "@Developer123") {
		t.Errorf("roster %v lacks @Developer123", e.names())
	}
	// The catalog's card is left as it was: the hire used a copy.
	card, err := e.team.Card(e.ctx, "Developer")
	if err != nil {
		t.Fatal(err)
	}
	if got := card.Config.(*actor.Config).Name; got != "template" {
		t.Errorf("catalog card name changed to %q", got)
	}

	// The number is incremented past names in use; spaces leave the role.
	again, err := e.hire("Developer")
	if err != nil {
		t.Fatal(err)
	}
	if again.Name() != "@Developer124" {
		t.Errorf("second hire %s, want @Developer124", again.Name())
	}
	ds, err := e.hire("Data Scientist")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name() != "@DataScientist123" || ds.Role() != "Data Scientist" {
		t.Errorf("hired %s, want @DataScientist123", ds)
	}
}

// The default RNG gives @Role + three digits.
func TestHireDefaultNameIsRoleAndThreeDigits(t *testing.T) {
	e := newEnv(t, teamtool.New())
	for range 3 {
		addr, err := e.hire("Developer")
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^@Developer\d{3,}$`).MatchString(addr.Name()) {
			t.Errorf("name %q does not match @Developer\\d{3}", addr.Name())
		}
	}
	if n := len(e.children()); n != 3 {
		t.Errorf("%d children, want 3", n)
	}
}

// A given name is trimmed and must be free and non-empty.
func TestHireWithName(t *testing.T) {
	e := newEnv(t, teamtool.New())
	addr, err := e.hire("Developer", command.Named("name", "  @Ada "))
	if err != nil {
		t.Fatal(err)
	}
	if addr.Name() != "@Ada" {
		t.Errorf("name %q, want @Ada", addr.Name())
	}
	for _, tc := range []struct{ name, want string }{
		{"@Ada", `"@Ada" is already taken`},
		{" @Manager", `"@Manager" is already taken`},
		{"orchestrator", `"orchestrator" is already taken`},
		{"   ", "name of the new Developer member is empty"},
	} {
		_, err := e.hire("Developer", tc.name)
		if msg := retryMessage(t, err); !strings.Contains(msg, tc.want) {
			t.Errorf("hire name %q: %q, want it to contain %q", tc.name, msg, tc.want)
		}
	}
	if n := len(e.children()); n != 1 {
		t.Errorf("%d children after refused hires, want 1", n)
	}
}

// An unknown role names the role and lists the available ones.
func TestHireUnknownRoleListsAvailableRoles(t *testing.T) {
	e := newEnv(t, teamtool.New())
	_, err := e.hire("Astronaut")
	msg := retryMessage(t, err)
	if want := `role "Astronaut" not found. Available roles: Developer, Data Scientist`; msg != want {
		t.Errorf("error %q, want %q", msg, want)
	}
	var ce *command.Error
	if !errors.As(err, &ce) || ce.Command != "hire_member" {
		t.Errorf("error %v is not a command error of hire_member", err)
	}
	if n := len(e.children()); n != 0 {
		t.Errorf("%d children, want none", n)
	}
}

// The registry resolves hire_member as a typed callable returning the
// address, and refuses it as returning anything else.
func TestHireMemberIsATypedCallable(t *testing.T) {
	e := newEnv(t, &teamtool.Card{Rand: fixed(0)})
	hire, err := command.Callable[*message.Address](e.o.Registry, "hire_member")
	if err != nil {
		t.Fatal(err)
	}
	addr, err := on(e, func() (*message.Address, error) { return hire(e.ctx, "Developer") })
	if err != nil {
		t.Fatal(err)
	}
	if addr == nil || addr.Name() != "@Developer100" || !addr.IsAlive() {
		t.Errorf("callable returned %v, want the live @Developer100", addr)
	}
	if _, err := command.Callable[string](e.o.Registry, "hire_member"); err == nil {
		t.Error("hire_member resolved as returning a string")
	}
}

// A person hires and fires, and reads the roster and roles, by slash
// command.
func TestSlashCommands(t *testing.T) {
	e := newEnv(t, teamtool.New())
	out := e.dispatch("/hire_member Developer name=@Ada")
	members, err := e.team.Members(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(members, func(m *message.Address) bool { return m.Name() == "@Ada" })
	if i < 0 {
		t.Fatalf("@Ada not in roster %v", e.names())
	}
	if out != members[i].String() {
		t.Errorf("reply %q, want the address %q", out, members[i].String())
	}
	if out := e.dispatch("/hire_member Astronaut"); !strings.HasPrefix(out, `Command 'hire_member' failed: role "Astronaut" not found`) {
		t.Errorf("unknown role reply %q", out)
	}
	if out := e.dispatch("/fire_member @Ada"); out != "Member @Ada has been fired." {
		t.Errorf("fire reply %q", out)
	}
	e.waitStopped(members[i])
	if out := e.dispatch("/team_members"); out != "Team members:\n@Manager (role: Manager) - [you]" {
		t.Errorf("team_members reply %q", out)
	}
	if out := e.dispatch("/team_roles"); !strings.HasPrefix(out, "Available roles:\nDeveloper: ") {
		t.Errorf("team_roles reply %q", out)
	}
}

// hire_members hires each role; unknown roles are a retry error, with a
// note of what was hired.
func TestHireMembers(t *testing.T) {
	e := newEnv(t, &teamtool.Card{Rand: fixed(0)})
	out, err := e.call("hire_members", map[string]any{"roles": []string{"Developer", "Data Scientist", "Developer"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Members hired: [@Developer100, @DataScientist100, @Developer101]"; out != want {
		t.Errorf("result %q, want %q", out, want)
	}
	if n := len(e.children()); n != 3 {
		t.Errorf("%d children, want 3", n)
	}

	_, err = e.call("hire_members", map[string]any{"roles": []string{"Developer", "Astronaut", "Chef"}})
	want := "Members hired: [@Developer102]. Unknown roles: Astronaut, Chef. Available roles: Developer, Data Scientist"
	if msg := retryMessage(t, err); msg != want {
		t.Errorf("partial: %q, want %q", msg, want)
	}
	if !slices.Contains(e.names(), "@Developer102") {
		t.Error("the partial hire did not hire @Developer102")
	}

	_, err = e.call("hire_members", map[string]any{"roles": []string{"Astronaut"}})
	if msg := retryMessage(t, err); msg != "Unknown roles: Astronaut. Available roles: Developer, Data Scientist" {
		t.Errorf("all unknown: %q", msg)
	}
	_, err = e.call("hire_members", map[string]any{"roles": []string{}})
	if msg := retryMessage(t, err); !strings.Contains(msg, "no roles given") {
		t.Errorf("empty list: %q", msg)
	}
	_, err = e.call("hire_members", map[string]any{"roles": "Developer"})
	if msg := retryMessage(t, err); !strings.Contains(msg, "invalid arguments") {
		t.Errorf("bad arguments: %q", msg)
	}
}

// fire_member stops the member; the roster drops it once stopped.
func TestFireMember(t *testing.T) {
	e := newEnv(t, teamtool.New())
	ada, err := e.hire("Developer", "@Ada")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := e.hire("Developer", "@Bob")
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.cmd("fire_member", "@Ada")
	if err != nil {
		t.Fatal(err)
	}
	if out != "Member @Ada has been fired." {
		t.Errorf("result %q", out)
	}
	e.waitStopped(ada)
	if names := e.names(); slices.Contains(names, "@Ada") || !slices.Contains(names, "@Bob") {
		t.Errorf("roster after firing @Ada: %v", names)
	}
	if !bob.IsAlive() {
		t.Error("@Bob stopped too")
	}

	for _, tc := range []struct{ name, want string }{
		{"@Ada", `member "@Ada" not found. Current members: @Bob`},
		{"@Nobody", `member "@Nobody" not found. Current members: @Bob`},
		{"@manager", `member "@manager" not found`},
		{"@Manager", "cannot fire @Manager: that is you"},
		{"orchestrator", "cannot fire orchestrator: it is the team's orchestrator"},
	} {
		_, err := e.cmd("fire_member", tc.name)
		if msg := retryMessage(t, err); msg != tc.want && !strings.HasPrefix(msg, tc.want) {
			t.Errorf("fire %q: %q, want %q", tc.name, msg, tc.want)
		}
	}
	if !e.owner.IsAlive() || !bob.IsAlive() {
		t.Error("a refused fire stopped someone")
	}
}

// Firing stops what the fired member hired, and never waits for it.
func TestFireStopsWhatTheMemberHired(t *testing.T) {
	e := newEnv(t, teamtool.New())
	lead, err := e.hire("Developer", "@Lead")
	if err != nil {
		t.Fatal(err)
	}
	// @Lead hires a member of its own.
	junior := actortestSpawn(t, e, lead)
	if out, err := e.cmd("fire_member", "@Lead"); err != nil || out != "Member @Lead has been fired." {
		t.Fatalf("fire: %q, %v", out, err)
	}
	e.waitStopped(junior)
	e.waitStopped(lead)
	if names := e.names(); !slices.Equal(names, []string{"@Manager"}) {
		t.Errorf("roster %v, want only @Manager", names)
	}
}

// actortestSpawn spawns a worker named @Junior as a child of parent.
func actortestSpawn(t *testing.T, e *env, parent *message.Address) *message.Address {
	t.Helper()
	v, err := proxy.Ask(e.ctx, parent, func(c *actor.Context, _ actor.Actor) (*message.Address, error) {
		return c.Spawn(&worker{}, &actor.Config{Name: "@Junior", Role: "Developer"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fire_members fires each name; problems are a retry error with a note of
// what was fired.
func TestFireMembers(t *testing.T) {
	e := newEnv(t, teamtool.New())
	var hired []*message.Address
	for _, n := range []string{"@A", "@B", "@C"} {
		a, err := e.hire("Developer", n)
		if err != nil {
			t.Fatal(err)
		}
		hired = append(hired, a)
	}
	out, err := e.call("fire_members", map[string]any{"names": []string{"@A", "@B", "@A"}})
	if err != nil {
		t.Fatal(err)
	}
	if out != "Members fired: @A, @B" {
		t.Errorf("result %q", out)
	}
	e.waitStopped(hired[0])
	e.waitStopped(hired[1])

	_, err = e.call("fire_members", map[string]any{"names": []string{"@C", "@X", "@Manager"}})
	want := `Members fired: @C. But member "@X" not found. Current members: none; cannot fire @Manager: that is you`
	if msg := retryMessage(t, err); msg != want {
		t.Errorf("partial: %q\nwant      %q", msg, want)
	}
	e.waitStopped(hired[2])

	_, err = e.call("fire_members", map[string]any{"names": []string{"@X"}})
	if msg := retryMessage(t, err); msg != `member "@X" not found. Current members: none` {
		t.Errorf("all missing: %q", msg)
	}
	_, err = e.call("fire_members", map[string]any{"names": []string{}})
	if msg := retryMessage(t, err); !strings.Contains(msg, "no names given") {
		t.Errorf("empty list: %q", msg)
	}
}

// The roster marks the owner and hides tool actors: those whose config
// says so (actor.Config.Tool), whatever their name; a "#" name alone no
// longer hides a member.
func TestRosterMarksOwnerAndHidesToolActors(t *testing.T) {
	e := newEnv(t, teamtool.New())
	if _, err := e.team.Spawn(e.ctx, &worker{}, &actor.Config{Name: "#PlanningTool", Role: "ToolActor", Tool: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.team.Spawn(e.ctx, &worker{}, &actor.Config{Name: "Index", Role: "ToolActor", Tool: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hire("Developer", "@Ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hire("Developer", "#ops"); err != nil {
		t.Fatal(err)
	}
	want := "Team members:\n@Manager (role: Manager) - [you]\n@Ada (role: Developer)\n#ops (role: Developer)"
	out, err := e.cmd("team_members")
	if err != nil {
		t.Fatal(err)
	}
	if out != want {
		t.Errorf("command:\n%s\nwant:\n%s", out, want)
	}
	if got := e.caps.SystemPrompts[0](e.ctx); got != want {
		t.Errorf("prompt:\n%s\nwant:\n%s", got, want)
	}
	// With a context without deadline the query gets one.
	if got := e.caps.SystemPrompts[0](context.Background()); got != want {
		t.Errorf("prompt without deadline:\n%s", got)
	}
}

// An empty team and catalog give empty roster and roles sections; a failed
// query gives a short line, and hiring and firing fail plainly.
func TestViewsEmptyAndUnavailable(t *testing.T) {
	e := newEnv(t, teamtool.New())
	empty := newTeam(t, e.sys)
	caps, err := e.attach(teamtool.New(), empty)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range caps.SystemPrompts {
		if got := p(e.ctx); got != "" {
			t.Errorf("prompt %d on an empty team = %q, want empty", i, got)
		}
	}

	gone := newTeam(t, e.sys, catalog(t)...)
	if err := gone.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	caps, err = e.attach(teamtool.New(), orchestrator.Of(gone.Address()))
	if err != nil {
		t.Fatal(err)
	}
	if got := caps.SystemPrompts[0](e.ctx); !strings.HasPrefix(got, "Team roster unavailable: ") {
		t.Errorf("roster of a stopped team = %q", got)
	}
	if got := caps.SystemPrompts[1](e.ctx); !strings.HasPrefix(got, "Team roles unavailable: ") {
		t.Errorf("roles of a stopped team = %q", got)
	}
	// Hiring and firing fail plainly (not as retries) when the team is gone.
	for _, text := range []string{"/hire_member Developer", "/fire_member @Ada"} {
		out := e.dispatch(text)
		if !strings.Contains(out, "failed: teamtool: ") {
			t.Errorf("%s on a stopped team = %q", text, out)
		}
	}
	for _, tc := range []struct{ tool, arg string }{{"hire_members", "roles"}, {"fire_members", "names"}} {
		_, err := on(e, func() (any, error) {
			raw, _ := json.Marshal(map[string]any{tc.arg: []string{"x"}})
			return findTool(caps, tc.tool).Call(e.ctx, raw)
		})
		var retry *llm.RetryError
		if err == nil || errors.As(err, &retry) || !strings.Contains(err.Error(), "teamtool: ") {
			t.Errorf("%s on a stopped team: %v", tc.tool, err)
		}
	}
}

// The role profiles list every card with its skills.
func TestTeamRolesListCardsWithSkills(t *testing.T) {
	e := newEnv(t, teamtool.New())
	want := "Available roles:\nDeveloper: Writes code (Skills: go, review)\nData Scientist: Analyses data (Skills: none)"
	out, err := e.cmd("team_roles")
	if err != nil {
		t.Fatal(err)
	}
	if out != want {
		t.Errorf("command:\n%s\nwant:\n%s", out, want)
	}
	if got := e.caps.SystemPrompts[1](e.ctx); got != want {
		t.Errorf("prompt:\n%s", got)
	}
}

// A disabled capability contributes nothing.
func TestDisabledCapabilityContributesNothing(t *testing.T) {
	e := newEnv(t, &teamtool.Card{
		Hire:   tool.Capability{Disabled: true},
		Roster: tool.Capability{Disabled: true},
	})
	if e.tool("hire_members") != nil || e.o.Registry.Has("hire_member") || e.caps.Hire != nil {
		t.Error("hire is disabled but still attached")
	}
	if e.o.Registry.Has("team_members") {
		t.Error("roster is disabled but team_members is registered")
	}
	if n := len(e.caps.SystemPrompts); n != 1 || !strings.HasPrefix(e.caps.SystemPrompts[0](e.ctx), "Available roles:") {
		t.Errorf("%d prompts, want only the roles", n)
	}
	if _, err := command.Callable[*message.Address](e.o.Registry, "hire_member"); !errors.Is(err, command.ErrNotRecognized) {
		t.Errorf("Callable(hire_member) = %v, want ErrNotRecognized", err)
	}
	if e.tool("fire_members") == nil || !e.o.Registry.Has("fire_member") || !e.o.Registry.Has("team_roles") {
		t.Error("the enabled capabilities are missing")
	}

	none := newEnv(t, &teamtool.Card{
		Hire: tool.Capability{Disabled: true}, Fire: tool.Capability{Disabled: true},
		Roster: tool.Capability{Disabled: true}, Roles: tool.Capability{Disabled: true},
	})
	if c := none.caps; len(c.Tools)+len(c.SystemPrompts)+len(c.Commands) != 0 || c.Hire != nil {
		t.Errorf("all disabled still gives %+v", c)
	}
}

// The card gives its owner the hire, typed (tool.Capabilities.Hire, what
// the agent routes a bare role with), exactly when hire_member is a
// command: it hires like hire_member without a name.
func TestTypedHire(t *testing.T) {
	e := newEnv(t, &teamtool.Card{Rand: fixed(23)})
	if e.caps.Hire == nil {
		t.Fatal("no typed hire by default")
	}
	addr, err := on(e, func() (*message.Address, error) { return e.caps.Hire(e.ctx, "Developer") })
	if err != nil || addr.Name() != "@Developer123" || addr.Role() != "Developer" {
		t.Fatalf("hire = %v, %v; want @Developer123 (role Developer)", addr, err)
	}
	if !slices.ContainsFunc(e.children(), addr.Equal) {
		t.Errorf("%s is not a child of the owner", addr)
	}
	_, err = on(e, func() (*message.Address, error) { return e.caps.Hire(e.ctx, "Astronaut") })
	if msg := retryMessage(t, err); !strings.Contains(msg, `role "Astronaut" not found`) {
		t.Errorf("unknown role: %q", msg)
	}
	toolOnly := newEnv(t, &teamtool.Card{Hire: tool.Capability{Expose: tool.ToolCall}})
	if toolOnly.caps.Hire != nil || toolOnly.o.Registry.Has("hire_member") {
		t.Error("hire on TOOL_CALL only still gives a typed hire")
	}
}

// Expose replaces the default channels; a channel a capability has no form
// for, or an unknown channel bit, is an attach error.
func TestExposeReplacesDefaultChannels(t *testing.T) {
	e := newEnv(t, &teamtool.Card{
		Hire:   tool.Capability{Expose: tool.Command},
		Fire:   tool.Capability{Expose: tool.ToolCall},
		Roster: tool.Capability{Expose: tool.ToolCall},
		Roles:  tool.Capability{Expose: tool.ToolCall | tool.SystemPrompt},
	})
	if e.tool("hire_members") != nil || !e.o.Registry.Has("hire_member") {
		t.Error("hire: want the command only")
	}
	if e.tool("fire_members") == nil || e.o.Registry.Has("fire_member") {
		t.Error("fire: want the tool only")
	}
	if e.tool("team_members") == nil || e.o.Registry.Has("team_members") {
		t.Error("roster: want the tool only")
	}
	if e.tool("team_roles") == nil || e.o.Registry.Has("team_roles") || len(e.caps.SystemPrompts) != 1 {
		t.Error("roles: want the tool and the prompt only")
	}
	out, err := e.call("team_members", map[string]any{})
	if err != nil || out != "Team members:\n@Manager (role: Manager) - [you]" {
		t.Errorf("team_members tool: %q, %v", out, err)
	}
	out, err = e.call("team_roles", map[string]any{})
	if err != nil || !strings.HasPrefix(out, "Available roles:\nDeveloper") {
		t.Errorf("team_roles tool: %q, %v", out, err)
	}

	// Hiring and firing have no system-prompt form.
	for _, c := range []*teamtool.Card{
		{Hire: tool.Capability{Expose: tool.SystemPrompt | tool.Command}},
		{Fire: tool.Capability{Expose: tool.SystemPrompt}},
	} {
		_, err := e.attach(c, nil)
		if err == nil || !strings.Contains(err.Error(), "cannot be exposed on SYSTEM_PROMPT") {
			t.Errorf("attach %+v: %v", c, err)
		}
	}
	for _, c := range []*teamtool.Card{
		{Roster: tool.Capability{Expose: 8}},
		{Roles: tool.Capability{Expose: 16}},
	} {
		if _, err := e.attach(c, nil); err == nil || !strings.Contains(err.Error(), "channel bits") {
			t.Errorf("attach %+v: %v", c, err)
		}
	}
}

// Instructions are appended to the descriptions.
func TestInstructionsAppendedToDescriptions(t *testing.T) {
	e := newEnv(t, &teamtool.Card{
		Hire:   tool.Capability{Instructions: "Only hire testers."},
		Roster: tool.Capability{Expose: tool.ToolCall | tool.Command, Instructions: "Ask before routing."},
	})
	suffix := "\n\nAdditional Instructions:\nOnly hire testers."
	if d := e.tool("hire_members").Description; !strings.HasSuffix(d, suffix) {
		t.Errorf("hire_members description %q lacks the instructions", d)
	}
	if d := e.tool("fire_members").Description; strings.Contains(d, "Additional Instructions") {
		t.Errorf("fire_members description %q has instructions", d)
	}
	if d := e.tool("team_members").Description; !strings.HasSuffix(d, "\n\nAdditional Instructions:\nAsk before routing.") {
		t.Errorf("team_members description %q lacks the instructions", d)
	}
	for _, d := range e.o.Registry.Descriptors() {
		if d.Name == "hire_member" && !strings.HasSuffix(d.Description, suffix) {
			t.Errorf("hire_member description %q lacks the instructions", d.Description)
		}
	}
}

// The card round-trips through tool.Cards JSON.
func TestJSONRoundTrip(t *testing.T) {
	in := tool.Cards{&teamtool.Card{
		Hire:   tool.Capability{Instructions: "Only testers."},
		Fire:   tool.Capability{Disabled: true},
		Roster: tool.Capability{Expose: tool.ToolCall | tool.Command},
		Rand:   fixed(1),
	}, teamtool.New()}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out tool.Cards
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("decoded %d cards", len(out))
	}
	got, ok := out[0].(*teamtool.Card)
	if !ok {
		t.Fatalf("decoded %T", out[0])
	}
	want := *in[0].(*teamtool.Card)
	want.Rand = nil // not serialized
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("round trip: %+v, want %+v", *got, want)
	}
	if !reflect.DeepEqual(out[1], teamtool.New()) {
		t.Errorf("default card decoded as %+v", out[1])
	}
	again, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Errorf("re-encoded %s, want %s", again, data)
	}
	var raw []map[string]any
	if err := json.Unmarshal(data, &raw); err != nil || raw[0]["kind"] != "TeamTool" {
		t.Errorf("wire form %s", data)
	}
}

// The card needs an owner in a team.
func TestAttachNeedsTeam(t *testing.T) {
	sys := newSystem(t)
	ctx := actortest.Context(t)
	loner, err := sys.Spawn(&worker{}, &actor.Config{Name: "@Loner"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = proxy.Ask(ctx, loner, func(c *actor.Context, _ actor.Actor) (tool.Capabilities, error) {
		return teamtool.New().Attach(ctx, &tool.Owner{Agent: c, Team: orchestrator.Of(c.Orchestrator())})
	})
	if !errors.Is(err, orchestrator.ErrNoTeam) || !strings.Contains(err.Error(), "@Loner") {
		t.Errorf("attach outside a team: %v", err)
	}
	if _, err := teamtool.New().Attach(ctx, &tool.Owner{}); err == nil {
		t.Error("attach without a context succeeded")
	}
	if _, err := teamtool.New().Attach(ctx, nil); err == nil {
		t.Error("attach to a nil owner succeeded")
	}
}

// A stopping owner hires nothing: its children are already stopped.
func TestHireWhileStopping(t *testing.T) {
	e := newEnv(t, teamtool.New())
	hire, err := command.Callable[*message.Address](e.o.Registry, "hire_member")
	if err != nil {
		t.Fatal(err)
	}
	_, err = proxy.Ask(e.ctx, e.owner, func(c *actor.Context, _ actor.Actor) (*message.Address, error) {
		c.Stop() // starts the stop: the owner's context is cancelled at once
		return hire(e.ctx, "Developer")
	})
	if !errors.Is(err, actor.ErrActorDead) || !strings.Contains(err.Error(), "is stopping") {
		t.Errorf("hire while stopping: %v", err)
	}
	e.waitStopped(e.owner)
}

// A model cannot fire the team's person, a hidden tool actor, or the
// agent that hired it.
func TestFireRefusals(t *testing.T) {
	e := newEnv(t, teamtool.New())
	human, err := e.team.Spawn(e.ctx, &orchestrator.UserProxy{}, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	// A tool actor is marked by its config (actor.Config.Tool), no longer
	// by a "#" name.
	board, err := e.team.Spawn(e.ctx, &worker{}, &actor.Config{Name: "#PlanningTool", Role: "ToolActor", Tool: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.call("fire_members", map[string]any{"names": []string{"@Human", "#PlanningTool"}})
	if err == nil || !strings.Contains(err.Error(), "person") || !strings.Contains(err.Error(), `"#PlanningTool" not found`) {
		t.Fatalf("fire_members = %q, %v; want both refused", out, err)
	}
	if !human.IsAlive() || !board.IsAlive() {
		t.Fatal("the person or the tool actor was stopped")
	}

	dev, err := e.hire("Developer", "@Dev") // @Manager hires @Dev
	if err != nil {
		t.Fatal(err)
	}
	e2 := *e
	e2.owner = dev
	if e2.caps, err = e2.attach(teamtool.New(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.call("fire_members", map[string]any{"names": []string{"@Manager"}}); err == nil || !strings.Contains(err.Error(), "hired you") {
		t.Fatalf("firing one's hirer: %v", err)
	}
	if !dev.IsAlive() {
		t.Fatal("@Dev was stopped with its hirer")
	}
}

// Two agents hiring at once get distinct names (the name is reserved in the
// team before the member exists).
func TestConcurrentHiresGetDistinctNames(t *testing.T) {
	e := newEnv(t, &teamtool.Card{Rand: fixed(0)})
	qa, err := e.team.Spawn(e.ctx, &worker{}, &actor.Config{Name: "@QA", Role: "QA"})
	if err != nil {
		t.Fatal(err)
	}
	e2 := *e
	e2.owner = qa
	if e2.caps, err = e2.attach(&teamtool.Card{Rand: fixed(0)}, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, x := range []*env{e, &e2} {
		wg.Go(func() {
			if _, err := x.call("hire_members", map[string]any{"roles": []string{"Developer"}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	members, _ := e.team.Members(e.ctx)
	for _, m := range members {
		seen[m.Name()]++
	}
	if seen["@Developer100"] != 1 || seen["@Developer101"] != 1 {
		t.Fatalf("roster names %v, want @Developer100 and @Developer101 once each", seen)
	}
}
