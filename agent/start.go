package agent

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

func (a *BaseAgent) env() *Env {
	if a.Env != nil {
		return a.Env
	}
	return &Env{}
}

// observe records an event of the agent's runner; a limit reached is a
// warning naming it.
func (a *BaseAgent) observe(c *actor.Context, e llm.Event) {
	if l, ok := e.(llm.LimitEvent); ok {
		c.Report(actor.NewWarning("agent %s: %s", c.Self().Name(), l.Reason))
		return
	}
	c.NotifyEvent(e)
}

// OnStart builds the agent: team required, backstory, TeamTool injection,
// cards attached, command registry, one CommandsAnnouncedEvent, the LLM
// runner with both usage tiers, and on a restore the LLM context and
// lifetime counters from the team's log. No model call.
func (a *BaseAgent) OnStart(c *actor.Context) error {
	a.ctx = c.Context() // a team stop or shutdown ends a model call in flight
	if err := a.start(c); err != nil {
		a.startErr = err
		return err
	}
	return nil
}

func (a *BaseAgent) start(c *actor.Context) error {
	if c.Orchestrator() == nil {
		return fmt.Errorf("agent %s: an agent must be created in a team (orchestrator.Team.Spawn): %w",
			c.Self().Name(), orchestrator.ErrNoTeam)
	}
	cfg := a.Config()
	if err := cfg.Validate(); err != nil {
		return err
	}
	backstory, err := cfg.Prompt.Render()
	if err != nil {
		return err
	}
	if err := a.InitState(&AgentState{Backstory: backstory}); err != nil {
		return err
	}
	if err := a.ObserveState(); err != nil {
		return err
	}
	a.team = orchestrator.Of(c.Orchestrator())
	a.registry = command.NewRegistry()
	a.registry.Logger = c.Logger()
	owner := &tool.Owner{Agent: cardContext{c, a}, Team: a.team, Registry: a.registry, Rand: a.env().Rand}
	_, _, owner.MaxHiresPerTurn, owner.MaxMembers = a.env().Guards.answerLimits()
	ctx, cancel := context.WithTimeout(a.ctx, cards.QueryTimeout)
	defer cancel()
	caps, err := cards.Attach(ctx, owner, withTeamTool(cfg.Tools))
	if err != nil {
		return err
	}
	a.release, a.hire, a.expand = caps.Close, caps.Hire, caps.ExpandMedia
	if err := a.registry.Register("BaseAgent", a.builtins()...); err != nil {
		return err
	}
	c.NotifyEvent(CommandsAnnouncedEvent{Agent: c.Self(), Commands: a.registry.Descriptors()})
	env := a.env()
	if a.unbudget != nil { // started again without a stop: one hold only
		a.unbudget()
		a.unbudget = nil
	}
	teamBudget, unbudget, err := env.Guards.teamBudget(ctx, a.team, env.Prices)
	if err != nil {
		return err
	}
	a.unbudget = unbudget
	a.runner, err = llm.NewRunner(a.live(cfg.llmConfig(backstory)), env.Guards.withApproval(llm.Options{
		HTTPClient:    httpDoer(env),
		Sleep:         env.Sleep,
		Tools:         caps.Tools,
		SystemPrompts: caps.SystemPrompts,
		Observer:      func(e llm.Event) { a.observe(c, e) },
		Prices:        env.Prices,
		TeamBudget:    teamBudget,
		RateLimiter:   env.Guards.rateLimiter(),
		Logger:        c.Logger(),
		Now:           env.Now,
		NewRunID:      env.NewRunID,
	}))
	if err != nil {
		return err
	}
	if c.Restoring() {
		events, cut, err := restoreEvents(ctx, a.team, c.Self().AgentID())
		if err != nil {
			return fmt.Errorf("agent %s: restore LLM context: %w", c.Self().Name(), err)
		}
		a.runner.RestoreCut(events, cut)
		if err := a.restoreApprovals(ctx, c); err != nil {
			return fmt.Errorf("agent %s: restore the approvals it waits for: %w", c.Self().Name(), err)
		}
	}
	return nil
}

// httpDoer keeps a nil client a nil interface.
func httpDoer(env *Env) openai.HTTPDoer {
	if env.HTTPClient == nil {
		return nil
	}
	return env.HTTPClient
}

// withTeamTool puts a default TeamTool first when none is configured; the
// config itself is not changed.
func withTeamTool(cs tool.Cards) []tool.Card {
	team := teamtool.New()
	for _, c := range cs {
		if c.Kind() == team.Kind() {
			return cs
		}
	}
	return append([]tool.Card{team}, cs...)
}

// cardContext is what the agent's cards may do as the agent
// (tool.AgentContext): its actor context, except that an actor a card
// spawns (a hired member) gets the agent's Env first.
type cardContext struct {
	c *actor.Context
	a *BaseAgent
}

