package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/command"
)

// kind is the card's registered kind.
const kind = "WorkspaceTool"

// envRoot names the environment variable holding the default root
// directory of workspaces; defaultRoot (relative to the working directory)
// is used when it is unset.
const (
	envRoot     = "AKGENTIC_WORKSPACES_ROOT"
	defaultRoot = "workspaces"
)

// Names of the tools and of the media command.
const (
	readTool     = "workspace_read"
	writeTool    = "workspace_write"
	listTool     = "workspace_list"
	globTool     = "workspace_glob"
	mediaCommand = "_expand_media_refs"
)

func init() { tool.Register(kind, func() tool.Card { return New() }) }

// Card is the WorkspaceTool card: files in a per-team workspace directory
// and media references (see the package documentation). The zero value
// (what [New] returns) enables every capability on its default channel.
// It is registered (tool.Register) under the kind "WorkspaceTool", which
// labels its commands, and depends on no other card.
type Card struct {
	// Root is the directory holding workspaces; "" means $AKGENTIC_WORKSPACES_ROOT,
	// else ./workspaces.
	Root string `json:"root,omitempty"`
	// WorkspaceID names the workspace, a directory under Root; "" means the
	// owner's team id.
	WorkspaceID string `json:"workspace_id,omitempty"`
	// MaxFileBytes is the largest file the tools read or write; 0 means
	// 16 MiB.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`

	// Read is workspace_read(path, offset=1, limit=2000): TOOL_CALL by
	// default, COMMAND possible.
	Read tool.Capability `json:"read"`
	// Write is workspace_write(path, content): TOOL_CALL by default,
	// COMMAND possible.
	Write tool.Capability `json:"write"`
	// List is workspace_list(path="", depth=1): TOOL_CALL by default,
	// COMMAND possible.
	List tool.Capability `json:"list"`
	// Glob is workspace_glob(pattern): TOOL_CALL by default, COMMAND
	// possible.
	Glob tool.Capability `json:"glob"`
	// Media is the command _expand_media_refs(prompt) returning []llm.Part,
	// COMMAND only; when on, the card also gives its owner the expansion,
	// typed, as tool.Capabilities.ExpandMedia (how an agent expands its
	// prompts).
	Media tool.Capability `json:"media"`
}

// New returns a card with every capability on.
func New() *Card { return &Card{} }

// Kind returns "WorkspaceTool".
func (c *Card) Kind() string { return kind }

