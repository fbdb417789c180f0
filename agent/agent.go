package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

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

// Kind is the kind name BaseAgent is registered under (actor.RegisterKind):
// the agent_class of its AgentCards.
const Kind = "BaseAgent"

func init() {
	actor.RegisterKind(Kind, func() actor.Actor { return &BaseAgent{} })
}

// CommandsAnnouncedEvent lists an agent's commands, once, when it starts.
type CommandsAnnouncedEvent struct {
	Agent    *message.Address     `json:"agent"`
	Commands []command.Descriptor `json:"commands"`
}

func init() {
	message.Register[CommandsAnnouncedEvent]("CommandsAnnouncedEvent")
	message.Register[llm.MessageEvent]("LlmMessageEvent")
	message.Register[llm.UsageEvent]("LlmUsageEvent")
	message.Register[llm.ToolCallEvent]("ToolCallEvent")
	message.Register[llm.ToolReturnEvent]("ToolReturnEvent")
	message.Register[llm.CompactedEvent]("LlmContextCompactedEvent")
	message.Register[llm.ClearedEvent]("LlmContextClearedEvent")
	message.Register[llm.TextDeltaEvent]("LlmTextDeltaEvent") // ephemeral: for live subscribers, never logged
}

// errNotStarted is returned for messages an agent cannot handle because
// its start failed (no team, an invalid config, a tool card that did not
// attach); the start error itself was reported when it happened.
var errNotStarted = errors.New("agent: not started")

// structured is the static output schema of every run.
var structured = func() *llm.Output[StructuredOutput] {
	out, err := llm.NewOutput[StructuredOutput]("StructuredOutput")
	if err != nil {
		panic(err) // a programming error in StructuredOutput's declaration
	}
	return out
}()

// BaseAgent is an LLM agent: each AgentMessage it receives is a slash
// command (run, answered, recorded) or a prompt: the reply protocol for
// its intent, the raw content, one ReAct run whose StructuredOutput is
// routed, each request to "@Name" (a member) or to a role (hired from the
// team's catalog).
//
// Embed it to add handlers; spawn it with an *AgentConfig. Its methods run
// on its own goroutine.
type BaseAgent struct {
	actor.Agent[AgentConfig, AgentState]
	// Env is the run-time environment; nil is the zero Env. Hired agents
	// get their hirer's, restored agents the one given to
	// orchestrator.Restore with WithEnv.
	Env *Env

	hire      func(ctx context.Context, role string) (*message.Address, error) // tool.Capabilities.Hire
	expand    func(ctx context.Context, prompt string) ([]llm.Part, error)     // tool.Capabilities.ExpandMedia
	runner    *llm.Runner
	release   func() error // the cards' Close
	unbudget  func()       // gives back the team's spend ceiling (Guards.teamBudget)
	registry  *command.Registry
	team      *orchestrator.Team
	startErr  error
	ctx       context.Context // the actor's context: cancelled when its stop is requested (a turn uses its own, c.Context())
	chain     []string        // the chain of the message being handled: what the turn's messages carry (loop.go)
	cancelled bool            // the last turn ended cancelled: the CancelMessage that did it comes next
}

var (
	_ actor.Starter = (*BaseAgent)(nil)
	_ actor.Stopper = (*BaseAgent)(nil)
)

func (a *BaseAgent) env() *Env {
	if a.Env != nil {
		return a.Env
	}
	return &Env{}
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
	a.runner, err = llm.NewRunner(cfg.llmConfig(backstory), llm.Options{
		HTTPClient:    httpDoer(env),
		Sleep:         env.Sleep,
		Tools:         caps.Tools,
		SystemPrompts: caps.SystemPrompts,
		Observer:      func(e llm.Event) { c.NotifyEvent(e) },
		Prices:        env.Prices,
		TeamBudget:    teamBudget,
		RateLimiter:   env.Guards.rateLimiter(),
		Logger:        c.Logger(),
		Now:           env.Now,
		NewRunID:      env.NewRunID,
	})
	if err != nil {
		return err
	}
	if c.Restoring() {
		events, cut, err := restoreEvents(ctx, a.team, c.Self().AgentID())
		if err != nil {
			return fmt.Errorf("agent %s: restore LLM context: %w", c.Self().Name(), err)
		}
		a.runner.RestoreCut(events, cut)
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

// Receive handles AgentMessages and CancelMessages; anything else is
// unhandled. A CancelMessage has done its work by the time its turn comes:
// the runtime cancelled the turn that was running when it was sent (its
// model call and tool calls end at once, the turn ends with a warning
// naming the sender); its own turn only logs it.
func (a *BaseAgent) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *AgentMessage:
		return nil, a.handle(c, m)
	case *message.CancelMessage:
		cancelled := a.cancelled
		a.cancelled = false
		c.Logger().Debug("agent: cancel received", "from", senderOf(m.Sender), "cancelled_a_turn", cancelled)
		if !cancelled && m.Sender != nil && m.Sender.IsUserProxy() && m.Sender.IsAlive() {
			// A person is told when the cancel found nothing to cancel.
			return nil, c.Send(m.Sender, &AgentMessage{Type: Notification, Content: "Nothing to cancel: no turn was running."})
		}
		return nil, nil
	}
	return nil, fmt.Errorf("agent: %T: %w", msg, actor.ErrUnhandled)
}

