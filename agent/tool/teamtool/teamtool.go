// Package teamtool provides TeamTool, the tool card that lets an agent
// manage its team: hire members by role, fire them by name, and see the
// roster and the roles it can hire.
//
// Its capabilities and their default channels:
//
//	capability  channels                 model tool      command                   prompt
//	Hire        TOOL_CALL|COMMAND        hire_members    hire_member(role, name?)  -
//	Fire        TOOL_CALL|COMMAND        fire_members    fire_member(name)         -
//	Roster      SYSTEM_PROMPT|COMMAND    team_members    team_members()            roster
//	Roles       SYSTEM_PROMPT|COMMAND    team_roles      team_roles()              role profiles
//	Activity    none (opt-in)            team_activity   team_activity(member?, limit?)  -
//
// The card is registered (tool.Register) under the kind "TeamTool", which
// labels its commands. hire_member's native result is the new member's
// *message.Address, so code hires with
//
//	hire, err := command.Callable[*message.Address](reg, "hire_member")
//
// and the card gives its owner the same hire, typed, as
// tool.Capabilities.Hire, with which the agent routes a message to a bare
// role.
//
// Hiring follows the catalog's rules: a card must be hireable
// (AgentCard.CanBeHired), and the hirer's own card (the catalog's card for
// its role, when it has one) must route to the role (AgentCard.RoutesTo);
// a refusal is a retry error naming the rule. The card's OnHire and OnFire
// hooks run after each hire and fire.
//
// A hired member is a child of the hiring agent, in the same team: firing
// the hiring agent (or stopping it) stops what it hired. Firing tells the
// member message.StopRecursively and returns at once: the member may be
// the one waiting on the firing agent.
//
// Hiring and firing act as the owner (tool.Owner.Agent), so their commands
// must run on the owner's goroutine, and their model tools are Serial. Mistakes
// the model can fix (unknown role or member, a taken name, firing oneself
// or the orchestrator) are *llm.RetryError values; the roster and roles
// sections never fail, they say when the team cannot be queried.
package teamtool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// kind is the card's registered kind name.
const kind = "TeamTool"

// The names of the commands and model tools the card provides.
const (
	// hireMemberName is the command hire_member(role, name?); it returns
	// the new member's *message.Address.
	hireMemberName = "hire_member"
	// hireMembersName is the model tool hire_members(roles).
	hireMembersName = "hire_members"
	// fireMemberName is the command fire_member(name).
	fireMemberName = "fire_member"
	// fireMembersName is the model tool fire_members(names).
	fireMembersName = "fire_members"
	// teamMembersName is the roster command (and tool, when exposed on
	// TOOL_CALL).
	teamMembersName = "team_members"
	// teamRolesName is the role-profiles command (and tool, when exposed
	// on TOOL_CALL).
	teamRolesName = "team_roles"
	// teamActivityName is the activity command and tool.
	teamActivityName = "team_activity"
)

// Default channels of each capability.
const (
	defaultHire   = tool.ToolCall | tool.Command
	defaultFire   = tool.ToolCall | tool.Command
	defaultRoster = tool.SystemPrompt | tool.Command
	defaultRoles  = tool.SystemPrompt | tool.Command
	// team_activity is opt-in: no default channel.
	defaultActivity tool.Channel = 0
)

// Channels each capability can be exposed on: hiring and firing have no
// system-prompt form.
const (
	actionChannels = tool.ToolCall | tool.Command
	viewChannels   = tool.ToolCall | tool.SystemPrompt | tool.Command
)

