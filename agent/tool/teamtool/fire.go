package teamtool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
)

const fireMemberDoc = `Fire a team member by name.

The member is stopped, with every member it hired. You cannot fire yourself
or the orchestrator.`

const fireMembersDoc = `Fire team members by name (exact names such as @Developer123). Each is
stopped, with every member it hired. You cannot fire yourself or the
orchestrator.`

type fireArgs struct {
	Names []string `json:"names" description:"Exact names of the members to fire, e.g. [\"@Developer123\"]"`
}

func (b *binding) fireCommand(c tool.Capability) *command.Command {
	name := command.NewParam[string]("name", "Exact name of the member to fire, e.g. @Developer123")
	return command.New(fireMemberName, c.Describe(fireMemberDoc),
		func(ctx context.Context, in command.Args) (string, error) {
			return b.fireMember(ctx, name.Get(in))
		}, name)
}

func (b *binding) fireTool(c tool.Capability) (*llm.Tool, error) {
	t, err := llm.NewTool(fireMembersName, c.Describe(fireMembersDoc),
		func(ctx context.Context, a fireArgs) (any, error) { return b.fireMembers(ctx, a.Names) })
	if err != nil {
		return nil, fmt.Errorf("teamtool: %w", err)
	}
	t.Serial = true // sends through the owner's context
	return t, nil
}

// fireMember is fire_member.
func (b *binding) fireMember(ctx context.Context, name string) (string, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	members, err := b.o.Team.Members(ctx)
	if err != nil {
		return "", fmt.Errorf("teamtool: fire %q: get the roster: %w", name, err)
	}
	if why := b.fire(ctx, members, name, nil); why != "" {
		return "", &llm.RetryError{Message: why}
	}
	return "Member " + name + " has been fired.", nil
}

// fire stops the member called name, or says why it cannot; gone are
// names already fired, left out of the listing of current members.
func (b *binding) fire(ctx context.Context, members []*message.Address, name string, gone []string) string {
	if name == b.o.Agent.Self().Name() {
		return fmt.Sprintf("cannot fire %s: that is you", name)
	}
	if orch := b.o.Team.Address(); name == orch.Name() {
		return fmt.Sprintf("cannot fire %s: it is the team's orchestrator", name)
	}
	i := slices.IndexFunc(members, func(m *message.Address) bool { return m.Name() == name })
	if i < 0 || members[i].IsTool() { // tool actors are not members one fires
		return fmt.Sprintf("member %q not found. Current members: %s", name, list(b.others(members, gone)))
	}
	switch target := members[i]; {
	case target.IsUserProxy():
		return fmt.Sprintf("cannot fire %s: it is a person's proxy", name)
	case b.o.Agent.Parent() != nil && target.AgentID() == b.o.Agent.Parent().AgentID():
		return fmt.Sprintf("cannot fire %s: it hired you", name)
	}
	// Fire and forget: the member may be waiting on us, so never wait for
	// its stop. An error means it is already gone, which is what firing
	// wants.
	_ = b.o.Agent.Send(members[i], message.StopRecursively{})
	if b.card.OnFire != nil {
		b.card.OnFire(ctx, members[i])
	}
	return ""
}

// others returns the visible members' names, without the owner and the
// names in gone.
func (b *binding) others(members []*message.Address, gone []string) []string {
	var out []string
	for _, n := range visibleNames(members) {
		if n != b.o.Agent.Self().Name() && !slices.Contains(gone, n) {
			out = append(out, n)
		}
	}
	return out
}

// fireMembers is the fire_members tool.
func (b *binding) fireMembers(ctx context.Context, names []string) (string, error) {
	if len(names) == 0 {
		return "", llm.Retry("no names given: list at least one member to fire")
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	members, err := b.o.Team.Members(ctx)
	if err != nil {
		return "", fmt.Errorf("teamtool: fire %s: get the roster: %w", strings.Join(names, ", "), err)
	}
	var fired, problems []string
	for _, name := range names {
		if slices.Contains(fired, name) {
			continue
		}
		if why := b.fire(ctx, members, name, fired); why != "" {
			problems = append(problems, why)
			continue
		}
		fired = append(fired, name)
	}
	done := "Members fired: " + strings.Join(fired, ", ")
	if len(problems) == 0 {
		return done, nil
	}
	msg := strings.Join(problems, "; ")
	if len(fired) > 0 {
		msg = done + ". But " + msg
	}
	return "", &llm.RetryError{Message: msg}
}