// Dir returns the workspace directory the card uses for an agent of the
// team teamID: absolute, not necessarily existing yet.
func (c *Card) Dir(teamID uuid.UUID) (string, error) {
	id := c.WorkspaceID
	if id == "" {
		if teamID == uuid.Nil {
			return "", fmt.Errorf("workspace: no workspace id: set WorkspaceID or attach the card to an agent in a team")
		}
		id = teamID.String()
	}
	if !filepath.IsLocal(id) || strings.ContainsAny(id, `/\`) || id == "." {
		return "", fmt.Errorf("workspace: workspace id %q is not a single directory name", id)
	}
	root := c.Root
	if root == "" {
		root = os.Getenv(envRoot)
	}
	if root == "" {
		root = defaultRoot
	}
	abs, err := filepath.Abs(filepath.Join(root, id))
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return abs, nil
}

// Attach creates the workspace directory and returns the tools and
// commands of the enabled capabilities; with every capability disabled it
// does nothing. It reads the owner's team id once; the tools never touch
// the owner afterwards.
func (c *Card) Attach(ctx context.Context, o *tool.Owner) (tool.Capabilities, error) {
	// Check the channels before creating anything.
	var all tool.Channel
	for _, cp := range c.capabilities(nil) {
		ch, err := cp.channels()
		if err != nil {
			return tool.Capabilities{}, err
		}
		all |= ch
	}
	if all == 0 {
		return tool.Capabilities{}, nil
	}
	var team uuid.UUID
	if o != nil && o.Team != nil {
		team = o.Team.ID()
	}
	if team == uuid.Nil && o != nil && o.Agent != nil {
		team = o.Agent.Self().TeamID()
	}
	dir, err := c.Dir(team)
	if err != nil {
		return tool.Capabilities{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return tool.Capabilities{}, fmt.Errorf("workspace: create %s: %w", dir, err)
	}
	f, err := Open(dir)
	if err != nil {
		return tool.Capabilities{}, err
	}
	f.MaxFileBytes = c.MaxFileBytes
	var caps tool.Capabilities
	for _, cp := range c.capabilities(f) {
		if err := cp.add(&caps); err != nil {
			f.Close()
			return tool.Capabilities{}, err
		}
	}
	if c.Media.Channels(tool.Command) != 0 { // the media capability is on (COMMAND is its only channel)
		caps.ExpandMedia = func(_ context.Context, prompt string) ([]llm.Part, error) {
			return f.ExpandMediaRefs(prompt), nil
		}
	}
	caps.Close = f.Close
	return caps, nil
}

// capability is one configurable capability of the card.
type capability struct {
	field     string
	cfg       tool.Capability
	defaults  tool.Channel
	supported tool.Channel
	tool      func(description string) (*llm.Tool, error)
	command   func(description string) *command.Command
}

func (cp capability) channels() (tool.Channel, error) {
	ch := cp.cfg.Channels(cp.defaults)
	if extra := ch &^ cp.supported; extra != 0 {
		return 0, fmt.Errorf("workspace: %s: channel %s is not supported (supported: %s)", cp.field, extra, cp.supported)
	}
	return ch, nil
}

func (cp capability) add(caps *tool.Capabilities) error {
	on, err := cp.channels()
	if err != nil {
		return err
	}
	if on&tool.ToolCall != 0 {
		t, err := cp.tool(cp.cfg.Describe(description[cp.field]))
		if err != nil {
			return fmt.Errorf("workspace: %s: %w", cp.field, err)
		}
		caps.Tools = append(caps.Tools, t)
	}
	if on&tool.Command != 0 {
		caps.Commands = append(caps.Commands, cp.command(cp.cfg.Describe(description[cp.field])))
	}
	return nil
}

var description = map[string]string{
	"read": "Read a text file of the shared workspace. Lines come back numbered from 1; " +
		"use offset (first line, from 1) and limit (number of lines, default 2000) to page through long files. " +
		"Paths are relative to the workspace root.",
	"write": "Write a text file in the shared workspace, replacing it if it exists. " +
		"Parent directories are created. Paths are relative to the workspace root.",
	"list": "List a directory of the shared workspace: subdirectories (name/) then files (name (N bytes)). " +
		"path is relative to the workspace root (empty for the root); depth 1 lists one level, " +
		"a larger depth (or 0 for unlimited) shows a tree.",
	"glob": "Find files of the shared workspace by pattern, e.g. *.md, docs/*.txt or **/*.png " +
		"(** matches any number of directories). Returns matching file paths relative to the workspace root, sorted.",
	"media": "Expand the media references of a prompt (!!file.png, !!\"name with spaces.png\", !!*.png) " +
		"into image parts read from the workspace.",
}

// Arguments of the tools.
type (
	readArgs struct {
		Path   string `json:"path" description:"File path relative to the workspace root"`
		Offset int    `json:"offset,omitempty" description:"First line to return, counting from 1 (default 1)"`
		Limit  int    `json:"limit,omitempty" description:"Maximum number of lines to return (default 2000)"`
	}
	writeArgs struct {
		Path    string `json:"path" description:"File path relative to the workspace root"`
		Content string `json:"content" description:"The whole new content of the file"`
	}
	listArgs struct {
		Path  string `json:"path,omitempty" description:"Directory relative to the workspace root; empty for the root"`
		Depth *int   `json:"depth,omitempty" description:"Levels to show: 1 (default) lists the directory, 0 or more than 1 shows a tree (0: unlimited)"`
	}
	globArgs struct {
		Pattern string `json:"pattern" description:"Glob pattern relative to the workspace root, e.g. **/*.md"`
	}
)

// capabilities returns the card's capabilities, their functions working on
// f (nil when only the channels are looked at).
func (c *Card) capabilities(f *FS) []capability {
	both := tool.ToolCall | tool.Command
	return []capability{
		{
			field: "read", cfg: c.Read, defaults: tool.ToolCall, supported: both,
			tool: func(d string) (*llm.Tool, error) {
				return llm.NewTool(readTool, d, func(_ context.Context, a readArgs) (any, error) {
					return f.readText(a.Path, a.Offset, a.Limit)
				})
			},
			command: func(d string) *command.Command {
				p := command.NewParam[string]("path", "File path relative to the workspace root")
				off := command.NewParam[int]("offset", "First line, from 1").Default(1)
				lim := command.NewParam[int]("limit", "Maximum number of lines").Default(defaultReadLimit)
				return command.New(readTool, d, func(_ context.Context, in command.Args) (string, error) {
					return f.readText(p.Get(in), off.Get(in), lim.Get(in))
				}, p, off, lim)
			},
		},
		{
			field: "write", cfg: c.Write, defaults: tool.ToolCall, supported: both,
			tool: func(d string) (*llm.Tool, error) {
				return llm.NewTool(writeTool, d, func(_ context.Context, a writeArgs) (any, error) {
					return f.writeText(a.Path, a.Content)
				})
			},
			command: func(d string) *command.Command {
				p := command.NewParam[string]("path", "File path relative to the workspace root")
				content := command.NewParam[string]("content", "The whole new content of the file")
				return command.New(writeTool, d, func(_ context.Context, in command.Args) (string, error) {
					return f.writeText(p.Get(in), content.Get(in))
				}, p, content)
			},
		},
		{
			field: "list", cfg: c.List, defaults: tool.ToolCall, supported: both,
			tool: func(d string) (*llm.Tool, error) {
				return llm.NewTool(listTool, d, func(_ context.Context, a listArgs) (any, error) {
					depth := 1
					if a.Depth != nil {
						depth = *a.Depth
					}
					return f.listText(a.Path, depth)
				})
			},
			command: func(d string) *command.Command {
				p := command.NewParam[string]("path", "Directory relative to the workspace root").Default("")
				depth := command.NewParam[int]("depth", "Levels to show (0: unlimited)").Default(1)
				return command.New(listTool, d, func(_ context.Context, in command.Args) (string, error) {
					return f.listText(p.Get(in), depth.Get(in))
				}, p, depth)
			},
		},
		{
			field: "glob", cfg: c.Glob, defaults: tool.ToolCall, supported: both,
			tool: func(d string) (*llm.Tool, error) {
				return llm.NewTool(globTool, d, func(_ context.Context, a globArgs) (any, error) {
					return f.globText(a.Pattern)
				})
			},
			command: func(d string) *command.Command {
				p := command.NewParam[string]("pattern", "Glob pattern relative to the workspace root")
				return command.New(globTool, d, func(_ context.Context, in command.Args) (string, error) {
					return f.globText(p.Get(in))
				}, p)
			},
		},
		{
			field: "media", cfg: c.Media, defaults: tool.Command, supported: tool.Command,
			command: func(d string) *command.Command {
				prompt := command.NewParam[string]("prompt", "The prompt whose !!references to expand")
				return command.New(mediaCommand, d, func(_ context.Context, in command.Args) ([]llm.Part, error) {
					return f.ExpandMediaRefs(prompt.Get(in)), nil
				}, prompt)
			},
		},
	}
}

// globText is workspace_glob's answer: one path a line, at most
// maxGlobResults.
func (f *FS) globText(pattern string) (string, error) {
	paths, err := f.Glob(pattern)
	if err != nil {
		return "", err
	}
	if len(paths) == 0 {
		return "No files match " + pattern, nil
	}
	if len(paths) > maxGlobResults {
		return strings.Join(paths[:maxGlobResults], "\n") +
			fmt.Sprintf("\n[... %d more files not shown: %d files match]", len(paths)-maxGlobResults, len(paths)), nil
	}
	return strings.Join(paths, "\n"), nil
}
