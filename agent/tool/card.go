// Package tool holds what a tool card of an LLM agent is made of: a card
// is a configured capability that gives an agent model tools (the
// TOOL_CALL channel), system-prompt sections (SYSTEM_PROMPT) and
// commands (COMMAND: slash commands and typed in-agent calls). An agent
// attaches the cards of its config (agent.AgentConfig.Tools) when it
// starts: each after the cards it depends on, its commands registered in
// the agent's registry under the card's kind; a missing dependency, a
// cycle, or a tool or command name that two cards provide is a start error.
// TeamTool (hire, fire, roster, roles), PlanningTool (a shared task board),
// WorkspaceTool (files under a per-team root, media references) and
// SearchTool (web_search through Tavily, Brave, SearXNG or fixed results;
// web_fetch with SSRF checks) and MCPTool (the tools of MCP servers) are
// the cards of the subpackages teamtool, planning, workspace, search and
// mcp.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Channel is a set of the three channels a capability can be exposed on;
// test one with ch&ToolCall != 0.
type Channel uint8

// The channels.
const (
	// ToolCall exposes a capability as a model tool.
	ToolCall Channel = 1 << iota
	// SystemPrompt exposes it as a system-prompt section, evaluated at the
	// start of every run.
	SystemPrompt
	// Command exposes it in the agent's command registry: a slash command
	// for a person and a typed call for code.
	Command
)

// String lists the channels, e.g. "TOOL_CALL|COMMAND".
func (c Channel) String() string {
	var parts []string
	for _, p := range []struct {
		ch   Channel
		name string
	}{{ToolCall, "TOOL_CALL"}, {SystemPrompt, "SYSTEM_PROMPT"}, {Command, "COMMAND"}} {
		if c&p.ch != 0 {
			parts = append(parts, p.name)
		}
	}
	if len(parts) == 0 {
		return "NONE"
	}
	return strings.Join(parts, "|")
}

// MarshalJSON writes the channel names, e.g. "TOOL_CALL|COMMAND".
func (c Channel) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }

// UnmarshalJSON reads channel names joined by "|" (or a list of names, or
// the numeric set).
func (c *Channel) UnmarshalJSON(data []byte) error {
	var n uint8
	if json.Unmarshal(data, &n) == nil {
		*c = Channel(n)
		return nil
	}
	var names []string
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		names = strings.Split(one, "|")
	} else if err := json.Unmarshal(data, &names); err != nil {
		return fmt.Errorf("tool: channel: want names like \"TOOL_CALL|COMMAND\": %w", err)
	}
	var out Channel
	for _, name := range names {
		switch strings.ToUpper(strings.TrimSpace(name)) {
		case "TOOL_CALL":
			out |= ToolCall
		case "SYSTEM_PROMPT":
			out |= SystemPrompt
		case "COMMAND":
			out |= Command
		case "NONE", "":
		default:
			return fmt.Errorf("tool: unknown channel %q (want TOOL_CALL, SYSTEM_PROMPT or COMMAND)", name)
		}
	}
	*c = out
	return nil
}

// Capability configures one capability of a card. The zero value
// means "on, on its default channels, no extra instructions".
type Capability struct {
	// Disabled turns the capability off.
	Disabled bool `json:"disabled,omitempty"`
	// Expose replaces the default channels when non-zero.
	Expose Channel `json:"expose,omitempty"`
	// Instructions are appended to the tool's description after a blank
	// line and an "Additional Instructions:" header.
	Instructions string `json:"instructions,omitempty"`
}

// UnmarshalJSON accepts the three forms of a capability: true (defaults),
// false (off) or the object form.
func (c *Capability) UnmarshalJSON(data []byte) error {
	var on bool
	if json.Unmarshal(data, &on) == nil {
		*c = Capability{Disabled: !on}
		return nil
	}
	type plain Capability
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("tool: capability: want true, false or an object: %w", err)
	}
	*c = Capability(p)
	return nil
}

// Channels returns the channels the capability is exposed on, given its
// defaults: none when disabled.
func (c Capability) Channels(defaults Channel) Channel {
	switch {
	case c.Disabled:
		return 0
	case c.Expose != 0:
		return c.Expose
	}
	return defaults
}

// Describe returns description with the capability's instructions
// appended.
func (c Capability) Describe(description string) string {
	if c.Instructions == "" {
		return description
	}
	return description + "\n\nAdditional Instructions:\n" + c.Instructions
}

// AgentContext is what a card may do as the agent it is attached to: the
// part of the agent's *actor.Context that cards use, and nothing more (an
// *actor.Context implements it). Use it only on the agent's goroutine: in
// Attach, in commands, in system-prompt sections and in tools marked
// Serial (the agent runs those itself); tools that may run in parallel must
// not touch it, except Report.
type AgentContext interface {
	// Self is the agent's address (its name, agent id, team id).
	Self() *message.Address
	// Parent is the agent's parent: the member that hired it, or the
	// orchestrator.
	Parent() *message.Address
	// Context is cancelled as soon as the agent's stop is requested, and,
	// during one of the agent's turns, as soon as that turn is cancelled
	// (a CancelMessage: actor.Context.Context): work on its behalf (a
	// hire) ends early.
	Context() context.Context
	// Spawn creates an actor as the agent's child, in its team (a hired
	// member); the agent passes on what a kind's factory cannot know (its
	// model environment).
	Spawn(a actor.Actor, cfg any, opts ...actor.SpawnOption) (*message.Address, error)
	// Send tells msg to the actor at to, as the agent (the agent is its
	// sender).
	Send(to *message.Address, msg any) error
	// Report records err on the team's ledger as the runtime records a
	// failed handler, naming the message the agent is handling: a
	// WarningMessage for an *actor.WarningError, an ErrorMessage otherwise;
	// the agent goes on. Unlike the other methods, a tool may call it while
	// it runs in parallel during the agent's turn (an MCP server that
	// died): the message does not change during the turn, and records are
	// appended under the ledger's lock.
	Report(err error)
}

