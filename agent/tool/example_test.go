package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

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
// owner's registry, so it declares the dependency with a DependsOn method,
// and an agent attaches it after TodoCard.
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

func init() {
	// Registered kinds decode from an agent's saved config.
	tool.Register("TodoTool", func() tool.Card { return &TodoCard{} })
	tool.Register("ShoutTool", func() tool.Card { return ShoutCard{} })
}

// A card's model tools and system prompts go to the agent's model loop,
// its commands to the agent's registry, under the card's kind: what an
// agent does with the cards of its config (agent.AgentConfig.Tools) when it
// starts, done here by hand. Here the owner is only a registry: a card that
// needs the agent (to act as it: tool.AgentContext; its team) gets them in
// tool.Owner too.
func Example() {
	ctx := context.Background()
	reg := command.NewRegistry()
	owner := &tool.Owner{Registry: reg}
	var caps tool.Capabilities
	for _, c := range []tool.Card{&TodoCard{Title: "Today"}, ShoutCard{}} {
		got, err := c.Attach(ctx, owner)
		if err != nil {
			panic(err)
		}
		if err := reg.Register(c.Kind(), got.Commands...); err != nil {
			panic(err)
		}
		caps.Tools = append(caps.Tools, got.Tools...)
		caps.SystemPrompts = append(caps.SystemPrompts, got.SystemPrompts...)
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

	// An agent's config carries its cards as JSON, by kind.
	data, _ := json.Marshal(tool.Cards{&TodoCard{Title: "Today"}, ShoutCard{}})
	fmt.Println(string(data))
	// Output:
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
	// [{"kind":"TodoTool","config":{"title":"Today"}},{"kind":"ShoutTool","config":{}}]
}
