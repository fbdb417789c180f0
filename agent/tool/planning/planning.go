// Package planning is the PlanningTool card: a task board shared by
// every agent of a team.
//
// The card is registered (tool.Register) under the kind "PlanningTool", which
// labels its commands; it depends on no other card.
//
// The board is held by one actor per team, named "#PlanningTool" (role
// "ToolActor", registered kind "PlanningBoard", which a restore recreates it
// from), a child of the orchestrator that the first agent to attach the card
// creates and every later one finds (orchestrator.Team.ChildOrCreate). Its
// config marks it as a tool (actor.Config.Tool; the "#" is only its display
// name): it is hidden from the roster prompt, stops after the other members
// and is restored before them. The board is the actor's observed state (a
// *Board), so every change is published to the orchestrator and a restored
// team gets its plan back; code reads the tasks from the team's states
// (orchestrator.Team.States).
//
// The card's capabilities, with their default channels:
//
//	update   update_planning(update)           TOOL_CALL
//	summary  planning_summary(filter_by_agent) SYSTEM_PROMPT|COMMAND
//	get      get_planning_task(task_id)        TOOL_CALL|COMMAND
//	search   search_planning(query, status, owner, creator, top_k)
//	                                           TOOL_CALL|COMMAND
//
// Summary may also be exposed as a TOOL_CALL; any other channel is refused at
// attach. Search is keyword-only: there is no vector store.
//
// Every capability reaches the board through proxy calls to the address
// captured at attach, never through the owning agent's context, so the
// update_planning tool may run concurrently with the agent's other tools.
// The board actor never calls an agent back, so there is no deadlock.
package planning

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning/internal/args"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
)

// Names of the card and of its board actor.
const (
	// kind is the card's registered kind (tool.Register).
	kind = "PlanningTool"
	// boardName is the name of the team's board actor (a display name:
	// what makes it a tool is its actor.Config.Tool).
	boardName = "#PlanningTool"
	// boardRole is the board actor's role (a tool actor).
	boardRole = "ToolActor"
	// boardKind is the board actor's registered kind (actor.RegisterKind),
	// which a restore recreates it from.
	boardKind = "PlanningBoard"
)

// The names of the tools and commands.
const (
	updateName  = "update_planning"
	summaryName = "planning_summary"
	getName     = "get_planning_task"
	searchName  = "search_planning"
)

func init() {
	tool.Register(kind, func() tool.Card { return New() })
	actor.RegisterKind(boardKind, func() actor.Actor { return &boardActor{} })
}

// Card is the PlanningTool card. The zero value has every capability on, on
// its default channels.
type Card struct {
	// Update is update_planning: create, update and delete tasks.
	// Default channel: TOOL_CALL (the only one allowed).
	Update tool.Capability `json:"update"`
	// Summary is planning_summary. Default channels:
	// SYSTEM_PROMPT|COMMAND; TOOL_CALL is allowed too.
	Summary tool.Capability `json:"summary"`
	// Get is get_planning_task. Default channels: TOOL_CALL|COMMAND.
	Get tool.Capability `json:"get"`
	// Search is search_planning, keyword mode. Default channels:
	// TOOL_CALL|COMMAND.
	Search tool.Capability `json:"search"`
}

var _ tool.Card = Card{}

// New returns a card with every capability on, on its default channels.
func New() *Card { return &Card{} }

// Kind returns "PlanningTool".
func (Card) Kind() string { return kind }

// capability is one capability's configuration resolved for attach.
type capability struct {
	field    string
	cfg      tool.Capability
	defaults tool.Channel
	allowed  tool.Channel
}

func (c capability) channels() (tool.Channel, error) {
	ch := c.cfg.Channels(c.defaults)
	if extra := ch &^ c.allowed; extra != 0 {
		return 0, fmt.Errorf("planning: %s cannot be exposed as %s (allowed: %s)", c.field, extra, c.allowed)
	}
	return ch, nil
}

