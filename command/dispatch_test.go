package command

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// dispatch runs text and fails the test on an error.
func dispatch(t *testing.T, r *Registry, text string) string {
	t.Helper()
	got, err := r.Dispatch(t.Context(), text)
	if err != nil {
		t.Fatalf("Dispatch(%q): %v", text, err)
	}
	return got
}

// No words, an unknown first word or a path-like first word is
// not recognised and invokes nothing.
func TestDispatchNotRecognizedInvokesNothing(t *testing.T) {
	r, tm := newTestRegistry(t)
	for _, text := range []string{
		"/frobnicate", "/deploy now", "/etc/passwd is missing", "/", "/ ", "", "   ", "//help",
		"/cmd_hire_member Developer", "/Hire_member Developer", `/nonsense "x`, `/"hire_member`, "/# hire_member Developer",
	} {
		got, err := r.Dispatch(t.Context(), text)
		if !errors.Is(err, ErrNotRecognized) || got != "" {
			t.Errorf("Dispatch(%q) = %q, %v; want ErrNotRecognized", text, got, err)
		}
	}
	if len(tm.hires()) != 0 {
		t.Fatal("an unrecognised command invoked hire_member")
	}
	_, err := r.Dispatch(t.Context(), "/deploy now")
	if err.Error() != `command: not recognized: "deploy"` {
		t.Fatalf("error text = %q", err)
	}
	_, err = r.Dispatch(t.Context(), "/")
	if err.Error() != "command: not recognized: no command name" {
		t.Fatalf("error text = %q", err)
	}
}

// Identification strips one "/" (and leading blanks), keyword and quoted
// values bind, and the native value is rendered.
func TestDispatchIdentifiesAndRendersResult(t *testing.T) {
	r, tm := newTestRegistry(t)
	if got := dispatch(t, r, "/hire_member Developer name=@Ada"); got != "<ActorAddress Developer @Ada (id-0)>" {
		t.Fatalf("keyword name: got %q", got)
	}
	if got := dispatch(t, r, `/hire_member Developer "Alice Smith"`); !strings.Contains(got, "Alice Smith") {
		t.Fatalf("quoted name: got %q", got)
	}
	if got := dispatch(t, r, "  /team_members"); !strings.Contains(got, "@Ada (role: Developer)\nAlice Smith (role: Developer)") {
		t.Fatalf("leading blanks: got %q", got)
	}
	if got := dispatch(t, r, "team_members"); !strings.HasPrefix(got, "Team members:") {
		t.Fatalf("no slash: got %q", got)
	}
	if got := dispatch(t, r, "/ compact"); got != "Nothing to compact." {
		t.Fatalf("slash then blank: got %q", got)
	}
	if n := len(tm.hires()); n != 2 {
		t.Fatalf("hired %d, want 2", n)
	}
}

