package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// An agent with WorkspaceTool writes and reads files of its team's
// workspace through the model tools, and expands the media references of a
// prompt ("!!shot.png") into image parts with the _expand_media_refs
// command before it calls its model.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	root, err := os.MkdirTemp("", "workspaces")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	defer func() {
		if err := sys.Shutdown(ctx); err != nil {
			fmt.Println("shutdown:", err)
		}
	}()
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	owner, err := team.Spawn(ctx, actor.Func(func(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }),
		&actor.Config{Name: "@Developer", Role: "Developer"})
	if err != nil {
		panic(err)
	}

	// The workspace is <Root>/<WorkspaceID>; without a WorkspaceID it is
	// named after the team, so that every agent of the team shares it.
	card := &workspace.Card{Root: root, WorkspaceID: "demo"}
	reg := command.NewRegistry()
	caps, err := proxy.Ask(ctx, owner, func(c *actor.Context, _ actor.Actor) (tool.Capabilities, error) {
		// Attach and register the commands, as an agent does when it starts.
		o := &tool.Owner{Agent: c, Team: orchestrator.Of(c.Orchestrator()), Registry: reg}
		caps, err := card.Attach(ctx, o)
		if err != nil {
			return caps, err
		}
		return caps, reg.Register(card.Kind(), caps.Commands...)
	})
	if err != nil {
		panic(err)
	}
	defer caps.Close() // the card holds the workspace directory open
	tools := map[string]*llm.Tool{}
	for _, t := range caps.Tools {
		tools[t.Name] = t
	}

	// The model's calls, with raw JSON arguments. The tools never touch
	// the agent, so they may run on any goroutine.
	for _, call := range []struct{ tool, args string }{
		{"workspace_write", `{"path": "notes/plan.md", "content": "# Plan\nwrite the API\ntest it\n"}`},
		{"workspace_read", `{"path": "notes/plan.md"}`},
		{"workspace_read", `{"path": "../secret.txt"}`},
	} {
		out, err := tools[call.tool].Call(ctx, json.RawMessage(call.args))
		if err != nil {
			fmt.Printf("%s: error: %v\n", call.tool, err)
			continue
		}
		fmt.Printf("%s:\n%s\n", call.tool, out)
	}

	// Code reads the agents' files with the same containment.
	dir, err := card.Dir(team.ID())
	if err != nil {
		panic(err)
	}
	files, err := workspace.Open(dir)
	if err != nil {
		panic(err)
	}
	defer files.Close()
	data, err := files.ReadFile("notes/plan.md")
	fmt.Printf("ReadFile: %q %v\n", data, err)
	_, err = files.ReadFile("../secret.txt")
	fmt.Println("ReadFile:", errors.Is(err, workspace.ErrEscape), err)

	// An image put in the workspace (the PNG signature is enough). The
	// media command is internal ("_..."): code calls it, it is not in
	// /help.
	if err := files.WriteFile("shot.png", []byte("\x89PNG\r\n\x1a\n")); err != nil {
		panic(err)
	}
	parts, err := command.Call[[]llm.Part](ctx, reg, "_expand_media_refs", "Compare !!shot.png with !!notes/plan.md and !!missing.png")
	if err != nil {
		panic(err)
	}
	for _, p := range parts {
		fmt.Printf("%s: %q\n", p.Type, p.Text+p.ImageURL)
	}
	// Output:
	// workspace_write:
	// Written: notes/plan.md
	// workspace_read:
	// 1     # Plan
	// 2     write the API
	// 3     test it
	// workspace_read: error: path escapes workspace root: ../secret.txt
	// ReadFile: "# Plan\nwrite the API\ntest it\n" <nil>
	// ReadFile: true path escapes workspace root: ../secret.txt
	// text: "Compare "
	// image_url: "data:image/png;base64,iVBORw0KGgo="
	// text: " with "
	// text: "!!notes/plan.md[Error: no image found in the workspace]"
	// text: " and "
	// text: "!!missing.png[Error: no image found in the workspace]"
}