// Card is the TeamTool card. Its zero value, like New's, has every
// capability on its default channels. It round-trips through JSON (Rand
// excepted) and is registered under the kind "TeamTool". An agent gets a
// default one, first, when its config has none; it depends on no
// other card.
type Card struct {
	// Hire is hiring by role: model tool hire_members(roles), command
	// hire_member(role, name?). Default channels TOOL_CALL|COMMAND.
	Hire tool.Capability `json:"hire"`
	// Fire is firing by name: model tool fire_members(names), command
	// fire_member(name). Default channels TOOL_CALL|COMMAND.
	Fire tool.Capability `json:"fire"`
	// Roster is the team roster, team_members. Default channels
	// SYSTEM_PROMPT|COMMAND.
	Roster tool.Capability `json:"roster"`
	// Roles is the catalog's role profiles, team_roles. Default channels
	// SYSTEM_PROMPT|COMMAND.
	Roles tool.Capability `json:"roles"`
	// Activity is team_activity(member?, limit?): the latest messages
	// between members and who is working now. It is off unless exposed:
	// set Expose to TOOL_CALL, COMMAND or both (an opt-in, so the tools and
	// prompts of existing teams do not change).
	Activity tool.Capability `json:"activity"`
	// Rand returns a number in [0, n); it picks the number in a generated
	// member name. Nil means math/rand/v2's IntN. It may be called from
	// the goroutines of every agent the card is attached to.
	Rand func(n int) int `json:"-"`
	// OnHire, when set, is called after each successful hire with the new
	// member's address, on the owner's goroutine, before the hire
	// returns: record it, brief the member, keep a registry. It must not
	// block for long; ctx bounds the hire. Not serialized, so not copied:
	// agent configs are copied through JSON, so a member hired from a card
	// (or an agent restored from a log) has a TeamTool without hooks
	// unless its config is given one again (a kind factory, or
	// orchestrator.WithPrepare for a restore).
	OnHire func(ctx context.Context, hired *message.Address) `json:"-"`
	// OnFire, when set, is called after each member is fired: the
	// member has been told to stop (with every member it hired) but may
	// still be running. Same rules as OnHire.
	OnFire func(ctx context.Context, fired *message.Address) `json:"-"`
}

var _ tool.Card = (*Card)(nil)

func init() { tool.Register(kind, func() tool.Card { return New() }) }

// New returns a card with every capability on its default channels.
func New() *Card { return &Card{} }

// Kind returns "TeamTool".
func (*Card) Kind() string { return kind }

// Attach binds the card to its owner and returns the tools, system-prompt
// sections and commands of its enabled capabilities. The owner must
// be in a team. A capability exposed on a channel it has no form for
// (hiring or firing as a system prompt) is an error naming it.
func (c *Card) Attach(_ context.Context, o *tool.Owner) (tool.Capabilities, error) {
	if o == nil || o.Agent == nil {
		return tool.Capabilities{}, errors.New("teamtool: attach: the owner has no agent context")
	}
	if o.Team == nil || o.Team.Address() == nil {
		return tool.Capabilities{}, fmt.Errorf("teamtool: attach %s: TeamTool needs a team: %w", o.Agent.Self().Name(), orchestrator.ErrNoTeam)
	}
	hire, err := channels("hire", c.Hire, defaultHire, actionChannels)
	if err != nil {
		return tool.Capabilities{}, err
	}
	fire, err := channels("fire", c.Fire, defaultFire, actionChannels)
	if err != nil {
		return tool.Capabilities{}, err
	}
	roster, err := channels("roster", c.Roster, defaultRoster, viewChannels)
	if err != nil {
		return tool.Capabilities{}, err
	}
	roles, err := channels("roles", c.Roles, defaultRoles, viewChannels)
	if err != nil {
		return tool.Capabilities{}, err
	}
	activity, err := channels("activity", c.Activity, defaultActivity, actionChannels)
	if err != nil {
		return tool.Capabilities{}, err
	}

	b := &binding{card: c, o: o}
	var caps tool.Capabilities
	var errs []error
	add := func(t *llm.Tool, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		caps.Tools = append(caps.Tools, t)
	}
	if hire&tool.ToolCall != 0 {
		add(b.hireTool(c.Hire))
	}
	if fire&tool.ToolCall != 0 {
		add(b.fireTool(c.Fire))
	}
	if roster&tool.ToolCall != 0 {
		add(viewTool(teamMembersName, c.Roster.Describe(rosterDoc), b.roster))
	}
	if roles&tool.ToolCall != 0 {
		add(viewTool(teamRolesName, c.Roles.Describe(rolesDoc), b.roles))
	}
	if activity&tool.ToolCall != 0 {
		add(b.activityTool(c.Activity))
	}
	if len(errs) > 0 {
		return tool.Capabilities{}, errors.Join(errs...)
	}
	if roster&tool.SystemPrompt != 0 {
		caps.SystemPrompts = append(caps.SystemPrompts, b.roster)
	}
	if roles&tool.SystemPrompt != 0 {
		caps.SystemPrompts = append(caps.SystemPrompts, b.roles)
	}
	if hire&tool.Command != 0 {
		caps.Commands = append(caps.Commands, b.hireCommand(c.Hire))
		caps.Hire = func(ctx context.Context, role string) (*message.Address, error) {
			return b.hireMember(ctx, role, "", false)
		}
	}
	if fire&tool.Command != 0 {
		caps.Commands = append(caps.Commands, b.fireCommand(c.Fire))
	}
	if roster&tool.Command != 0 {
		caps.Commands = append(caps.Commands, viewCommand(teamMembersName, c.Roster.Describe(rosterDoc), b.roster))
	}
	if roles&tool.Command != 0 {
		caps.Commands = append(caps.Commands, viewCommand(teamRolesName, c.Roles.Describe(rolesDoc), b.roles))
	}
	if activity&tool.Command != 0 {
		caps.Commands = append(caps.Commands, b.activityCommand(c.Activity))
	}
	return caps, nil
}