// Attach gets or creates the team's board and returns the enabled
// capabilities. It needs a team; with every capability disabled it does
// nothing.
func (c Card) Attach(ctx context.Context, o *tool.Owner) (tool.Capabilities, error) {
	specs := []capability{
		{"update", c.Update, tool.ToolCall, tool.ToolCall},
		{"summary", c.Summary, tool.SystemPrompt | tool.Command, tool.SystemPrompt | tool.Command | tool.ToolCall},
		{"get", c.Get, tool.ToolCall | tool.Command, tool.ToolCall | tool.Command},
		{"search", c.Search, tool.ToolCall | tool.Command, tool.ToolCall | tool.Command},
	}
	var ch [4]tool.Channel
	var all tool.Channel
	for i, s := range specs {
		var err error
		if ch[i], err = s.channels(); err != nil {
			return tool.Capabilities{}, err
		}
		all |= ch[i]
	}
	if all == 0 {
		return tool.Capabilities{}, nil
	}
	if o == nil || o.Agent == nil {
		return tool.Capabilities{}, errors.New("planning: attach needs an owner with an agent context")
	}
	addr, err := o.Team.ChildOrCreate(ctx, &boardActor{}, &actor.Config{Name: boardName, Role: boardRole, Tool: true})
	if err != nil {
		return tool.Capabilities{}, fmt.Errorf("planning: get the team's board: %w", err)
	}
	p := &plan{board: addr, agent: o.Agent.Self().Name(), hint: hint(ch[2] != 0, ch[3] != 0)}
	var caps tool.Capabilities
	add := func(t *llm.Tool, err error) error {
		if err == nil {
			caps.Tools = append(caps.Tools, t)
		}
		return err
	}
	update, summary, get, search := ch[0], ch[1], ch[2], ch[3]
	if update&tool.ToolCall != 0 {
		err = errors.Join(err, add(llm.NewTool(updateName, c.Update.Describe(updateDoc), p.updateTool)))
	}
	if summary&tool.SystemPrompt != 0 {
		caps.SystemPrompts = append(caps.SystemPrompts, p.summaryPrompt)
	}
	if summary&tool.Command != 0 {
		caps.Commands = append(caps.Commands, p.summaryCommand(c.Summary.Describe(summaryDoc)))
	}
	if summary&tool.ToolCall != 0 {
		err = errors.Join(err, add(llm.NewTool(summaryName, c.Summary.Describe(summaryDoc), p.summaryTool)))
	}
	if get&tool.ToolCall != 0 {
		err = errors.Join(err, add(llm.NewTool(getName, c.Get.Describe(getDoc), p.getTool)))
	}
	if get&tool.Command != 0 {
		caps.Commands = append(caps.Commands, p.getCommand(c.Get.Describe(getDoc)))
	}
	if search&tool.ToolCall != 0 {
		err = errors.Join(err, add(llm.NewTool(searchName, c.Search.Describe(searchDoc), p.searchTool)))
	}
	if search&tool.Command != 0 {
		caps.Commands = append(caps.Commands, p.searchCommand(c.Search.Describe(searchDoc)))
	}
	if err != nil { // a schema this package declares: a programming error
		return tool.Capabilities{}, fmt.Errorf("planning: %w", err)
	}
	return caps, nil
}

// Descriptions of the tools and commands.
const (
	updateDoc = "Update the team planning, the task board the whole team shares. One call can create tasks " +
		"(create_tasks; each id must be new, and you are recorded as their creator), change existing tasks by " +
		"id (update_tasks: only the fields given change) and delete tasks by id (delete_tasks), applied in that " +
		"order. Statuses: pending, started, completed, abort. Returns Done, or the errors to fix; the valid " +
		"parts of the update are applied either way."
	summaryDoc = "Summarize the team planning: the number of tasks, the tasks per owner, and your tasks (owned " +
		"by you, or created by you and assigned), or every task with filter_by_agent=false."
	getDoc    = "Get one task of the team planning by its id."
	searchDoc = "Search the team planning: the tasks whose description contains the query (case-insensitive), " +
		"filtered by status, owner (empty for unassigned tasks) and creator, best matches first, at most " +
		"top_k of them. With no arguments, every task."
)

// hint is the closing line of the summary, naming what the agent can
// use to read more.
func hint(get, search bool) string {
	const (
		g = "get_planning_task(task_id) for the details of a task"
		s = "search_planning(query, status, owner, creator, top_k) to find tasks"
	)
	switch {
	case get && search:
		return "Use " + g + " and " + s + "."
	case get:
		return "Use " + g + "."
	case search:
		return "Use " + s + "."
	}
	return ""
}

// plan is one agent's attachment to the team's board: everything it needs
// is captured at attach, so its functions may run on any goroutine.
type plan struct {
	board *message.Address
	agent string
	hint  string
}

type updateArgs struct {
	Update args.Update `json:"update" description:"The changes: create_tasks, update_tasks and delete_tasks, all optional."`
}

// updateTool is update_planning.
func (p *plan) updateTool(ctx context.Context, in updateArgs) (any, error) {
	errs, err := onBoard(ctx, p.board, func(a *boardActor, b *Board) ([]string, error) {
		changed, errs := b.apply(in.Update, p.agent, now())
		if changed { // a proxy call is not a turn: publish now
			return errs, a.NotifyStateChange()
		}
		return errs, nil
	})
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, llm.Retry("Update errors: %s", strings.Join(errs, "; "))
	}
	return "Done", nil
}

func (p *plan) summary(ctx context.Context, filterByAgent bool) (string, error) {
	return onBoard(ctx, p.board, func(_ *boardActor, b *Board) (string, error) {
		return b.summary(p.agent, filterByAgent, p.hint), nil
	})
}

