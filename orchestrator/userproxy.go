package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// UserProxy is the team member standing for a person. The exchange has
// two legs. Going to the person, agents send it UserMessages: an ordinary
// turn, so the message is in the log and reaches the subscribers, which is
// how a user interface sees it. Coming back, the person's answer goes with
// ProcessHumanInput.
//
// Embed it to integrate a user interface: override Receive for the
// messages you handle and call UserProxy.Receive for the rest. Whatever its
// name or role, an actor embedding UserProxy has IsUserProxy addresses.
type UserProxy struct {
	actor.Base
}

var _ actor.UserProxyActor = (*UserProxy)(nil)

// UserProxyActor marks the actor as a user proxy.
func (*UserProxy) UserProxyActor() {}

// Receive handles UserMessage by logging its arrival (length and sender,
// never the text: it may be personal data). Other messages are
// reported as unhandled.
func (p *UserProxy) Receive(c *actor.Context, msg any) (any, error) {
	if m, ok := msg.(*message.UserMessage); ok {
		c.Logger().Debug("user proxy: message for the user", "from", senderName(m), "length", len(m.Content))
		return nil, nil
	}
	return nil, fmt.Errorf("user proxy: %T: %w", msg, actor.ErrUnhandled)
}

func senderName(m message.Message) string {
	if s := m.Envelope().Sender; s != nil {
		return s.Name()
	}
	return ""
}

// ErrNoSender is returned by ProcessHumanInput when the original message
// has no sender to reply to.
var ErrNoSender = errors.New("orchestrator: the original message has no sender to reply to")

// Reply sends the person's answer to the sender of original as a
// ResultMessage, through the normal send path (a SentMessage is
// logged, its parent the original). Call it on the proxy's goroutine: from
// its own handler, or through ProcessHumanInput.
func (p *UserProxy) Reply(c *actor.Context, content string, original message.Message) error {
	return p.Answer(c, original, message.NewResultMessage(content))
}

// Answer sends msg to the sender of original, with original as its parent
// (a proxy answering on a person's behalf). The original may be a
// subscriber's copy: a snapshot sender is resolved to the running actor
// with its agent id. It fails with ErrNoSender when original has no
// sender, with actor.ErrActorDead when that actor is gone.
func (p *UserProxy) Answer(c *actor.Context, original message.Message, msg message.Message) error {
	if original == nil || original.Envelope().Sender == nil {
		return ErrNoSender
	}
	to := original.Envelope().Sender
	live := rt.Resolve(c, to)
	if live == nil {
		return fmt.Errorf("orchestrator: reply to %s: %w", to, actor.ErrActorDead)
	}
	to = live
	c.Logger().Debug("user proxy: human input", "reply_to", to.Name(), "type", message.TypeName(msg))
	return rt.SendFor(c, original, to, msg)
}

// humanInput is implemented by UserProxy and everything embedding it.
type humanInput interface {
	Reply(c *actor.Context, content string, original message.Message) error
}

// ProcessHumanInput delivers a person's answer (the leg back): the user
// proxy at proxyAddr sends ResultMessage{content} to the sender of
// original. It fails with ErrNoSender when original has none, and when the
// actor at proxyAddr is not a UserProxy.
func ProcessHumanInput(ctx context.Context, proxyAddr *message.Address, content string, original message.Message) error {
	err := proxy.Do(ctx, proxyAddr, func(c *actor.Context, p humanInput) error {
		return p.Reply(c, content, original)
	})
	// The proxy package names the unexported interface the actor lacks;
	// say what the caller can act on (the documented failure).
	var te *proxy.TypeError
	if errors.As(err, &te) {
		return fmt.Errorf("orchestrator: ProcessHumanInput: %s is not a UserProxy: %w", proxyAddr, err)
	}
	return err
}
