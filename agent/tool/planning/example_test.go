package planning_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// A manager agent with PlanningTool: the model updates the team's board
// through the update_planning tool, and a person reads it with
// /planning_summary and /search_planning. The board is one actor per team,
// "#PlanningTool", shared by every agent that attaches the card.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
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
	manager, err := team.Spawn(ctx, actor.Func(func(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }),
		&actor.Config{Name: "@Manager", Role: "Manager"})
	if err != nil {
		panic(err)
	}

	// Attach on the owner's goroutine and register the commands under the
	// card's kind, as an agent does when it starts.
	reg := command.NewRegistry()
	caps, err := proxy.Ask(ctx, manager, func(c *actor.Context, _ actor.Actor) (tool.Capabilities, error) {
		o := &tool.Owner{Agent: c, Team: orchestrator.Of(c.Orchestrator()), Registry: reg}
		card := planning.New()
		caps, err := card.Attach(ctx, o)
		if err != nil {
			return caps, err
		}
		return caps, reg.Register(card.Kind(), caps.Commands...)
	})
	if err != nil {
		panic(err)
	}
	var update *llm.Tool
	for _, t := range caps.Tools {
		if t.Name == "update_planning" {
			update = t
		}
	}

	// The model's call, with its raw JSON arguments. The tool talks to the
	// board, not to the agent, so it may run on any goroutine.
	out, err := update.Call(ctx, json.RawMessage(`{"update": {"create_tasks": [
		{"id": 1, "description": "Write the API", "owner": "@Ada"},
		{"id": 2, "description": "Test the API", "dependencies": [1]}]}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// A mistake the model can fix is an *llm.RetryError; the valid part of
	// the update (task 1 started) is applied anyway.
	_, err = update.Call(ctx, json.RawMessage(`{"update": {"update_tasks": [
		{"id": 1, "status": "started"}, {"id": 9, "status": "started"}]}}`))
	fmt.Println("retry:", err)

	// Commands run on the owner's goroutine, as the agent runs them.
	for _, text := range []string{"/planning_summary", "/search_planning api status=pending"} {
		reply, err := proxy.Ask(ctx, manager, func(*actor.Context, actor.Actor) (string, error) {
			return reg.Dispatch(ctx, text)
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s\n%s\n", text, reply)
	}
	// Output:
	// Done
	// retry: Update errors: update_tasks: no task with id 9
	// /planning_summary
	// Team planning: 2 tasks.
	// Tasks per owner:
	// - @Ada: 1
	// - unassigned: 1
	// Your tasks (owned by you, or created by you and assigned):
	// - Task 1: Write the API [started] (Owner: @Ada, Creator: @Manager)
	// Use get_planning_task(task_id) for the details of a task and search_planning(query, status, owner, creator, top_k) to find tasks.
	// /search_planning api status=pending
	// Task 2: Test the API [pending] (Owner: unassigned, Creator: @Manager) (keyword match)
}
