package cards_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/command"
)

// TodoCard is a tiny tool card: a to-do list that the model adds to with
// the add_todo tool, that the system prompt shows, and that a person lists
// with /todos. Its fields are configuration; the list itself is made by
// Attach, one per agent.
type TodoCard struct {
	Title string `json:"title"`
}

// Kind names the card; it labels the card's commands.
func (*TodoCard) Kind() string { return "TodoTool" }

// DependsOn returns nil: the card needs no other card.
func (*TodoCard) DependsOn() []string { return nil }

type addTodoArgs struct {
	Item string `json:"item" description:"What is to be done."`
}

// Attach gives the owner a model tool, a system-prompt section and a
// command, all working on the same list.
func (c *TodoCard) Attach(_ context.Context, _ *tool.Owner) (tool.Capabilities, error) {
	var mu sync.Mutex
	var items []string
	list := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(items) == 0 {
			return "nothing to do"
		}
		return strings.Join(items, "; ")
	}
	add, err := llm.NewTool("add_todo", "Add an item to the to-do list.",
		func(_ context.Context, a addTodoArgs) (any, error) {
			if strings.TrimSpace(a.Item) == "" {
				return nil, llm.Retry("item is empty")
			}
			mu.Lock()
			defer mu.Unlock()
			items = append(items, a.Item)
			return fmt.Sprintf("Added item %d.", len(items)), nil
		})
	if err != nil {
		return tool.Capabilities{}, err
	}
	return tool.Capabilities{
		Tools:         []*llm.Tool{add},
		SystemPrompts: []llm.SystemPrompt{func(context.Context) string { return c.Title + ": " + list() }},
		Commands: []*command.Command{command.New("todos", "List the to-do items.",
			func(context.Context, command.Args) (string, error) { return list(), nil })},
	}, nil
}

// ShoutCard depends on TodoCard: its command calls /todos through the
// owner's registry, where TodoCard's commands are by the time it runs.
type ShoutCard struct{}

func (ShoutCard) Kind() string        { return "ShoutTool" }
func (ShoutCard) DependsOn() []string { return []string{"TodoTool"} }
func (ShoutCard) Attach(_ context.Context, o *tool.Owner) (tool.Capabilities, error) {
	return tool.Capabilities{Commands: []*command.Command{command.New("shout_todos", "List the to-do items, loudly.",
		func(ctx context.Context, _ command.Args) (string, error) {
			s, err := command.Call[string](ctx, o.Registry, "todos")
			return strings.ToUpper(s) + "!", err
		})}}, nil
}

// Cards are attached in dependency order, as an agent attaches them; their
// model tools and system prompts go to the agent's model loop, their
// commands to its registry. Here the owner is only a registry.
func Example() {
	ctx := context.Background()
	all := []tool.Card{ShoutCard{}, &TodoCard{Title: "Today"}}

	ordered, err := cards.Order(all)
	if err != nil {
		panic(err)
	}
	for _, c := range ordered {
		fmt.Println("attach:", c.Kind())
	}
	_, err = cards.Order([]tool.Card{ShoutCard{}})
	fmt.Println(errors.Is(err, cards.ErrDependency), err)

	reg := command.NewRegistry()
	caps, err := cards.Attach(ctx, &tool.Owner{Registry: reg}, all)
	if err != nil {
		panic(err)
	}

	// The model calls a tool with raw JSON arguments.
	add := caps.Tools[0]
	for _, args := range []string{`{"item": "write examples"}`, `{"item": "run the tests"}`, `{"item": " "}`} {
		out, err := add.Call(ctx, json.RawMessage(args))
		fmt.Printf("%s(%s) -> %v %v\n", add.Name, args, out, err)
	}
	fmt.Println("prompt:", caps.SystemPrompts[0](ctx))

	// A person's slash commands go through the registry.
	for _, text := range []string{"/todos", "/shout_todos", "/help todos", "/deploy"} {
		reply, err := reg.Dispatch(ctx, text)
		if errors.Is(err, command.ErrNotRecognized) {
			reply = "(not a command: left for the model)"
		}
		fmt.Printf("%s -> %s\n", text, reply)
	}
	// Output:
	// attach: TodoTool
	// attach: ShoutTool
	// true tool: card dependency: ShoutTool depends on TodoTool, which is not configured
	// add_todo({"item": "write examples"}) -> Added item 1. <nil>
	// add_todo({"item": "run the tests"}) -> Added item 2. <nil>
	// add_todo({"item": " "}) -> <nil> item is empty
	// prompt: Today: write examples; run the tests
	// /todos -> write examples; run the tests
	// /shout_todos -> WRITE EXAMPLES; RUN THE TESTS!
	// /help todos -> /todos
	// List the to-do items.
	// Provided by TodoTool.
	// /deploy -> (not a command: left for the model)
}
