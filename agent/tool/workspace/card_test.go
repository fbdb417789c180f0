package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// attached is a card attached to an owner agent in a team.
type attached struct {
	caps tool.Capabilities
	reg  *command.Registry
	team uuid.UUID
}

// attach attaches cs to a fresh agent in a fresh team, on the agent's
// goroutine, as an agent does (cards.Attach also registers the commands).
func attach(t *testing.T, cs ...tool.Card) (attached, error) {
	t.Helper()
	ctx := actortest.Context(t)
	_, team, _ := actortest.NewTeam(t)
	owner, err := team.Spawn(ctx, actor.Func(func(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }),
		&actor.Config{Name: "@Owner", Role: "Tester"})
	if err != nil {
		t.Fatal(err)
	}
	reg := command.NewRegistry()
	caps, err := proxy.Ask(ctx, owner, func(c *actor.Context, _ actor.Actor) (tool.Capabilities, error) {
		o := &tool.Owner{Agent: c, Team: orchestrator.Of(c.Orchestrator()), Registry: reg}
		return cards.Attach(ctx, o, cs)
	})
	if err != nil {
		return attached{}, err
	}
	return attached{caps: caps, reg: reg, team: team.ID()}, nil
}

// ws is an attached workspace card with files to play with.
type ws struct {
	attached
	t       *testing.T
	dir     string // the workspace directory
	outside string // a directory next to the root, outside the workspace
}

// newWS attaches card (Root and WorkspaceID defaulted to a temp dir and
// "ws") and returns the workspace.
func newWS(t *testing.T, card *workspace.Card) *ws {
	t.Helper()
	base := t.TempDir()
	if card == nil {
		card = workspace.New()
	}
	if card.Root == "" {
		card.Root = filepath.Join(base, "root")
	}
	if card.WorkspaceID == "" {
		card.WorkspaceID = "ws"
	}
	a, err := attach(t, card)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(card.Root, card.WorkspaceID))
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(base, "outside")
	mustMkdir(t, outside)
	mustWrite(t, filepath.Join(outside, "TOPSECRET.txt"), "SECRET\n")
	mustWrite(t, filepath.Join(outside, "secret.png"), "SECRETPNG")
	return &ws{attached: a, t: t, dir: dir, outside: outside}
}

func mustMkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, name, content string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(name))
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t testing.TB, target, link string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(link))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// file writes a file in the workspace.
func (w *ws) file(name, content string) { mustWrite(w.t, filepath.Join(w.dir, name), content) }

// link makes a symbolic link in the workspace.
func (w *ws) link(target, name string) { mustSymlink(w.t, target, filepath.Join(w.dir, name)) }

func (w *ws) read(name string) string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, name))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

func (w *ws) tool(name string) *llm.Tool {
	w.t.Helper()
	for _, tl := range w.caps.Tools {
		if tl.Name == name {
			return tl
		}
	}
	w.t.Fatalf("no tool %s", name)
	return nil
}

// call calls a tool with raw JSON arguments.
func (w *ws) call(name, args string) (string, error) {
	w.t.Helper()
	v, err := w.tool(name).Call(actortest.Context(w.t), json.RawMessage(args))
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		w.t.Fatalf("%s returned %T, want string", name, v)
	}
	return s, nil
}

// ok calls a tool that must succeed.
func (w *ws) ok(name, args string) string {
	w.t.Helper()
	s, err := w.call(name, args)
	if err != nil {
		w.t.Fatalf("%s(%s): %v", name, args, err)
	}
	return s
}

// retry calls a tool that must fail with a retry error containing want.
func (w *ws) retry(name, args, want string) error {
	w.t.Helper()
	s, err := w.call(name, args)
	if err == nil {
		w.t.Fatalf("%s(%s) = %q, want a retry error containing %q", name, args, s, want)
	}
	var re *llm.RetryError
	if !errors.As(err, &re) {
		w.t.Fatalf("%s(%s): %v (%T) is not a retry error", name, args, err, err)
	}
	if !strings.Contains(err.Error(), want) {
		w.t.Fatalf("%s(%s): %q does not contain %q", name, args, err, want)
	}
	return err
}