// Results render as text: strings as is, Stringers and errors through
// their method, anything else as JSON (HTML left unescaped), nil as "".
func TestRenderResultsAsText(t *testing.T) {
	r, _ := newTestRegistry(t)
	if got := dispatch(t, r, "/pair"); got != `{"a":"<x&y>","b":2}` {
		t.Fatalf("struct: got %q", got)
	}
	if got := dispatch(t, r, "/_expand_media_refs hello"); got != `["hello"]` {
		t.Fatalf("slice: got %q", got)
	}
	tests := []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"text", "text"},
		{address{"QA", "@Q", "1"}, "<ActorAddress QA @Q (1)>"},
		{errors.New("an error"), "an error"},
		{42, "42"},
		{map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{func() {}, "0x"}, // not JSON: falls back to fmt
	}
	for _, tc := range tests {
		if got := render(tc.in); !strings.HasPrefix(got, tc.want) {
			t.Errorf("render(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Keyword classification and binding.
func TestKeywordClassificationAndBinding(t *testing.T) {
	r, tm := newTestRegistry(t)
	tests := []struct {
		name, text, want string
	}{
		// A keyword only when the text before the first "=" names a parameter.
		{"keyword binds by name", "/hire_member Developer name=@Ada", "<ActorAddress Developer @Ada (id-0)>"},
		{"keywords in any order", "/hire_member name=@Bo role=QA", "<ActorAddress QA @Bo (id-1)>"},
		{"value keeps later =", "/note text=a=b", "note: a=b"},
		{"quoted value keeps =", `/note text="a=b c"`, "note: a=b c"},
		{"quoted keyword token", `/note "text=x"`, "note: x"},
		{"non-parameter lhs is positional", "/note x=y", "note: x=y"},
		{"empty lhs is positional", "/note =y", "note: =y"},
		{"empty keyword value", "/note text=", "note: "},
		{"non-parameter x=y is the role", "/hire_member x=y", `Command 'hire_member' failed: retry: no role "x=y"; available roles: Developer, QA`},
		{"positional after keyword", "/search_planning status=pending foo",
			`Command 'search_planning' failed: positional argument "foo" follows keyword arguments`},
		// Binding.
		{"too many positionals", "/hire_member QA @A extra",
			`Command 'hire_member' failed: too many arguments: takes at most 2 (role, name), got extra "extra"`},
		{"no parameters", "/compact now", `Command 'compact' failed: takes no arguments, got "now"`},
		{"positional then same keyword", "/hire_member QA role=Developer", "Command 'hire_member' failed: argument role given more than once"},
		{"keyword repeated", "/note text=a text=b", "Command 'note' failed: argument text given more than once"},
		{"missing required", "/hire_member", "Command 'hire_member' failed: missing required argument(s): role"},
		{"missing, listed", "/typed", "Command 'typed' failed: missing required argument(s): n"},
		{"defaults kept", "/search_planning", `Task 1: fix #urgent bug` + "\n" + `Task 2: docs`},
		{"optional by keyword", "/search_planning owner= top_k=3", "Task 1: fix #urgent bug\nTask 2: docs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := dispatch(t, r, tc.text); got != tc.want {
				t.Fatalf("Dispatch(%q)\n got %q\nwant %q", tc.text, got, tc.want)
			}
		})
	}
	want := []string{
		`search_planning query="" mode=keyword status="" owner=""/false creator="" top_k=10 score_threshold=0.5`,
		`search_planning query="" mode=keyword status="" owner=""/true creator="" top_k=3 score_threshold=0.5`,
	}
	if fmt.Sprint(tm.calls) != fmt.Sprint(want) {
		t.Fatalf("search_planning saw\n%q\nwant\n%q", tm.calls, want)
	}
}

// Coercion per declared type, on the text surface.
func TestCoercionPerDeclaredType(t *testing.T) {
	r, _ := newTestRegistry(t)
	const fail = "Command 'typed' failed: "
	tests := []struct {
		args, want string
	}{
		// integer (decimal)
		{"7", `n=7 f=1.5 b=false d=30s l=["x"]`},
		{"-12", `n=-12 f=1.5 b=false d=30s l=["x"]`},
		{"+3", `n=3 f=1.5 b=false d=30s l=["x"]`},
		{"abc", fail + `argument n: "abc" is not an integer`},
		{"1.5", fail + `argument n: "1.5" is not an integer`},
		{"0x10", fail + `argument n: "0x10" is not an integer`},
		{"99999999999999999999", fail + `argument n: "99999999999999999999" is out of range for an integer`},
		{`""`, fail + `argument n: "" is not an integer`},
		// number
		{"1 2.25", `n=1 f=2.25 b=false d=30s l=["x"]`},
		{"1 f=-1e3", `n=1 f=-1000 b=false d=30s l=["x"]`},
		{"1 f=NaN", fail + `argument f: "NaN" is not a finite number`},
		{"1 f=inf", fail + `argument f: "inf" is not a finite number`},
		{"1 f=x", fail + `argument f: "x" is not a finite number`},
		// boolean, any case
		{"1 b=true", `n=1 f=1.5 b=true d=30s l=["x"]`},
		{"1 b=YES", `n=1 f=1.5 b=true d=30s l=["x"]`},
		{"1 b=On", `n=1 f=1.5 b=true d=30s l=["x"]`},
		{"1 b=t", `n=1 f=1.5 b=true d=30s l=["x"]`},
		{"1 b=Y", `n=1 f=1.5 b=true d=30s l=["x"]`},
		{"1 b=1", `n=1 f=1.5 b=true d=30s l=["x"]`},
		{"1 b=FALSE", `n=1 f=1.5 b=false d=30s l=["x"]`},
		{"1 b=no", `n=1 f=1.5 b=false d=30s l=["x"]`},
		{"1 b=off", `n=1 f=1.5 b=false d=30s l=["x"]`},
		{"1 b=f", `n=1 f=1.5 b=false d=30s l=["x"]`},
		{"1 b=n", `n=1 f=1.5 b=false d=30s l=["x"]`},
		{"1 b=0", `n=1 f=1.5 b=false d=30s l=["x"]`},
		{"1 b=maybe", fail + `argument b: "maybe" is not a boolean (use true/false, yes/no, on/off or 1/0)`},
		// duration
		{"1 d=1m30s", `n=1 f=1.5 b=false d=1m30s l=["x"]`},
		{"1 d=45", `n=1 f=1.5 b=false d=45s l=["x"]`},
		{"1 d=0.5", `n=1 f=1.5 b=false d=500ms l=["x"]`},
		{"1 d=soon", fail + `argument d: "soon" is not a duration (e.g. 90s, 1m30s)`},
		{"1 d=1e300", fail + `argument d: "1e300" is out of range for a duration`},
		// list of strings
		{"1 l=a,b", `n=1 f=1.5 b=false d=30s l=["a" "b"]`},
		{`1 l=" a , ,b "`, `n=1 f=1.5 b=false d=30s l=["a" "b"]`},
		{`1 l=`, `n=1 f=1.5 b=false d=30s l=[]`},
		{`1 l='["a,b", "c"]'`, `n=1 f=1.5 b=false d=30s l=["a,b" "c"]`},
		{`1 l='[1]'`, fail + `argument l: "[1]" is not a JSON array of strings`},
		// the first failing argument is reported
		{"x f=y", fail + `argument n: "x" is not an integer`},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			if got := dispatch(t, r, "/typed "+tc.args); got != tc.want {
				t.Fatalf("/typed %s\n got %q\nwant %q", tc.args, got, tc.want)
			}
		})
	}
	// The default list survived handlers changing their copy.
	if got := dispatch(t, r, "/typed 1"); got != `n=1 f=1.5 b=false d=30s l=["x"]` {
		t.Fatalf("default list was changed: %q", got)
	}

	// Enum membership, and integer coercion of a task id.
	for text, want := range map[string]string{
		"/search_planning mode=vector":     "Task 1: fix #urgent bug\nTask 2: docs",
		"/search_planning mode=Vector":     `Command 'search_planning' failed: argument mode: "Vector" is not one of: keyword, vector, hybrid`,
		"/search_planning status=done":     `Command 'search_planning' failed: argument status: "done" is not one of: pending, started, completed, abort`,
		"/get_planning_task abc":           `Command 'get_planning_task' failed: argument task_id: "abc" is not an integer`,
		"/get_planning_task 2":             "Task 2: fix #urgent bug [pending]",
		"/search_planning top_k=ten":       `Command 'search_planning' failed: argument top_k: "ten" is not an integer`,
		"/search_planning score_threshold": "",
	} {
		got := dispatch(t, r, text)
		if got != want {
			t.Errorf("Dispatch(%q)\n got %q\nwant %q", text, got, want)
		}
	}
}