// senderOf names a sender for a log line ("unknown" for none).
func senderOf(s *message.Address) string {
	if s == nil {
		return "unknown"
	}
	return s.Name()
}

// handle runs the receive path for one AgentMessage: slash command
// interception, reply-protocol prefix, one run, routing; a usage-limit
// breach is escalated to the team's person and ends the turn with a
// warning.
func (a *BaseAgent) handle(c *actor.Context, m *AgentMessage) error {
	if a.runner == nil {
		return fmt.Errorf("%w: %v", errNotStarted, a.startErr)
	}
	// The turn's context: cancelled by a CancelMessage sent while it runs
	// and with the actor's when the agent's stop is requested.
	ctx := c.Context()
	c.Logger().LogAttrs(ctx, slog.LevelDebug, "agent: message", // attrs: no boxing when debug is off
		slog.String("type", string(m.Type)), slog.String("from", senderOf(m.Sender)), slog.Int("length", len(m.Content)))
	var err error
	done := false
	if strings.HasPrefix(m.Content, "/") {
		done, err = a.slash(ctx, c, m)
	}
	if !done && err == nil {
		if err := a.guardLoop(c, m); err != nil {
			return err
		}
		err = a.turn(ctx, c, m)
	}
	if err != nil && a.ctx.Err() != nil {
		return &actor.WarningError{Msg: fmt.Sprintf("agent %s: turn ended: the agent is stopping", c.Self().Name()), Err: err}
	}
	if err != nil && ctx.Err() != nil {
		// Cancelled: the cause names who cancelled. The run left a history
		// the next request can send (llm.Run heals it).
		c.Logger().LogAttrs(ctx, slog.LevelDebug, "agent: turn cancelled", slog.String("error", err.Error()))
		a.cancelled = true // the CancelMessage's own turn, next, knows it found one
		return &actor.WarningError{Msg: "agent " + c.Self().Name(), Err: context.Cause(ctx)}
	}
	var limit *llm.UsageLimitError
	if errors.As(err, &limit) {
		a.notifyHuman(c, err)
		// The reason is the cause's text, said once: "LLM usage limit
		// exceeded: <reason>".
		return &actor.WarningError{Msg: "LLM usage limit exceeded", Err: err}
	}
	return err
}

// slash runs a slash command when the sender may; done means the message
// was a command and is answered.
func (a *BaseAgent) slash(ctx context.Context, c *actor.Context, m *AgentMessage) (bool, error) {
	if !a.mayCommand(c, m.Sender) {
		if first := strings.Fields(m.Content); len(first) > 0 && a.registry.Has(strings.TrimPrefix(first[0], "/")) {
			c.Report(actor.NewWarning("agent %s: slash command %q from agent %s refused: commands are taken from a person or the program only (AgentConfig.AllowAgentCommands); passed to the model as text",
				c.Self().Name(), first[0], m.Sender.Name()))
		}
		return false, nil
	}
	if isCancel(m.Content) {
		// A /cancel that reached the agent as text (not through Say or
		// HumanProxy.Reply, which send a CancelMessage) finds no turn to
		// cancel: this is the agent's own turn.
		return true, a.answer(c, m, "Nothing to cancel: no turn was running.")
	}
	res, err := a.registry.Dispatch(ctx, m.Content)
	if errors.Is(err, command.ErrNotRecognized) {
		return false, nil // not a command: a sentence that starts with a slash
	}
	if err != nil {
		return true, err
	}
	if ctx.Err() != nil {
		// Cancelled while it ran: the sender gets the command's answer
		// (its failure), the history no operator action, and the turn its
		// cancel warning (handle).
		return true, errors.Join(a.answer(c, m, res), context.Cause(ctx))
	}
	a.runner.RecordOperatorAction(m.Content, res)
	return true, a.answer(c, m, res)
}