var _ AgentContext = (*actor.Context)(nil)

// Owner is the agent a card is attached to.
type Owner struct {
	// Agent is the agent itself, as far as a card may act as it.
	Agent AgentContext
	// Team is the agent's team (orchestrator.Of(c.Orchestrator())).
	Team *orchestrator.Team
	// Registry is the agent's command registry, where the agent registers
	// the cards' commands (each card's under its kind) as it attaches them:
	// a card's commands can call those of the cards it depends on.
	Registry *command.Registry
	// Rand, when set, returns a number in [0, n) for cards that pick one
	// (TeamTool's generated member names); nil means math/rand.
	Rand func(n int) int
	// MaxHiresPerTurn and MaxMembers bound the agent's hires: how many
	// members it may hire in one turn, and how many members the team may
	// have for a hire to go through (0: no limit). The agent sets them
	// from its team's guard rails.
	MaxHiresPerTurn, MaxMembers int
}

// Capabilities are what an attached card contributes.
type Capabilities struct {
	Tools         []*llm.Tool
	SystemPrompts []llm.SystemPrompt
	Commands      []*command.Command
	// Close, when set, releases what the card holds (an open directory);
	// the owner calls it once when it stops.
	Close func() error

	// The typed capabilities the agent itself calls: at most one card
	// provides each (a second is a start error).

	// Hire, when set, hires a member of role as the owner's child and
	// returns its address: how the agent routes a message to a bare role.
	// TeamTool sets it when its hire capability is exposed on COMMAND (the
	// channel of typed calls for code). Call it on the owner's goroutine.
	Hire func(ctx context.Context, role string) (*message.Address, error)
	// ExpandMedia, when set, expands the media references of a prompt into
	// ordered parts; a prompt without one comes back as exactly one text
	// part equal to it. WorkspaceTool sets it when its media capability is
	// on. It may be called from any goroutine.
	ExpandMedia func(ctx context.Context, prompt string) ([]llm.Part, error)
}

// Card is a tool card: serializable configuration that, attached to
// an agent, yields its capabilities. Cards are values in an agent's config
// and must round-trip through JSON (see Register).
//
// A card that must be attached after other cards (it calls their commands
// through Owner.Registry) also has the method
//
//	DependsOn() []string
//
// listing their kinds: the agent attaches it after every card of those
// kinds, and refuses to start when one is missing or the dependencies form
// a cycle.
type Card interface {
	// Kind is the card's registered type name, e.g. "TeamTool"; it labels
	// the card's commands and is what a DependsOn method names.
	Kind() string
	// Attach binds the card to its owner (on the owner's goroutine, during
	// its start) and returns its capabilities. ctx bounds the work.
	Attach(ctx context.Context, o *Owner) (Capabilities, error)
}

var kinds = struct {
	sync.RWMutex
	m map[string]func() Card
}{m: map[string]func() Card{}}

// Register makes a card kind decodable from JSON (a restored agent's
// config carries its cards). It panics on a duplicate kind for another
// type: a programming error caught at init.
func Register(kind string, factory func() Card) {
	kinds.Lock()
	defer kinds.Unlock()
	if _, dup := kinds.m[kind]; dup {
		panic(fmt.Sprintf("tool: card kind %q registered twice", kind))
	}
	kinds.m[kind] = factory
}

// Cards is an agent's list of tool cards; it encodes each as
// {"kind": ..., "config": {...}}.
type Cards []Card

type cardJSON struct {
	Kind   string          `json:"kind"`
	Config json.RawMessage `json:"config"`
}

// MarshalJSON encodes the cards with their kinds.
func (cs Cards) MarshalJSON() ([]byte, error) {
	out := make([]cardJSON, 0, len(cs))
	for i, c := range cs {
		if c == nil {
			return nil, fmt.Errorf("tool: card %d is nil", i)
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("tool: encode card %d (%s): %w", i, c.Kind(), err)
		}
		out = append(out, cardJSON{Kind: c.Kind(), Config: raw})
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes cards of registered kinds.
func (cs *Cards) UnmarshalJSON(data []byte) error {
	var in []cardJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("tool: decode cards: %w", err)
	}
	out := make(Cards, 0, len(in))
	for i, j := range in {
		kinds.RLock()
		f, ok := kinds.m[j.Kind]
		kinds.RUnlock()
		if !ok {
			return fmt.Errorf("tool: card %d: kind %q is not registered (tool.Register)", i, j.Kind)
		}
		c := f()
		if len(j.Config) > 0 && string(j.Config) != "null" {
			if err := json.Unmarshal(j.Config, c); err != nil {
				return fmt.Errorf("tool: card %d (%s): %w", i, j.Kind, err)
			}
		}
		out = append(out, c)
	}
	*cs = out
	return nil
}