// Every failure after identification is a string naming the command,
// never an error and never a panic.
func TestFailuresBecomeStrings(t *testing.T) {
	r, _ := newTestRegistry(t)
	tests := []struct{ text, want string }{
		{"/hire_member", "Command 'hire_member' failed: missing required argument(s): role"},
		{"/fire_member a b", `Command 'fire_member' failed: too many arguments: takes at most 1 (name), got extra "b"`},
		{"/get_planning_task x", `Command 'get_planning_task' failed: argument task_id: "x" is not an integer`},
		{"/fail", "Command 'fail' failed: disk on fire"},
		{"/boom", "Command 'boom' failed: panic: kaboom"},
		{"/undeclared", `Command 'undeclared' failed: panic: command: parameter "stray" is not declared by this command`},
		{`/hire_member "Dev`, "Command 'hire_member' failed: cannot split the arguments: EOF found when expecting closing quote"},
		{`/note 'a`, "Command 'note' failed: cannot split the arguments: EOF found when expecting closing quote"},
		{`/note a\`, "Command 'note' failed: cannot split the arguments: EOF found after escape character"},
	}
	for _, tc := range tests {
		if got := dispatch(t, r, tc.text); got != tc.want {
			t.Errorf("Dispatch(%q)\n got %q\nwant %q", tc.text, got, tc.want)
		}
	}
}

// A handler gets the caller's context; a cancelled context is the
// handler's to honour, and its error is a failure string.
func TestDispatchPassesContext(t *testing.T) {
	type key struct{}
	r := NewRegistry()
	err := r.Register("T", New("ctx", "Reports its context.", func(ctx context.Context, _ Args) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return fmt.Sprint(ctx.Value(key{})), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(t.Context(), key{}, "value")
	if got, _ := r.Dispatch(ctx, "/ctx"); got != "value" {
		t.Fatalf("got %q", got)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if got, _ := r.Dispatch(ctx, "/ctx"); got != "Command 'ctx' failed: context canceled" {
		t.Fatalf("got %q", got)
	}
}

// A word starting with "#" survives splitting, quoted or
// not; an unbalanced quote on a known command is a failure string, on an
// unknown one falls through.
func TestHashTokensSurviveSplitting(t *testing.T) {
	r, _ := newTestRegistry(t)
	for _, text := range []string{`/search_planning #urgent`, `/search_planning "#urgent"`, `/search_planning query=#urgent`} {
		if got := dispatch(t, r, text); got != "Task 1: fix #urgent bug" {
			t.Errorf("Dispatch(%q) = %q", text, got)
		}
	}
	tests := []struct{ args, want string }{
		{"#tag", "note: #tag"},
		{"'#tag'", "note: #tag"},
		{`\#tag`, "note: #tag"},
		{"a#b", "note: a#b"},
		{"##", "note: ##"},
		{"#", "note: #"},
		{`"# not a comment"`, "note: # not a comment"},
		{"'it''s' #x", `Command 'note' failed: too many arguments: takes at most 1 (text), got extra "#x"`},
		{"text=#x", "note: #x"},
		{"\t#a\n", "note: #a"},
	}
	for _, tc := range tests {
		if got := dispatch(t, r, "/note "+tc.args); got != tc.want {
			t.Errorf("Dispatch(/note %s) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// escapeHashes escapes exactly the "#" that shlex would read as a
// comment, following shlex's quote and escape states.
func TestEscapeHashesFollowsShlexStates(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"no hash", "no hash"},
		{"#a", `\#a`},
		{"a #b #c", `a \#b \#c`},
		{"a#b", "a#b"},
		{`"#a" '#b' \#c`, `"#a" '#b' \#c`},
		{`"a\"#" #b`, `"a\"#" \#b`},
		{`'a\' #b`, `'a\' \#b`},
		{"x\n#y\t#z", "x\n\\#y\t\\#z"},
		{`\ #a`, `\ #a`},
	}
	for _, tc := range tests {
		if got := escapeHashes(tc.in); got != tc.want {
			t.Errorf("escapeHashes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Built-in help lists commands with their arguments, in the descriptors'
// order (registration order, help last), and describes one.
func TestHelpListsInRegistrationOrder(t *testing.T) {
	r, _ := newTestRegistry(t)
	list := dispatch(t, r, "/help")
	var order []string
	for _, line := range strings.Split(list, "\n")[1:] {
		if name, ok := strings.CutPrefix(line, "  /"); ok {
			order = append(order, strings.Fields(name)[0])
		}
	}
	const wantOrder = "hire_member fire_member team_members planning_summary get_planning_task search_planning " +
		"compact clear note typed boom fail undeclared pair help"
	if got := strings.Join(order, " "); got != wantOrder {
		t.Errorf("/help order:\n got %s\nwant %s", got, wantOrder)
	}
	for _, want := range []string{
		"Commands:\n  /hire_member <role> [name] - Hire a new team member by role.\n",
		"\n  /help [command] - List the commands with their arguments, or describe one command in detail.\nType /help",
		"\n  /search_planning [query] [mode] [status] [owner] [creator] [top_k] [score_threshold] - Search the shared task board.\n",
		"\n  /compact - Compact the conversation context.\n",
		"\nType /help <command> for its arguments in detail.",
	} {
		if !strings.Contains(list, want) {
			t.Errorf("/help lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, "_expand_media_refs") || strings.Contains(list, "Returns the new") {
		t.Errorf("/help shows an internal command or a description's later lines:\n%s", list)
	}

	want := "/hire_member <role> [name]\nHire a new team member by role.\nReturns the new member's address.\nProvided by TeamTool.\n" +
		"Arguments (in this order, or by name as name=value):\n" +
		"  role (string, required): Role to hire, e.g. Developer\n" +
		"  name (string, optional): Name for the new member, e.g. @Ada"
	for _, text := range []string{"/help hire_member", "/help /hire_member", "/help command=hire_member"} {
		if got := dispatch(t, r, text); got != want {
			t.Errorf("Dispatch(%q)\n got %q\nwant %q", text, got, want)
		}
	}
	got := dispatch(t, r, "/help typed")
	for _, line := range []string{
		"  n (integer, required): an int",
		"  f (number, default 1.5): a float",
		"  b (boolean, default false): a bool",
		`  d (duration, default "30s"): a duration`,
		`  l (list of strings, default ["x"]): a list`,
	} {
		if !strings.Contains(got, line) {
			t.Errorf("/help typed lacks %q:\n%s", line, got)
		}
	}
	if got := dispatch(t, r, "/help search_planning"); !strings.Contains(got, `  mode (one of keyword|vector|hybrid, default "keyword"): Search mode`) {
		t.Errorf("/help search_planning:\n%s", got)
	}
	if got := dispatch(t, r, "/help compact"); got != "/compact\nCompact the conversation context.\nProvided by BaseAgent." {
		t.Errorf("/help compact = %q", got)
	}
	if got := dispatch(t, r, "/help deploy"); got != `Command 'help' failed: no command named "deploy"; type /help for the list` {
		t.Errorf("/help deploy = %q", got)
	}
	bare := NewRegistry()
	if err := bare.Register("T", New("quiet", "", noop)); err != nil {
		t.Fatal(err)
	}
	if got := dispatch(t, bare, "/help quiet"); got != "/quiet\nProvided by T." {
		t.Errorf("/help quiet = %q", got)
	}
	if got := dispatch(t, bare, "/help"); !strings.Contains(got, "\n  /quiet\n") {
		t.Errorf("/help with a description-less command:\n%s", got)
	}
}
