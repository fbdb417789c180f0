package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// kindHumanProxy is the kind name HumanProxy is registered under.
const kindHumanProxy = "HumanProxy"

func init() {
	actor.RegisterKind(kindHumanProxy, func() actor.Actor { return &HumanProxy{} })
}

// HumanProxy is the team member standing for a person: a user proxy (the
// agents' usage-limit notices find it by that flag, whatever its name or
// role) that receives AgentMessages for the person and sends the person's
// messages and answers. It is registered (actor.RegisterKind) under the
// kind "HumanProxy", which a restore recreates it from.
//
// Receiving only logs (type, sender, length): a user interface sees the
// content through the sender's SentMessage (a team subscriber), or sets
// Deliver.
type HumanProxy struct {
	orchestrator.UserProxy
	// Deliver, when set, is called on the proxy's goroutine with every
	// AgentMessage for the person (a console, a websocket). It must not
	// block.
	Deliver func(m *AgentMessage)
}

var _ actor.UserProxyActor = (*HumanProxy)(nil)

// Receive handles AgentMessages for the person; other messages go to the
// core user proxy.
func (h *HumanProxy) Receive(c *actor.Context, msg any) (any, error) {
	m, ok := msg.(*AgentMessage)
	if !ok {
		return h.UserProxy.Receive(c, msg)
	}
	from := "unknown"
	if m.Sender != nil {
		from = m.Sender.Name()
	}
	c.Logger().LogAttrs(c.Context(), slog.LevelDebug, "human proxy: message for the person", // attrs: no boxing when debug is off
		slog.String("type", string(m.Type)), slog.String("from", from), slog.Int("length", len(m.Content)))
	if h.Deliver != nil {
		h.Deliver(m)
	}
	return nil, nil
}

// Reply sends the person's answer to the sender of original as an
// AgentMessage with intent response, parented to original. It overrides
// orchestrator.UserProxy's Reply, so orchestrator.ProcessHumanInput on a
// HumanProxy sends an AgentMessage. Call it on the proxy's goroutine, or
// use orchestrator.ProcessHumanInput.
//
// A person's "/cancel [reason]" is sent as a message.CancelMessage instead
// (see Say).
func (h *HumanProxy) Reply(c *actor.Context, content string, original message.Message) error {
	if cm, ok := asCancel(content); ok {
		return h.Answer(c, original, cm)
	}
	return h.Answer(c, original, &AgentMessage{Type: Response, Content: content})
}

// Say sends a person's message from the human proxy at proxy to an agent:
// the team's log records the proxy as the sender. An empty intent means
// request.
//
// A person's "/cancel" (optionally followed by a reason) is sent as a
// message.CancelMessage{Reason: reason} instead of msg, which is not sent:
// the runtime cancels the agent's running turn the moment it is sent, even
// though the agent is busy with that turn (its model call and tool calls
// end at once; the turn ends with a warning naming the person), and what
// was queued behind it is still handled.
func Say(ctx context.Context, from, to *message.Address, msg *AgentMessage) error {
	if msg == nil {
		return errors.New("agent: Say(nil)")
	}
	if cm, ok := asCancel(msg.Content); ok {
		return proxy.Do(ctx, from, func(c *actor.Context, _ actor.Actor) error {
			return c.Send(to, cm)
		})
	}
	if msg.Type == "" {
		msg.Type = Request
	}
	if !msg.Type.Valid() {
		return fmt.Errorf("agent: Say: unknown intent %q", msg.Type)
	}
	return proxy.Do(ctx, from, func(c *actor.Context, _ actor.Actor) error {
		return c.Send(to, msg)
	})
}

// Answer sends a person's answer to original from the user proxy at proxy,
// as UserProxy.Answer does on the proxy's goroutine: msg goes to the
// sender of original, with original as its parent. An empty intent means
// response. Unlike orchestrator.ProcessHumanInput, the caller makes the
// message, so it may set its id (a durable inbox that must recognize the
// answer's turn).
//
// A person's "/cancel [reason]" is sent as a message.CancelMessage instead
// of msg, which is not sent (see Say). It fails with
// orchestrator.ErrNoSender when original has no sender, and when the actor
// at proxy is not a user proxy.
func Answer(ctx context.Context, proxyAddr *message.Address, original message.Message, msg *AgentMessage) error {
	if msg == nil {
		return errors.New("agent: Answer(nil)")
	}
	var out message.Message = msg
	if cm, ok := asCancel(msg.Content); ok {
		out = cm
	} else {
		if msg.Type == "" {
			msg.Type = Response
		}
		if !msg.Type.Valid() {
			return fmt.Errorf("agent: Answer: unknown intent %q", msg.Type)
		}
	}
	return proxy.Do(ctx, proxyAddr, func(c *actor.Context, a actor.Actor) error {
		p, ok := a.(answerer)
		if !ok {
			return fmt.Errorf("agent: Answer: %s is not a user proxy (%T)", proxyAddr, a)
		}
		return p.Answer(c, original, out)
	})
}

// answerer is orchestrator.UserProxy and everything embedding it.
type answerer interface {
	Answer(c *actor.Context, original, msg message.Message) error
}

// cancelCommand is what a person types to cancel an agent's running turn.
const cancelCommand = "/cancel"

// asCancel returns the CancelMessage a person's "/cancel [reason]" stands
// for.
func asCancel(content string) (*message.CancelMessage, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(content), cancelCommand)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\n') {
		return nil, false
	}
	return &message.CancelMessage{Reason: strings.TrimSpace(rest)}, true
}

// isCancel reports whether content is a person's "/cancel [reason]".
func isCancel(content string) bool {
	_, ok := asCancel(content)
	return ok
}
