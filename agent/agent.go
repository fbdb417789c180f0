package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
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

	// endpoint maps the recorded model config to the one called
	// (WithEndpoint); nil: the recorded one
	endpoint  func(llm.ModelConfig) llm.ModelConfig
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
	approvals approvals       // the tool calls the person is asked to approve (approval.go)

	// What routing last read of the team, kept while the team's version
	// holds (route.go): the roster, and the card of the agent's own role.
	roster  cards.Versioned[[]*message.Address]
	ownCard cards.Versioned[*orchestrator.AgentCard]
}

var (
	_ actor.Starter = (*BaseAgent)(nil)
	_ actor.Stopper = (*BaseAgent)(nil)
)

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
		if done && err == nil { // a /clear drops a waiting run: what it held goes on
			a.drainHeld(c)
		}
	}
	if !done && err == nil {
		done, err = a.approvalTurn(ctx, c, m)
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
	if err == nil {
		return nil
	}
	var limit *llm.UsageLimitError // (after the nil check: errors.As's target is on the heap)
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
	return a.endRun(ctx, c, out, err, roster)
}

// endRun ends a turn's run: a run paused for approvals asks the person
// (approval.go), a run-tier breach gets its conclusion, an answer is
// routed.
func (a *BaseAgent) endRun(ctx context.Context, c *actor.Context, out StructuredOutput, err error, roster *cards.TurnRoster) error {
	if paused, err := a.paused(ctx, c, err); paused {
		return err
	}
	if err != nil {
		if out, err = a.conclude(ctx, c, err); err != nil {
			return err
		}
	}
	// The model's answer is in the history: deliver all of it, even if a
	// cancel comes now (a stop still ends the routing).
	rctx := &routeContext{turn: ctx, actor: a.ctx}
	defer rctx.close()
	for retry := 0; ; retry++ {
		err := a.route(rctx, c, out, roster)
		if err == nil {
			return nil
		}
		var unknown *unknownRecipientError
		if !errors.As(err, &unknown) {
			return err
		}
		if retry >= a.Config().Runtime.Retries { // spent: the person is told, not left waiting
			a.tellPerson(c, "unknown recipient", fmt.Sprintf("The agent %s could not deliver its answer: after %d tries it still writes to %s, who is not in the team (the members are %s).",
				c.Self().Name(), retry+1, strings.Join(unknown.names, ", "), strings.Join(unknown.members, ", ")))
			return err
		}
		c.Report(actor.NewWarning("%v: nothing was sent; the model is asked again (retry %d of %d)", err, retry+1, a.Config().Runtime.Retries))
		if out, err = Act(ctx, a, unknown.feedback(), structured); err != nil {
			return err
		}
	}
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
