package teamtool

import (
	"context"
	"fmt"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"strings"

	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/command"
)

const rosterDoc = `List the current team members with their roles.

Send work to a member by its exact name (e.g. @Developer123).`

const rolesDoc = `List the roles that can be hired, with their descriptions and skills.`

// roster is team_members: "Team members:" then "<name> (role:
// <role>)" per member, " - [you]" marking the owner; tool actors
// (message.Address.IsTool) are hidden; no visible member gives "" (the section is omitted).
func (b *binding) roster(ctx context.Context) string {
	v, err := b.rosterView.Get(b.o.Team, func() (rosterView, error) {
		ctx, cancel := bounded(ctx)
		defer cancel()
		members, err := b.o.Team.Members(ctx)
		if err != nil {
			return rosterView{}, err
		}
		return rosterView{text: b.rosterText(members), members: members}, nil
	})
	if err != nil {
		return "Team roster unavailable: " + err.Error()
	}
	cards.NoteRoster(ctx, v.members)
	return v.text
}

// rosterView is the roster section and the roster it was built from.
type rosterView struct {
	text    string
	members []*message.Address
}

// rosterText writes the roster section.
func (b *binding) rosterText(members []*message.Address) string {
	// Written piece by piece into one buffer: this runs at the start of
	// every run.
	var sb strings.Builder
	for _, m := range members {
		if m.IsTool() {
			continue
		}
		if sb.Len() == 0 {
			sb.Grow(64 * len(members))
			sb.WriteString("Team members:")
		}
		sb.WriteString("\n")
		sb.WriteString(m.Name())
		sb.WriteString(" (role: ")
		sb.WriteString(m.Role())
		sb.WriteString(")")
		if b.self(m) {
			sb.WriteString(" - [you]")
		}
	}
	return sb.String()
}

// roles is team_roles: "Available roles:" then "<role>:
// <description> (Skills: a, b)" per catalog card; an empty catalog gives "".
func (b *binding) roles(ctx context.Context) string {
	text, err := b.rolesView.Get(b.o.Team, func() (string, error) {
		ctx, cancel := bounded(ctx)
		defer cancel()
		cards, err := b.o.Team.Cards(ctx)
		if err != nil {
			return "", err
		}
		return rolesText(cards), nil
	})
	if err != nil {
		return "Team roles unavailable: " + err.Error()
	}
	return text
}

// rolesText writes the roles section.
func rolesText(cards []*orchestrator.AgentCard) string {
	if len(cards) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.Grow(128 * len(cards))
	sb.WriteString("Available roles:")
	for _, c := range cards {
		sb.WriteString("\n")
		sb.WriteString(c.Role())
		sb.WriteString(": ")
		sb.WriteString(c.Description)
		sb.WriteString(" (Skills: ")
		if len(c.Skills) == 0 {
			sb.WriteString("none")
		}
		for i, skill := range c.Skills {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(skill)
		}
		sb.WriteString(")")
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