// summaryUnavailable is the system-prompt section when the board cannot be
// reached.
const summaryUnavailable = "Cannot get the team planning."

func (p *plan) summaryPrompt(ctx context.Context) string {
	s, err := p.summary(ctx, true)
	if err != nil {
		return summaryUnavailable
	}
	return s
}

func (p *plan) summaryCommand(doc string) *command.Command {
	filter := command.NewParam[bool]("filter_by_agent", "Only your tasks (owned, or created and assigned); false for all.").Default(true)
	return command.New(summaryName, doc, func(ctx context.Context, in command.Args) (string, error) {
		return p.summary(ctx, filter.Get(in))
	}, filter)
}

type summaryArgs struct {
	FilterByAgent *bool `json:"filter_by_agent,omitempty" nullable:"true" description:"Only your tasks (owned, or created and assigned); false for all. Default true."`
}

func (p *plan) summaryTool(ctx context.Context, a summaryArgs) (any, error) {
	filter := a.FilterByAgent == nil || *a.FilterByAgent
	return p.summary(ctx, filter)
}

// get returns the task, or the not-found text.
func (p *plan) get(ctx context.Context, id int) (any, error) {
	type found struct {
		t  Task
		ok bool
	}
	f, err := onBoard(ctx, p.board, func(_ *boardActor, b *Board) (found, error) {
		t, ok := b.task(id)
		return found{t, ok}, nil
	})
	switch {
	case err != nil:
		return nil, err
	case !f.ok:
		return noTask, nil
	}
	return f.t, nil
}

type getArgs struct {
	TaskID int `json:"task_id" description:"Id of the task."`
}

func (p *plan) getTool(ctx context.Context, a getArgs) (any, error) {
	return p.get(ctx, a.TaskID)
}

// getCommand returns the Task, or the string "No task with that ID.": its
// native result type is any.
func (p *plan) getCommand(doc string) *command.Command {
	id := command.NewParam[int]("task_id", "Id of the task.")
	return command.New(getName, doc, func(ctx context.Context, in command.Args) (any, error) {
		return p.get(ctx, id.Get(in))
	}, id)
}

// search runs a keyword search and renders its lines.
func (p *plan) search(ctx context.Context, q query, topKGiven bool) (string, error) {
	if q.status != "" && !q.status.valid() {
		return "", llm.Retry("search_planning: %s", checkStatus(q.status))
	}
	if topKGiven && q.topK < 1 {
		return "", llm.Retry("search_planning: top_k must be at least 1, got %d", q.topK)
	}
	q.text = strings.TrimSpace(q.text)
	hits, err := onBoard(ctx, p.board, func(_ *boardActor, b *Board) ([]hit, error) { return b.search(q), nil })
	if err != nil {
		return "", err
	}
	return renderHits(hits, q.text != ""), nil
}

type searchArgs struct {
	Query   string  `json:"query,omitempty" nullable:"true" description:"Text to find in the task descriptions (case-insensitive)."`
	Status  Status  `json:"status,omitempty" nullable:"true" enum:"pending,started,completed,abort" description:"Only tasks with this status."`
	Owner   *string `json:"owner,omitempty" nullable:"true" description:"Only tasks of this owner; an empty string selects unassigned tasks."`
	Creator string  `json:"creator,omitempty" nullable:"true" description:"Only tasks created by this agent."`
	TopK    *int    `json:"top_k,omitempty" nullable:"true" description:"At most this many results (at least 1)."`
}

func (p *plan) searchTool(ctx context.Context, a searchArgs) (any, error) {
	q := query{text: a.Query, status: a.Status, creator: a.Creator}
	if a.Owner != nil {
		q.owner, q.hasOwner = strings.TrimSpace(*a.Owner), true
	}
	if a.TopK != nil {
		q.topK = *a.TopK
	}
	return p.search(ctx, q, a.TopK != nil)
}

func (p *plan) searchCommand(doc string) *command.Command {
	text := command.NewParam[string]("query", "Text to find in the task descriptions (case-insensitive).").Optional()
	status := command.Enum("status", "Only tasks with this status.", string(Pending), string(Started), string(Completed), string(Abort)).Optional()
	owner := command.NewParam[string]("owner", "Only tasks of this owner; empty (owner=) for unassigned tasks.").Optional()
	creator := command.NewParam[string]("creator", "Only tasks created by this agent.").Optional()
	topK := command.NewParam[int]("top_k", "At most this many results.").Optional()
	return command.New(searchName, doc, func(ctx context.Context, in command.Args) (string, error) {
		q := query{text: text.Get(in), status: Status(status.Get(in)), creator: creator.Get(in)}
		q.owner, q.hasOwner = owner.Lookup(in)
		q.owner = strings.TrimSpace(q.owner)
		k, given := topK.Lookup(in)
		q.topK = k
		return p.search(ctx, q, given)
	}, text, status, owner, creator, topK)
}
