package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// route delivers each request in order: "@Name" to that member, a role to
// a new member hired from the catalog. The raw text goes with the
// request's intent. A hire that fails ends the routing with that error.
// A name is looked up in the roster the run showed the model while that
// member is alive, else in the team's roster, read again only when the
// team's version moved since routing last read it (members). Every name
// is looked up before anything is sent: when one names no member, nothing
// is sent and the error is an *unknownRecipientError, which the turn
// gives back to the model to fix.
func (a *BaseAgent) route(rc *routeContext, c *actor.Context, out StructuredOutput, roster *cards.TurnRoster) error {
	maxMessages, maxBytes, _, _ := a.env().Guards.answerLimits()
	found := map[string]*message.Address{}
	var unknown []string
	sent := out.Messages
	if maxMessages > 0 && len(sent) > maxMessages {
		sent = sent[:maxMessages] // the rest are not sent: no need to find them
	}
	for _, r := range sent {
		if !r.MessageType.Valid() || !strings.HasPrefix(r.Recipient, "@") {
			continue
		}
		if _, seen := found[r.Recipient]; seen || slices.Contains(unknown, r.Recipient) {
			continue
		}
		member, err := a.member(rc, roster, r.Recipient)
		if err != nil {
			return fmt.Errorf("agent %s: look up %s: %w", c.Self().Name(), r.Recipient, err)
		}
		if member == nil {
			unknown = append(unknown, r.Recipient)
			continue
		}
		found[r.Recipient] = member
	}
	if len(unknown) > 0 {
		return a.unknownRecipients(rc, c, unknown)
	}
	for i, r := range out.Messages {
		if maxMessages > 0 && i == maxMessages {
			text := fmt.Sprintf("the answer of %s has %d messages, more than the team's MaxMessagesPerAnswer (%d): the last %d were not sent",
				c.Self().Name(), len(out.Messages), maxMessages, len(out.Messages)-maxMessages)
			c.Report(actor.NewWarning("agent %s", text))
			a.tellPerson(c, "answer limit", "The "+text+".")
			break
		}
		if maxBytes > 0 && len(r.Message) > maxBytes {
			c.Report(actor.NewWarning("agent %s: output message %d has %d bytes, more than the team's MaxMessageBytes (%d): cut",
				c.Self().Name(), i, len(r.Message), maxBytes))
			r.Message = llm.CutText(r.Message, maxBytes) + fmt.Sprintf("\n[... message cut at %d bytes of %d ...]", maxBytes, len(r.Message))
		}
		if !r.MessageType.Valid() {
			c.Report(actor.NewWarning("agent %s: output message %d has unknown intent %q; skipped", c.Self().Name(), i, r.MessageType))
			continue
		}
		var to *message.Address
		if member := found[r.Recipient]; member != nil {
			if err := a.mayRoute(rc, c, r.MessageType, member); err != nil {
				return err
			}
			to = member
		} else {
			hired, err := a.hireMember(rc, r.Recipient)
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

// unknownRecipientError is a turn's output that names members the team
// does not have: the model can fix it, so its text goes back to the model
// (turn), naming the members that exist.
type unknownRecipientError struct {
	agent   string
	names   []string // the unknown @Names
	members []string // the members that exist, "@Name (role)"
}

func (e *unknownRecipientError) Error() string {
	return fmt.Sprintf("agent %s: no team member is named %s (the members are %s)",
		e.agent, strings.Join(e.names, ", "), strings.Join(e.members, ", "))
}

// feedback is what the model is told, to send its messages again.
func (e *unknownRecipientError) feedback() string {
	return fmt.Sprintf("None of your messages was sent: no team member is named %s. The members are: %s. "+
		"Send your messages again, each to one of these members by @name, or to a bare role to hire a new member.",
		strings.Join(e.names, ", "), strings.Join(e.members, ", "))
}

// unknownRecipients returns the error for output naming members that do
// not exist, listing those that do (the orchestrator and tools are not
// members one writes to).
func (a *BaseAgent) unknownRecipients(rc *routeContext, c *actor.Context, names []string) error {
	ms, err := a.members(rc)
	if err != nil {
		return fmt.Errorf("agent %s: look up %s: %w", c.Self().Name(), strings.Join(names, ", "), err)
	}
	e := &unknownRecipientError{agent: c.Self().Name(), names: names}
	for _, m := range ms {
		if !m.IsOrchestrator() && !m.IsTool() && m.AgentID() != c.Self().AgentID() {
			e.members = append(e.members, m.Name()+" ("+m.Role()+")")
		}
	}
	return e
}

// mayRoute enforces the agent's card's routes_to when it hands work (a
// request or an instruction) to an existing member: the member's role must
// be one the card routes to. Hiring by a bare role is checked by the hire
// (TeamTool). Never refused: the other intents (a response, a
// notification, an acknowledgment), a person, the sender of the message
// being handled and the agent's hirer (answering or asking back up is not
// handing work out), and an agent whose role has no card or a card with an
// empty routes_to (any role).
func (a *BaseAgent) mayRoute(rc *routeContext, c *actor.Context, intent Intent, to *message.Address) error {
	if intent != Request && intent != Instruction || to.IsUserProxy() {
		return nil
	}
	for _, up := range []*message.Address{c.Sender(), c.Parent()} {
		if up != nil && up.AgentID() == to.AgentID() {
			return nil
		}
	}
	self := c.Self()
	own, err := a.ownCard.Get(a.team, func() (*orchestrator.AgentCard, error) {
		ctx, cancel := context.WithTimeout(rc.get(), cards.QueryTimeout)
		defer cancel()
		return a.team.Card(ctx, self.Role())
	})
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
// while it is alive there, else from the team's roster (members).
func (a *BaseAgent) member(rc *routeContext, roster *cards.TurnRoster, name string) (*message.Address, error) {
	if m := roster.Find(name); m != nil {
		return m, nil
	}
	members, err := a.members(rc)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.Name() == name {
			return m, nil
		}
	}
	return nil, nil
}

// members returns the team's roster in join order: the one routing last
// read while the team's version holds (a member's Start or Stop record, or
// a card registered, moves it), so a turn whose team did not change does
// not ask the orchestrator; else the team's answer. Callers only read it.
func (a *BaseAgent) members(rc *routeContext) ([]*message.Address, error) {
	return a.roster.Get(a.team, func() ([]*message.Address, error) {
		ctx, cancel := context.WithTimeout(rc.get(), cards.QueryTimeout)
		defer cancel()
		return a.team.Members(ctx)
	})
}

// routeContext is the context of a turn's routing, made when a query or a
// hire first needs it (a turn whose team did not change routes without
// one): the turn's values without its cancel, since the model's answer
// is in the history and all of it is delivered even if a cancel comes
// now, and cancelled with the actor's context, since a stop still ends
// the routing. One made with ctx set is that context.
type routeContext struct {
	turn, actor context.Context
	ctx         context.Context
	cancel      context.CancelCauseFunc
	unwatch     func() bool
}

// get returns the context, made on the first call.
func (r *routeContext) get() context.Context {
	if r.ctx == nil {
		ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.turn))
		actor := r.actor
		r.ctx, r.cancel = ctx, cancel
		r.unwatch = context.AfterFunc(actor, func() { cancel(context.Cause(actor)) })
	}
	return r.ctx
}

// close releases what get made.
func (r *routeContext) close() {
	if r.cancel != nil {
		r.unwatch()
		r.cancel(nil)
	}
}

// errNoHire is returned when no card gives the agent a hire (its
// TeamTool's hire capability is disabled, or not exposed on COMMAND, so
// there is no hire_member command either).
var errNoHire = errors.New("agent: hire_member command not available (TeamTool hire capability disabled)")

// hireMember hires a member of role with the hire its cards give it
// (TeamTool's hire_member, tool.Capabilities.Hire) and returns its
// address. Call it on the agent's goroutine.
func (a *BaseAgent) hireMember(rc *routeContext, role string) (*message.Address, error) {
	if a.hire == nil {
		return nil, errNoHire
	}
	ctx, cancel := context.WithTimeout(rc.get(), cards.QueryTimeout)
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
	m, err := a.person()
	switch {
	case err != nil:
		c.Logger().Warn("agent: "+what+"; cannot reach the team to tell a person", "error", err)
	case m == nil:
		c.Logger().Warn("agent: " + what + " and the team has no person to tell") // the turn's warning says why
	default:
		if err := c.Send(m, &AgentMessage{Type: Notification, Content: text}); err != nil {
			c.Logger().Warn("agent: "+what+"; telling the person failed", "error", err)
		}
	}
}

// person returns the team's person: the first member whose address is a
// user proxy, whatever its role; nil when the team has none.
func (a *BaseAgent) person() (*message.Address, error) {
	members, err := a.members(&routeContext{ctx: a.ctx})
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.IsUserProxy() {
			return m, nil
		}
	}
	return nil, nil
}
