package teamtool

import (
	"context"
	"fmt"
	"strings"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/command"
)

const rosterDoc = `List the current team members with their roles.

Send work to a member by its exact name (e.g. @Developer123).`

const rolesDoc = `List the roles that can be hired, with their descriptions and skills.`

// roster is team_members (A82): "Team members:" then "<name> (role:
// <role>)" per member, " - [you]" marking the owner; tool actors
// (message.Address.IsTool) are hidden; no visible member gives "" (the section is omitted).
func (b *binding) roster(ctx context.Context) string {
	ctx, cancel := bounded(ctx)
	defer cancel()
	members, err := b.o.Team.Members(ctx)
	if err != nil {
		return "Team roster unavailable: " + err.Error()
	}
	var sb strings.Builder
	for _, m := range members {
		if m.IsTool() {
			continue
		}
		if sb.Len() == 0 {
			sb.WriteString("Team members:")
		}
		fmt.Fprintf(&sb, "\n%s (role: %s)", m.Name(), m.Role())
		if b.self(m) {
			sb.WriteString(" - [you]")
		}
	}
	return sb.String()
}

// roles is team_roles (A83): "Available roles:" then "<role>:
// <description> (Skills: a, b)" per catalog card; an empty catalog gives "".
func (b *binding) roles(ctx context.Context) string {
	ctx, cancel := bounded(ctx)
	defer cancel()
	cards, err := b.o.Team.Cards(ctx)
	if err != nil {
		return "Team roles unavailable: " + err.Error()
	}
	if len(cards) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("Available roles:")
	for _, c := range cards {
		fmt.Fprintf(&sb, "\n%s: %s (Skills: %s)", c.Role(), c.Description, list(c.Skills))
	}
	return sb.String()
}

// viewTool exposes a view as a model tool without arguments.
func viewTool(name, description string, view func(context.Context) string) (*llm.Tool, error) {
	t, err := llm.NewTool(name, description, func(ctx context.Context, _ struct{}) (any, error) {
		return view(ctx), nil
	})
	if err != nil {
		return nil, fmt.Errorf("teamtool: %w", err)
	}
	return t, nil
}

// viewCommand exposes a view as a command without arguments.
func viewCommand(name, description string, view func(context.Context) string) *command.Command {
	return command.New(name, description, func(ctx context.Context, _ command.Args) (string, error) {
		return view(ctx), nil
	})
}