// answer sends a command's result to the sender of m, if it is still
// there.
func (a *BaseAgent) answer(c *actor.Context, m *AgentMessage, res string) error {
	if m.Sender == nil || !m.Sender.IsAlive() {
		return nil
	}
	return c.Send(m.Sender, &AgentMessage{Type: Notification, Content: res})
}

// mayCommand says whether a slash command from sender is obeyed: a user
// proxy (a person), the program (no sender, or a sender outside the team),
// or anyone when the config allows agents.
func (a *BaseAgent) mayCommand(c *actor.Context, sender *message.Address) bool {
	switch {
	case a.Config().AllowAgentCommands, sender == nil, sender.IsUserProxy():
		return true
	}
	return sender.TeamID() != c.Self().TeamID()
}

// turn prompts the model and routes its output. A run that ends on a
// run-tier usage limit gets one tool-free request to conclude (conclude)
// before the breach is escalated (handle).
func (a *BaseAgent) turn(ctx context.Context, c *actor.Context, m *AgentMessage) error {
	ctx, roster := cards.WithTurnRoster(ctx)
	out, err := Act(ctx, a, prefix(m), structured)
	if err != nil {
		if out, err = a.conclude(ctx, c, err); err != nil {
			return err
		}
	}
	// The model's answer is in the history: deliver all of it, even if a
	// cancel comes now (a stop still ends the routing).
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	defer context.AfterFunc(a.ctx, func() { cancel(context.Cause(a.ctx)) })()
	return a.route(rctx, c, out, roster)
}

// conclude is the guard's answer to a run-tier usage-limit breach: one
// more request with the tools removed (llm.Conclude) asking the model to
// answer the requester with what it has. It returns that answer, or breach
// when it delivers nothing (the request failed, the answer was invalid, or
// it sends no message): the breach is then escalated as before. Any other
// error is returned unchanged.
func (a *BaseAgent) conclude(ctx context.Context, c *actor.Context, breach error) (StructuredOutput, error) {
	var limit *llm.UsageLimitError
	if !errors.As(breach, &limit) || limit.Tier != "run" {
		return StructuredOutput{}, breach
	}
	out, err := llm.Conclude(ctx, a.runner, structured, breach)
	if err != nil || len(out.Messages) == 0 {
		return StructuredOutput{}, breach
	}
	c.Logger().LogAttrs(ctx, slog.LevelWarn, "agent: run usage limit reached; answered without tools",
		slog.String("limit", limit.Limit))
	return out, nil
}

// Act runs one ReAct run of the agent's runner with prompt against out's
// schema, expanding media references first when a card gives the agent the
// expansion (WorkspaceTool's media capability,
// tool.Capabilities.ExpandMedia). Call it on the agent's goroutine.
func Act[T any](ctx context.Context, a *BaseAgent, prompt string, out *llm.Output[T]) (T, error) {
	msg := llm.UserText(prompt)
	if a.expand != nil {
		parts, err := a.expand(ctx, prompt)
		if err != nil {
			var zero T
			return zero, err
		}
		if !(len(parts) == 1 && parts[0].Type == "text" && parts[0].Text == prompt) {
			msg = llm.Message{Role: "user", Parts: parts}
		}
	}
	return llm.Run(ctx, a.runner, msg, out)
}

// route delivers each request in order: "@Name" to that member (an unknown
// name is skipped and reported as a warning), a role to a new member hired
// from the catalog. The raw text goes with the request's intent. A hire
// that fails ends the routing with that error. A name is looked up in the
// roster the run showed the model while that member is alive, else asked
// of the team.
func (a *BaseAgent) route(ctx context.Context, c *actor.Context, out StructuredOutput, roster *cards.TurnRoster) error {
	for i, r := range out.Messages {
		if !r.MessageType.Valid() {
			c.Report(actor.NewWarning("agent %s: output message %d has unknown intent %q; skipped", c.Self().Name(), i, r.MessageType))
			continue
		}
		var to *message.Address
		if strings.HasPrefix(r.Recipient, "@") {
			member, err := a.member(ctx, roster, r.Recipient)
			if err != nil {
				return fmt.Errorf("agent %s: look up %s: %w", c.Self().Name(), r.Recipient, err)
			}
			if member == nil {
				c.Report(actor.NewWarning("agent %s: no team member named %s; message %d skipped", c.Self().Name(), r.Recipient, i))
				continue
			}
			if err := a.mayRoute(ctx, c, r.MessageType, member); err != nil {
				return err
			}
			to = member
		} else {
			hired, err := a.hireMember(ctx, r.Recipient)
			if err != nil {
				return err
			}
			to = hired
		}
		if err := c.Send(to, &AgentMessage{Type: r.MessageType, Content: r.Message, Chain: a.chain}); err != nil {
			c.Report(actor.NewWarning("agent %s: send to %s failed: %v", c.Self().Name(), to.Name(), err))
		}
	}
	return nil
}