func (w *ws) expand(prompt string) []llm.Part {
	w.t.Helper()
	parts, err := command.Call[[]llm.Part](actortest.Context(w.t), w.reg, workspace.MediaCommand, prompt)
	if err != nil {
		w.t.Fatal(err)
	}
	return parts
}

func jsonArgs(kv ...any) string {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestCardBasics(t *testing.T) {
	c := workspace.New()
	if c.Kind() != "WorkspaceTool" {
		t.Fatalf("Kind %q", c.Kind())
	}
	if d, ok := any(c).(interface{ DependsOn() []string }); ok {
		t.Fatalf("DependsOn %v", d.DependsOn())
	}
	c.Root, c.WorkspaceID, c.MaxFileBytes = "/data", "w1", 42
	c.Read.Instructions = "Prefer small windows."
	c.Media.Disabled = true
	raw, err := json.Marshal(tool.Cards{c})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"kind":"WorkspaceTool"`) || !strings.Contains(string(raw), `"workspace_id":"w1"`) {
		t.Fatalf("JSON %s", raw)
	}
	var back tool.Cards
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	got, ok := back[0].(*workspace.Card)
	if !ok || *got != *c {
		t.Fatalf("round trip: %#v, want %#v", back[0], c)
	}
}

func TestAttachToolsAndCommands(t *testing.T) {
	card := workspace.New()
	card.Read.Instructions = "Read the README first."
	w := newWS(t, card)
	var names []string
	for _, tl := range w.caps.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "workspace_read,workspace_write,workspace_list,workspace_glob" {
		t.Fatalf("tools %s", got)
	}
	if d := w.tool(workspace.ReadTool).Description; !strings.HasSuffix(d, "\n\nAdditional Instructions:\nRead the README first.") {
		t.Fatalf("description %q", d)
	}
	descs := w.reg.Descriptors()
	var media *command.Descriptor
	for i := range descs {
		if descs[i].Name == workspace.MediaCommand {
			media = &descs[i]
		}
		if strings.HasPrefix(descs[i].Name, "workspace_") {
			t.Fatalf("tool %s is also a command by default", descs[i].Name)
		}
	}
	if media == nil || media.ToolCard != "WorkspaceTool" {
		t.Fatalf("descriptors %+v", descs)
	}
	if len(w.caps.SystemPrompts) != 0 {
		t.Fatalf("system prompts %d", len(w.caps.SystemPrompts))
	}
}

func TestAttachChannels(t *testing.T) {
	card := workspace.New()
	card.Read.Expose = tool.ToolCall | tool.Command
	card.Write.Expose = tool.Command
	card.List.Expose = tool.Command
	card.Glob.Expose = tool.Command
	card.Media.Disabled = true
	w := newWS(t, card)
	if len(w.caps.Tools) != 1 || w.caps.Tools[0].Name != workspace.ReadTool {
		t.Fatalf("tools %v", w.caps.Tools)
	}
	if w.reg.Has(workspace.MediaCommand) {
		t.Fatal("disabled media command registered")
	}
	ctx := actortest.Context(t)
	for _, c := range []struct{ line, want string }{
		{`/workspace_write notes/a.txt "hello world"`, "Written: notes/a.txt"},
		{`/workspace_read notes/a.txt`, "1     hello world"},
		{`/workspace_read notes/a.txt offset=1 limit=1`, "1     hello world"},
		{`/workspace_list`, "notes/"},
		{`/workspace_list notes depth=0`, "notes/\n└── a.txt (11 bytes)"},
		{`/workspace_glob **/*.txt`, "notes/a.txt"},
		{`/workspace_read ../x`, "Command 'workspace_read' failed: path escapes workspace root: ../x"},
	} {
		got, err := w.reg.Dispatch(ctx, c.line)
		if err != nil || got != c.want {
			t.Errorf("%s = %q, %v; want %q", c.line, got, err, c.want)
		}
	}
}

func TestAttachUnsupportedChannel(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*workspace.Card)
		want string
	}{
		{"read as system prompt", func(c *workspace.Card) { c.Read.Expose = tool.SystemPrompt }, "read: channel SYSTEM_PROMPT is not supported"},
		{"media as tool", func(c *workspace.Card) { c.Media.Expose = tool.ToolCall | tool.Command }, "media: channel TOOL_CALL is not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			card := &workspace.Card{Root: t.TempDir(), WorkspaceID: "w"}
			c.set(card)
			if _, err := attach(t, card); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func TestWorkspaceDirectory(t *testing.T) {
	t.Run("team id", func(t *testing.T) {
		root := t.TempDir()
		a, err := attach(t, &workspace.Card{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(root, a.team.String())); err != nil || !fi.IsDir() {
			t.Fatalf("workspace of team %s: %v", a.team, err)
		}
	})
	t.Run("env root", func(t *testing.T) {
		root := t.TempDir()
		t.Setenv("AKGENTIC_WORKSPACES_ROOT", root)
		if _, err := attach(t, &workspace.Card{WorkspaceID: "shared"}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "shared")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("default root", func(t *testing.T) {
		cwd := t.TempDir()
		t.Chdir(cwd)
		t.Setenv("AKGENTIC_WORKSPACES_ROOT", "")
		if _, err := attach(t, &workspace.Card{WorkspaceID: "shared"}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(cwd, "workspaces", "shared")); err != nil {
			t.Fatal(err)
		}
		dir, err := (&workspace.Card{}).Dir(uuid.MustParse("00000000-0000-0000-0000-000000000001"))
		if err != nil || dir != filepath.Join(cwd, "workspaces", "00000000-0000-0000-0000-000000000001") {
			t.Fatalf("Dir = %q, %v", dir, err)
		}
	})
	t.Run("bad id", func(t *testing.T) {
		for _, id := range []string{"..", "a/b", "../x", `a\b`, "/abs"} {
			if _, err := attach(t, &workspace.Card{Root: t.TempDir(), WorkspaceID: id}); err == nil {
				t.Errorf("workspace id %q accepted", id)
			}
		}
	})
	t.Run("no team", func(t *testing.T) {
		_, err := workspace.New().Attach(actortest.Context(t), &tool.Owner{})
		if err == nil || !strings.Contains(err.Error(), "no workspace id") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("root is a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		mustWrite(t, f, "x")
		if _, err := attach(t, &workspace.Card{Root: f, WorkspaceID: "w"}); err == nil {
			t.Fatal("attached under a file")
		}
	})
}

// TestParallel runs the tools from many goroutines (go test -race).
func TestParallel(t *testing.T) {
	w := newWS(t, nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			name := fmt.Sprintf("d%d/f.txt", i%4)
			if _, err := w.tool(workspace.WriteTool).Call(context.Background(), json.RawMessage(jsonArgs("path", name, "content", "x\n"))); err != nil {
				t.Error(err)
			}
			for _, c := range []struct{ tool, args string }{
				{workspace.ReadTool, jsonArgs("path", name)},
				{workspace.ListTool, `{"depth":0}`},
				{workspace.GlobTool, `{"pattern":"**"}`},
			} {
				if _, err := w.tool(c.tool).Call(context.Background(), json.RawMessage(c.args)); err != nil {
					t.Error(err)
				}
			}
			w.expand("!!*.png")
		})
	}
	wg.Wait()
}

func TestAttachAllDisabled(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	off := tool.Capability{Disabled: true}
	a, err := attach(t, &workspace.Card{Root: root, WorkspaceID: "w", Read: off, Write: off, List: off, Glob: off, Media: off})
	if err != nil || len(a.caps.Tools)+len(a.caps.Commands) != 0 {
		t.Fatalf("%+v, %v", a.caps, err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("created %s: %v", root, err)
	}
}