// channels resolves a capability's channels and checks that it has a form
// for each.
func channels(name string, c tool.Capability, defaults, supported tool.Channel) (tool.Channel, error) {
	ch := c.Channels(defaults)
	extra := ch &^ supported
	switch {
	case extra&^(tool.ToolCall|tool.SystemPrompt|tool.Command) != 0:
		return 0, fmt.Errorf("teamtool: capability %s: expose %#x has unknown channel bits; it supports %s",
			name, uint8(ch), supported)
	case extra != 0:
		return 0, fmt.Errorf("teamtool: capability %s cannot be exposed on %s; it supports %s", name, extra, supported)
	}
	return ch, nil
}

// binding is a card attached to one owner.
type binding struct {
	card *Card
	o    *tool.Owner

	// The turn the latest hire was made in, the hires made in it
	// (Owner.MaxHiresPerTurn) and whether a refusal was reported in it.
	// Hires run on the owner's goroutine.
	hireTurn    context.Context
	hires       int
	limitWarned bool

	// The roster and roles sections as last built, kept while the team's
	// roster-and-catalog version holds: a run whose team did not change
	// reuses them instead of two team queries (roster and roles tool calls
	// may run in parallel: Versioned is safe for that).
	rosterView cards.Versioned[rosterView]
	rolesView  cards.Versioned[string]
}

// bounded gives ctx a cards.QueryTimeout deadline when it has none.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, cards.QueryTimeout)
}

func (b *binding) intn(n int) int {
	switch {
	case b.card.Rand != nil:
		return b.card.Rand(n)
	case b.o.Rand != nil:
		return b.o.Rand(n)
	}
	return rand.IntN(n)
}

// self reports whether a is the owner.
func (b *binding) self(a *message.Address) bool {
	return a.AgentID() == b.o.Agent.Self().AgentID()
}

// visibleNames returns the names of the members that listings show: tool
// actors (a planning board, message.Address.IsTool) are not listed.
func visibleNames(members []*message.Address) []string {
	var out []string
	for _, m := range members {
		if !m.IsTool() {
			out = append(out, m.Name())
		}
	}
	return out
}

// list joins names for a message, "none" when there are none.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
