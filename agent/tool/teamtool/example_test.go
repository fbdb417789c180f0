package teamtool_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// ExampleDeveloper is the agent kind the catalog hires as "Developer"; a
// card names its kind by the name registered with actor.RegisterKind.
type ExampleDeveloper struct{ actor.Base }

func (*ExampleDeveloper) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

func init() {
	actor.RegisterKind("teamtool_example.Developer", func() actor.Actor { return &ExampleDeveloper{} })
}

// agentIDs matches the agent id in an address's text form.
var agentIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}`)

// A manager agent with TeamTool reads the roles it can hire, hires by
// slash command (with a name) and through the typed command (with a
// generated name), and sees its team. The card's commands act as the
// owner (tool.Owner.Agent), so they run on the owner's goroutine (a proxy
// call here; the agent's own turn in a real agent).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	defer func() {
		if err := sys.Shutdown(ctx); err != nil {
			fmt.Println("shutdown:", err)
		}
	}()

	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	dev, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
		AgentClass:  "teamtool_example.Developer",
		Description: "Writes code",
		Skills:      []string{"go", "review"},
		Config:      &actor.Config{Role: "Developer"},
		CanBeHired:  true, // agents may hire it (TeamTool refuses a card without it)
	})
	if err != nil {
		panic(err)
	}
	if err := team.Register(ctx, dev); err != nil {
		panic(err)
	}
	manager, err := team.Spawn(ctx, actor.Func(func(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }),
		&actor.Config{Name: "@Manager", Role: "Manager"})
	if err != nil {
		panic(err)
	}

	// Attach on the owner's goroutine and register the commands under the
	// card's kind, as an agent does when it starts. Rand picks the number
	// of generated names: always 0 gives @Developer100.
	reg := command.NewRegistry()
	err = proxy.Do(ctx, manager, func(c *actor.Context, _ actor.Actor) error {
		o := &tool.Owner{Agent: c, Team: orchestrator.Of(c.Orchestrator()), Registry: reg,
			Rand: func(int) int { return 0 }}
		card := teamtool.New()
		caps, err := card.Attach(ctx, o)
		if err != nil {
			return err
		}
		return reg.Register(card.Kind(), caps.Commands...)
	})
	if err != nil {
		panic(err)
	}
	onManager := func(fn func() (any, error)) any {
		v, err := proxy.Ask(ctx, manager, func(*actor.Context, actor.Actor) (any, error) { return fn() })
		if err != nil {
			panic(err)
		}
		return v
	}
	dispatch := func(text string) {
		reply := onManager(func() (any, error) { return reg.Dispatch(ctx, text) })
		// A hire answers with the new member's address, which holds its
		// random agent id.
		fmt.Printf("%s\n%s\n", text, agentIDs.ReplaceAllString(reply.(string), "<id>"))
	}

	dispatch("/team_roles")
	dispatch("/hire_member Developer name=@Ada")
	// Code hires through the typed command and gets the address back.
	addr := onManager(func() (any, error) {
		return command.Call[*message.Address](ctx, reg, "hire_member", "Developer")
	}).(*message.Address)
	fmt.Println("hired", addr.Name(), "as", addr.Role())
	dispatch("/team_members")
	dispatch("/hire_member Tester")
	// Output:
	// /team_roles
	// Available roles:
	// Developer: Writes code (Skills: go, review)
	// /hire_member Developer name=@Ada
	// @Ada(Developer, <id>)
	// hired @Developer100 as Developer
	// /team_members
	// Team members:
	// @Manager (role: Manager) - [you]
	// @Ada (role: Developer)
	// @Developer100 (role: Developer)
	// /hire_member Tester
	// Command 'hire_member' failed: role "Tester" not found. Available roles: Developer
}
