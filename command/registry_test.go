package command

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func noop(context.Context, Args) (string, error) { return "ok", nil }

// The registry is keyed by canonical name; the same name twice (two
// cards, card vs extra, two extras) is a construction error naming it, and a
// failed Register adds nothing.
func TestRegisterRefusesDuplicateNames(t *testing.T) {
	tm := &team{}
	r := NewRegistry()
	if err := r.Register("TeamTool", tm.teamCommands()...); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		owner string
		cmds  []*Command
		want  string
	}{
		{"two cards", "OtherTool", []*Command{New("team_members", "", noop)}, "team_members is provided by both TeamTool and OtherTool"},
		{"card vs extra", "BaseAgent", []*Command{New("compact", "", noop), New("hire_member", "", noop)}, "hire_member is provided by both TeamTool and BaseAgent"},
		{"two extras", "BaseAgent", []*Command{New("clear", "", noop), New("clear", "", noop)}, "clear is provided twice by BaseAgent"},
		{"built-in help", "BaseAgent", []*Command{New("help", "", noop)}, "help is provided by both CommandRegistry and BaseAgent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Register(tc.owner, tc.cmds...)
			if !errors.Is(err, errDuplicate) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Register: got %v, want errDuplicate naming %q", err, tc.want)
			}
			if r.Has("compact") || r.Has("clear") {
				t.Fatal("a failed Register added commands")
			}
		})
	}
	if got := len(r.Descriptors()); got != 4 { // help + the three TeamTool commands
		t.Fatalf("descriptors after failed registrations: %d, want 4", got)
	}
}

// Declaration mistakes are reported at registration, naming the
// command and what was wrong.
func TestRegisterReportsInvalidDeclarations(t *testing.T) {
	var nilRun func(context.Context, Args) (string, error)
	tests := []struct {
		name  string
		owner string
		cmd   *Command
		want  string
	}{
		{"empty owner", "", New("x", "", noop), "empty owner label"},
		{"nil command", "T", nil, "nil command"},
		{"empty name", "T", New("", "", noop), `command name "" is not a name`},
		{"name with space", "T", New("a b", "", noop), `command name "a b" is not a name`},
		{"slash name", "T", New("/x", "", noop), `command name "/x" is not a name`},
		{"nil handler", "T", New("x", "", nilRun), "command x has no handler"},
		{"nil parameter", "T", New("x", "", noop, nil), "command x: nil parameter"},
		{"bad parameter name", "T", New("x", "", noop, NewParam[string]("a=b", "")), `command x: parameter name "a=b" is not a name`},
		{"zero Param", "T", New("x", "", noop, &Param[int]{paramInfo: paramInfo{name: "p"}}), "parameter p was not made by a constructor"},
		{"parameter twice", "T", New("x", "", noop, NewParam[string]("a", ""), NewParam[int]("a", "")), "command x: parameter a declared twice"},
		{"required after optional", "T", New("x", "", noop, NewParam[string]("a", "").Optional(), NewParam[string]("b", "")),
			"command x: required parameter b follows optional parameter a"},
		{"enum without values", "T", New("x", "", noop, Enum("mode", "")), "command x: parameter mode: Enum has no values"},
		{"enum default outside values", "T", New("x", "", noop, Enum("mode", "", "a", "b").Default("c")),
			`command x: parameter mode: default: "c" is not one of: a, b`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			err := r.Register(tc.owner, tc.cmd)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Register: got %v, want an error containing %q", err, tc.want)
			}
			if len(r.Descriptors()) != 1 {
				t.Fatal("a failed Register added a command")
			}
		})
	}
}

