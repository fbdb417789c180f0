package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/akgentic/akgentic-go/message"
)

// Intent is what a sender expects of the recipient: it travels in every
// AgentMessage and decides the reply protocol the receiver reads. It is
// guidance for the model: the framework never blocks or synthesises
// replies from it.
type Intent string

// The five intents.
const (
	// Request: do this and bring me the result (expect a response).
	Request Intent = "request"
	// Instruction: do this, possibly for a third party (acknowledge if
	// asked).
	Instruction Intent = "instruction"
	// Response: here is what you asked for (a reply is optional).
	Response Intent = "response"
	// Notification: for your information, no reply.
	Notification Intent = "notification"
	// Acknowledgment: got it, no reply.
	Acknowledgment Intent = "acknowledgment"
)

// intents lists the five intents in protocol order.
var intents = []Intent{Request, Response, Instruction, Notification, Acknowledgment}

// Valid reports whether i is one of the five intents.
func (i Intent) Valid() bool {
	for _, x := range intents {
		if i == x {
			return true
		}
	}
	return false
}

// AgentMessage is the one message agents exchange: an intent and the raw
// content, in the core envelope.
type AgentMessage struct {
	message.Base
	Type    Intent `json:"type"`
	Content string `json:"content"`
	// Chain is set by the agent that sends the message from a turn: the
	// names of the agents its chain of turns went through since the last
	// message from a person or the program, oldest first, the sender last
	// (loop detection); with both loop limits off, only the last 64 of
	// them. Leave it empty.
	Chain []string `json:"chain,omitempty"`
	// Approval, set on a message an agent sends the team's person, asks
	// the person to approve or deny a tool call (approval.go); answer it
	// with Decision's text.
	Approval *ApprovalRequest `json:"approval,omitempty"`
}

func init() { message.Register[AgentMessage]("AgentMessage") }

// NewRequest returns an AgentMessage with intent request: the usual first
// message from a person.
func NewRequest(content string) *AgentMessage { return &AgentMessage{Type: Request, Content: content} }

// UnmarshalJSON decodes the message and rejects an unknown intent; a
// missing one means request.
func (m *AgentMessage) UnmarshalJSON(data []byte) error {
	type plain AgentMessage
	if err := json.Unmarshal(data, (*plain)(m)); err != nil {
		return err
	}
	if m.Type == "" {
		m.Type = Request
	}
	if !m.Type.Valid() {
		return fmt.Errorf("agent: AgentMessage.type: unknown intent %q", m.Type)
	}
	return nil
}

// OutboundRequest is one message the model asks to send. Recipient is
// "@Name" for an existing member, or a role to hire one.
type OutboundRequest struct {
	MessageType Intent `json:"message_type" enum:"request,instruction,response,notification,acknowledgment" description:"The intent: request = ask the recipient to do a task and reply to you with the result; instruction = direct the recipient to do a task, you may ask for an acknowledgment; response = answer a previous request; notification = information, no reply expected; acknowledgment = confirm receipt of an instruction, no reply expected."`
	Message     string `json:"message" description:"The message content, sent to the recipient as it is."`
	Recipient   string `json:"recipient" description:"@Name of an existing team member (e.g. @Developer123), or a role name without @ to hire a new member of that role (only to add a member)."`
}

// StructuredOutput is what the model answers on every run: the list of
// messages to send, in parallel. An empty list sends nothing.
type StructuredOutput struct {
	Messages []OutboundRequest `json:"messages" description:"Your only way to send messages: every item is delivered to its recipient. Several messages are sent in parallel. Leave it empty when nothing needs to be sent."`
}

// replyProtocol is one row of the reply-protocol table.
type replyProtocol struct {
	intent Intent
	text   string
}

// replyProtocols is the guidance the receiver prepends, per incoming
// intent (akgentic's README wording; upstream later reworded it to
// "message mechanics only" because the request line made coordinators do
// specialists' work). {sender} is replaced with the sender's name.
var replyProtocols = []replyProtocol{
	{Request, "Carry out the task, then respond to {sender}. You may also delegate to others."},
	{Response, "Analyse the response, then continue or end the exchange."},
	{Instruction, "Carry out the task, then acknowledge to {sender} if requested."},
	{Notification, "Informational message. No reply is expected."},
	{Acknowledgment, "No further action needed."},
}

// protocol returns the reply protocol for an intent with the sender's
// name filled in; "" for an unknown intent.
func protocol(i Intent, sender string) string {
	var b strings.Builder
	writeProtocol(&b, i, sender)
	return b.String()
}

// writeProtocol writes protocol(i, sender) to b.
func writeProtocol(b *strings.Builder, i Intent, sender string) {
	for _, p := range replyProtocols {
		if p.intent != i {
			continue
		}
		text := p.text
		for {
			before, after, found := strings.Cut(text, "{sender}")
			b.WriteString(before)
			if !found {
				return
			}
			b.WriteString(sender)
			text = after
		}
	}
}

// prefix returns the prompt the receiver hands the model for m: "You
// received a|an <type> from <sender>. <protocol>" then a blank line and
// the raw content. The sender is the envelope sender's name, or "unknown".
func prefix(m *AgentMessage) string {
	if m == nil {
		return ""
	}
	sender := "unknown"
	if s := m.Envelope().Sender; s != nil && s.Name() != "" {
		sender = s.Name()
	}
	article := "a"
	if t := string(m.Type); t != "" && strings.ContainsRune("aeiou", rune(t[0])) {
		article = "an"
	}
	// One buffer of the prompt's size: this runs at the start of every
	// turn.
	var b strings.Builder
	b.Grow(len("You received an  from . ") + len(m.Type) + 2*len(sender) + maxProtocol + 2 + len(m.Content))
	b.WriteString("You received ")
	b.WriteString(article)
	b.WriteString(" ")
	b.WriteString(string(m.Type))
	b.WriteString(" from ")
	b.WriteString(sender)
	b.WriteString(". ")
	writeProtocol(&b, m.Type, sender)
	b.WriteString("\n\n")
	b.WriteString(m.Content)
	return b.String()
}

// maxProtocol is the length of the longest reply protocol without its
// sender.
var maxProtocol = func() int {
	n := 0
	for _, p := range replyProtocols {
		n = max(n, len(p.text))
	}
	return n
}()
