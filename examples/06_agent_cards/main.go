// Agent cards: a catalog of agent kinds, searched and hired from.
//
//	go run ./examples/06_agent_cards
//
// A card describes a kind of agent (registered with actor.RegisterKind),
// its config, skills and description. A team keeps a catalog of cards by
// role: agents find capabilities in it instead of hard-coding each other,
// and hire new members from it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// WriterConfig is the writer's typed config.
type WriterConfig struct {
	actor.Config
	Style string `json:"style"`
}

// The kinds the cards describe.
type (
	ResearchAgent struct{ actor.Base }
	ReviewerAgent struct{ actor.Base }
	WriterAgent   struct {
		actor.Agent[WriterConfig, actor.NoState]
	}
)

// A card names its kind by the name it is registered under.
func init() {
	actor.RegisterKind("examples.ResearchAgent", func() actor.Actor { return &ResearchAgent{} })
	actor.RegisterKind("examples.WriterAgent", func() actor.Actor { return &WriterAgent{} })
	actor.RegisterKind("examples.ReviewerAgent", func() actor.Actor { return &ReviewerAgent{} })
}

func (*ResearchAgent) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }
func (*ReviewerAgent) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

// Receive writes a report on the topic a UserMessage names, in the style
// of its config.
func (a *WriterAgent) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		return fmt.Sprintf("[%s] a report on %s", a.Config().Style, m.Content), nil
	}
	return nil, actor.ErrUnhandled
}

// cards returns the catalog, each card validated by NewAgentCard. A card's
// role is its config's role.
func cards() ([]*orchestrator.AgentCard, error) {
	var out []*orchestrator.AgentCard
	for _, c := range []orchestrator.AgentCard{{
		AgentClass:  "examples.ResearchAgent",
		Description: "Performs web research and data gathering",
		Skills:      []string{"web_search", "pdf_extraction"},
		Config:      &actor.Config{Name: "researcher", Role: "ResearchAgent"},
	}, {
		AgentClass:  "examples.WriterAgent",
		Description: "Writes reports",
		Skills:      []string{"writing", "editing"},
		Config:      &WriterConfig{Config: actor.Config{Name: "writer", Role: "WriterAgent"}, Style: "concise"},
		CanBeHired:  true,
	}, {
		AgentClass:  "examples.ReviewerAgent",
		Description: "Reviews drafts",
		Skills:      []string{"editing", "fact_checking"},
		Config:      &actor.Config{Name: "reviewer", Role: "ReviewerAgent"},
		RoutesTo:    []string{"WriterAgent"},
	}} {
		card, err := orchestrator.NewAgentCard(c)
		if err != nil {
			return nil, err
		}
		out = append(out, card)
	}
	return out, nil
}

func run(ctx context.Context, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { err = errors.Join(err, shutdown(sys)) }()
	team, err := orchestrator.New(sys)
	if err != nil {
		return err
	}
	catalog, err := cards()
	if err != nil {
		return err
	}
	if err := team.Register(ctx, catalog...); err != nil {
		return err
	}

	// Discovery: by role, by skill. An unknown role has a nil card. (Team
	// queries fail only when ctx ends or the team is gone.)
	roles, err := team.Roles(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "roles:", roles)
	skills, err := team.Skills(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "skills:", skills)
	editors, err := team.CardsWithSkill(ctx, "editing")
	if err != nil {
		return err
	}
	for _, c := range editors {
		fmt.Fprintf(out, "can edit: %s (%s)\n", c.Role(), c.Description)
	}
	if translator, err := team.Card(ctx, "Translator"); err == nil && translator == nil {
		fmt.Fprintln(out, "no card for the role Translator")
	}
	reviewer, err := team.Card(ctx, "ReviewerAgent")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "reviewer routes to WriterAgent:", reviewer.CanRouteTo("WriterAgent"))
	fmt.Fprintln(out, "reviewer routes to ResearchAgent:", reviewer.CanRouteTo("ResearchAgent"))

	// Hiring: a new actor of the card's kind, spawned with a copy of the
	// card's config (changing the copy leaves the card as it was).
	card, err := team.Card(ctx, "WriterAgent")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "the WriterAgent card can be hired:", card.CanBeHired)
	a, err := card.NewActor()
	if err != nil {
		return err
	}
	cfg, err := card.ConfigCopy()
	if err != nil {
		return err
	}
	cfg.(*WriterConfig).Name = "writer-1"
	writer, err := team.Spawn(ctx, a, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "hired %s (role %s, kind %s)\n", writer.Name(), writer.Role(), writer.ActorType())
	report, err := sys.Ask(ctx, writer, message.NewUserMessage("actors"))
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "asked for a report:", report)
	fmt.Fprintln(out, "the card's config is still named:", card.Config.(*WriterConfig).Name)
	return nil
}

// shutdown stops every agent and joins every goroutine of the system,
// giving up after five seconds.
func shutdown(sys *actor.System) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sys.Shutdown(ctx)
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agent cards:", err)
		os.Exit(1)
	}
}