// Descriptors list name, description, args (name, JSON type,
// required, description) and owner, in registration order: each Register
// call's commands as given, the calls in the order made, the built-in help
// last (not sorted by name).
func TestDescriptorsInRegistrationOrder(t *testing.T) {
	r, _ := newTestRegistry(t)
	ds := r.Descriptors()
	var names []string
	for _, d := range ds {
		names = append(names, d.ToolCard+"."+d.Name)
	}
	want := "TeamTool.hire_member TeamTool.fire_member TeamTool.team_members " +
		"PlanningTool.planning_summary PlanningTool.get_planning_task PlanningTool.search_planning " +
		"BaseAgent.compact BaseAgent.clear " +
		"Kit.note Kit.typed Kit.boom Kit.fail Kit.undeclared Kit.pair Kit._expand_media_refs " +
		"CommandRegistry.help"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("descriptor order:\n got %s\nwant %s", got, want)
	}

	hire := ds[0]
	got, err := json.Marshal(hire)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"name":"hire_member","description":"Hire a new team member by role.\nReturns the new member's address.",` +
		`"args":[{"name":"role","type":"string","required":true,"description":"Role to hire, e.g. Developer"},` +
		`{"name":"name","type":"string","required":false,"description":"Name for the new member, e.g. @Ada"}],` +
		`"args_schema":{"type":"object","properties":{` +
		`"name":{"type":"string","description":"Name for the new member, e.g. @Ada"},` +
		`"role":{"type":"string","description":"Role to hire, e.g. Developer"}},` +
		`"required":["role"],"additionalProperties":false},"tool_card":"TeamTool"}`
	if string(got) != wantJSON {
		t.Fatalf("hire_member descriptor:\n got %s\nwant %s", got, wantJSON)
	}

	// JSON type names, enums and defaults for every parameter kind.
	byName := map[string]Descriptor{}
	for _, d := range ds {
		byName[d.Name] = d
	}
	var specs []string
	for _, a := range append(byName["search_planning"].Args, byName["typed"].Args...) {
		b, _ := json.Marshal(a)
		specs = append(specs, string(b))
	}
	wantSpecs := []string{
		`{"name":"query","type":"string","required":false,"description":"Text to look for"}`,
		`{"name":"mode","type":"string","required":false,"description":"Search mode","enum":["keyword","vector","hybrid"],"default":"keyword"}`,
		`{"name":"status","type":"string","required":false,"description":"Task status","enum":["pending","started","completed","abort"]}`,
		`{"name":"owner","type":"string","required":false,"description":"Owner name; empty matches unassigned"}`,
		`{"name":"creator","type":"string","required":false,"description":"Creator name"}`,
		`{"name":"top_k","type":"integer","required":false,"description":"Maximum results","default":10}`,
		`{"name":"score_threshold","type":"number","required":false,"description":"Minimum score","default":0.5}`,
		`{"name":"n","type":"integer","required":true,"description":"an int"}`,
		`{"name":"f","type":"number","required":false,"description":"a float","default":1.5}`,
		`{"name":"b","type":"boolean","required":false,"description":"a bool","default":false}`,
		`{"name":"d","type":"string","required":false,"description":"a duration","default":"30s"}`,
		`{"name":"l","type":"array","required":false,"description":"a list","default":["x"]}`,
	}
	if strings.Join(specs, "\n") != strings.Join(wantSpecs, "\n") {
		t.Fatalf("arg specs:\n got %s\nwant %s", strings.Join(specs, "\n"), strings.Join(wantSpecs, "\n"))
	}
	if items := byName["typed"].ArgsSchema.Properties["l"].Items; items == nil || items.Type != "string" {
		t.Fatalf("list schema items = %+v, want string", items)
	}
	if got := byName["compact"].ArgsSchema; len(got.Properties) != 0 || got.Required != nil {
		t.Fatalf("compact schema = %+v, want no properties", got)
	}
}

// Descriptors are the caller's copy (what the announce event
// carries), and round-trip through JSON.
func TestDescriptorsAreCopiesAndRoundTrip(t *testing.T) {
	r, _ := newTestRegistry(t)
	ds := r.Descriptors()
	for i := range ds {
		ds[i].Name = "changed"
		for j := range ds[i].Args {
			ds[i].Args[j].Enum = append(ds[i].Args[j].Enum[:0:0], "changed")
			if list, ok := ds[i].Args[j].Default.([]string); ok {
				list[0] = "changed"
			}
		}
		for _, p := range ds[i].ArgsSchema.Properties {
			p.Type = "changed"
		}
	}
	again := r.Descriptors()
	b1, _ := json.Marshal(again)
	b2, _ := json.Marshal(r.Descriptors())
	if strings.Contains(string(b1), "changed") || string(b1) != string(b2) {
		t.Fatalf("changing a returned descriptor changed the registry: %s", b1)
	}
	var back []Descriptor
	if err := json.Unmarshal(b1, &back); err != nil || len(back) != len(again) || back[5].Name != "search_planning" {
		t.Fatalf("descriptors do not round-trip: %v", err)
	}
}

// Has, and the typed callable returning the native value; unknown names
// are ErrNotRecognized.
func TestHasAndCallable(t *testing.T) {
	r, tm := newTestRegistry(t)
	ctx := t.Context()
	for _, name := range []string{"help", "hire_member", "compact", "_expand_media_refs"} {
		if !r.Has(name) {
			t.Errorf("Has(%q) = false", name)
		}
	}
	for _, name := range []string{"", "/hire_member", "deploy", "cmd_hire_member", "Hire_member"} {
		if r.Has(name) {
			t.Errorf("Has(%q) = true", name)
		}
	}

	hire, err := Callable[address](r, "hire_member")
	if err != nil {
		t.Fatal(err)
	}
	addr, err := hire(ctx, "Developer")
	if err != nil || addr.Role != "Developer" || !strings.HasPrefix(addr.Name, "@Developer") {
		t.Fatalf("hire(Developer) = %+v, %v", addr, err)
	}
	addr, err = hire(ctx, "QA", "@Ada")
	if err != nil || addr.Name != "@Ada" {
		t.Fatalf("hire(QA, @Ada) = %+v, %v", addr, err)
	}
	addr, err = hire(ctx, Named("role", "QA"), Named("name", "@Bob"))
	if err != nil || addr.Name != "@Bob" || addr.Role != "QA" {
		t.Fatalf("hire(role=QA, name=@Bob) = %+v, %v", addr, err)
	}
	addr, err = hire(ctx, "QA", nil) // nil leaves an optional parameter unbound
	if err != nil || addr.Name != "@QA103" {
		t.Fatalf("hire(QA, nil) = %+v, %v", addr, err)
	}
	if n := len(tm.hires()); n != 4 {
		t.Fatalf("hired %d, want 4", n)
	}

	// Call in one step; R may be an interface the result implements.
	s, err := Call[interface{ String() string }](ctx, r, "hire_member", "Developer", Named("name", "@Cy"))
	if err != nil || s.String() != "<ActorAddress Developer @Cy (id-4)>" {
		t.Fatalf("Call as Stringer = %v, %v", s, err)
	}
	v, err := Call[any](ctx, r, "get_planning_task", 2)
	if err != nil || v != "Task 2: fix #urgent bug [pending]" {
		t.Fatalf("Call[any] = %v, %v", v, err)
	}

	_, err = Callable[address](r, "deploy")
	if !errors.Is(err, ErrNotRecognized) || !strings.Contains(err.Error(), `"deploy"`) {
		t.Fatalf("Callable(deploy): %v", err)
	}
	_, err = Call[address](ctx, r, "deploy")
	if !errors.Is(err, ErrNotRecognized) {
		t.Fatalf("Call(deploy): %v", err)
	}
}

// Every failure on the typed surface is an *Error naming the
// command; the handler's own error stays reachable with errors.Is.
func TestCallFailuresAreErrorsNamingTheCommand(t *testing.T) {
	r, tm := newTestRegistry(t)
	ctx := t.Context()
	tests := []struct {
		name string
		cmd  string
		args []any
		want string
	}{
		{"wrong result type", "hire_member", nil, "command hire_member: returns command.address, not string"},
		{"wrong Go type", "get_planning_task", []any{"2"}, "command get_planning_task: argument task_id: want int, got string"},
		{"too many", "hire_member", []any{"QA", "@A", "x"}, "too many arguments: takes at most 2 (role, name), got extra x"},
		{"no arguments taken", "team_members", []any{1}, "takes no arguments, got 1"},
		{"missing", "hire_member", nil, "missing required argument(s): role"},
		{"nil required", "hire_member", []any{nil}, "argument role: required, got nil"},
		{"unknown keyword", "hire_member", []any{Named("rank", "x")}, "unknown argument rank (parameters: role, name)"},
		{"empty keyword", "hire_member", []any{Named("", "x")}, "unknown argument  (parameters: role, name)"},
		{"positional after keyword", "hire_member", []any{Named("name", "@A"), "QA"}, "positional argument QA follows keyword arguments"},
		{"bound twice", "hire_member", []any{"QA", Named("role", "QA")}, "argument role given more than once"},
		{"enum on typed path", "search_planning", []any{Named("mode", "fuzzy")}, `argument mode: "fuzzy" is not one of: keyword, vector, hybrid`},
		{"handler error", "hire_member", []any{"Astronaut"}, `command hire_member: retry: no role "Astronaut"`},
		{"panic", "boom", nil, "command boom: panic: kaboom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.name == "wrong result type" {
				_, err = Callable[string](r, tc.cmd)
			} else {
				_, err = Call[any](ctx, r, tc.cmd, tc.args...)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Command != tc.cmd || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want *Error for %s containing %q", err, tc.cmd, tc.want)
			}
		})
	}
	if n := len(tm.hires()); n != 0 {
		t.Fatalf("failed calls hired %d members", n)
	}

	_, err := Call[address](ctx, r, "hire_member", "Astronaut")
	if !errors.Is(err, errRetry) {
		t.Fatalf("handler error not kept for errors.Is: %v", err)
	}
	_, err = Call[string](ctx, r, "boom")
	var pe *Error
	if !errors.As(err, &pe) || pe.Panic != "kaboom" || !strings.Contains(string(pe.Stack), "command.kitCommands") {
		t.Fatalf("panic error = %#v", err)
	}
}

// When the command's result type is an interface, Callable can only
// check the dynamic value at call time.
func TestCallableInterfaceResultCheckedAtCall(t *testing.T) {
	r := NewRegistry()
	var out any = 7
	dyn := New("dyn", "Returns whatever out holds.", func(context.Context, Args) (any, error) { return out, nil })
	if err := r.Register("T", dyn); err != nil {
		t.Fatal(err)
	}
	f, err := Callable[string](r, "dyn")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f(t.Context()); err == nil || !strings.Contains(err.Error(), "command dyn: returned int, not string") {
		t.Fatalf("got %v", err)
	}
	out = "seven"
	if s, err := f(t.Context()); err != nil || s != "seven" {
		t.Fatalf("got %q, %v", s, err)
	}
	out = nil
	if s, err := f(t.Context()); err != nil || s != "" {
		t.Fatalf("nil result: got %q, %v", s, err)
	}
}

// The registry is safe for concurrent use; run with -race.
func TestConcurrentUse(t *testing.T) {
	r, tm := newTestRegistry(t)
	ctx := t.Context()
	done := make(chan struct{})
	const workers = 8
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 20 {
				if _, err := r.Dispatch(ctx, "/hire_member QA"); err != nil {
					t.Error(err)
				}
				_ = r.Descriptors()
				_ = r.Has("help")
				_ = r.Register("Extra", New(strings.Repeat("x", w+1)+string(rune('a'+i)), "", noop))
			}
		}()
	}
	for range workers {
		<-done
	}
	if n := len(tm.hires()); n != workers*20 {
		t.Fatalf("hired %d, want %d", n, workers*20)
	}
}

// A command and its parameters report the names they were declared with.
func TestNamesAsDeclared(t *testing.T) {
	role := NewParam[string]("role", "")
	c := New("hire_member", "", noop, role)
	if c.Name() != "hire_member" || role.name != "role" {
		t.Fatalf("names: %q %q", c.Name(), role.name)
	}
}

// TestMain checks every test of the package for leaked goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
