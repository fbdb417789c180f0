package teamtool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

var names = link.Names[*orchestrator.Team]()

const hireMemberDoc = `Hire a new team member by role.

The member is created from the team catalog's card for the role, as your own
child in the team. Without a name it is named "@" + the role without spaces
+ a number, e.g. @Developer123. Returns the new member's address.`

const hireMembersDoc = `Hire new team members, one per role listed (a role may be listed several
times). Roles must be among the available roles of the team. Each new member
gets a generated name such as @Developer123; the answer lists the names, use
them to send the members work.`

type hireArgs struct {
	Roles []string `json:"roles" description:"Roles to hire, one member per entry, e.g. [\"Developer\", \"Tester\"]"`
}

func (b *binding) hireCommand(c tool.Capability) *command.Command {
	role := command.NewParam[string]("role", "Role to hire, e.g. Developer")
	name := command.NewParam[string]("name", "Name for the new member, e.g. @Ada (default: generated)").Optional()
	return command.New(hireMemberName, c.Describe(hireMemberDoc),
		func(ctx context.Context, in command.Args) (*message.Address, error) {
			n, given := name.Lookup(in)
			return b.hireMember(ctx, role.Get(in), n, given)
		}, role, name)
}

func (b *binding) hireTool(c tool.Capability) (*llm.Tool, error) {
	t, err := llm.NewTool(hireMembersName, c.Describe(hireMembersDoc),
		func(ctx context.Context, a hireArgs) (any, error) { return b.hireMembers(ctx, a.Roles) })
	if err != nil {
		return nil, fmt.Errorf("teamtool: %w", err)
	}
	t.Serial = true // spawns through the owner's context
	return t, nil
}

// unknownRoleError is the retry error of a hire whose role has no card:
// hire_members lists such roles together.
type unknownRoleError struct{ llm.RetryError }

// Unwrap makes it a *llm.RetryError for the model.
func (e *unknownRoleError) Unwrap() error { return &e.RetryError }

// hireMember is hire_member.
func (b *binding) hireMember(ctx context.Context, role, name string, named bool) (*message.Address, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	card, err := b.o.Team.Card(ctx, role)
	if err != nil {
		return nil, fmt.Errorf("teamtool: look up role %q: %w", role, err)
	}
	if card == nil {
		roles, err := b.o.Team.Roles(ctx)
		if err != nil {
			return nil, fmt.Errorf("teamtool: role %q not found, and the roles cannot be listed: %w", role, err)
		}
		return nil, &unknownRoleError{llm.RetryError{Message: fmt.Sprintf("role %q not found. Available roles: %s", role, list(roles))}}
	}
	if why, err := b.refuse(ctx, card); err != nil || why != "" {
		if err != nil {
			return nil, err
		}
		return nil, &llm.RetryError{Message: why}
	}
	if why, err := b.overLimit(ctx); err != nil || why != "" {
		if err != nil {
			return nil, err
		}
		if !b.limitWarned { // once a turn: a model asking for thousands is one warning
			b.limitWarned = true
			b.o.Agent.Report(actor.NewWarning("agent %s: %s", b.o.Agent.Self().Name(), why))
		}
		return nil, &llm.RetryError{Message: why}
	}
	if named {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, llm.Retry("the name of the new %s member is empty: give a name such as @Ada, or none to generate one", role)
		}
		ok, err := names.Reserve(b.o.Team, ctx, name)
		if err != nil {
			return nil, fmt.Errorf("teamtool: reserve the name %q: %w", name, err)
		}
		if !ok {
			return nil, llm.Retry("the name %q is already taken in the team: choose another name, or none to generate one", name)
		}
	} else if name, err = b.generateName(ctx, card.Role()); err != nil {
		return nil, err
	}
	addr, err := b.spawn(card, name)
	if err != nil {
		_ = names.Release(b.o.Team, ctx, name)
		return nil, err
	}
	b.hires++
	if b.card.OnHire != nil {
		b.card.OnHire(ctx, addr)
	}
	return addr, nil
}

// overLimit says why the owner may not hire now, "" when it may: past
// Owner.MaxHiresPerTurn hires in this turn, or a team of Owner.MaxMembers
// members.
func (b *binding) overLimit(ctx context.Context) (string, error) {
	if turn := b.o.Agent.Context(); turn != b.hireTurn {
		b.hireTurn, b.hires, b.limitWarned = turn, 0, false
	}
	if most := b.o.MaxHiresPerTurn; most > 0 && b.hires >= most {
		return fmt.Sprintf("hire refused: at most %d members may be hired in one turn (the team's MaxHiresPerTurn); send work to the members hired so far", most), nil
	}
	if most := b.o.MaxMembers; most > 0 {
		members, err := b.o.Team.Members(ctx)
		if err != nil {
			return "", fmt.Errorf("teamtool: count the team's members: %w", err)
		}
		if len(members) >= most {
			return fmt.Sprintf("hire refused: the team has %d members, its limit (the team's MaxMembers); send work to the members it has, or fire the ones no longer needed", len(members)), nil
		}
	}
	return "", nil
}