// mayRoute enforces the agent's card's routes_to when it hands work (a
// request or an instruction) to an existing member: the member's role must
// be one the card routes to. Hiring by a bare role is checked by the hire
// (TeamTool). Never refused: the other intents (a response, a
// notification, an acknowledgment), a person, the sender of the message
// being handled and the agent's hirer (answering or asking back up is not
// handing work out), and an agent whose role has no card or a card with an
// empty routes_to (any role).
func (a *BaseAgent) mayRoute(ctx context.Context, c *actor.Context, intent Intent, to *message.Address) error {
	if intent != Request && intent != Instruction || to.IsUserProxy() {
		return nil
	}
	for _, up := range []*message.Address{c.Sender(), c.Parent()} {
		if up != nil && up.AgentID() == to.AgentID() {
			return nil
		}
	}
	self := c.Self()
	ctx, cancel := context.WithTimeout(ctx, cards.QueryTimeout)
	defer cancel()
	own, err := a.team.Card(ctx, self.Role())
	if err != nil {
		return fmt.Errorf("agent %s: route a %s to %s: look up the card of role %q: %w", self.Name(), intent, to.Name(), self.Role(), err)
	}
	if own == nil || own.CanRouteTo(to.Role()) {
		return nil
	}
	return fmt.Errorf("agent %s: a %s to %s (role %s) is refused: the %s card's routes_to allows only %s: %w",
		self.Name(), intent, to.Name(), to.Role(), self.Role(), strings.Join(own.RoutesTo, ", "), ErrRouteRefused)
}

// ErrRouteRefused is wrapped by the error of a turn whose output hands
// work to a member whose role the agent's card does not route to (the
// card's RoutesTo). The messages before it in the output were delivered;
// it and the ones after it were not.
var ErrRouteRefused = errors.New("route outside the card's routes_to")

// member returns the first member named name, nil for none: from roster
// while it is alive there, else from the team.
func (a *BaseAgent) member(ctx context.Context, roster *cards.TurnRoster, name string) (*message.Address, error) {
	if m := roster.Find(name); m != nil {
		return m, nil
	}
	ctx, cancel := context.WithTimeout(ctx, cards.QueryTimeout)
	defer cancel()
	return a.team.Member(ctx, name)
}

// errNoHire is returned when no card gives the agent a hire (its
// TeamTool's hire capability is disabled, or not exposed on COMMAND, so
// there is no hire_member command either).
var errNoHire = errors.New("agent: hire_member command not available (TeamTool hire capability disabled)")

// hireMember hires a member of role with the hire its cards give it
// (TeamTool's hire_member, tool.Capabilities.Hire) and returns its
// address. Call it on the agent's goroutine.
func (a *BaseAgent) hireMember(ctx context.Context, role string) (*message.Address, error) {
	if a.hire == nil {
		return nil, errNoHire
	}
	ctx, cancel := context.WithTimeout(ctx, cards.QueryTimeout)
	defer cancel()
	return a.hire(ctx, role)
}

// notifyHuman tells the team's person about a usage-limit breach.
func (a *BaseAgent) notifyHuman(c *actor.Context, cause error) {
	a.tellPerson(c, "usage limit exceeded", fmt.Sprintf("The agent %s has exceeded its usage limits (%v). \nPlease review the agent's activity and give your instruction.",
		c.Self().Name(), cause))
}

// tellPerson sends text as a notification to the team's person: the first
// member whose address is a user proxy, whatever its role. what names the
// occasion in the log lines of a failure.
func (a *BaseAgent) tellPerson(c *actor.Context, what, text string) {
	ctx, cancel := context.WithTimeout(a.ctx, cards.QueryTimeout)
	defer cancel()
	members, err := a.team.Members(ctx)
	if err != nil {
		c.Logger().Warn("agent: "+what+"; cannot reach the team to tell a person", "error", err)
		return
	}
	for _, m := range members {
		if m.IsUserProxy() {
			if err := c.Send(m, &AgentMessage{Type: Notification, Content: text}); err != nil {
				c.Logger().Warn("agent: "+what+"; telling the person failed", "error", err)
			}
			return
		}
	}
	c.Logger().Warn("agent: " + what + " and the team has no person to tell") // the turn's warning says why
}