func (x cardContext) Self() *message.Address                  { return x.c.Self() }
func (x cardContext) Parent() *message.Address                { return x.c.Parent() }
func (x cardContext) Context() context.Context                { return x.c.Context() }
func (x cardContext) Send(to *message.Address, msg any) error { return x.c.Send(to, msg) }
func (x cardContext) Report(err error)                        { x.c.Report(err) }

func (x cardContext) Spawn(a actor.Actor, cfg any, opts ...actor.SpawnOption) (*message.Address, error) {
	giveEnv(a, x.a.env())
	giveEndpoint(a, x.a.endpoint)
	return x.c.Spawn(a, cfg, opts...)
}

// giveEnv gives env to an agent (anything embedding BaseAgent) that has
// none.
func giveEnv(x actor.Actor, env *Env) {
	if e, ok := x.(interface{ setEnv(*Env) }); ok {
		e.setEnv(env)
	}
}

func (a *BaseAgent) setEnv(e *Env) {
	if a.Env == nil {
		a.Env = e
	}
}

// WithEnv is an option of orchestrator.Restore: every agent it recreates
// (anything embedding BaseAgent) gets env, unless it has one
// (orchestrator.WithPrepare; orchestrator.New ignores it). Agents hired by
// an agent inherit their hirer's Env; any other agent spawned without one
// (Team.Hire, Team.Spawn) has the zero Env.
//
//	team, err := orchestrator.Restore(ctx, sys, log, agent.WithEnv(env))
func WithEnv(env *Env) orchestrator.Option {
	return orchestrator.WithPrepare(func(a actor.Actor) { giveEnv(a, env) })
}

// WithEndpoint is an option of orchestrator.Restore that chooses the
// model server a restored team calls. The log records the base URL each
// agent was first given (never its key), so without this option a team
// restored in another process calls that recorded URL.
//
// Each agent Restore recreates (anything embedding BaseAgent), and each
// agent such an agent hires later, calls endpoint with a copy of its
// recorded model config and calls the model config endpoint returns,
// typically the recorded one with BaseURL and APIKey set. The agent's
// recorded config, and so what its log holds, is not changed. The HTTP
// client is the Env's (WithEnv). orchestrator.New ignores the option.
//
// Precedence: an agent keeps the first endpoint it is given. When several
// WithEndpoint options are passed, the first one in the list wins and the
// later ones are ignored; an agent hired by a restored agent gets its
// hirer's.
//
//	team, err := orchestrator.Restore(ctx, sys, log, agent.WithEnv(env),
//		agent.WithEndpoint(func(recorded llm.ModelConfig) llm.ModelConfig {
//			recorded.BaseURL, recorded.APIKey = baseURL, key
//			return recorded
//		}))
func WithEndpoint(endpoint func(recorded llm.ModelConfig) llm.ModelConfig) orchestrator.Option {
	return orchestrator.WithPrepare(func(a actor.Actor) { giveEndpoint(a, endpoint) })
}

// giveEndpoint gives an endpoint mapping to an agent (anything embedding
// BaseAgent) that has none.
func giveEndpoint(x actor.Actor, f func(llm.ModelConfig) llm.ModelConfig) {
	if e, ok := x.(interface {
		setEndpoint(func(llm.ModelConfig) llm.ModelConfig)
	}); ok && f != nil {
		e.setEndpoint(f)
	}
}

func (a *BaseAgent) setEndpoint(f func(llm.ModelConfig) llm.ModelConfig) {
	if a.endpoint == nil {
		a.endpoint = f
	}
}

// live returns the runner config the agent calls the model with: cfg with
// the model endpoint WithEndpoint gives, when it gave one (on a copy of
// the model config: the mapping cannot write into the recorded one).
func (a *BaseAgent) live(cfg llm.Config) llm.Config {
	if a.endpoint != nil {
		m := cfg.Model
		m.Temperature, m.Seed = clonePtr(m.Temperature), clonePtr(m.Seed)
		cfg.Model = a.endpoint(m)
	}
	return cfg
}

// builtins are the agent's own commands: compact and clear.
func (a *BaseAgent) builtins() []*command.Command {
	return []*command.Command{
		command.New("compact", "Compact the conversation context now.",
			func(ctx context.Context, _ command.Args) (string, error) {
				return a.runner.Compact(ctx)
			}),
		command.New("clear", "Clear the conversation context.",
			func(context.Context, command.Args) (string, error) {
				return a.runner.Clear(), nil
			}),
	}
}

// OnStop closes the runner, releases the tool cards and its hold on the
// team's spend ceiling (Guards); a failure is logged.
func (a *BaseAgent) OnStop(c *actor.Context) {
	a.disarm()
	if a.runner != nil {
		if err := a.runner.Close(); err != nil {
			c.Logger().Warn("agent: closing the LLM runner failed", "error", err)
		}
	}
	if a.release != nil {
		if err := a.release(); err != nil {
			c.Logger().Warn("agent: releasing tool cards failed", "error", err)
		}
		a.release = nil
	}
	if a.unbudget != nil {
		a.unbudget()
		a.unbudget = nil
	}
}