// refuse says why the owner may not hire card's role, "" when it may: the
// card must be hireable (CanBeHired), and the owner's own card, the
// catalog's card for its role, must route to the role (RoutesTo). An
// owner whose role has no card in the catalog (a member spawned by a
// program, not from a card) may hire any hireable role.
func (b *binding) refuse(ctx context.Context, card *orchestrator.AgentCard) (string, error) {
	role := card.Role()
	if !card.CanBeHired {
		return fmt.Sprintf("role %q cannot be hired: its card does not allow hiring (can_be_hired is false)", role), nil
	}
	self := b.o.Agent.Self()
	own, err := b.o.Team.Card(ctx, self.Role())
	if err != nil {
		return "", fmt.Errorf("teamtool: hire %q: look up the card of %s (role %q): %w", role, self.Name(), self.Role(), err)
	}
	if own != nil && !own.CanRouteTo(role) {
		return fmt.Sprintf("you (%s, role %s) cannot hire a %s: your card's routes_to allows only %s",
			self.Name(), self.Role(), role, strings.Join(own.RoutesTo, ", ")), nil
	}
	return "", nil
}

// generateName reserves and returns "@" + role without spaces + a number
// from 100 to 999, incremented until the team has the name free. The
// reservation (a reservation in the team) keeps two hirers from picking one name.
func (b *binding) generateName(ctx context.Context, role string) (string, error) {
	base := "@" + strings.Join(strings.Fields(role), "")
	for n := 100 + b.intn(900); ; n++ {
		name := base + strconv.Itoa(n)
		ok, err := names.Reserve(b.o.Team, ctx, name)
		if err != nil {
			return "", fmt.Errorf("teamtool: reserve a name for a %s: %w", role, err)
		}
		if ok {
			return name, nil
		}
	}
}

// spawn creates the card's agent named name as a child of the owner.
func (b *binding) spawn(card *orchestrator.AgentCard, name string) (*message.Address, error) {
	if ctx := b.o.Agent.Context(); ctx.Err() != nil {
		if cause := context.Cause(ctx); errors.Is(cause, context.Canceled) { // the turn was cancelled (a CancelMessage)
			return nil, fmt.Errorf("teamtool: hire %s as %s: %w", card.Role(), name, cause)
		}
		return nil, fmt.Errorf("teamtool: hire %s as %s: %s is stopping: %w", card.Role(), name, b.o.Agent.Self().Name(), actor.ErrActorDead)
	}
	a, err := card.NewActor()
	if err != nil {
		return nil, fmt.Errorf("teamtool: hire %s: %w", card.Role(), err)
	}
	cfg, err := card.ConfigCopy()
	if err != nil {
		return nil, fmt.Errorf("teamtool: hire %s: %w", card.Role(), err)
	}
	cfgr, ok := cfg.(interface{ ActorConfig() *actor.Config })
	if !ok {
		return nil, fmt.Errorf("teamtool: hire %s: config type %T does not embed actor.Config", card.Role(), cfg)
	}
	ac := cfgr.ActorConfig()
	ac.Name, ac.Role = name, card.Role()
	addr, err := b.o.Agent.Spawn(a, cfg)
	if err != nil {
		return nil, fmt.Errorf("teamtool: hire %s as %s: %w", card.Role(), name, err)
	}
	return addr, nil
}

// hireMembers is the hire_members tool.
func (b *binding) hireMembers(ctx context.Context, roles []string) (string, error) {
	if len(roles) == 0 {
		return "", llm.Retry("no roles given: list at least one role to hire")
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	var hired, unknown, refused []string
	for _, role := range roles {
		addr, err := b.hireMember(ctx, role, "", false)
		// Without a given name, a retry error is an unknown role or a
		// refusal.
		var retry *llm.RetryError
		var unknownRole *unknownRoleError
		switch {
		case errors.As(err, &unknownRole):
			unknown = append(unknown, role)
		case errors.As(err, &retry):
			if !slices.Contains(refused, retry.Message) {
				refused = append(refused, retry.Message)
			}
		case err != nil:
			if len(hired) > 0 {
				return "", fmt.Errorf("%w (already hired: %s)", err, strings.Join(hired, ", "))
			}
			return "", err
		default:
			hired = append(hired, addr.Name())
		}
	}
	done := "Members hired: [" + strings.Join(hired, ", ") + "]"
	if len(unknown) == 0 && len(refused) == 0 {
		return done, nil
	}
	var problems []string
	if len(unknown) > 0 {
		available, err := b.o.Team.Roles(ctx)
		if err != nil {
			return "", fmt.Errorf("teamtool: unknown roles %s, and the roles cannot be listed: %w", strings.Join(unknown, ", "), err)
		}
		problems = append(problems, fmt.Sprintf("Unknown roles: %s. Available roles: %s", strings.Join(unknown, ", "), list(available)))
	}
	problems = append(problems, refused...)
	msg := strings.Join(problems, ". ")
	if len(hired) > 0 {
		msg = done + ". " + msg
	}
	return "", &llm.RetryError{Message: msg}
}
